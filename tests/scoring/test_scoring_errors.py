"""A split or input that cannot be scored ends in one clear ScoringError line."""
from __future__ import annotations

import pytest
from scoring_fixture import FixtureQuestion as Q

from nablafol.scoring import ScoringError
from nablafol.scoring import Split, make_split, score

QUESTIONS = [Q("1", "yes", (), {"structural": "verify"}), Q("2", "red", (), {"structural": "query"}),
             Q("3", "no", (), {"structural": "verify"})]


@pytest.mark.parametrize(
    "split, message",
    [
        (Split(easy=("1", "2"), hard=("3", "7", "8")), r"^split names 2 question\(s\) not in the question set \(e\.g\. '7'\)$"),
        (Split(easy=("1",), hard=()), r"^split misses 2 question\(s\) of the question set \(e\.g\. '2'\)$"),
    ],
)
def test_split_must_cover_the_set_exactly(split, message):
    with pytest.raises(ScoringError, match=message):
        score(QUESTIONS, {}, split)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(easy=("1", "2"), hard=("2",)), r"^split: 1 question\(s\) are both easy and hard \(e\.g\. '2'\)$"),
        (dict(easy=("1", "1"), hard=()), r"^split: question '1' appears twice in 'easy'$"),
        (dict(easy="12", hard=()), r"^split: 'easy' must be a list of question ids, got str$"),
        (dict(easy=(1,), hard=()), r"^split: 'easy' holds a non-string question id 1$"),
        (dict(easy=(), hard=("1",), base_missing=("2",)), r"^split: 1 question\(s\) the base model missed are not hard"),
    ],
)
def test_inconsistent_split_is_refused(kwargs, message):
    with pytest.raises(ScoringError, match=message):
        Split(**kwargs)


@pytest.mark.parametrize(
    "data, message",
    [
        ([], r"^split: expected a JSON object, got list$"),
        ({"easy": []}, r"^split: missing the 'hard' list$"),
        ({"easy": {"1": 1}, "hard": []}, r"^split: 'easy' must be a list of question ids, got dict$"),
    ],
)
def test_split_json_of_the_wrong_shape_is_refused(data, message):
    with pytest.raises(ScoringError, match=message):
        Split.from_json(data)


def test_split_json_without_base_missing_is_accepted():
    assert Split.from_json({"easy": ["1"], "hard": ["2"]}) == Split(easy=("1",), hard=("2",))


def test_split_of_the_wrong_type_is_refused():
    with pytest.raises(ScoringError, match=r"^split must be a Split, got dict$"):
        score(QUESTIONS, {}, {"easy": ["1", "2", "3"], "hard": []})


def test_unanswered_questions_are_refused_by_split_and_score():
    unanswered = [*QUESTIONS, Q("9", None)]
    for call in (lambda: make_split(unanswered, {}), lambda: score(unanswered, {})):
        with pytest.raises(ScoringError, match=r"^1 question\(s\) have no gold answer .*'9'"):
            call()


def test_missing_base_predictions_go_to_hard_and_are_reported():
    split = make_split(QUESTIONS, {"1": "yes"})
    assert split.easy == ("1",) and split.hard == ("2", "3") and split.base_missing == ("2", "3")


def test_is_binary_override_reaches_the_scores():
    untyped = [Q("1", "yes"), Q("2", "red"), Q("3", "tree")]
    plain = score(untyped, {"1": "yes", "2": "red", "3": "tree"})
    assert plain.overall.count == {"all": 3, "open": 2, "binary": 1}
    overridden = score(untyped, {"1": "yes", "2": "red", "3": "tree"}, is_binary={"3": True})
    assert overridden.overall.count == {"all": 3, "open": 1, "binary": 2}
