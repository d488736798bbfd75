"""VCR's Q→A, QA→R and Q→AR on the hand-made fixture, against numbers worked out by hand."""
from pathlib import Path

import pytest

from nablafol.data.vcr import VcrPrediction, load_vcr, read_vcr_predictions
from nablafol.scoring.benchmarks import score_benchmark
from nablafol.scoring.questions import ScoringError
from nablafol.scoring.vcr import VcrScore, argmax

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vcr"
ITEMS = load_vcr(FIX / "val.jsonl")
PREDICTIONS = read_vcr_predictions(FIX / "predictions.csv")

# By hand (labels: val-0 a1 r1, val-1 a2 r0, val-2 a0 r3, val-3 a3 r2):
#   val-0 answers argmax 1 = 1 right; rationale given a1 (.1 .6 .2 .1) -> 1 right: Q→AR right
#   val-1 answers argmax 1 != 2 wrong; rationale given the right a2 (.55 ...) -> 0 right; Q→AR wrong
#   val-2 answers argmax 0 right; rationale given a0 (.3 .2 .4 .1) -> 2 != 3 wrong; Q→AR wrong
#   val-3 no prediction: wrong on all three
EXPECTED = {"q2a": 2 / 4, "qa2r": 2 / 4, "q2ar": 1 / 4}


def test_the_fixture_scores_as_computed_by_hand():
    metric = VcrScore()
    metric.update(ITEMS.values(), PREDICTIONS)
    result = metric.compute()
    assert result.metrics() == EXPECTED
    assert (result.count, result.missing) == (4, ("val-3",))


def test_the_report_as_table_and_json():
    report = score_benchmark("vcr", FIX / "val.jsonl", FIX / "predictions.csv")
    assert {k: report.to_json()[k] for k in EXPECTED} == EXPECTED
    table = report.format_table()
    assert "Q→A" in table and "QA→R" in table and "25.00%" in table


def test_q2ar_needs_the_rationale_for_the_right_answer_only_when_the_answer_is_right():
    item = ITEMS["val-1"]  # answer 2, rationale 0
    right_rationale_for_the_wrong_answer = tuple((1.0, 0.0, 0.0, 0.0) if i == 1 else (0.0, 1.0, 0.0, 0.0)
                                                 for i in range(4))
    metric = VcrScore()
    metric.update([item], {"val-1": VcrPrediction((0.0, 1.0, 0.0, 0.0), right_rationale_for_the_wrong_answer)})
    assert metric.compute().metrics() == {"q2a": 0.0, "qa2r": 0.0, "q2ar": 0.0}


def test_ties_go_to_the_first_choice():
    assert argmax([0.25, 0.25, 0.5, 0.5]) == 2 and argmax([1.0]) == 0


def test_answer_only_predictions_score_q2a_alone():
    metric = VcrScore(rationales=False)
    metric.update(ITEMS.values(), {k: VcrPrediction(p.answers) for k, p in PREDICTIONS.items()})
    assert metric.compute().metrics() == {"q2a": 0.5, "qa2r": None, "q2ar": None}
    with pytest.raises(ScoringError, match="no rationale probabilities"):
        VcrScore().update(ITEMS.values(), {"val-0": VcrPrediction((0.1, 0.7, 0.1, 0.1))})
    with pytest.raises(ScoringError, match="3 answer probabilities for 4 choices"):
        VcrScore().update(ITEMS.values(), {"val-0": VcrPrediction((0.1, 0.7, 0.1))})


def test_shards_merge_to_the_whole():
    ids = list(ITEMS)
    whole, a, b = VcrScore(), VcrScore(), VcrScore()
    whole.update(ITEMS.values(), PREDICTIONS)
    a.update([ITEMS[i] for i in ids[:1]], PREDICTIONS)
    b.update([ITEMS[i] for i in ids[1:]], PREDICTIONS)
    assert a.merge(b).compute() == whole.compute()


def test_multiple_choice_through_the_engine_writes_the_leaderboard_csv(tmp_path):
    """Any oracle and program answer VCR as a choice among its four answers (Algorithm 1): here
    one table per choice, the right choice the most probable for val-0 and val-2; the
    probabilities go to the leaderboard CSV, which scores as the engine chose."""
    import torch
    from nablafol.compiler.choices import choose_among
    from nablafol.data.vcr import write_vcr_predictions
    from nablafol.engine import Engine
    from nablafol.ir import Predicate, Top
    from nablafol.oracle import TableOracle
    predictions, chosen = {}, {}
    for k, (annot_id, item) in enumerate(ITEMS.items()):
        texts = [item.text(choice) for choice in item.answer_choices]
        question = choose_among(Top(), texts, lambda text: Predicate(f"fits:{text}"))
        favoured = item.answer_label if k % 2 == 0 else (item.answer_label + 1) % 4
        tables = {Predicate(f"fits:{t}"): torch.tensor([0.9 if i == favoured else 0.2, 0.1]) for i, t in enumerate(texts)}
        answers = Engine()([question.program], TableOracle([tables]))
        chosen[annot_id] = question.index_of(answers.predictions()[0])
        predictions[annot_id] = VcrPrediction(tuple(answers.probs()[0, :4].tolist()))
    assert chosen == {"val-0": 1, "val-1": 3, "val-2": 0, "val-3": 0}
    write_vcr_predictions(tmp_path / "p.csv", predictions)
    report = score_benchmark("vcr", FIX / "val.jsonl", tmp_path / "p.csv")
    assert report.metrics == {"q2a": 0.5, "qa2r": None, "q2ar": None}
