"""torch.compile (default mode) over a model that embeds the engine: the same answers and gradients
as eager. One small model, kept small: a compilation on a shared two-core machine costs seconds."""
import pytest
import torch

import nablafol
from nablafol import Aggregate, Engine, Filter, Predicate, Program, Quantifier, Relate, TableOracle, Top

RED, CUP, ON = Predicate("red"), Predicate("cup"), Predicate("on", arity=2)
PROGRAMS = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(CUP, Relate.of(ON, q, Filter(RED, Top())))))
            for q in Quantifier]


class Reasoner(torch.nn.Module):
    """A user's model: logits per object (a stand-in for a network), the engine over their sigmoid."""

    def __init__(self, n: int):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.unary = torch.nn.Parameter(torch.randn(2, n, generator=gen))
        self.binary = torch.nn.Parameter(torch.randn(n, n, generator=gen))
        self.engine = Engine()

    def forward(self, programs):
        tables = {RED: torch.sigmoid(self.unary[0]), CUP: torch.sigmoid(self.unary[1]), ON: torch.sigmoid(self.binary)}
        answers = self.engine(programs, TableOracle([tables]))
        return answers.log_probs[:, 0], nablafol.answer_loss(answers, ["yes", "no", "yes"])


@pytest.mark.slow  # compiling: the longest test of the fast tier in a measured run
def test_a_compiled_model_gives_the_eager_answers_and_gradients():
    pytest.importorskip("torch._inductor")
    torch._dynamo.reset()
    model = Reasoner(4)
    eager_log_p, eager_loss = model(PROGRAMS)
    eager_grads = torch.autograd.grad(eager_loss, list(model.parameters()))
    compiled = torch.compile(model)  # default mode
    log_p, loss = compiled(PROGRAMS)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    assert torch.allclose(log_p, eager_log_p, atol=1e-6, rtol=1e-5)
    assert torch.allclose(loss, eager_loss, atol=1e-6, rtol=1e-5)
    for g, want in zip(grads, eager_grads):
        assert torch.allclose(g, want, atol=1e-6, rtol=1e-5)
