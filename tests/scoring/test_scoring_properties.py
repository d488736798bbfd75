"""Properties of the metrics and the score over random GQA-like question sets (hypothesis)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from scoring_fixture import FixtureQuestion as Q

from nablafol.scoring import Scorer, make_split, score, vocabulary_match

ANSWERS = ["yes", "no", "red", "blue", "tree", "Yes"]
STRUCTURAL = ["query", "verify", "logical", "choose", "compare"]
GROUPS = ("all", "open", "binary")
PROPERTY = settings(max_examples=examples(60), deadline=None)


@st.composite
def question_sets(draw, max_size=12):
    """Questions with random answers, types (or none) and entailment links, some outside."""
    ids = [f"q{i}" for i in range(draw(st.integers(0, max_size)))]
    return [
        Q(qid, draw(st.sampled_from(ANSWERS)),
          tuple(draw(st.lists(st.sampled_from([*ids, "outside"]), max_size=4))),
          draw(st.sampled_from([{}, *({"structural": s} for s in STRUCTURAL)])))
        for qid in ids
    ]


def predictions_for(draw, questions, extra=False):
    """Per question: the gold answer, some answer (maybe gold too), or nothing."""
    predictions = {}
    for question in questions:
        kind = draw(st.sampled_from(["gold", "any", "none"]))
        if kind != "none":
            predictions[question.id] = question.answer if kind == "gold" else draw(st.sampled_from(ANSWERS))
    if extra and draw(st.booleans()):
        predictions["not-in-set"] = "yes"
    return predictions


@st.composite
def scenarios(draw):
    questions = draw(question_sets())
    return questions, predictions_for(draw, questions), predictions_for(draw, questions, extra=True)


def _has_anchor(questions):
    ids = {q.id for q in questions}
    return any(e in ids and e != q.id for q in questions for e in q.entailed)


@PROPERTY
@given(question_sets())
def test_gold_answers_score_one(questions):
    result = score(questions, {q.id: q.answer for q in questions}).overall
    for group in GROUPS:
        assert result.accuracy[group] == (1.0 if result.count[group] else None)
    assert result.consistency["all"] == (1.0 if _has_anchor(questions) else None)
    assert all(result.consistency[g] in (1.0, None) for g in GROUPS)
    assert result.missing == ()


@PROPERTY
@given(scenarios())
def test_split_puts_every_question_in_exactly_one_list(scenario):
    questions, base, _ = scenario
    split = make_split(questions, base)
    assert sorted(split.easy + split.hard) == sorted(q.id for q in questions)
    assert not set(split.easy) & set(split.hard)
    assert set(split.easy) == {q.id for q in questions if base.get(q.id) == q.answer}
    assert set(split.base_missing) == {q.id for q in questions if q.id not in base}


@PROPERTY
@given(scenarios())
def test_base_model_has_no_hard_accuracy_and_no_easy_error(scenario):
    questions, base, _ = scenario
    scores = score(questions, base, make_split(questions, base))
    for group in GROUPS:
        assert scores.hard.accuracy[group] == (0.0 if scores.hard.count[group] else None)
        assert scores.easy.error[group] == (0.0 if scores.easy.count[group] else None)
        assert scores.hard.consistency[group] is None  # no correct anchor in the hard set
        assert scores.easy.consistency[group] in (1.0, None)  # easy looked up in easy only


@PROPERTY
@given(scenarios(), st.data())
def test_merging_shard_states_equals_one_scorer(scenario, data):
    questions, _, predictions = scenario
    shard_of = data.draw(st.lists(st.integers(0, 2), min_size=len(questions), max_size=len(questions)))
    for match in (None, vocabulary_match):
        options = {} if match is None else {"match": match}
        whole = Scorer(**options)
        shards = [Scorer(**options) for _ in range(3)]
        for question, shard in zip(questions, shard_of):
            whole.update(question, predictions.get(question.id))
            shards[shard].update(question, predictions.get(question.id))
        merged = shards[2].merge(shards[0]).merge(shards[1])
        assert merged.compute() == whole.compute()


@PROPERTY
@given(scenarios(), st.data())
def test_score_does_not_depend_on_question_order(scenario, data):
    questions, base, predictions = scenario
    split = make_split(questions, base)
    shuffled = data.draw(st.permutations(questions))
    reference = score(questions, predictions, split)
    reordered = score(shuffled, predictions, split)
    assert reordered.to_json() == reference.to_json()
    assert reordered.format_table() == reference.format_table()
    assert make_split(shuffled, base).easy == tuple(q.id for q in shuffled if q.id in set(split.easy))


@PROPERTY
@given(scenarios())
def test_hard_and_easy_rows_score_each_subset_as_its_own_test_set(scenario):
    questions, base, predictions = scenario
    split = make_split(questions, base)
    scores = score(questions, predictions, split)
    for subset, ids in ((scores.hard, set(split.hard)), (scores.easy, set(split.easy))):
        alone = score([q for q in questions if q.id in ids], predictions).overall
        assert subset.to_json() == alone.to_json()


@PROPERTY
@given(scenarios())
def test_json_holds_fractions_and_counts_that_add_up(scenario):
    questions, base, predictions = scenario
    result = score(questions, predictions, make_split(questions, base)).to_json()
    for part, rate in (("overall", "accuracy"), ("hard", "accuracy"), ("easy", "error")):
        rows = result[part]
        assert set(rows) == set(GROUPS)
        assert rows["all"]["count"] == rows["open"]["count"] + rows["binary"]["count"]
        for cells in rows.values():
            assert set(cells) == {rate, "consistency", "count"}
            assert all(v is None or 0.0 <= v <= 1.0 for v in (cells[rate], cells["consistency"]))
    assert result["hard"]["all"]["count"] + result["easy"]["all"]["count"] == len(questions)
