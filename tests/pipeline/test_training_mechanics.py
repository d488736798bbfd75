"""Training mechanics: the losses of Algorithm 1, the curriculum, checkpoints that resume exactly."""
import json
import math

import pytest
import torch

from nablafol.compiler import Compiler
from nablafol.dsl import Ontology
from nablafol.engine import Answers
from nablafol.pipeline.model_folder import feature_perception
from nablafol.neural import ConceptVocabulary, NeuralOracleModel, load_model
from nablafol.pipeline.oracle_training import Curriculum, answer_loss, answer_target
from training_helpers import tiny_trainer


def _answers(log_probs, mask):
    lp = torch.tensor(log_probs, dtype=torch.float64)
    return Answers(lp, torch.tensor(mask), [None] * lp.shape[0], lp.new_zeros(lp.shape[0], 1),
                   torch.ones(lp.shape[0], 1, dtype=torch.bool))


def test_answer_loss_is_algorithm_1s_likelihood():
    ninf = float("-inf")
    answers = _answers([[math.log(0.8), ninf, ninf], [math.log(0.8), ninf, ninf],
                        [math.log(0.5), math.log(0.25), math.log(0.25)]],
                       [[True, False, False], [True, False, False], [True, True, True]])
    targets = torch.tensor([0, 1, 1])  # yes, no, the second candidate
    binary = torch.tensor([True, True, False])
    want = -(math.log(0.8) + math.log(0.2) + math.log(0.25 / 1.0)) / 3
    assert answer_loss(answers, targets, binary).item() == pytest.approx(want, rel=1e-9)


def test_answer_loss_stays_finite_when_the_model_is_certain_and_wrong():
    answers = _answers([[float("-inf")], [0.0]], [[True], [True]])
    loss = answer_loss(answers, torch.tensor([0, 1]), torch.tensor([True, True]))
    assert torch.isfinite(loss) and loss.item() == pytest.approx(100.0)


def test_confidently_wrong_answers_keep_their_gradient():
    """∃ over two objects with logits 60: P(yes) rounds to 1 in float32, yet the gold "no" must
    still pull the logits down (log P(no) = -120 exactly, from the engine's complement)."""
    from nablafol.engine import Engine
    from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Top

    red = Predicate("red")
    z = torch.tensor([60.0, 60.0], requires_grad=True)

    class Logits:
        num_objects = torch.tensor([2])

        def unary(self, requests):
            return torch.nn.functional.logsigmoid(z)[None].expand(len(requests), 2)

        def binary(self, requests):
            return torch.zeros(len(requests), 2, 2)

    answers = Engine()([Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))], Logits())
    loss = answer_loss(answers, torch.tensor([1]), torch.tensor([True]))
    loss.backward()
    assert loss.item() == pytest.approx(120.0, rel=1e-4)
    assert torch.allclose(z.grad, torch.tensor([1.0, 1.0]), atol=1e-4)


def test_curriculum_orders_by_program_length():
    lengths = [5, 2, 3, 2, 4, 3]
    c = Curriculum(lengths, start=2, step=1)
    pools = [set(c.pool(e).tolist()) for e in range(5)]
    assert pools[0] == {1, 3} and pools[1] == {1, 2, 3, 5} and pools[3] == set(range(6)) == pools[4]
    assert all(pools[e] <= pools[e + 1] for e in range(4))
    assert all(max(lengths[i] for i in pools[e]) <= c.max_length(e) for e in range(5))


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    out = tmp_path_factory.mktemp("tiny")
    generate_dataset(out, n_train=24, n_val=6, n_testdev=2, seed=3, feature_dim=16, questions_per_scene=6)
    return out


@pytest.mark.slow
def test_resume_gives_the_same_result_as_an_uninterrupted_run(tiny_dataset, tmp_path):
    straight = tiny_trainer(tiny_dataset, tmp_path / "a", epochs=3)
    straight.train()
    first = tiny_trainer(tiny_dataset, tmp_path / "b", epochs=1)
    first.train()
    resumed = tiny_trainer(tiny_dataset, tmp_path / "b", epochs=3, seed=0)
    torch.manual_seed(123)  # a different global state: resume must not depend on it
    assert resumed.resume() and resumed.epoch == 1
    resumed.train()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    lines_a = [json.loads(x) for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    lines_b = [json.loads(x) for x in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert [r["train_loss"] for r in lines_a] == [r["train_loss"] for r in lines_b]
    assert [r["val_accuracy"] for r in lines_a] == [r["val_accuracy"] for r in lines_b]


def test_the_model_folder_is_usable_after_training(tiny_dataset, tmp_path):
    trainer = tiny_trainer(tiny_dataset, tmp_path / "m", epochs=1)
    trainer.train()
    model, vocabulary, extra = load_model(tmp_path / "m")
    assert extra["epochs_done"] == 1 and "hypernyms" in extra["ontology"] and len(extra["history"]) == 1
    loaded = feature_perception(tiny_dataset / "features", tmp_path / "m")
    assert loaded.ontology.classes == trainer.ontology.classes


def test_answers_outside_the_plausible_ones_are_listed_not_trained_on():
    compiler = Compiler()
    q = compiler.compile_text("select: bird->query: name [0]")
    assert answer_target(q, "parrot") == q.answers.index("parrot")
    assert answer_target(q, "chair") is None
    assert answer_target(compiler.compile_text("select: bird->exist: ? [0]"), "no") == 1


@pytest.mark.slow
def test_resume_refuses_a_network_of_another_shape(tiny_dataset, tmp_path):
    """Another --head (or --hidden) than the checkpoint's is refused, naming both, not switched silently."""
    from nablafol.errors import InputFileError
    first = tiny_trainer(tiny_dataset, tmp_path / "m", epochs=1)
    first.train()
    onto = Ontology.from_folder(tiny_dataset / "ontology")
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=16,
                                             embedding_dim=8, projection_dim=8, pair_hidden_dim=8, head="cosine")
    assert first.model.config.head != "cosine"
    other = tiny_trainer(tiny_dataset, tmp_path / "m", epochs=2)
    other.model = other.trainable = model
    with pytest.raises(InputFileError, match=r"--head cosine \(the checkpoint's: dot\)"):
        other.resume()
    state = torch.load(tmp_path / "m" / "training_state.pt", weights_only=True)
    del state["shape"]  # a checkpoint written before the shape was recorded: the folder's config.json says it
    torch.save(state, tmp_path / "m" / "training_state.pt")
    with pytest.raises(InputFileError, match=r"--head cosine \(the checkpoint's: dot\)"):
        other.resume()


@pytest.mark.parametrize("metrics,line,message", [
    (b'{"epoch": 0}\n{"epoch": 1, "tra', 2, "not JSON"),
    pytest.param(b'{"epoch": 0}\n\n', 2, "a blank line", marks=pytest.mark.slow),
    pytest.param(b'\xff\xfe{"epoch": 0}\n', 1, "not UTF-8", marks=pytest.mark.slow),
    pytest.param(b'{"epoch": 0}\n[1, 2]\n', 2, "a JSON list", marks=pytest.mark.slow),
])
def test_a_corrupt_metrics_file_refuses_resume_naming_the_line(tiny_dataset, tmp_path, metrics, line, message):
    from nablafol.errors import InputFileError
    first = tiny_trainer(tiny_dataset, tmp_path / "m", epochs=1)
    first.train()
    (tmp_path / "m" / "metrics.jsonl").write_bytes(metrics)
    with pytest.raises(InputFileError) as refused:
        tiny_trainer(tiny_dataset, tmp_path / "m", epochs=2).resume()
    text = str(refused.value)
    assert text.startswith(str(tmp_path / "m" / "metrics.jsonl")) and f"line {line}" in text and message in text
    assert len(text.splitlines()) == 1
