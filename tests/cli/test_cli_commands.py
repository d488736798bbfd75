"""The `nablafol` command as a user meets it: outputs, exit statuses, one-line errors."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nablafol.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
EVERY = FIX / "every_operation"


def run_cli(*args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_prints_ast_dfol_and_fol(capsys):
    code, out, _ = run_cli("parse", "select: chair->relate: _,to the left of,s [0]->exist: ? [1]", capsys=capsys)
    assert code == 0
    assert "[1] relate" in out
    assert "DFOL: A_∃(Relate_{to_the_left_of,∃}[Filter_chair[1]])" in out
    assert "FOL:  ∃X ∃Y: to_the_left_of(X, Y) ∧ chair(Y)" in out


def test_parse_error_is_one_line_with_the_column(capsys):
    code, out, err = run_cli("parse", "select: chair->exist: ? [4]", capsys=capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "column" in err and "Traceback" not in err


def test_eval_writes_predictions_details_and_prints_scores(tmp_path, capsys):
    preds, details = tmp_path / "p.json", tmp_path / "d.jsonl"
    code, out, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs",
                             EVERY / "sceneGraphs.json", "--predictions", preds, "--details", details,
                             "--knowledge", "sample", capsys=capsys)
    assert code == 0, err
    predictions = json.loads(preds.read_text())
    assert len(predictions) == 39 and {"questionId", "prediction"} == set(predictions[0])
    lines = [json.loads(line) for line in details.read_text().splitlines()]
    assert {"questionId", "prediction", "answers", "grounding", "formula"} <= set(lines[0])
    assert "All      100.00%" in out and "39 questions, 39 answered, 0 skipped" in out


def test_eval_lists_skips_and_strict_fails(tmp_path, capsys):
    preds = tmp_path / "p.json"
    args = ["eval", "--questions", EVERY / "questions.json", "--scene-graphs", EVERY / "sceneGraphs.json",
            "--predictions", preds]
    code, out, _ = run_cli(*args, capsys=capsys)
    assert code == 0 and "skipped 1 questions (counted wrong): 1 unknown concept" in out
    assert "op38: unknown concept" in out
    skipped = json.loads(preds.with_suffix(".skipped.json").read_text())
    assert skipped[0]["questionId"] == "op38"
    code, _, _ = run_cli(*args, "--strict", capsys=capsys)
    assert code == 2


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    ("{not json", "JSON"),
    ("[1, 2]", "object"),
])
def test_unusable_questions_file_is_one_line_exit_2(tmp_path, capsys, content, message):
    q = tmp_path / "q.json"
    if content is not None:
        q.write_text(content)
    code, out, err = run_cli("eval", "--questions", q, "--scene-graphs", EVERY / "sceneGraphs.json",
                             "--predictions", tmp_path / "p.json", capsys=capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and str(q) in err and message in err
    assert "Traceback" not in err


def test_unusable_scene_graphs_is_one_line_exit_2(tmp_path, capsys):
    sg = tmp_path / "sg.json"
    sg.write_text(json.dumps({"img": {"width": 10, "height": 10, "objects": {"1": {"name": "cup", "x": 0, "y": 0,
                                                                                     "w": "wide", "h": 2}}}}))
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs", sg,
                           "--predictions", tmp_path / "p.json", capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(sg) in err


def test_features_without_model_is_a_usage_error(tmp_path, capsys):
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--features", FIX / "features",
                           "--predictions", tmp_path / "p.json", capsys=capsys)
    assert code == 2 and "--model" in err


def test_split_then_score(tmp_path, capsys):
    preds, split, scores = tmp_path / "p.json", tmp_path / "split.json", tmp_path / "scores.json"
    base = {qid: ("yes" if i % 3 else "wrong") for i, qid in enumerate(sorted(json.loads((EVERY / "questions.json").read_text())))}
    preds.write_text(json.dumps([{"questionId": k, "prediction": v} for k, v in base.items()]))
    code, out, _ = run_cli("split", "--questions", EVERY / "questions.json", "--predictions", preds, "--out", split,
                           capsys=capsys)
    assert code == 0
    data = json.loads(split.read_text())
    assert len(data["easy"]) + len(data["hard"]) == 39 and data["base"] == str(preds)
    code, out, _ = run_cli("score", "--questions", EVERY / "questions.json", "--predictions", preds, "--split", split,
                           "--json", scores, capsys=capsys)
    assert code == 0 and "Acc_h" in out
    result = json.loads(scores.read_text())
    assert result["hard"]["all"]["accuracy"] == 0.0 and result["easy"]["all"]["error"] == 0.0


def test_console_script_is_installed():
    # where pip put the scripts of the interpreter running the tests: PATH holds it only when the
    # environment is activated, and the tests may run as .venv/bin/python -m pytest
    import shutil
    import sysconfig
    exe = shutil.which("nablafol", path=sysconfig.get_path("scripts"))
    assert exe is not None, f"no nablafol console script in {sysconfig.get_path('scripts')} (pip install -e .)"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "parse" in out.stdout and "eval" in out.stdout


@pytest.mark.parametrize("args,message", [
    (["--batch-size", "0"], "at least 1"),
    (["--batch-size", "-3"], "at least 1"),
    (["--threshold", "nan"], "in [0, 1]"),
    (["--threshold", "2"], "in [0, 1]"),
    (["--details-top", "-1"], "0 or more"),
    (["--exact-budget", "25"], "from 0 to 24, got 25"),  # the engine's own range, said as the option
    (["--exact-budget", "-1"], "from 0 to 24"),
    (["--shard", "x"], "not 'x'"),  # what was given, not an internal placeholder
    (["--shard", "3/2"], "not '3/2'"),
])
def test_eval_refuses_bad_option_values(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(["eval", "--questions", str(EVERY / "questions.json"), "--scene-graphs", str(EVERY / "sceneGraphs.json"),
              "--predictions", str(tmp_path / "p.json")] + args)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_outputs_that_are_folders_are_refused_before_any_work(tmp_path, capsys):
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs", EVERY / "sceneGraphs.json",
                           "--predictions", tmp_path, capsys=capsys)
    assert code == 2 and "is a folder" in err
    code, _, err = run_cli("split", "--questions", EVERY / "questions.json", "--predictions", tmp_path / "x.json",
                           "--out", tmp_path, capsys=capsys)
    assert code == 2 and "is a folder" in err and not list(tmp_path.parent.glob(tmp_path.name + ".tmp"))


def test_an_output_that_would_replace_an_input_or_another_output_is_refused_before_any_work(tmp_path, capsys):
    """Nothing a user gave is lost: an output path that names an input (by any name), another
    output, or a file inside the questions folder (read whole) is refused in one line, the
    input untouched and no journal left behind."""
    import os
    questions, graphs = tmp_path / "q.json", tmp_path / "sg.json"
    questions.write_bytes((EVERY / "questions.json").read_bytes())
    graphs.write_bytes((EVERY / "sceneGraphs.json").read_bytes())
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "part1.json").write_bytes(questions.read_bytes())
    os.link(graphs, tmp_path / "hard.json")
    before = {p: p.read_bytes() for p in (questions, graphs)}
    base = ["eval", "--questions", questions, "--scene-graphs", graphs]
    cases = [
        (base + ["--predictions", questions], "is also --questions"),
        (base + ["--predictions", tmp_path / "." / "sg.json"], "is also --scene-graphs"),
        (base + ["--predictions", tmp_path / "hard.json"], "is also --scene-graphs"),  # the same file, another name
        (base + ["--predictions", tmp_path / "p.json", "--details", tmp_path / "p.json"], "is also --predictions"),
        (base + ["--predictions", tmp_path / "p.json", "--details", tmp_path / "d.jsonl", "--attentions", questions],
         "is also --questions"),
        (base + ["--predictions", tmp_path / "p.json", "--skipped", graphs], "is also --scene-graphs"),
        (["eval", "--questions", tmp_path / "q", "--scene-graphs", graphs, "--predictions", tmp_path / "q" / "p.json"],
         "is inside the folder of --questions"),
        (["score", "--questions", questions, "--predictions", tmp_path / "p0.json", "--json", questions],
         "is also --questions"),
        (["split", "--questions", questions, "--predictions", tmp_path / "p0.json", "--out", tmp_path / "p0.json"],
         "is also --predictions"),
        (["vocabulary", "--questions", questions, "--json", questions], "is also --questions"),
    ]
    (tmp_path / "p0.json").write_text("[]")
    for argv, message in cases:
        code, out, err = run_cli(*argv, capsys=capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (argv, err)
        assert {p: p.read_bytes() for p in before} == before
        assert not list(tmp_path.rglob("*.journal")) and not (tmp_path / "q" / "p.json").exists()


def test_the_files_eval_derives_never_replace_an_input_either(tmp_path, capsys):
    """The journal (OUT.journal), the default skipped list (OUT.skipped.json) and the details'
    part file are outputs too; a scene-graphs folder is read whole as a questions folder is; a
    compressed knowledge file is one line, with no journal left (found by a reviewer)."""
    import gzip
    graphs = (EVERY / "sceneGraphs.json").read_bytes()
    base = ["eval", "--questions", EVERY / "questions.json"]
    (tmp_path / "sgdir").mkdir()
    (tmp_path / "sgdir" / "sg.json").write_bytes(graphs)
    cases = [("a.json.journal", "a.json", [], "is also --scene-graphs"),
             ("b.skipped.json", "b.json", [], "is also --scene-graphs"),
             ("d.jsonl.partial", "c.json", ["--details", tmp_path / "d.jsonl"], "is also --scene-graphs"),
             (None, "sgdir/p.json", [], "is inside the folder of --scene-graphs")]
    for name, predictions, extra, message in cases:
        path = tmp_path / name if name else tmp_path / "sgdir"
        if name:
            path.write_bytes(graphs)
        code, _, err = run_cli(*base, "--scene-graphs", path, "--predictions", tmp_path / predictions, *extra,
                               capsys=capsys)
        assert code == 2 and message in err, err
        assert path.is_dir() or path.read_bytes() == graphs  # the input untouched, not removed
    code, _, err = run_cli(*base, "--scene-graphs", tmp_path / "sgdir" / "sg.json", "--predictions",
                           tmp_path / "e.json", "--skipped", tmp_path / "e.json.journal", capsys=capsys)
    assert code == 2 and "is also the journal of --predictions" in err
    knowledge = tmp_path / "kg.tsv"
    knowledge.write_bytes(gzip.compress(b"cat\tIsA\tanimal\n"))
    code, _, err = run_cli(*base, "--scene-graphs", tmp_path / "sgdir" / "sg.json", "--knowledge", knowledge,
                           "--predictions", tmp_path / "k.json", capsys=capsys)
    assert code == 2 and "is gzip-compressed" in err and not list(tmp_path.glob("k.json*"))


def test_a_device_or_a_pipe_is_refused_as_an_output_and_a_link_is_written_through(tmp_path, capsys):
    import os
    from nablafol.data.files import write_text
    from nablafol.errors import InputFileError
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    base = ["eval", "--questions", EVERY / "questions.json", "--scene-graphs", EVERY / "sceneGraphs.json"]
    for target in (pipe, Path(os.devnull)):
        link = tmp_path / f"link-{target.name}"
        link.symlink_to(target)
        for out in (target, link):
            code, _, err = run_cli(*base, "--predictions", out, capsys=capsys)
            assert code == 2 and "not a regular file" in err, err
            assert link.is_symlink() and not target.is_file()  # nothing replaced by a file
        with pytest.raises(InputFileError, match="not a regular file"):  # the library's one writer too
            write_text(link, "[]")
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "to-real.json"
    link.symlink_to(real)
    code, _, _ = run_cli(*base, "--predictions", link, capsys=capsys)
    assert code == 0 and link.is_symlink() and json.loads(real.read_text())  # the link kept, its file written
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "later" / "p.json")  # its target's folder made before the work, as any output's
    code, _, err = run_cli(*base, "--predictions", dangling, capsys=capsys)
    assert code == 0 and json.loads((tmp_path / "later" / "p.json").read_text()), err


def test_a_refused_input_leaves_no_journal_to_refuse_the_next_run(tmp_path, capsys):
    graphs = tmp_path / "sg.json"
    graphs.write_text('{"1": {"width": 10, "height": 10, "objects": {"2": {"name": "cat", "x": "left"}}}}')
    out, details = tmp_path / "p.json", tmp_path / "d.jsonl"
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs", graphs,
                           "--predictions", out, "--details", details, capsys=capsys)
    assert code == 2 and str(graphs) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sg.json"]  # no journal, no details part
    code, _, err = run_cli("eval", "--questions", tmp_path / "sg.json", "--scene-graphs", graphs,
                           "--predictions", out, "--format", "gqa", capsys=capsys)
    assert code == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["sg.json"]
    listed = tmp_path / "list.json"
    listed.write_text('[{"question": "Is it red?"}]')
    code, _, err = run_cli("eval", "--questions", listed, "--scene-graphs", EVERY / "sceneGraphs.json",
                           "--predictions", out, capsys=capsys)
    assert code == 2 and "give --format" in err  # eval's option, not score's --benchmark


def test_names_and_values_of_any_script_are_asked_about(tmp_path, capsys):
    """The vocabulary is open: a scene graph may name a "café" that is "weiß", and a program may
    ask about it (the grammar's words were ASCII: such a question was skipped as malformed)."""
    graphs = {"img": {"width": 100, "height": 100, "objects": {
        "1": {"name": "café", "x": 1, "y": 1, "w": 10, "h": 10, "attributes": ["weiß"], "relations": []},
        "2": {"name": "tür", "x": 50, "y": 1, "w": 10, "h": 10, "attributes": [], "relations": []}}}}
    record = {"imageId": "img", "question": "", "entailed": [], "equivalent": [], "types": {}, "isBalanced": True}
    questions = {
        "white": {**record, "answer": "yes", "semanticStr": "select: café (1)->verify color: weiß [0]",
                  "semantic": [{"operation": "select", "dependencies": [], "argument": "café (1)"},
                               {"operation": "verify color", "dependencies": [0], "argument": "weiß"}]},
        "door": {**record, "answer": "no", "semanticStr": "select: tür (2)->verify color: weiß [0]",
                 "semantic": [{"operation": "select", "dependencies": [], "argument": "tür (2)"},
                              {"operation": "verify color", "dependencies": [0], "argument": "weiß"}]}}
    (tmp_path / "q.json").write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "sg.json").write_text(json.dumps(graphs, ensure_ascii=False), encoding="utf-8")
    code, out, err = run_cli("eval", "--questions", tmp_path / "q.json", "--scene-graphs", tmp_path / "sg.json",
                             "--predictions", tmp_path / "p.json", "--strict", capsys=capsys)
    assert code == 0, err
    predictions = {p["questionId"]: p["prediction"] for p in json.loads((tmp_path / "p.json").read_text())}
    assert predictions == {"white": "yes", "door": "no"}


def test_an_answer_without_evidence_is_counted_as_a_guess(tmp_path, capsys, monkeypatch):
    """An open question whose every candidate has probability 0 (the fixture's question 20968248
    asks where a scene without a location is) still gets a prediction, as GQA wants one, but the
    summary counts it as guessed, with or without details, and after a resume from the journal
    (where a guess is marked); a yes/no answer is never a guess."""
    from nablafol.pipeline.journal import VERSION, EvalJournal, journal_path
    details = tmp_path / "d.jsonl"
    argv = ("eval", "--questions", FIX / "val_balanced_questions.json", "--scene-graphs", FIX / "val_sceneGraphs.json",
            "--predictions", tmp_path / "p.json", "--chunk-size", "3")
    code, out, err = run_cli(*argv, "--details", details, capsys=capsys)
    assert code == 0, err
    lines = [json.loads(line) for line in details.read_text().splitlines()]
    guesses = [d["questionId"] for d in lines if not any(d["answers"].values())]
    assert "20968248" in guesses and all(set(d["answers"]) != {"yes", "no"} for d in lines if d["questionId"] in guesses)
    counted = f"guessed answers: {len(guesses):,} (every candidate at probability 0"
    assert counted in out
    closing = EvalJournal.close
    monkeypatch.setattr(EvalJournal, "close", lambda self, remove=False: closing(self))  # the journal kept
    code, out, err = run_cli(*argv, capsys=capsys)
    monkeypatch.undo()
    assert code == 0 and counted in out, err
    journal = journal_path(tmp_path / "p.json").read_text().splitlines()
    marked = [json.loads(line)["q"] for line in journal if '"g": true' in line]
    assert sorted(marked) == sorted(guesses)
    code, out, err = run_cli(*argv, "--resume", capsys=capsys)  # every chunk read back from the journal
    assert code == 0 and f"{len(lines)} read from the journal" in out and counted in out, err
    # a journal of a version before the last mark (guesses, presupposition fallbacks) would count
    # none of them: refused, not read
    older = VERSION - 1
    journal_path(tmp_path / "p.json").write_text("\n".join([journal[0].replace(f'"version": {VERSION}',
                                                                                f'"version": {older}')]
                                                             + journal[1:]) + "\n")
    code, out, err = run_cli(*argv, "--resume", capsys=capsys)
    assert code == 2 and f"journal of version {older}" in err and "without --resume" in err and out == ""


def test_unavailable_device_is_one_line(tmp_path, capsys):
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs", EVERY / "sceneGraphs.json",
                           "--predictions", tmp_path / "p.json", "--device", "nosuchdevice", capsys=capsys)
    assert code == 2 and "--device nosuchdevice" in err and len(err.strip().splitlines()) == 1


def test_score_with_a_binary_split_file_is_one_line(tmp_path, capsys):
    split = tmp_path / "split.json"
    split.write_bytes(b"\xff\xfe\x00")
    preds = tmp_path / "p.json"
    preds.write_text("[]")
    code, _, err = run_cli("score", "--questions", EVERY / "questions.json", "--predictions", preds, "--split", split,
                           capsys=capsys)
    assert code == 2 and str(split) in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [("select: chair->query: nonsense [0]",),
                                  ("select: chair->exist: ? [0]", "--ontology", "no/such/folder")])
def test_parse_says_nothing_but_the_refusal_when_it_cannot_compile(argv, capsys):
    """A program that reads but does not compile (an unknown type), or a missing ontology: one
    line on stderr and nothing on stdout (the AST was printed before the refusal)."""
    code, out, err = run_cli("parse", *argv, capsys=capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_generate_refuses_impossible_scene_sizes(tmp_path, capsys):
    code, _, err = run_cli("generate", "--out", tmp_path / "g", "--objects", "5", "2", capsys=capsys)
    assert code == 2 and "objects per scene" in err


def test_generate_never_replaces_a_folder_it_did_not_write(tmp_path, capsys):
    """A folder holding a user's files (here real GQA questions of the name generate writes) is
    refused, untouched; a folder an earlier generate wrote is written again."""
    user = tmp_path / "gqa"
    user.mkdir()
    mine = user / "train_balanced_questions.json"
    mine.write_bytes((FIX / "val_balanced_questions.json").read_bytes())
    small = ("--train", "2", "--val", "1", "--testdev", "0", "--feature-dim", "4")
    code, _, err = run_cli("generate", "--out", user, *small, capsys=capsys)
    assert code == 2 and "no dataset_card.json of an earlier generate" in err and len(err.strip().splitlines()) == 1
    assert mine.read_bytes() == (FIX / "val_balanced_questions.json").read_bytes() and len(list(user.iterdir())) == 1
    code, _, err = run_cli("generate", "--out", tmp_path / "new", *small, capsys=capsys)
    assert code == 0, err
    code, _, err = run_cli("generate", "--out", tmp_path / "new", *small, "--seed", "3", capsys=capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "new" / "dataset_card.json").read_text())["seed"] == 3


def test_a_generate_stopped_half_way_leaves_a_folder_generate_writes_again(tmp_path, capsys):
    """Sizes the machine cannot hold (a billion feature dimensions: 551 GiB) stop generate after its
    questions are written: one line, and the folder is marked as generate's (an unfinished card),
    so the next run with sane sizes writes it."""
    small = ("--train", "2", "--val", "1", "--testdev", "0")
    code, _, err = run_cli("generate", "--out", tmp_path / "g", *small, "--feature-dim", "1000000000", capsys=capsys)
    said = [line for line in err.splitlines() if not line.startswith("generate [")]  # the progress lines
    assert code == 2 and len(said) == 1 and "not enough memory" in said[0] and "Traceback" not in err
    assert json.loads((tmp_path / "g" / "dataset_card.json").read_text())["complete"] is False
    code, _, err = run_cli("generate", "--out", tmp_path / "g", *small, "--feature-dim", "4", capsys=capsys)
    assert code == 0, err
    assert "complete" not in json.loads((tmp_path / "g" / "dataset_card.json").read_text())


@pytest.mark.parametrize("argv, option", [
    (("train", "--data", "d", "--out", "o", "--seed", str(2**63)), "--seed"),
    (("generate", "--out", "o", "--seed", str(2**70)), "--seed"),
    (("parser", "train", "--questions", "q", "--out", "o", "--seed", str(2**64)), "--seed"),
    (("answer", "--parser", "p", "--scene-graphs", "s", "--image", "1", "hi", "--threads", "100000"), "--threads"),
    (("demo", "--out", "o", "--threads", "5000"), "--threads"),
    (("generate", "--out", "o", "--noise", "1e308"), "--noise")])
def test_options_beyond_what_torch_takes_are_refused_by_the_parser(argv, option, capsys):
    """A seed torch.manual_seed cannot take, threads that crashed torch (a segfault at 100,000),
    feature noise that overflows float32: one argparse line, before any work."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"argument {option}: must be" in err and "Traceback" not in err


def test_eval_writes_the_official_attentions_file_from_its_details(tmp_path, capsys):
    from nablafol.data import load_scene_graphs, read_details
    from nablafol.data.attentions import read_attentions, scene_graph_regions
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
    args = ["eval", "--questions", str(fixtures / "val_balanced_questions.json"), "--scene-graphs",
            str(fixtures / "val_sceneGraphs.json"), "--predictions", str(tmp_path / "p.json")]
    assert main(args + ["--attentions", str(tmp_path / "a.json")]) == 2
    assert "--attentions is written from the details" in capsys.readouterr().err
    assert main(args + ["--details", str(tmp_path / "d.jsonl"), "--attentions", str(tmp_path / "a.json")]) == 0
    details = read_details(tmp_path / "d.jsonl")
    attentions = read_attentions(tmp_path / "a.json")
    assert list(attentions) == list(details)  # one entry per answered question, in order
    graphs = load_scene_graphs(fixtures / "val_sceneGraphs.json")
    from nablafol.data import load_questions
    image_of = {q.id: q.image_id for q in load_questions(fixtures / "val_balanced_questions.json").values()}
    for question_id, entry in attentions.items():
        weights = details[question_id].extra["attention"]
        regions = scene_graph_regions(graphs[image_of[question_id]])
        total = sum(weights.values())
        assert len(entry.regions) == len(weights)
        for (x0, y0, x1, y1, a), (object_id, w) in zip(entry.regions, weights.items()):
            assert (x0, y0, x1, y1) == pytest.approx(regions[object_id])
            assert a == pytest.approx(w / total if total else w)


def test_the_installed_command_exits_with_mains_status_and_freezes_what_it_made(monkeypatch):
    # the command's process ends right after: its objects are frozen out of the interpreter's last
    # collection (seconds at GQA scale), and main's exit status is the process's
    import gc

    import nablafol.cli as cli
    monkeypatch.setattr(cli, "main", lambda argv=None: 3)
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as exited:
            cli.entry()
        assert exited.value.code == 3 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


# --- `nablafol train` / `nablafol calibrate`: what a user gave is never lost, bad input is one line ---

TRAIN = ["--epochs", "1", "--hidden", "4", "--batch-size", "16"]


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    folder = tmp_path_factory.mktemp("train-guards") / "data"
    generate_dataset(folder, n_train=8, n_val=3, n_testdev=1, seed=5, feature_dim=16, questions_per_scene=5)
    return folder


@pytest.fixture(scope="module")
def trained(tiny_set, tmp_path_factory):
    """A model folder trained once (tests copy it before writing into it)."""
    out = tmp_path_factory.mktemp("trained") / "m"
    assert main(["train", "--data", str(tiny_set), "--out", str(out), *TRAIN]) == 0
    return out


def _one_line(code, err, *words):
    """Exit status 2 and one line on stderr besides the progress bar's (off a terminal, a line a decile)."""
    lines = [line for line in err.strip().splitlines() if not line.startswith(("train [", "calibrate ["))]
    assert code == 2 and "Traceback" not in err and len(lines) == 1, err
    assert all(w in err for w in words), err


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.slow
def test_train_refuses_an_out_folder_that_holds_a_trained_model(trained, tiny_set, tmp_path, capsys):
    import shutil
    out = tmp_path / "m"
    shutil.copytree(trained, out)
    (out / "calibrator.json").write_text("{}")  # a calibrator a new oracle would silently inherit
    before = _snapshot(out)
    code, _, err = run_cli("train", "--data", tiny_set, "--out", out, *TRAIN, capsys=capsys)
    _one_line(code, err, str(out), "already holds a trained model", "--resume")
    assert _snapshot(out) == before
    resume = ("train", "--data", tiny_set, "--out", out, *TRAIN, "--epochs", "2", "--resume")
    code, _, err = run_cli(*resume, capsys=capsys)  # training on would leave the calibrator to other weights
    _one_line(code, err, "calibrator.json", "this oracle was calibrated", "calibrate again")
    assert _snapshot(out) == before
    (out / "calibrator.json").rename(tmp_path / "calibrator.json")
    (out / "calibrator_state.pt").write_bytes(b"")  # what an interrupted calibration leaves alone
    code, _, err = run_cli(*resume, capsys=capsys)
    _one_line(code, err, "calibrator_state.pt", "this oracle was calibrated")
    (out / "calibrator_state.pt").unlink()
    code, _, err = run_cli(*resume, capsys=capsys)
    assert code == 0, err


@pytest.mark.parametrize("questions", ["{}", "every image absent"])
def test_train_on_no_usable_question_is_refused_and_writes_nothing(tiny_set, tmp_path, capsys, questions):
    q = tmp_path / "q.json"
    if questions == "{}":
        q.write_text("{}")
        want = "no question to train on: 0 read"
    else:
        data = json.loads((tiny_set / "train_balanced_questions.json").read_text())
        for entry in data.values():
            entry["imageId"] = "absent"
        q.write_text(json.dumps(data))
        want = f"no question to train on: {len(data)} read, all skipped ({len(data)} no scene)"
    code, _, err = run_cli("train", "--questions", q, "--features", tiny_set / "features", "--out", tmp_path / "m",
                           *TRAIN, capsys=capsys)
    _one_line(code, err, str(q), want)
    assert not (tmp_path / "m").exists()


def test_train_validation_says_how_many_it_skipped_and_why(tiny_set, tmp_path, capsys):
    val = json.loads((tiny_set / "val_balanced_questions.json").read_text())
    for entry in val.values():
        entry["imageId"] = "absent"
    (tmp_path / "v.json").write_text(json.dumps(val))
    code, out, err = run_cli("train", "--questions", tiny_set / "train_balanced_questions.json", "--features",
                             tiny_set / "features", "--val-questions", tmp_path / "v.json", "--out", tmp_path / "m",
                             *TRAIN, capsys=capsys)
    assert code == 0, err
    assert f"validation accuracy 0.00% ({len(val)} of {len(val)} validation questions skipped, counted wrong: " \
           f"{len(val)} no scene)" in out
    record = json.loads((tmp_path / "m" / "metrics.jsonl").read_text().splitlines()[0])
    assert record["extra"]["val_skipped"] == {"no scene": len(val)}


@pytest.mark.parametrize("where", ["questions folder", "questions subfolder", "scene-graphs folder", "data",
                                   "features", "ontology", "a written name"])
def test_train_refuses_an_out_folder_that_is_or_is_inside_an_input(tiny_set, tmp_path, capsys, where):
    import shutil
    folder = tmp_path / "q"
    folder.mkdir()
    shutil.copy(tiny_set / "train_balanced_questions.json", folder)
    base = ["--features", tiny_set / "features", "--questions", folder]
    args, out = {
        "questions folder": (base, folder),
        "questions subfolder": (base, folder / "m"),
        "scene-graphs folder": (["--data", tiny_set, "--scene-graphs", folder], folder),
        "data": (["--data", tiny_set], tiny_set),
        "features": (["--data", tiny_set], tiny_set / "features"),
        "ontology": (["--data", tiny_set], tiny_set / "ontology"),
        "a written name": (["--features", tiny_set / "features", "--questions", tmp_path / "m" / "metrics.jsonl"],
                           tmp_path / "m"),
    }[where]
    if where == "a written name":
        (tmp_path / "m").mkdir()
        shutil.copy(tiny_set / "train_balanced_questions.json", tmp_path / "m" / "metrics.jsonl")
    before = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) + sorted(tiny_set.rglob("*")) if p.is_file()}
    code, _, err = run_cli("train", *args, "--out", out, *TRAIN, capsys=capsys)
    _one_line(code, err, f"--out {out}", "give another --out")
    after = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) + sorted(tiny_set.rglob("*")) if p.is_file()}
    assert after == before


@pytest.mark.parametrize("lr, said", [("1e300", "training diverged: non-finite"),  # weights inf
                                      ("1e8", "training may have diverged")])  # weights finite, outputs NaN
def test_train_that_diverges_says_so_and_saves_nothing(tiny_set, tmp_path, capsys, lr, said):
    code, _, err = run_cli("train", "--data", tiny_set, "--out", tmp_path / "m", *TRAIN, "--lr", lr, capsys=capsys)
    _one_line(code, err, said, "lower --lr")
    assert not (tmp_path / "m" / "config.json").exists()


def test_calibrate_refuses_to_replace_a_calibrator_and_to_train_on_nothing(trained, tiny_set, tmp_path, capsys):
    import shutil
    model = tmp_path / "m"
    shutil.copytree(trained, model)
    (tmp_path / "empty.json").write_text("{}")
    code, _, err = run_cli("calibrate", "--questions", tmp_path / "empty.json", "--features", tiny_set / "features",
                           "--model", model, "--epochs", "1", capsys=capsys)
    _one_line(code, err, "no question to train on: 0 read")
    assert not (model / "calibrator.json").exists()
    code, _, err = run_cli("calibrate", "--data", tiny_set, "--model", model, "--epochs", "1", "--batch-size", "16",
                           capsys=capsys)
    assert code == 0, err
    before = _snapshot(model)
    code, _, err = run_cli("calibrate", "--data", tiny_set, "--model", model, "--epochs", "1", capsys=capsys)
    _one_line(code, err, str(model), "already holds a calibrator", "--resume")
    code, _, err = run_cli("calibrate", "--questions", tmp_path / "empty.json", "--features", tiny_set / "features",
                           "--model", model, "--epochs", "2", "--resume", capsys=capsys)
    _one_line(code, err, "no question to train on: 0 read")
    assert _snapshot(model) == before


def _held_calibration(args, holding, release) -> None:
    """A child process: a calibration whose training waits, its model folder locked, until ``release``."""
    import os

    import nablafol.pipeline.calibration_training as calibration_training
    real = calibration_training.calibrate_model

    def paused(job, **kwargs):
        holding.set()
        release.wait()
        return real(job, **kwargs)
    calibration_training.calibrate_model = paused  # imported from the module at run time
    os._exit(main([str(a) for a in args]))


@pytest.mark.slow
def test_a_second_calibration_of_one_model_folder_is_refused_and_the_first_is_unharmed(trained, tiny_set, tmp_path,
                                                                                        capsys):
    """Two processes synchronised by events: the second `calibrate` (or a `train --out` of the
    folder) is refused in one line while the first holds the folder; the first then writes what a
    run alone writes."""
    import multiprocessing
    held, alone = tmp_path / "held", tmp_path / "alone"
    shutil.copytree(trained, held)
    shutil.copytree(trained, alone)
    calibrate = ["calibrate", "--data", tiny_set, "--epochs", "1", "--batch-size", "16"]
    context = multiprocessing.get_context("fork")
    # the run alone first, forked from this process as it is now, as the first run will be
    done = context.Event()
    done.set()
    lone = context.Process(target=_held_calibration, args=([*calibrate, "--model", alone], context.Event(), done))
    lone.start()
    lone.join()
    assert lone.exitcode == 0
    holding, release = context.Event(), context.Event()
    first = context.Process(target=_held_calibration, args=([*calibrate, "--model", held], holding, release))
    first.start()
    try:
        assert holding.wait(120), "the first run never took its model folder"
        before = _snapshot(held)
        code, _, err = run_cli(*calibrate, "--model", held, capsys=capsys)
        _one_line(code, err, str(held), "is being written by another run", "--model")
        code, _, err = run_cli("train", "--data", tiny_set, "--out", held, *TRAIN, "--resume", capsys=capsys)
        _one_line(code, err, str(held), "is being written by another run", "--out")
        assert _snapshot(held) == before
    finally:
        release.set()
        first.join()
    assert first.exitcode == 0
    def written(folder):  # every file, byte for byte, but the clock readings
        import re
        return {name: re.sub(rb'"(val_)?seconds": [0-9.e+-]+', b"", data) for name, data in _snapshot(folder).items()}
    assert written(held) == written(alone) and "calibrator.safetensors" in written(held)
    assert not (tmp_path / "held.lock").exists()


def test_train_resume_removes_only_its_own_temporary_files(tmp_path, capsys, tiny_set, trained):
    model = tmp_path / "m"
    shutil.copytree(trained, model)
    (model / ".notes.tmp").write_text("a user's")
    (model / ".draft.json.x1y2.tmp").write_text("a user's, named as nablafol names its own")
    (model / ".metrics.jsonl.abcd1234.tmp").write_text("left by a killed run")
    (model / ".training_state.pt.efgh5678.tmp").write_bytes(b"left by a killed run")
    code, _, err = run_cli("train", "--data", tiny_set, "--out", model, *TRAIN, "--resume", capsys=capsys)
    assert code == 0, err
    assert sorted(p.name for p in model.glob(".*.tmp")) == [".draft.json.x1y2.tmp", ".notes.tmp"]


def test_train_out_keeps_a_users_metrics_file(tmp_path, capsys, tiny_set):
    out = tmp_path / "m"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"mine": 1}\n')
    for resume in ((), ("--resume",)):  # --resume without a checkpoint starts afresh: the same file
        code, _, err = run_cli("train", "--data", tiny_set, "--out", out, *TRAIN, *resume, capsys=capsys)
        _one_line(code, err, str(out / "metrics.jsonl"), "is not a checkpointed training's and this run would "
                  "replace it")
    assert (out / "metrics.jsonl").read_text() == '{"mine": 1}\n'
    assert sorted(p.name for p in out.iterdir()) == ["metrics.jsonl"]
