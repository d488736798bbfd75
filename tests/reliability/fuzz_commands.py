"""Fuzz targets for the commands themselves: every command's input files, mutated as
``fuzz_targets`` mutates them, given to ``nablafol COMMAND`` run in this process. A run must
end with exit status 0 or 2 (argparse's refusal included), nothing on stderr that looks like a
traceback; an exception out of the command (a bug the command did not turn into a line) is a
crash. Each input is a whole command run, so a hang would stop the runner (none did).

    python tests/reliability/fuzz_commands.py --inputs 10000 [--target NAME] [--seed 0] [--crashes DIR]

`generate` and `demo` read no file (their options are checked by their argparse types,
tests/cli); every other command is here, with the file a user hands it.
"""
from __future__ import annotations

import contextlib
import functools
import io
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

import fuzz_targets
from fuzz_targets import (EVERY, GQA, Target, encode, gen_predictions_file, gen_program_text, gen_questions_file,
                          gen_scene_graphs_file, gen_split_file, mutate_value, run_for)

FEATURES = GQA / "features"


class Refused(Exception):
    """The command ended with exit status 2 (one line on stderr)."""


class _Setup:
    """What every run of a target shares: a scratch folder, a model folder and a parser folder
    made once per process."""

    folder: Path | None = None

    @classmethod
    def scratch(cls) -> Path:
        if cls.folder is None:
            # in memory where the system has it: a run fsyncs its outputs, which is not what is fuzzed
            memory = Path("/dev/shm")
            cls.folder = Path(tempfile.mkdtemp(prefix="nablafol-fuzz-commands-",
                                               dir=memory if memory.is_dir() else None))
        return cls.folder

    @classmethod
    def file(cls, name: str, data: bytes) -> Path:
        path = cls.scratch() / name
        path.write_bytes(data)
        return path

    @classmethod
    def model(cls, calibrator: bool = False) -> Path:
        """A model folder for the 16-number feature fixture (reliability_helpers' recipe)."""
        folder = cls.scratch() / ("model-calibrated" if calibrator else "model")
        if not (folder / "config.json").exists():
            from reliability_helpers import write_model_folder
            write_model_folder(folder, calibrator=calibrator)
        return folder

    @classmethod
    def parser(cls) -> Path:
        folder = cls.scratch() / "parser"
        if not (folder / "parser.json").exists():
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                assert _main(["parser", "train", "--questions", str(GQA / "train_all_questions"), "--out",
                              str(folder), "--epochs", "1"]) == 0
        return folder


def _main(argv: list[str]) -> int:
    import nablafol.cli
    if not hasattr(nablafol.cli.build_parser, "cache_info"):
        # the parser holds no state between parses, and building it is most of a quick run's time
        nablafol.cli.build_parser = functools.cache(nablafol.cli.build_parser)
    try:
        return nablafol.cli.main(argv)
    except SystemExit as stop:  # argparse's refusal of an option
        return stop.code if isinstance(stop.code, int) else 2


def run_command(argv: list) -> str:
    """``nablafol ARGV`` in this process: "accepted" (exit 0) or :class:`Refused` (exit 2);
    anything else, or a traceback printed, fails."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = _main([str(a) for a in argv])
    text = err.getvalue()
    assert "Traceback" not in text, text
    if code == 2:
        raise Refused(text.strip().splitlines()[-1] if text.strip() else "exit 2")
    assert code == 0, (code, text)
    return "accepted"


def _config_text(rng: random.Random, folder: Path) -> bytes:
    """The model folder's config.json, mutated."""
    config = json.loads((folder / "config.json").read_text())
    return encode(rng, mutate_value(rng, config) if rng.random() < 0.9 else config)


def _one_question() -> Path:
    """One question of the feature fixture's images: what the config is fuzzed through (the
    engine's answering is fuzzed by the other targets)."""
    path = _Setup.scratch() / "one-question.json"
    if not path.exists():
        first = next(iter(json.loads((GQA / "val_balanced_questions.json").read_text()).items()))
        path.write_text(json.dumps(dict([first])))
    return path


def _model_copy(data: bytes, calibrator: bool = False) -> Path:
    """The shared model folder with ``data`` as its config.json (the tensors are the real ones)."""
    model = _Setup.scratch() / f"model-fuzzed-{calibrator}"
    if not model.exists():
        shutil.copytree(_Setup.model(calibrator), model)
    (model / "config.json").write_bytes(data)
    return model


def _out(name: str) -> Path:
    return _Setup.scratch() / "out" / name


# -- the targets: (name, generator of the input, the run) -----------------------------------------
def cmd_parse(text: str) -> str:
    return run_command(["parse", "--", text])


def cmd_eval_questions(data: bytes) -> str:
    return run_command(["eval", "--questions", _Setup.file("q.json", data), "--scene-graphs",
                        EVERY / "sceneGraphs.json", "--predictions", _out("eval.json"), "--allow-no-answers"])


def cmd_eval_scene_graphs(data: bytes) -> str:
    return run_command(["eval", "--questions", EVERY / "questions.json", "--scene-graphs", _Setup.file("sg.json", data),
                        "--predictions", _out("eval.json"), "--details", _out("eval.jsonl"), "--allow-no-answers"])


def cmd_eval_model_config(data: bytes) -> str:
    return run_command(["eval", "--questions", _one_question(), "--features", FEATURES,
                        "--model", _model_copy(data), "--predictions", _out("eval-model.json"),
                        "--allow-no-answers"])


def cmd_score(data: bytes) -> str:
    head, _, split = data.partition(b"\n\x00\n")
    argv = ["score", "--questions", EVERY / "questions.json", "--predictions", _Setup.file("p.json", head),
            "--json", _out("score.json"), "--allow-no-answers"]
    if split:
        argv += ["--split", _Setup.file("split.json", split), "--by", "types.structural"]
    return run_command(argv)


def gen_score(rng: random.Random) -> bytes:
    predictions = gen_predictions_file(rng)
    return predictions + (b"\n\x00\n" + gen_split_file(rng) if rng.random() < 0.4 else b"")


def cmd_split(data: bytes) -> str:
    return run_command(["split", "--questions", EVERY / "questions.json", "--predictions", _Setup.file("p.json", data),
                        "--out", _out("split.json")])


def cmd_train_plan(data: bytes) -> str:
    return run_command(["train", "--questions", _Setup.file("train.json", data), "--features", FEATURES,
                        "--plan", "--out", _out("model")])


def cmd_calibrate_inspect(data: bytes) -> str:
    return run_command(["calibrate", "--model", _model_copy(data, calibrator=True), "--inspect", "select: plate (1)->exist: ? [0]"])


def cmd_vocabulary(data: bytes) -> str:
    return run_command(["vocabulary", "--questions", _Setup.file("vq.json", data), "--scene-graphs",
                        EVERY / "sceneGraphs.json"])


def cmd_parser_apply(data: bytes) -> str:
    return run_command(["parser", "apply", "--questions", _Setup.file("pq.json", data), "--parser", _Setup.parser(),
                        "--out", _out("applied.json")])


def cmd_answer(data: bytes) -> str:
    graphs = json.loads(data) if data[:1] == b"{" and _is_json(data) else {}
    image = next(iter(graphs), "2354786") if isinstance(graphs, dict) else "2354786"
    return run_command(["answer", "--parser", _Setup.parser(), "--scene-graphs", _Setup.file("asg.json", data),
                        "--image", image, "What color is the wall?"])  # a question of the parser's training


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


TARGETS = {t.name: t for t in [
    Target("parse", cmd_parse, gen_program_text),
    Target("eval_questions", cmd_eval_questions, gen_questions_file),
    Target("eval_scene_graphs", cmd_eval_scene_graphs, gen_scene_graphs_file),
    Target("eval_model_config", cmd_eval_model_config, lambda rng: _config_text(rng, _Setup.model())),
    Target("score", cmd_score, gen_score),
    Target("split", cmd_split, gen_predictions_file),
    Target("train_plan", cmd_train_plan, gen_questions_file),
    Target("calibrate_inspect", cmd_calibrate_inspect, lambda rng: _config_text(rng, _Setup.model(True))),
    Target("vocabulary", cmd_vocabulary, gen_questions_file),
    Target("parser_apply", cmd_parser_apply, gen_questions_file),
    Target("answer", cmd_answer, gen_scene_graphs_file),
]}


def attempt(target: Target, data) -> str:
    """One run: "accepted" or "refused"; a crash propagates."""
    try:
        return target.run(data)
    except Refused:
        return "refused"


def run_inputs(target: Target, inputs: int, seed: int, crashes: Path | None) -> dict:
    """``inputs`` runs of ``target`` from ``seed``: the counts of each outcome."""
    return run_for(target, 0.0, seed, crashes, inputs=inputs, attempt_one=attempt)


def main(argv=None) -> int:
    return fuzz_targets.main(argv, TARGETS, attempt, "python tests/reliability/fuzz_commands.py", __doc__)


if __name__ == "__main__":
    sys.exit(main())
