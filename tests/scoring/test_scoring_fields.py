"""What scoring reads of a question, read the quick way, equals what the plain way reads: the
``groups`` / ``annotations`` of a Question's JSON text, the steps of eval.py's rule, answer
forms kept by a match, a Scorer's tallies after merges (hypothesis)."""
from __future__ import annotations

import json
import pickle
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.data.questions import Question, encode_extra
from nablafol.scoring import Scorer, exact_match, vocabulary_match
from nablafol.scoring.answers import FORMS_KEPT, AnswerMatch, vocabulary_form
from nablafol.scoring.questions import annotated_objects, global_group, steps_number

PROPERTY = settings(max_examples=examples(200), deadline=None)
KEYS = ["groups", "annotations", "global", 'x"groups', "groups\\", "fullAnswer", "a", "zz"]
TEXTS = ["groups", '"groups":', '{"global":"x"}', '\\"groups\\":', "yes", "", "}", "1"]
leaves = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(TEXTS)
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4), max_leaves=12)
extras = st.dictionaries(st.sampled_from(KEYS), values, max_size=5)


def _plain(text: str) -> SimpleNamespace:
    """The question the slow way: no JSON text to search, only the decoded extra fields."""
    return SimpleNamespace(id="1", extra=json.loads(text))


def _texts(extra: dict) -> list[str]:
    """The extra fields as the reader keeps them, and in other spellings JSON allows."""
    return [encode_extra(extra), json.dumps(extra), json.dumps(extra, indent=1),
            json.dumps(dict(reversed(extra.items())), separators=(",", ":"))]


@pytest.mark.slow
@PROPERTY
@given(extras)
def test_a_questions_extra_fields_read_from_its_text_are_the_decoded_ones(extra):
    for text in _texts(extra):
        question = Question(id="1", image_id="2", extra_json=text)
        assert global_group(question) == global_group(_plain(text)), text
        try:
            expected = annotated_objects(_plain(text))
        except Exception as error:  # a malformed annotations record fails the same way both ways
            with pytest.raises(type(error)):
                annotated_objects(question)
        else:
            assert annotated_objects(question) == expected, text


@pytest.mark.parametrize("text, group", [
    ('{"groups":{"global":"a"},"groups":{"global":"b"}}', "b"),  # a repeated key: the last, as json.loads
    ('{"groups":{"global":"a"},"x":{"groups":{"global":"b"}}}', "a"),  # an inner one is not the question's
    ('{"x":"\\"groups\\":{\\"global\\":\\"b\\"}","groups":{"global":"a"}}', "a"),
    ('{"x\\"groups":{"global":"b"}}', None),  # another key that ends so
    ('{"groups":{"global":"a"} }', "a"), ('{ "groups" : {"global":"a"}}', "a"),
    ('{"groups":{"global":null}}', None), ('{"groups":["global"]}', None), ("{}", None),
])
def test_the_global_group_of_hand_written_texts(text, group):
    assert global_group(Question(id="1", image_id="2", extra_json=text)) == group == global_group(_plain(text))


def _eval_py_steps(semantic) -> int:
    """GQA's eval.py, its own words (with .get where a step lacks a key, as nablafol reads it)."""
    return len([c for c in semantic if not any(o in "{}: {}".format(c.get("operation", ""), c.get("argument", ""))
                                               for o in ["exist", "query: name", "choose name"])])


WORDS = ["exist", "query", "name", "choose", "choose name", "query: name", "select", ":", " ", "", "x"]
words = st.lists(st.sampled_from(WORDS), max_size=3).map("".join)
steps = st.fixed_dictionaries({}, optional={"operation": words, "argument": words | st.integers(0, 3) | st.none()})


@PROPERTY
@given(st.lists(steps, min_size=1, max_size=6))
def test_steps_follow_eval_py_on_any_program(semantic):
    assert steps_number(SimpleNamespace(semantic=semantic)) == _eval_py_steps(semantic)
    line = "->".join(f"{s.get('operation', '')}: {s.get('argument', '')} [{i}]" for i, s in enumerate(semantic))
    assert steps_number(SimpleNamespace(semantic=None, semantic_str=line)) == _eval_py_steps(semantic)


def test_steps_of_steps_that_are_not_records_and_of_no_program():
    assert steps_number(SimpleNamespace(semantic=["exist", {"operation": "exist"}, 3])) == 2
    assert steps_number(SimpleNamespace(semantic=(), semantic_str="  ")) is None
    assert steps_number(SimpleNamespace(semantic_str="select: cup [0]->exist: ? [0]")) == 1


def test_a_match_keeps_the_forms_it_computes_and_pickles_without_them():
    answers = ["skis", "ski", "people", "reds", " tennis ", "Skis"]
    match = AnswerMatch("vocabulary", vocabulary_form)
    assert [match.kept_form(a) for a in answers * 2] == [vocabulary_form(a) for a in answers * 2]
    info = match.kept_form.cache_info()
    assert (info.maxsize, info.currsize, info.hits) == (FORMS_KEPT, len(answers), len(answers))
    copy = pickle.loads(pickle.dumps(match))
    assert copy.form is vocabulary_form and copy.kept_form.cache_info().currsize == 0
    assert copy("skis", "ski") and not copy("reds", "red") and copy.member("people", ["cup", "person"])
    assert exact_match.kept_form is exact_match.form  # the string is its own form: nothing kept


def test_a_match_with_its_own_form_decides_the_scorers_counts():
    calls = []

    def first_letter(answer: str) -> str:
        calls.append(answer)
        return answer[:1]

    scorer = Scorer(AnswerMatch("first letter", first_letter))
    for i, (answer, prediction) in enumerate([("red", "rose"), ("blue", "green"), ("red", "rust")]):
        scorer.update(SimpleNamespace(id=str(i), answer=answer, entailed=(), types={}), prediction)
    assert scorer.compute().groups["all"] == (3, 2)
    assert sorted(set(calls)) == ["blue", "green", "red", "rose", "rust"] and len(calls) == 5  # each once


@PROPERTY
@given(st.lists(st.tuples(st.sampled_from(["query", "verify", None]), st.sampled_from(["attr", "rel", None]),
                          st.sampled_from(["a b", "a b c", None]), st.booleans()), max_size=12),
       st.integers(0, 12))
def test_merged_tallies_are_one_scorers_in_every_breakdown_and_order(rows, cut):
    questions = [SimpleNamespace(id=str(i), answer="red", entailed=(), question=text,
                                 types={"structural": s, "semantic": m} if s or m else {},
                                 semantic=[{"operation": "select", "argument": "x"}] * (i % 3))
                 for i, (s, m, text, _) in enumerate(rows)]
    predictions = ["red" if right else "blue" for *_, right in rows]
    whole, left, right = Scorer(vocabulary_match), Scorer(vocabulary_match), Scorer(vocabulary_match)
    for i, (question, prediction) in enumerate(zip(questions, predictions)):
        whole.update(question, prediction)
        (left if i < cut else right).update(question, prediction)
    expected, merged = whole.compute(), left.merge(right).compute()
    assert merged == expected
    for name, table in expected.breakdowns.items():  # the keys in first-seen order, the counts numbers
        assert list(merged.breakdowns[name]) == list(table)
        assert all(type(n) is int for tally in table.values() for n in tally)
        assert sum(tally.count for tally in table.values()) == len(rows)


def test_a_split_is_scored_in_one_pass_as_three_scorers_would():
    from nablafol.scoring import ScoringError, Split, score
    questions = [SimpleNamespace(id=str(i), answer=a, entailed=(str((i + 1) % 6),), types={"structural": s},
                                 question="a b " * (i % 3)) for i, (a, s) in
                 enumerate(zip(["yes", "red", "no", "cup", "yes", "blue"], ["verify", "query"] * 3))]
    predictions = {"0": "yes", "1": "red", "2": "yes", "3": "cups", "5": "blue"}
    split = Split(easy=("0", "2", "4"), hard=("1", "3", "5"))
    result = score(questions, predictions, split, match=vocabulary_match)

    def alone(ids):
        scorer = Scorer(vocabulary_match)
        for question in questions:
            if question.id in ids:
                scorer.update(question, predictions.get(question.id))
        return scorer.compute()

    assert (result.overall, result.hard, result.easy) == (alone("012345"), alone(split.hard), alone(split.easy))
    with pytest.raises(ScoringError, match="must be a string"):  # the question's error before the split's
        score(questions, {**predictions, "4": 4}, "not a split")
    with pytest.raises(ScoringError, match="split must be a Split"):
        score(questions, predictions, "not a split")
