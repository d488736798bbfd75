"""The engine as a torch user meets it: the public loss, answers as probabilities and as a
distribution, scene sizes in any form, quantifier names as the docs write them, no warnings.
Each friction a new user met is replayed here as its own test."""
import math
import re
from pathlib import Path

import pytest
import torch

import nablafol
from nablafol import Aggregate, Engine, Filter, Predicate, Program, Quantifier, Relate, TableOracle, Top
from nablafol.compiler import Compiler
from nablafol.errors import ShapeError
from nablafol.ir import AggregateEach

ROOT = Path(__file__).resolve().parents[2]
red, bird, eagle, owl, left = (Predicate("red"), Predicate("bird"), Predicate("eagle"), Predicate("owl"),
                               Predicate("left", arity=2))
IS_RED = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
WHICH = Program((AggregateEach(Quantifier.EXISTS, (eagle, owl), Filter(bird, Top())),), ("eagle", "owl"))


def test_answer_loss_is_public_and_is_trainings_loss():
    from nablafol.pipeline import oracle_training
    assert nablafol.answer_loss is oracle_training.answer_loss
    p = torch.tensor([0.9, 0.2], requires_grad=True)
    oracle = TableOracle([{red: p, bird: [1.0, 1.0], eagle: p, owl: [0.5, 0.5]}])
    answers = Engine()([IS_RED, WHICH], oracle, scenes=[0, 0])
    by_label = nablafol.answer_loss(answers, ["no", "owl"])
    by_index = nablafol.answer_loss(answers, torch.tensor([1, 1]), torch.tensor([True, False]))
    p_yes = 1 - 0.1 * 0.8
    p_eagle, p_owl = 1 - 0.1 * 0.8, 0.75
    want = -(math.log(1 - p_yes) + math.log(p_owl / (p_eagle + p_owl))) / 2
    assert by_label.item() == pytest.approx(want, rel=1e-6) and by_index.item() == pytest.approx(want, rel=1e-6)
    per = nablafol.answer_loss(answers, ["yes", 0], reduction="none")
    assert per.shape == (2,) and nablafol.answer_loss(answers, ["yes", 0], reduction="sum").item() == pytest.approx(
        per.sum().item())


def test_answer_loss_is_finite_on_a_scene_of_no_objects():
    """The friction: a user's own log_softmax over a zero-object scene's candidates (all -inf) gave NaN."""
    z = torch.zeros(0, requires_grad=True)
    empty = TableOracle([{red: torch.sigmoid(z), bird: torch.sigmoid(z), eagle: torch.sigmoid(z),
                          owl: torch.sigmoid(z)}], num_objects=0)
    answers = Engine()([IS_RED, WHICH], empty, scenes=[0, 0])
    assert torch.isneginf(answers.log_probs[1]).all()  # every candidate impossible
    naive = torch.log_softmax(answers.log_probs[1], dim=0)
    assert torch.isnan(naive).all()  # what the user met
    loss = nablafol.answer_loss(answers, ["no", "eagle"])
    loss.backward()
    assert torch.isfinite(loss) and loss.item() == pytest.approx(math.log(2) / 2)
    assert answers.answer_distribution(1) == {"eagle": 0.5, "owl": 0.5}


def test_a_target_that_names_no_answer_is_one_line():
    answers = Engine()([IS_RED, WHICH], TableOracle([{red: [0.5], bird: [1.0], eagle: [0.5], owl: [0.5]}]),
                       scenes=[0, 0])
    for targets, says in ((["yes", "pigeon"], "program 1: 'pigeon' is not one of its answers ('eagle', 'owl')"),
                          (["maybe", 0], "program 0: 'maybe' is not one of its answers ('yes', 'no')"),
                          (["yes"], "1 targets for 2 programs"),
                          (torch.tensor([0, 2]), "program 1: index 2 is not one of its 2 answers"),
                          (torch.tensor([0.0, 1.0]), "whole-number indices")):
        with pytest.raises(ShapeError, match=re.escape(says)):
            nablafol.answer_loss(answers, targets)
    with pytest.raises(ShapeError, match="reduction must be one of mean, sum, none"):
        nablafol.answer_loss(answers, ["yes", "owl"], reduction="avg")


def test_candidate_probabilities_and_the_answer_distribution_are_told_apart():
    """The friction: ``distribution(i)`` of an open question gave eagle 0.885, owl 0.884, pigeon
    0.878 (each candidate's own probability), which a user reads as a distribution."""
    compiled = Compiler().compile_text("select: bird->query: name [0]")
    tables = {p: [0.9] for p in compiled.program.predicates()}
    answers = Engine()([compiled.program], TableOracle([tables]))
    own = answers.candidate_probabilities(0)
    share = answers.answer_distribution(0)
    assert list(own) == list(share) == list(compiled.answers)
    assert sum(own.values()) > 1.5  # independent probabilities
    assert sum(share.values()) == pytest.approx(1.0)
    assert all(share[a] == pytest.approx(own[a] / sum(own.values())) for a in own)
    assert not hasattr(answers, "distribution")  # the ambiguous name is gone
    yes_no = Engine()([IS_RED], TableOracle([{red: [0.5, 0.5]}]))
    assert yes_no.candidate_probabilities(0) == yes_no.answer_distribution(0) == {"yes": 0.75, "no": 0.25}


class _SizesAs:
    """A user's own oracle whose ``num_objects`` is a list, an int or a tensor."""

    def __init__(self, sizes):
        self.num_objects = sizes

    def unary(self, requests):
        return torch.log(torch.tensor([[0.5, 0.25, 1.0]])).expand(len(requests), 3)

    def binary(self, requests):
        return torch.log(torch.full((len(requests), 3, 3), 0.5))


@pytest.mark.parametrize("sizes", [3, [3], (3,), torch.tensor([3]), torch.tensor(3), torch.tensor([3], dtype=torch.int32)],
                         ids=["int", "list", "tuple", "tensor", "0-dim", "int32"])
def test_num_objects_as_a_tensor_a_list_or_an_int(sizes):
    """The friction: ``num_objects`` as a list or an int gave ``AttributeError: 'list' object has no
    attribute 'shape'``."""
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Relate.of(left, Quantifier.FORALL, Top()))))
    got = Engine()([program, program], _SizesAs(sizes)).probs()
    want = Engine()([program, program], _SizesAs(torch.tensor([3]))).probs()
    assert torch.equal(got, want)
    assert torch.equal(TableOracle([{red: [0.5, 0.5, 0.5]}], num_objects=sizes).num_objects, torch.tensor([3]))


@pytest.mark.parametrize("sizes, says", [("3", "expected a tensor, a list of whole numbers"),
                                         ([2.5], "expected a tensor, a list of whole numbers"),
                                         (torch.tensor([2.0]), "expected whole numbers"),
                                         (torch.ones(1, 2, dtype=torch.long), "one size per scene"),
                                         ([-1], "cannot have -1 objects")])
def test_num_objects_that_is_no_size_is_one_line(sizes, says):
    with pytest.raises(ShapeError, match=re.escape(says)):
        Engine()([IS_RED], _SizesAs(sizes))


def test_the_docs_quantifier_notation_names_the_enum():
    """The friction: the README writes ``A_∄`` where the enum is ``Quantifier.NOT_EXISTS``. Every
    ``A_q`` symbol and every ``Quantifier.X`` the docs write is one of the enum's."""
    texts = [ROOT.joinpath("README.md").read_text(encoding="utf-8")] + [
        p.read_text(encoding="utf-8") for p in sorted(ROOT.joinpath("docs").glob("*.md"))]
    symbols = {s for t in texts for s in re.findall(r"A_([∀∃∄])", t)}
    names = {s for t in texts for s in re.findall(r"Quantifier\.([A-Za-z_]+)", t)}
    assert symbols and names
    assert {Quantifier(s) for s in symbols} == set(Quantifier)
    assert all(Quantifier(n) in Quantifier for n in names)
    assert Quantifier("∄") is Quantifier.NOT_EXISTS and str(Quantifier.NOT_EXISTS) == "∄"
    with pytest.raises(ValueError):
        Quantifier("none")


@pytest.mark.filterwarnings("error")
def test_normal_use_gives_no_warning():
    """Warnings are errors here: a step of training (four compiled programs batched, Adam), exact
    mode, predictions, the loss, second-order gradients, and an oracle's bad value refused under
    autograd (the friction: a UserWarning about converting a tensor that requires grad leaked
    from that validation path)."""
    from nablafol.errors import ProbabilityError
    compiler = Compiler()
    programs = [compiler.compile_text(t).program for t in (
        "select: chair->relate: _,to the left of,s [0]->exist: ? [1]", "select: bird->query: name [0]",
        "select: table->filter color: red [0]->exist: ? [1]", "select: cup->verify color: red [0]")]
    predicates = sorted({p for q in programs for p in q.predicates()})
    logits = {p: torch.zeros((4,) * p.arity, requires_grad=True) for p in predicates}
    optimizer = torch.optim.Adam(logits.values(), lr=0.1)
    for exact in (False, True):
        oracle = TableOracle([{p: torch.sigmoid(z) for p, z in logits.items()}] * 4)
        answers = Engine(exact=exact)(programs, oracle)
        loss = nablafol.answer_loss(answers, ["yes", "bird", "no", "yes"])
        optimizer.zero_grad()
        (g,) = torch.autograd.grad(loss, [logits[predicates[0]]], create_graph=True)
        (g.square().sum() + loss).backward()
        optimizer.step()
        answers.predictions(), answers.exact.tolist(), answers.guessed(), answers.answer_distribution(1)

    class Broken:
        num_objects = torch.tensor([2])
        z = torch.zeros(2, requires_grad=True)

        def unary(self, requests):
            return (self.z + torch.tensor([0.0, 0.5]))[None].expand(len(requests), 2)  # log p > 0

        def binary(self, requests):
            return torch.zeros(len(requests), 2, 2)

    with pytest.raises(ProbabilityError, match="probability 1.64"):
        Engine()([IS_RED], Broken())
    with pytest.raises(ProbabilityError, match="value 1.5"):
        TableOracle([{red: torch.tensor([0.5, 1.5], requires_grad=True)}])
