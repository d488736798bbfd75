"""The eval journal's lines: what ``json.dumps`` writes for each entry (the file format, read by
``--resume`` and the merge of shards), and read back as written, whatever the text."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.pipeline.journal import FALLBACK, GUESS, PLAIN, EvalJournal

texts = st.text(max_size=12)  # any code point: quotes, backslashes, controls, astral planes
entries = st.lists(st.one_of(
    st.tuples(texts, texts, st.none(), st.sampled_from([PLAIN, GUESS, FALLBACK])),  # an answer, and its mark
    st.tuples(texts, st.none(), st.none(), st.just(PLAIN)),  # an answer of None: the general encoder's case
    st.tuples(texts, st.none(), st.tuples(texts, texts), st.just(PLAIN))), max_size=8)


@settings(max_examples=examples(60), deadline=None)
@given(chunks=st.lists(entries, min_size=1, max_size=3))
def test_each_entry_is_the_json_dumps_line_and_comes_back_as_committed(tmp_path_factory, chunks):
    path = tmp_path_factory.mktemp("journal") / "j.jsonl"
    journal = EvalJournal.start(path, {"run": 1})
    done = 0
    for chunk in chunks:
        done += len(chunk)
        journal.commit(chunk, done=done)
    journal.close()
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    expected = []
    done = 0
    for chunk in chunks:
        for question_id, prediction, skip, guessed in chunk:
            record = {"q": question_id, "p": prediction} if skip is None else \
                {"q": question_id, "skip": skip[0], "detail": skip[1]}
            if guessed:
                record["g" if guessed == GUESS else "f"] = True
            expected.append(json.dumps(record, ensure_ascii=True))
        done += len(chunk)
        expected.append(json.dumps({"done": done, "details_bytes": 0}))
    assert lines == expected
    again = EvalJournal.resume(path, {"run": 1})
    assert [e for _, c in again.chunks() for e in c] == [e for chunk in chunks for e in chunk]
    assert again.done == done
