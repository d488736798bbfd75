"""`nablafol eval` streams through a journal: outputs equal the whole-set evaluation's, a run
killed at any point resumes to byte-identical outputs without answering finished chunks again,
and a journal written with other settings or inputs is refused in one line."""
import json
import multiprocessing
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest

from nablafol.cli import main
from nablafol.pipeline.journal import EvalJournal, journal_path

N_QUESTIONS = 239  # the generated set's (some scenes yield fewer than 10)
PRELOAD = ["torch", "compiler", "dsl", "nablafol.cli", "nablafol.data", "nablafol.pipeline.answering", "nablafol.engine"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    root = tmp_path_factory.mktemp("evalresume")
    generate_dataset(root, n_train=0, n_val=24, n_testdev=0, seed=4, feature_dim=8, questions_per_scene=10)
    return root


def _argv(data, out: Path, *extra):
    return ["eval", "--questions", str(data / "val_balanced_questions.json"),
            "--scene-graphs", str(data / "val_sceneGraphs.json"), "--ontology", str(data / "ontology"),
            "--predictions", str(out / "pred.json"), "--details", str(out / "details.jsonl"),
            "--chunk-size", "16", "--batch-size", "8", *extra]


def _outputs(out: Path) -> tuple:
    return (out / "pred.json").read_bytes(), (out / "details.jsonl").read_bytes()


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    """The outputs of an uninterrupted run."""
    out = tmp_path_factory.mktemp("reference")
    assert main(_argv(data, out)) == 0
    assert not journal_path(out / "pred.json").exists()  # removed once the outputs are written
    return _outputs(out)


@pytest.mark.slow
def test_streaming_predictions_equal_the_whole_set_evaluation(data, reference, tmp_path):
    from nablafol.data import load_questions, load_scene_graphs, read_details
    from nablafol.dsl import Ontology
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.evaluation import answer_all
    from nablafol.pipeline.perception import SceneGraphPerception
    questions = load_questions(data / "val_balanced_questions.json")
    perception = SceneGraphPerception(load_scene_graphs(data / "val_sceneGraphs.json"),
                                      ontology=Ontology.from_folder(data / "ontology"))
    whole = answer_all(questions.values(), Answerer(perception, keep_outcomes=True))
    streamed = [entry for entry in json.loads(reference[0])]
    assert [e["questionId"] for e in streamed] == [q for q in questions if q in whole.predictions]  # file order
    assert {e["questionId"]: e["prediction"] for e in streamed} == whole.predictions
    (tmp_path / "d.jsonl").write_bytes(reference[1])
    details = read_details(tmp_path / "d.jsonl")
    assert {o.question_id: (o.prediction, o.answers, tuple(o.grounding)) for o in whole.outcomes} == \
        {d.question_id: (d.prediction, dict(d.answers), tuple(d.grounding)) for d in details.values()}
    assert len(questions) == N_QUESTIONS


def _full_journal(data, out: Path, monkeypatch) -> bytes:
    """The journal of a complete run (kept: the run would remove it)."""
    monkeypatch.setattr(EvalJournal, "close", lambda self, remove=False: EvalJournal._close(self))
    assert main(_argv(data, out)) == 0
    monkeypatch.undo()
    return journal_path(out / "pred.json").read_bytes()


EvalJournal._close = EvalJournal.close


def _counting_answers(monkeypatch) -> list:
    from nablafol.pipeline.answering import Answerer
    answered = []
    original = Answerer.answer_chunk
    monkeypatch.setattr(Answerer, "answer_chunk",
                        lambda self, chunk, progress=None: answered.extend(q.id for q in chunk)
                        or original(self, chunk, progress))
    return answered


@pytest.mark.slow
def test_journal_cut_at_any_byte_resumes_to_identical_outputs(data, reference, tmp_path, monkeypatch):
    """A kill can stop the journal at any byte (and the details file anywhere after its last commit)."""
    full = _full_journal(data, tmp_path / "full", monkeypatch)
    details = (tmp_path / "full" / "details.jsonl").read_bytes()
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(len(full)), 6)) + [len(full.split(b"\n")[0]) + 1, len(full)]
    for cut in cuts:
        out = tmp_path / f"cut{cut}"
        out.mkdir()
        journal_path(out / "pred.json").write_bytes(full[:cut])
        commits = [json.loads(line) for line in full[:cut].split(b"\n")[1:-1] if line.startswith(b'{"done"')]
        committed_bytes = commits[-1]["details_bytes"] if commits else 0
        # on disk before its commit: the details file holds at least what the journal says
        (out / "details.jsonl.partial").write_bytes(details[:rng.randint(committed_bytes, len(details))])
        done = commits[-1]["done"] if commits else 0
        answered = _counting_answers(monkeypatch)
        code = main(_argv(data, out, "--resume"))
        monkeypatch.undo()
        if cut <= len(full.split(b"\n")[0]):  # no whole header: not a journal
            assert code == 2
            continue
        assert code == 0
        assert _outputs(out) == reference[:2], cut
        assert len(answered) == N_QUESTIONS - done  # finished chunks were not answered again
        assert not journal_path(out / "pred.json").exists() and not (out / "details.jsonl.partial").exists()


def _eval_child(argv, started) -> None:
    from nablafol.cli import main as cli_main
    started.set()
    os._exit(cli_main(argv))


@pytest.fixture(scope="module")
def processes():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _commits(journal: Path) -> int:
    """How many chunks the journal says are done (its commit lines)."""
    if not journal.exists():
        return 0
    return sum(line.startswith(b'{"done"') for line in journal.read_bytes().split(b"\n"))


def _run_child(processes, argv, journal: Path, kill_at_commits: int) -> int:
    """Run an eval in a child process and kill it once its journal holds ``kill_at_commits``
    commits (0: as soon as it starts): the moment is an event of the run, not a time."""
    started = processes.Event()
    child = processes.Process(target=_eval_child, args=(argv, started))
    child.start()
    assert started.wait(timeout=60)
    while child.is_alive() and _commits(journal) < kill_at_commits:
        time.sleep(0.002)  # polled: the commit is written by the child
    child.kill()
    child.join(timeout=120)
    return child.exitcode


@pytest.mark.slow
def test_random_kills_then_resume_end_byte_identical(data, reference, processes, tmp_path, monkeypatch):
    out = tmp_path / "killed"
    out.mkdir()
    rng = random.Random(20261123)
    journal = journal_path(out / "pred.json")
    kills = 0
    for _ in range(4):
        # killed before its first commit, or one to three commits on: never near the last chunk
        at = _commits(journal) + rng.choice([0, 1, 2, 3])
        code = _run_child(processes, _argv(data, out, "--resume"), journal, at)
        assert code in (0, -signal.SIGKILL)
        kills += code == -signal.SIGKILL
        if kills == 2 or (code == 0 and kills):
            break
    assert kills >= 1
    if code != 0:  # the last kill left work to finish: finish it here, counting what is answered
        # a kill at the child's start can land before it has begun its journal: nothing done yet
        done = 0
        if journal.exists():
            settings = json.loads(journal.read_text(encoding="utf-8").split("\n")[0])["settings"]
            done = EvalJournal.resume(journal, settings).done
        answered = _counting_answers(monkeypatch)
        assert main(_argv(data, out, "--resume")) == 0
        assert len(answered) == N_QUESTIONS - done  # finished chunks were not answered again
    assert _outputs(out) == reference[:2]


@pytest.mark.slow
def test_a_journal_of_other_settings_or_inputs_is_refused_in_one_line(data, tmp_path, monkeypatch, capsys):
    _full_journal(data, tmp_path, monkeypatch)
    capsys.readouterr()
    assert main(_argv(data, tmp_path, "--resume", "--threshold", "0.7")) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "other settings (threshold)" in err
    (tmp_path / "details.jsonl.partial").write_bytes(b"")  # lost: shorter than the journal says
    assert main(_argv(data, tmp_path, "--resume")) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "shorter than" in err
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    questions = copy / "val_balanced_questions.json"
    moved = tmp_path / "moved_questions.json"
    shutil.copy(questions, moved)
    argv = _argv(data, tmp_path, "--resume")
    argv[argv.index("--questions") + 1] = str(moved)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "other settings (questions)" in err
    assert not (tmp_path / "pred.json").with_suffix(".json.tmp").exists()


@pytest.mark.slow
def test_resume_without_a_journal_starts_from_the_first_question(data, reference, tmp_path, capsys):
    assert main(_argv(data, tmp_path, "--resume")) == 0
    assert "starting from the first question" in capsys.readouterr().out
    assert _outputs(tmp_path) == reference[:2]


def test_a_question_id_given_twice_is_refused_in_one_line(data, tmp_path, capsys):
    text = (data / "val_balanced_questions.json").read_text()
    records = json.loads(text)
    first = next(iter(records))
    twice = "{" + ",".join(json.dumps(k) + ":" + json.dumps(v) for k, v in records.items()) + "," + \
        json.dumps(first) + ":" + json.dumps(records[first]) + "}"
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    (copy / "val_balanced_questions.json").write_text(twice)
    assert main(_argv(copy, tmp_path)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("nablafol")]
    assert len(err) == 1 and f"question {first}" in err[0] and "appears twice" in err[0]
    assert not (tmp_path / "pred.json").exists()


# --- workers ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_workers_give_byte_identical_outputs(data, reference, tmp_path):
    # a chunk is batched the same way in whichever process answers it
    import gc
    assert main(_argv(data, tmp_path, "--workers", "2")) == 0
    assert _outputs(tmp_path) == reference[:2]
    assert gc.get_freeze_count() == 0  # nothing left out of the collector's sight after the run


@pytest.mark.slow
def test_a_worker_that_dies_is_one_line_then_resume_finishes_identically(data, reference, tmp_path,
                                                                          monkeypatch, capsys):
    from nablafol.data import load_questions
    from nablafol.pipeline.answering import Answerer
    ids = list(load_questions(data / "val_balanced_questions.json"))
    fatal = ids[16 * 5]  # the first question of the sixth chunk (chunks of 16)
    original = Answerer.answer_chunk

    def dies_on_the_sixth_chunk(self, chunk, progress=None):
        if chunk[0].id == fatal:
            os.kill(os.getpid(), signal.SIGKILL)  # in the worker (forked with this patch)
        return original(self, chunk, progress)

    monkeypatch.setattr(Answerer, "answer_chunk", dies_on_the_sixth_chunk)
    assert main(_argv(data, tmp_path, "--workers", "2")) == 2
    err = _error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "worker process ended without answering" in err[0]
    settings = json.loads(journal_path(tmp_path / "pred.json").read_text(encoding="utf-8").split("\n")[0])["settings"]
    done = EvalJournal.resume(journal_path(tmp_path / "pred.json"), settings).done
    assert 0 < done <= 16 * 5  # what was committed before the death stays; nothing after it
    monkeypatch.undo()
    assert main(_argv(data, tmp_path, "--resume")) == 0  # another worker count may resume
    assert _outputs(tmp_path) == reference[:2]


def test_a_bad_scene_found_by_a_worker_is_one_line(data, tmp_path, capsys):
    # with workers, scenes stay text until used: a broken one is reported by the worker that reads it
    graphs = json.loads((data / "val_sceneGraphs.json").read_text())
    image = next(iter(graphs))
    first_object = next(iter(graphs[image]["objects"].values()))
    first_object["w"] = -3
    (tmp_path / "sg.json").write_text(json.dumps(graphs))
    argv = _argv(data, tmp_path, "--workers", "2")
    argv[argv.index("--scene-graphs") + 1] = str(tmp_path / "sg.json")
    assert main(argv) == 2
    err = _error_lines(capsys.readouterr().err)
    assert len(err) == 1 and f"(image {image}, object " in err[0] and "w must be >= 0, found -3" in err[0]


def test_workers_refuse_a_device_other_than_the_cpu(data, tmp_path, capsys):
    assert main(_argv(data, tmp_path, "--workers", "2", "--device", "meta")) == 2
    err = _error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "--workers 2 runs on the CPU only" in err[0]


def _error_lines(err: str) -> list[str]:
    """What the command said besides its progress lines."""
    return [line for line in err.splitlines() if line.strip() and not line.startswith("eval ")]


# --- the garbage collector (nablafol.pipeline.collector) -------------------------------------------------

def test_eval_runs_with_the_collector_off_and_restores_it_after(data, reference, tmp_path, monkeypatch, capsys):
    import gc
    import nablafol.pipeline.evaluation as evaluation
    from nablafol.pipeline.answering import Answerer
    seen = {}
    original, answer = evaluation._answerer, Answerer._answer

    def watched(job, *rest):
        seen["loading"] = gc.isenabled()
        return original(job, *rest)

    def answering(self, batch, planned):
        seen.setdefault("answering", set()).add(gc.isenabled())
        return answer(self, batch, planned)

    monkeypatch.setattr(evaluation, "_answerer", watched)
    monkeypatch.setattr(Answerer, "_answer", answering)
    before = gc.get_threshold()
    assert gc.isenabled()
    assert main(_argv(data, tmp_path)) == 0
    assert seen == {"loading": False, "answering": {False}}
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == (True, before, 0)
    assert _outputs(tmp_path) == reference[:2]
    # and after a run that fails while loading
    argv = _argv(data, tmp_path)
    argv[argv.index("--scene-graphs") + 1] = str(tmp_path / "missing.json")
    assert main(argv) == 2
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == (True, before, 0)
    assert len(_error_lines(capsys.readouterr().err)) == 1
