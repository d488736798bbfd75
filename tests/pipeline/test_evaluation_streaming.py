"""Streaming evaluation pieces: chunked answering agrees with the whole-set run, and the running
score agrees with :func:`nablafol.scoring.score`."""
from pathlib import Path
from types import SimpleNamespace as Q

import pytest

from nablafol.data import load_questions, load_scene_graphs
from nablafol.pipeline.answering import Answerer, Outcome, Skip
from nablafol.pipeline.perception import SceneGraphPerception
from nablafol.pipeline.evaluation import answer_all
from nablafol.scoring import Scorer, ScoringError
from nablafol.graph_oracles import KnowledgeBase


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"


@pytest.mark.slow
@pytest.mark.parametrize("folder, questions, graphs, knowledge", [
    (FIXTURES, "val_balanced_questions.json", "val_sceneGraphs.json", False),
    (FIXTURES / "every_operation", "questions.json", "sceneGraphs.json", True),
])
@pytest.mark.parametrize("chunk_size", [1, 5, 1000])
def test_chunks_answer_as_the_whole_set_does(folder, questions, graphs, knowledge, chunk_size):
    questions = list(load_questions(folder / questions).values())
    perception = SceneGraphPerception(load_scene_graphs(folder / graphs),
                                      knowledge=KnowledgeBase.sample() if knowledge else None)
    whole = answer_all(questions, Answerer(perception))
    evaluator = Answerer(perception, batch_size=3)
    results = [r for start in range(0, len(questions), chunk_size)
               for r in evaluator.answer_chunk(questions[start:start + chunk_size])]
    assert [r.question_id for r in results] == [q.id for q in questions]  # the order given
    assert {r.question_id: r.prediction for r in results if isinstance(r, Outcome)} == whole.predictions
    assert [r for r in results if isinstance(r, Skip)] == whole.skips
    assert len(whole.predictions) > 0


def test_the_scorer_of_a_stream_consistency_by_hand():
    scorer = Scorer()
    scorer.update(Q(id="1", answer="red", entailed=("2", "3", "3", "1", "99"), types={"structural": "query"}), "red")
    scorer.update(Q(id="2", answer="yes", entailed=("1",), types={"structural": "verify"}), "yes")
    scorer.update(Q(id="3", answer="no", entailed=(), types={"structural": "verify"}), "yes")
    # anchor 1: 2 right, 3 twice wrong -> 1/3; anchor 2: 1 right -> 1
    assert scorer.compute().consistency == {"all": 2 / 3, "open": 1 / 3, "binary": 1.0}


def test_the_scorer_refuses_a_question_without_answer():
    with pytest.raises(ScoringError, match="question '7'"):
        Scorer().update(Q(id="7", answer=None, entailed=(), types={}), "x")


def test_the_program_cache_stays_bounded_and_answers_the_same():
    # what a run keeps per program (compilation, plan, predicate check) lives on the compiled
    # program, so the compiler's bounded cache bounds it all
    from nablafol.compiler import Compiler
    questions = list(load_questions(FIXTURES / "every_operation" / "questions.json").values())
    perception = SceneGraphPerception(load_scene_graphs(FIXTURES / "every_operation" / "sceneGraphs.json"))
    expected = Answerer(perception).answer_chunk(questions)
    compiler = Compiler(cache_size=2)
    evaluator = Answerer(perception, compiler=compiler)
    sizes = []
    results = []
    for question in questions:
        results += evaluator.answer_chunk([question])
        sizes.append(compiler.cache_info().currsize)
    assert results == expected and max(sizes) <= 2 and len(questions) > 2
    assert not hasattr(evaluator, "_checked")  # no second store of programs beside the compiler's


class _Refusing:
    """A perception that does not know some predicate names (the rest is the golden one's)."""

    def __init__(self, perception, refused):
        self._perception, self.refused, self.asked = perception, refused, []

    def knows(self, predicate):
        self.asked.append(predicate)
        return predicate.name not in self.refused and self._perception.knows(predicate)

    def __getattr__(self, name):
        return getattr(self._perception, name)


def test_a_predicate_the_perception_lacks_skips_its_questions_naming_the_first_one():
    from nablafol.compiler import Compiler
    questions = list(load_questions(FIXTURES / "val_balanced_questions.json").values())
    golden = SceneGraphPerception(load_scene_graphs(FIXTURES / "val_sceneGraphs.json"))
    compiler = Compiler()
    programs = {q.id: compiler.compile_semantic(list(q.semantic)).program for q in questions if q.semantic}
    used = [p.name for program in programs.values() for p in program.predicates()]
    refused = {used[0], used[len(used) // 2]}
    perception = _Refusing(golden, refused)
    results = Answerer(perception, compiler=compiler).answer_chunk(questions)
    whole = answer_all(questions, Answerer(golden)).predictions
    for question, result in zip(questions, results):
        first = next((p for p in programs[question.id].predicates() if p.name in refused), None) \
            if question.id in programs else None
        if first is None:
            assert result.prediction == whole[question.id]
        else:
            assert isinstance(result, Skip) and result.reason == "unknown predicate"
            assert result.detail == f"the oracle does not know {first.kind} {first.name!r}"
    assert any(isinstance(r, Skip) for r in results) and any(isinstance(r, Outcome) for r in results)
    assert len(perception.asked) == len(set(perception.asked))  # each predicate asked about once


def test_batches_take_images_in_order_of_size(tmp_path):
    # a batch pads every scene to its largest: images are batched smallest first, each image's
    # questions together, and the answers are those of any other order
    from nablafol.synthetic import generate_dataset
    generate_dataset(tmp_path, n_train=0, n_val=12, n_testdev=0, seed=3, feature_dim=4, questions_per_scene=4,
                     min_objects=3, max_objects=12)
    questions = list(load_questions(tmp_path / "val_balanced_questions.json").values())
    perception = SceneGraphPerception(load_scene_graphs(tmp_path / "val_sceneGraphs.json"))
    asked = []
    original = perception.oracle
    perception.oracle = lambda image_ids: asked.append(list(image_ids)) or original(image_ids)
    results = Answerer(perception, batch_size=2).answer_chunk(questions)
    sizes = [[perception.object_count(image) for image in batch] for batch in asked]
    assert len({perception.object_count(q.image_id) for q in questions}) > 3  # sizes to sort
    assert all(max(a) <= min(b) for a, b in zip(sizes, sizes[1:]))  # consecutive slices of one order
    shuffled = questions[::-1]
    again = Answerer(SceneGraphPerception(perception.scene_graphs), batch_size=5).answer_chunk(shuffled)
    assert {r.question_id: r for r in results} == {r.question_id: r for r in again}
