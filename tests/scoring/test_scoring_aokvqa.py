"""A-OKVQA's metrics on the hand-made fixture, against numbers worked out by hand, and the
official script's rules (exact match, no 9-of-10 averaging, difficult questions out of DA)."""
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nablafol.data.aokvqa import AokvqaPrediction, AokvqaQuestion, load_aokvqa, read_aokvqa_predictions
from nablafol.scoring.aokvqa import AokvqaScore, direct_answer_score
from nablafol.scoring.benchmarks import score_benchmark
from nablafol.scoring.questions import ScoringError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "aokvqa"
QUESTIONS = load_aokvqa(FIX / "aokvqa_v1p0_val.json")
PREDICTIONS = read_aokvqa_predictions(FIX / "predictions_val.json")

# By hand (question: MC right?; DA score = min(1, matches / 3)):
#   4fKx... cab = cab: 1;        "taxi" given by 4 of 10 annotators: min(1, 4/3) = 1
#   7QmT... umbrella != hat: 0;  "sun hat" by 2: 2/3
#   9bVn... winter = winter: 1;  no direct answer: 0
#   2HsW... grilling = grilling: 1; difficult: not in DA
#   6JdP... no prediction: 0;    0
# MC = 3/5; DA = (1 + 2/3 + 0 + 0) / 4 = 5/12
MC, DA = Fraction(3, 5), Fraction(5, 12)


def test_the_fixture_scores_as_computed_by_hand():
    metric = AokvqaScore()
    metric.update(QUESTIONS.values(), PREDICTIONS)
    result = metric.compute()
    assert (result.multiple_choice, result.direct_answer) == (float(MC), float(DA))
    assert (result.mc_count, result.direct_answer_count, result.missing) == (5, 4, ("6JdPx5YtRw8Ck2Nb7QzVm3",))
    assert result.da_total == Fraction(5, 3)


def test_the_report_reads_rationales_and_both_settings():
    out = score_benchmark("aokvqa", FIX / "aokvqa_v1p0_val.json", FIX / "predictions_val.json").to_json()
    assert out["multiple_choice"] == float(MC) and out["direct_answer"] == float(DA)
    assert out["rationales"] == {"questions": 5, "rationales": 15} and out["direct_answer_count"] == 4


def test_a_setting_no_prediction_answers_is_not_scored(tmp_path):
    path = tmp_path / "mc_only.json"
    path.write_text('{"4fKxNb2Wc8a9RzvQpT3hLm": {"multiple_choice": "cab"}}')
    out = score_benchmark("aokvqa", FIX / "aokvqa_v1p0_val.json", path).to_json()
    assert out["multiple_choice"] == 0.2 and out["direct_answer"] is None
    path.write_text('{"4fKxNb2Wc8a9RzvQpT3hLm": {}}')
    with pytest.raises(ScoringError, match="neither multiple_choice nor direct_answer"):
        score_benchmark("aokvqa", FIX / "aokvqa_v1p0_val.json", path)


def test_the_official_direct_answer_score_is_exact_match_over_all_ten():
    answers = ["Taxi", "taxi.", "a taxi", "taxi", "taxi"] + ["cab"] * 5
    assert direct_answer_score("taxi", answers) == Fraction(2, 3)  # no normalization: only 2 are "taxi"
    # the VQA script's mean over the ten 9-annotator subsets would give 0.6 here, not 2/3:
    assert direct_answer_score("taxi", ["taxi"] * 2 + ["cab"] * 8) == Fraction(2, 3)
    assert direct_answer_score(None, answers) == 0


@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=10, max_size=10), st.sampled_from(["a", "b", "c", "d"]))
def test_direct_answer_score_is_min_of_one_and_a_third_of_the_matches(answers, prediction):
    assert direct_answer_score(prediction, answers) == min(1, Fraction(answers.count(prediction), 3))


def test_shards_merge_to_the_whole_and_test_splits_are_refused():
    ids = list(QUESTIONS)
    whole, a, b = AokvqaScore(), AokvqaScore(), AokvqaScore()
    whole.update(QUESTIONS.values(), PREDICTIONS)
    a.update([QUESTIONS[i] for i in ids[:2]], PREDICTIONS)
    b.update([QUESTIONS[i] for i in ids[2:]], PREDICTIONS)
    assert a.merge(b).compute() == whole.compute()
    test_question = AokvqaQuestion("t", "1", "?", ("a", "b"), None, None, False, None)
    with pytest.raises(ScoringError, match="no correct_choice_idx"):
        AokvqaScore().update([test_question], {"t": AokvqaPrediction("a")})
    with pytest.raises(ScoringError, match="no direct_answers"):
        AokvqaScore(multiple_choice=False).update([test_question], {})
