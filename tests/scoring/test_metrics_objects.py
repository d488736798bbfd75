"""Accuracy and Consistency objects: life cycle, merge, open/binary rule, bad input."""
from __future__ import annotations

import pickle

import pytest
from scoring_fixture import FixtureQuestion as Q

from nablafol.errors import NablafolError
from nablafol.scoring.metrics import Accuracy, Consistency, ScoringError, answer_group

QUESTIONS = [
    Q("1", "red", ("2", "3"), {"structural": "query"}),
    Q("2", "yes", ("1",), {"structural": "verify"}),
    Q("3", "tree", (), {"structural": "compare"}),
    Q("4", "no", ("3",), {}),
]
PREDICTIONS = {"1": "red", "2": "yes", "3": "fence", "4": "no"}


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


def test_accuracy_breakdowns():
    metric = Accuracy()
    metric.update(QUESTIONS, {k: v for k, v in PREDICTIONS.items() if k != "4"})
    result = metric.compute()
    assert result.count == {"all": 4, "open": 1, "binary": 3}
    assert result.correct == {"all": 2, "open": 1, "binary": 1}
    assert result.accuracy == {"all": 0.5, "open": 1.0, "binary": 1 / 3}
    assert result.error == {"all": 0.5, "open": 0.0, "binary": 2 / 3}
    assert result.by_structural == {"compare": 0.0, "query": 1.0, "unknown": 0.0, "verify": 1.0}
    assert result.missing == ("4",)


def test_empty_metrics_are_undefined_not_zero():
    assert Accuracy().compute().accuracy == {"all": None, "open": None, "binary": None}
    assert Consistency().compute().consistency == {"all": None, "open": None, "binary": None}


def test_consistency_of_the_small_example():
    metric = Consistency()
    metric.update(QUESTIONS, PREDICTIONS)
    result = metric.compute()
    # anchors: 1 -> [2 right, 3 wrong] = 1/2 (open); 2 -> [1 right] = 1; 4 -> [3 wrong] = 0
    assert result.anchors == {"all": 3, "open": 1, "binary": 2}
    assert result.consistency == {"all": 0.5, "open": 0.5, "binary": 0.5}


def test_missing_entailed_prediction_counts_wrong_for_consistency():
    metric = Consistency()
    metric.update(QUESTIONS, {"1": "red", "2": "yes", "3": "tree"})
    assert metric.compute().consistency["open"] == 1.0
    metric.reset()
    metric.update(QUESTIONS, {"1": "red", "2": "yes"})
    assert metric.compute().consistency["open"] == 0.5


def test_update_accumulates_and_reset_forgets():
    metric = Accuracy()
    metric.update(QUESTIONS[:2], PREDICTIONS)
    metric.update(QUESTIONS[2:], PREDICTIONS)
    assert metric.compute().correct["all"] == 3
    assert metric.compute() == metric.compute()  # compute does not consume the state
    metric.reset()
    assert metric.compute().count["all"] == 0
    metric.update(QUESTIONS, PREDICTIONS)  # after reset the same questions are new again
    assert metric.compute().count["all"] == 4


@pytest.mark.parametrize("metric_type", [Accuracy, Consistency])
def test_merge_equals_one_update_and_states_pickle(metric_type):
    whole = metric_type()
    whole.update(QUESTIONS, PREDICTIONS)
    left, right = metric_type(), metric_type()
    left.update(QUESTIONS[::2], PREDICTIONS)
    right.update(QUESTIONS[1::2], PREDICTIONS)
    shipped = pickle.loads(pickle.dumps(right))  # as from another process
    assert left.merge(shipped).compute() == whole.compute()


@pytest.mark.parametrize("metric_type", [Accuracy, Consistency])
def test_merge_refuses_shared_questions_and_other_types(metric_type):
    left, right = metric_type(), metric_type()
    left.update(QUESTIONS[:2], PREDICTIONS)
    right.update(QUESTIONS[1:], PREDICTIONS)
    with pytest.raises(ScoringError, match=r"both .* 1 question\(s\) \(e\.g\. '2'\)"):
        left.merge(right)
    other = Consistency() if metric_type is Accuracy else Accuracy()
    with pytest.raises(ScoringError, match="cannot merge"):
        left.merge(other)


@pytest.mark.parametrize("metric_type", [Accuracy, Consistency])
def test_same_question_twice_is_refused(metric_type):
    metric = metric_type()
    metric.update(QUESTIONS[:2], PREDICTIONS)
    with pytest.raises(ScoringError, match="'2' was already"):
        metric.update(QUESTIONS[1:], PREDICTIONS)


@pytest.mark.parametrize("metric_type", [Accuracy, Consistency])
@pytest.mark.parametrize(
    "questions, predictions, message",
    [
        ([Q("1", None), Q("2", "no"), Q("3", None)], {}, r"^2 question\(s\) have no gold answer .*\(e\.g\. '1'\)"),
        ([Q("1", "yes"), Q("1", "no")], {}, r"^question '1' appears twice"),
        ([Q("", "yes")], {}, r"^question #0: id must be a non-empty string"),
        ([Q("1", 3)], {}, r"^question '1': gold answer must be a string, got int"),
        ([Q("1", "yes", "2")], {}, r"^question '1': entailed must be a sequence"),
        ([Q("1", "yes")], {"1": 1}, r"^prediction for question '1' must be a string, got int"),
        ([Q("1", "yes")], [("1", "yes")], r"^predictions must be a mapping"),
    ],
)
def test_bad_input_is_one_clear_line_and_changes_nothing(metric_type, questions, predictions, message):
    metric = metric_type()
    metric.update([Q("0", "yes")], {"0": "yes"})
    before = metric.compute()
    with pytest.raises(ScoringError, match=message) as caught:
        metric.update(questions, predictions)
    assert "\n" not in str(caught.value)
    assert metric.compute() == before


def test_vocabulary_match_accepts_surface_forms_of_one_concept():
    from types import SimpleNamespace as Q

    from nablafol.scoring.metrics import Accuracy, exact_match, vocabulary_match
    from nablafol.scoring import make_split, score
    qs = [Q(id="1", answer="skis", entailed=(), types={"structural": "query"}),
          Q(id="2", answer="red", entailed=(), types={"structural": "query"})]
    preds = {"1": "ski", "2": "blue"}
    exact, vocab = Accuracy(), Accuracy(match=vocabulary_match)
    exact.update(qs, preds)
    vocab.update(qs, preds)
    assert exact.compute().accuracy["all"] == 0.0 and vocab.compute().accuracy["all"] == 0.5
    assert make_split(qs, preds, match=vocabulary_match).easy == ("1",)
    assert make_split(qs, preds, match=exact_match).easy == ()
    assert score(qs, preds, match=vocabulary_match).overall.accuracy["all"] == 0.5
