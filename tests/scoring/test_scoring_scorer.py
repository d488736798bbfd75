"""The Scorer: life cycle, merge, pickling, the open/binary rule, breakdowns, bad input."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass, field

import pytest
from scoring_fixture import FixtureQuestion as Q

from nablafol.data.attentions import ObjectAttention
from nablafol.data.choices import Choices
from nablafol.errors import NablafolError
from nablafol.scoring import Scorer, ScoringError, exact_match, vocabulary_match
from nablafol.scoring.questions import answer_group
from nablafol.scoring.scorer import id_key

QUESTIONS = [
    Q("1", "red", ("2", "3"), {"structural": "query"}),
    Q("2", "yes", ("1",), {"structural": "verify"}),
    Q("3", "tree", (), {"structural": "compare"}),
    Q("4", "no", ("3",), {}),
]
PREDICTIONS = {"1": "red", "2": "yes", "3": "fence", "4": "no"}


@dataclass(frozen=True)
class GQAQuestion:
    """A question with the GQA fields beyond the fixture's (as nablafol.data.Question has them)."""

    id: str
    answer: str
    entailed: tuple = ()
    types: dict = field(default_factory=dict)
    is_balanced: bool | None = True
    question: str | None = None
    semantic: tuple | None = None
    semantic_str: str | None = None
    groups: dict | None = None
    annotations: dict | None = None
    image_id: str = "img"


def scored(questions, predictions, **kwargs):
    scorer = Scorer(**kwargs)
    for question in questions:
        scorer.update(question, predictions.get(question.id))
    return scorer


def test_scoring_error_is_the_packages_own():
    assert issubclass(ScoringError, NablafolError) and issubclass(ScoringError, ValueError)


@pytest.mark.parametrize(
    "question, override, group",
    [
        (Q("1", "red", (), {"structural": "query"}), None, "open"),
        (Q("1", "yes", (), {"structural": "query"}), None, "open"),  # types win over the answer
        (Q("1", "tree", (), {"structural": "compare"}), None, "binary"),
        (Q("1", "red", (), {"structural": "choose"}), None, "binary"),
        (Q("1", "yes", (), {}), None, "binary"),  # no types: fall back to the answer
        (Q("1", "no", (), {"semantic": "attr"}), None, "binary"),
        (Q("1", "red", (), {}), None, "open"),
        (Q("1", "Yes", (), {}), None, "open"),  # exact strings, as GQA compares answers
        (Q("1", "yes", (), {}), {"1": False}, "open"),
        (Q("1", "red", (), {"structural": "query"}), {"1": True}, "binary"),
        (Q("1", "red", (), {}), {"other": True}, "open"),  # ids the mapping lacks: the rules
        (Q("1", "red", (), {}), lambda q: q.answer == "red", "binary"),
    ],
)
def test_answer_group(question, override, group):
    assert answer_group(question, override) == group


def test_accuracy_by_group_and_structural_type():
    result = scored(QUESTIONS, {k: v for k, v in PREDICTIONS.items() if k != "4"}).compute()
    assert result.count == {"all": 4, "open": 1, "binary": 3}
    assert result.correct == {"all": 2, "open": 1, "binary": 1}
    assert result.accuracy == {"all": 0.5, "open": 1.0, "binary": 1 / 3}
    assert result.error == {"all": 0.5, "open": 0.0, "binary": 2 / 3}
    assert result.by_structural == {"compare": 0.0, "query": 1.0, "verify": 1.0, "unknown": 0.0}
    assert result.missing == ("4",)


def test_breakdowns_by_semantic_type_steps_and_length():
    select = {"operation": "select", "argument": "cup (5)"}
    questions = [
        GQAQuestion("a", "red", types={"structural": "query", "semantic": "attr"}, question="What color is the cup?",
                    semantic=(select, {"operation": "query", "argument": "color"})),
        GQAQuestion("b", "yes", types={"structural": "verify", "semantic": "obj"}, question="Is there a cup?",
                    semantic=(select, {"operation": "exist", "argument": "?"})),  # exist is not a step
        GQAQuestion("c", "cup", types={"structural": "query", "semantic": "cat"}, question="What is it?",
                    semantic=(select, {"operation": "query", "argument": "name"})),  # "query: name" is not either
        GQAQuestion("d", "no", types={"structural": "verify", "semantic": "obj"}, question="Is the cup  small ?"),
        GQAQuestion("e", "cat", types={"structural": "choose", "semantic": "cat"}, question="Cat or dog?",
                    semantic_str="select: animal (3)->choose name: cat|dog [0]"),  # nor "choose name"
    ]
    result = scored(questions, {"a": "red", "b": "no", "c": "cup", "d": "no", "e": "dog"}).compute()
    assert result.by("semantic") == {"attr": 1.0, "cat": 0.5, "obj": 0.5}
    assert result.by("steps") == {1: 1 / 3, 2: 1.0, "unknown": 1.0}  # b, e wrong, c right; a has 2
    assert {k: t.count for k, t in result.breakdowns["length"].items()} == {5: 2, 4: 1, 3: 2}


def test_empty_scorer_is_undefined_not_zero():
    result = Scorer().compute()
    assert result.accuracy == {"all": None, "open": None, "binary": None}
    assert result.consistency == {"all": None, "open": None, "binary": None}
    assert (result.distribution, result.validity, result.grounding) == (None, None, None)


def test_consistency_of_the_small_example():
    result = scored(QUESTIONS, PREDICTIONS).compute()
    # anchors: 1 -> [2 right, 3 wrong] = 1/2 (open); 2 -> [1 right] = 1; 4 -> [3 wrong] = 0
    assert result.anchors == {"all": 3, "open": 1, "binary": 2}
    assert result.consistency == {"all": 0.5, "open": 0.5, "binary": 0.5}


def test_missing_entailed_prediction_counts_wrong_for_consistency():
    assert scored(QUESTIONS, {"1": "red", "2": "yes", "3": "tree"}).compute().consistency["open"] == 1.0
    assert scored(QUESTIONS, {"1": "red", "2": "yes"}).compute().consistency["open"] == 0.5


def test_unbalanced_questions_count_only_as_entailed_questions():
    questions = [GQAQuestion("1", "red", ("2", "3"), {"structural": "query"}),
                 GQAQuestion("2", "yes", ("1",), {"structural": "verify"}, is_balanced=False),
                 GQAQuestion("3", "no", ("1",), {"structural": "verify"}, is_balanced=False)]
    result = scored(questions, {"1": "red", "2": "yes", "3": "yes"}).compute()
    assert result.count["all"] == 1 and result.unbalanced == 2
    assert result.anchors["all"] == 1 and result.consistency["all"] == 0.5  # 2 right, 3 wrong, looked up


def test_update_accumulates_reset_forgets_and_compute_keeps_the_state():
    scorer = scored(QUESTIONS[:2], PREDICTIONS)
    for question in QUESTIONS[2:]:
        scorer.update(question, PREDICTIONS[question.id])
    assert scorer.compute().correct["all"] == 3 and len(scorer) == 4
    assert scorer.compute() == scorer.compute()
    scorer.reset()
    assert scorer.compute().count["all"] == 0 and len(scorer) == 0


def test_merge_equals_one_scorer_and_states_pickle():
    whole = scored(QUESTIONS, PREDICTIONS, match=vocabulary_match)
    left = scored(QUESTIONS[::2], PREDICTIONS, match=vocabulary_match)
    right = pickle.loads(pickle.dumps(scored(QUESTIONS[1::2], PREDICTIONS, match=vocabulary_match)))
    assert right.match.name == "vocabulary" and right.match("ski", "skis")
    assert left.merge(right).compute() == whole.compute()


def test_merge_refuses_other_types_and_other_rules():
    with pytest.raises(ScoringError, match="cannot merge dict"):
        Scorer().merge({})
    with pytest.raises(ScoringError, match="differently"):
        Scorer().merge(Scorer(vocabulary_match))
    with pytest.raises(ScoringError, match="differently"):
        Scorer().merge(Scorer(validity=True))


def test_a_question_scored_twice_is_refused_at_compute():
    left, right = scored(QUESTIONS[:2], PREDICTIONS), scored(QUESTIONS[1:], PREDICTIONS)
    with pytest.raises(ScoringError, match=r"^1 question id\(s\) were scored twice"):
        left.merge(right).compute()


@pytest.mark.parametrize("question, prediction, message", [
    (Q("1", None), "x", r"^question '1': gold answer must be a string"),
    (Q("1", 3), "x", r"^question '1': gold answer must be a string"),
    (Q("1", "yes", "2"), "x", r"^question '1': entailed must be a sequence"),
    (Q("1", "yes"), 1, r"^prediction for question '1' must be a string, got int"),
])
def test_bad_input_is_one_clear_line_and_changes_nothing(question, prediction, message):
    scorer = scored([Q("0", "yes")], {"0": "yes"})
    before = scorer.compute()
    with pytest.raises(ScoringError, match=message) as caught:
        scorer.update(question, prediction)
    assert "\n" not in str(caught.value)
    assert scorer.compute() == before and len(scorer) == 1


def test_match_must_be_an_answer_match():
    with pytest.raises(ScoringError, match="AnswerMatch"):
        Scorer(lambda p, a: p == a)


def test_validity_and_plausibility_with_gqas_common_rule():
    questions = [GQAQuestion("1", "red", types={"structural": "query", "detailed": "queryAttr"}),
                 GQAQuestion("2", "color", types={"structural": "compare", "detailed": "twoCommon"}),
                 GQAQuestion("3", "no", types={"structural": "verify"}),
                 GQAQuestion("4", "yes", types={"structural": "verify"})]
    choices = {"1": Choices(("red", "blue", "purple"), ("red", "blue")), "2": Choices((), ()),
               "3": Choices(("yes", "no"), ("yes", "no"))}
    scorer = Scorer(validity=True)
    for question, prediction in zip(questions, ["purple", "shape", "yes", "yes"]):
        scorer.update(question, prediction, choices=choices.get(question.id))
    result = scorer.compute()
    # 1: valid, not plausible; 2: common -> color/material/shape, both; 3: both; 4: no choices -> neither
    assert (result.validity, result.plausibility, result.without_choices) == (0.75, 0.5, 1)
    with pytest.raises(ScoringError, match="without validity"):
        Scorer().update(questions[0], "red", choices=choices["1"])


def test_distribution_counts_answer_forms_per_global_group():
    questions = [GQAQuestion(str(i), answer, groups={"global": "thing"}) for i, answer in enumerate(["skis", "skis"])]
    exact = scored(questions, {"0": "ski", "1": "skis"}).compute().distribution
    vocabulary = scored(questions, {"0": "ski", "1": "skis"}, match=vocabulary_match).compute().distribution
    assert exact == (1 - 2) ** 2 / 2 / 100 and vocabulary == 0.0


def test_grounding_needs_the_scene_and_counts_missing_attention_as_zero():
    from nablafol.data import SceneGraph, SceneObject
    scene = SceneGraph("img", 100, 100, (SceneObject("7", {"cup": 1.0}, 0, 0, 50, 100),))
    question = GQAQuestion("1", "red", annotations={"question": {"3": "7"}, "fullAnswer": {}})
    left_half = ObjectAttention(((0.0, 0.0, 0.5, 1.0, 1.0),))
    scorer = Scorer(grounding=True)
    scorer.update(question, "red", attention=left_half, scene=scene)
    scorer.update(GQAQuestion("2", "blue", annotations={"question": {"1": "7"}}), "blue")
    result = scorer.compute()
    assert (result.grounding, result.without_attention) == (0.5, 1)
    with pytest.raises(ScoringError, match="needs the scene graph"):
        Scorer(grounding=True).update(question, "red", attention=left_half)


@pytest.mark.parametrize("prediction, answer, same", [
    ("ski", "skis", True), ("skis", "ski", True), ("people", "person", True), ("tennis", "tenni", True),
    ("pizza slices", "pizza slice", True), ("benches", "bench", True), ("oranges", "orange", True),
    ("reds", "red", False), ("smalls", "small", False), ("lefts", "left", False), ("yellows", "yellow", False),
    ("red", "blue", False), (None, "red", False),
    ("Horse", "horse", True), ("horse ", "Horse", True), ("Horses", "horse", True), ("REDS", "red", False),
])
def test_vocabulary_match_accepts_only_real_surface_forms(prediction, answer, same):
    assert vocabulary_match(prediction, answer) is same
    assert exact_match(prediction, answer) is (prediction == answer)


def test_id_keys_are_the_same_in_every_process():
    code = "from nablafol.scoring.scorer import id_key; print(id_key('20968244'))"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert int(out.stdout) == id_key("20968244")
