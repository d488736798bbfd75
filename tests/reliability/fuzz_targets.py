"""Fuzz targets for the readers of untrusted text: each takes one input (bytes or str) and
either accepts it or refuses it with one of the package's own errors; any other exception is
a crash. Inputs come from generators that take a ``random.Random`` (so hypothesis can drive
them through ``st.randoms()`` and the standalone runner through a seeded one): real records
from the fixtures, mutated structurally (keys dropped, values replaced by hostile JSON:
10**400, NaN, Infinity, wrong types, deep nesting) and then textually (cut, spliced, bytes
inserted, invalid UTF-8).

Run every target for N seconds each and print the counts:

    python -m tests.reliability.fuzz_targets --seconds 60 [--target NAME] [--seed 0] [--crashes DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, NamedTuple

FIX = Path(__file__).resolve().parents[1] / "fixtures"
GQA = FIX / "gqa"
EVERY = GQA / "every_operation"


# ----------------------------------------------------------------------------- seed corpus
def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


class _Corpus:
    """Real records to mutate, read once."""

    def __init__(self):
        self.questions = {**_load(EVERY / "questions.json"), **_load(GQA / "val_balanced_questions.json"),
                          **_load(FIX / "scoring" / "questions.json")}
        self.graphs = {**_load(EVERY / "sceneGraphs.json"), **_load(GQA / "val_sceneGraphs.json"),
                       **_load(GQA / "predicted_sceneGraphs.json")}
        self.predictions = _load(FIX / "scoring" / "base_predictions.json")
        real = _load(Path(__file__).resolve().parents[1] / "dsl" / "fixtures" / "gqa_real_sample.json")
        lines = [q["semanticStr"] for part in ("with_semantic", "semantic_str_only") for q in real[part].values()]
        self.program_lines = lines + [q["semanticStr"] for q in self.questions.values() if "semanticStr" in q]
        self.semantic_lists = [q["semantic"] for q in self.questions.values() if "semantic" in q]
        self.every_ids = sorted(_load(EVERY / "questions.json"))


_CORPUS: _Corpus | None = None


def corpus() -> _Corpus:
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = _Corpus()
    return _CORPUS


# ----------------------------------------------------------------------------- generators
_SYNTAX = ["->", "[", "]", ",", ":", "(", ")", "|", "_", "?", " ", "  ", "-", "not(", "0", "1", "9" * 30,
           "1" + "0" * 400, "select", "relate", "filter", "verify", "query", "choose", "exist", "and", "or",
           "same", "different", "common", "name", "color", "\x00", "\n", "é", "\u202e", "\ud7ff", "''", '"']


def hostile_json(rng: random.Random, depth: int = 0):
    """A JSON value chosen to break readers: extreme numbers, NaN, wrong types, nesting."""
    roll = rng.random()
    if depth > 3 or roll < 0.45:
        return rng.choice([None, True, False, 0, -1, 1.5, 10**rng.randint(18, 400), -(10**30), float("nan"),
                           float("inf"), float("-inf"), 1e-320, "", "x", "yes", "\x00", "é" * 3, "[0]",
                           rng.choice(_SYNTAX), "9" * rng.randint(1, 40)])
    if roll < 0.7:
        return [hostile_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["", "name", "x", "object", "p", "imageId", "0", "é"]): hostile_json(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def mutate_value(rng: random.Random, value, depth: int = 0):
    """``value`` with a few structural changes: a key dropped or added, a value replaced."""
    if depth > 6 or rng.random() < 0.15:
        return hostile_json(rng) if rng.random() < 0.5 else value
    if isinstance(value, (dict, list)) and value:
        is_dict = isinstance(value, dict)
        value = dict(value) if is_dict else list(value)
        key = rng.choice(sorted(value)) if is_dict else rng.randrange(len(value))
        action = rng.random()
        if action < 0.2:
            del value[key]
        elif action < 0.3 and is_dict:
            value[rng.choice(["extra", key + "_", "objects", "semantic", "p"])] = hostile_json(rng)
        elif action < 0.3:
            value.insert(key, hostile_json(rng))
        else:
            value[key] = mutate_value(rng, value[key], depth + 1)
        return value
    return hostile_json(rng)


def mutate_text(rng: random.Random, text: str, pieces=("{", "}", "[", "]", ",", ":", '"', "NaN", "-Infinity",
                                                        "1e400", "\\", "\\u00", " ")) -> str:
    """``text`` with a few character-level edits (cut, delete, insert, duplicate a slice)."""
    for _ in range(rng.randint(1, 3)):
        if not text:
            return rng.choice(pieces)
        i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        action = rng.random()
        if action < 0.2:
            text = text[:i]
        elif action < 0.45:
            text = text[:i] + text[j:]
        elif action < 0.8:
            text = text[:i] + rng.choice(pieces) + text[i:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


def _nest(value, depth: int):
    text = json.dumps(value, allow_nan=True)
    return "[" * depth + text + "]" * depth


def encode(rng: random.Random, value) -> bytes:
    """``value`` as a file: JSON text, mostly intact, sometimes edited, nested or not UTF-8."""
    roll = rng.random()
    if roll < 0.02:
        return _nest(value, rng.choice([2000, 100_000])).encode()
    text = json.dumps(value, allow_nan=True, ensure_ascii=rng.random() < 0.5)
    if roll < 0.6:
        return text.encode("utf-8")
    if roll < 0.95:
        return mutate_text(rng, text).encode("utf-8", "surrogatepass")
    data = bytearray(text.encode("utf-8"))
    data.insert(rng.randrange(len(data) + 1), rng.choice([0xFF, 0xC3, 0x80, 0xED]))
    return bytes(data)


def gen_program_text(rng: random.Random) -> str:
    lines = corpus().program_lines
    text = rng.choice(lines)
    if rng.random() < 0.2:  # splice two programs
        other = rng.choice(lines)
        text = text[: rng.randrange(len(text) + 1)] + other[rng.randrange(len(other) + 1):]
    return mutate_text(rng, text, pieces=tuple(_SYNTAX)) if rng.random() < 0.9 else text


def gen_semantic_list(rng: random.Random) -> bytes:
    steps = rng.choice(corpus().semantic_lists)
    return encode(rng, mutate_value(rng, steps) if rng.random() < 0.9 else steps)


def _some(rng: random.Random, mapping: dict, most: int) -> dict:
    keys = rng.sample(sorted(mapping), rng.randint(0, min(most, len(mapping))))
    return {key: mapping[key] for key in keys}


def gen_questions_file(rng: random.Random) -> bytes:
    questions = _some(rng, corpus().questions, 4)
    for question_id in list(questions):
        if rng.random() < 0.7:
            questions[question_id] = mutate_value(rng, questions[question_id])
    return encode(rng, questions if rng.random() < 0.95 else mutate_value(rng, questions))


def gen_scene_graphs_file(rng: random.Random) -> bytes:
    graphs = _some(rng, corpus().graphs, 2)
    for image_id in list(graphs):
        for _ in range(rng.randint(0, 3)):
            graphs[image_id] = mutate_value(rng, graphs[image_id])
    return encode(rng, graphs)


def gen_predictions_file(rng: random.Random) -> bytes:
    entries = rng.sample(corpus().predictions, rng.randint(0, 5))
    return encode(rng, mutate_value(rng, entries) if rng.random() < 0.8 else entries)


def gen_split_file(rng: random.Random) -> bytes:
    ids = list(corpus().every_ids)
    rng.shuffle(ids)
    cut = rng.randint(0, len(ids))
    split = {"easy": ids[:cut], "hard": ids[cut:], "base": "p.json", "questions": "q.json"}
    if rng.random() < 0.5:
        split["base_missing"] = ids[cut:cut + 1]
    return encode(rng, mutate_value(rng, split) if rng.random() < 0.85 else split)


# ----------------------------------------------------------------------------- targets
def _allowed() -> tuple[type, ...]:
    """The package's own errors: what a reader may raise on bad input (anything else is a crash)."""
    from nablafol import dsl
    from nablafol.errors import NablafolError
    return (NablafolError, dsl.ProgramError, dsl.UnknownConceptError, dsl.VocabularyFileError)


_CACHE: dict = {}  # what every input of a target shares: the compiler, the fixture questions and graphs


class _Scratch:
    """One temporary folder per process for the files the targets read."""

    folder: Path | None = None

    @classmethod
    def file(cls, name: str, data: bytes) -> Path:
        if cls.folder is None:
            cls.folder = Path(tempfile.mkdtemp(prefix="nablafol-fuzz-"))
        path = cls.folder / name
        path.write_bytes(data)
        return path


def _compiler():
    if "compiler" not in _CACHE:
        from nablafol.compiler import Compiler
        from nablafol.dsl import Ontology
        _CACHE["compiler"] = Compiler(Ontology.gqa())
    return _CACHE["compiler"]


def target_program_text(text: str) -> str | None:
    """`semanticStr` text -> parse_program -> compile (and the FOL formula printed from it)."""
    compiled = _compiler().compile_text(text)
    compiled.formula()


def target_semantic_list(data: bytes) -> str | None:
    """A question's `semantic` list as JSON -> program_from_semantic -> compile, as eval does."""
    from nablafol.data import question_from_record
    from nablafol.pipeline.answering import Skip, compile_question
    try:
        steps = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "not JSON"  # the file readers' concern (targets below), not the program reader's
    question = question_from_record("q", {"imageId": "i", "semantic": steps})
    compiled = compile_question(question, _compiler())
    if isinstance(compiled, Skip):
        return "skipped"
    compiled.formula()
    return None


def target_questions_file(data: bytes) -> None:
    """A questions file -> load_questions -> every question compiled and answered over the
    every-operation scene graphs (image ids pointing nowhere become skips)."""
    from nablafol.data import load_questions
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.evaluation import answer_all
    questions = load_questions(_Scratch.file("questions.json", data))
    run = answer_all(questions.values(), Answerer(_every_perception(), compiler=_compiler()))
    assert len(run.predictions) + len(run.skips) == len(questions)


def target_scene_graphs_file(data: bytes) -> None:
    """A scene-graphs file -> load_scene_graphs -> a golden oracle over every image, asked an
    existence question."""
    from nablafol.data import load_scene_graphs
    from nablafol.data.questions import Question
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.perception import SceneGraphPerception
    from nablafol.pipeline.evaluation import answer_all
    graphs = load_scene_graphs(_Scratch.file("sceneGraphs.json", data))
    if not graphs:
        return
    perception = SceneGraphPerception(graphs)
    questions = [Question(id=f"q{i}", image_id=image_id, semantic_str="select: plate->exist: ? [0]")
                 for i, image_id in enumerate(graphs)]
    run = answer_all(questions, Answerer(perception, compiler=_compiler()))
    assert len(run.predictions) + len(run.skips) == len(questions)


def target_predictions_file(data: bytes) -> None:
    """A predictions file -> read_predictions -> scored against the every-operation questions."""
    from nablafol.data import read_predictions
    from nablafol.scoring import score
    predictions = read_predictions(_Scratch.file("predictions.json", data))
    score(_every_questions().values(), predictions).format_table()


def target_split_file(data: bytes) -> None:
    """A split file through `nablafol score --split` (the only reader of split files)."""
    from nablafol.cli import main
    split = _Scratch.file("split.json", data)
    predictions = _Scratch.file("p.json", b'[{"questionId": "op00", "prediction": "fork"}]')
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(["score", "--questions", str(EVERY / "questions.json"), "--predictions", str(predictions),
                     "--split", str(split)])
    if code == 2:  # the command refused the file: re-raise as the error it printed
        from nablafol.errors import InputFileError
        raise InputFileError(split, err.getvalue().strip())
    assert code == 0, code


def _every_questions():
    if "questions" not in _CACHE:
        from nablafol.data import load_questions
        _CACHE["questions"] = load_questions(EVERY / "questions.json")
    return _CACHE["questions"]


def _every_perception():
    if "perception" not in _CACHE:
        from nablafol.data import load_scene_graphs
        from nablafol.pipeline.perception import SceneGraphPerception
        _CACHE["perception"] = SceneGraphPerception(load_scene_graphs(EVERY / "sceneGraphs.json"))
    return _CACHE["perception"]


# -- the neighbouring benchmarks: annotations and predictions through `score_benchmark`, CRIC's
# programs also compiled (what `nablafol score` and eval's CRIC path read)
BENCHMARK_FILES = {
    "cric": (FIX / "cric" / "val_questions.json", FIX / "cric" / "predictions.json", ".json"),
    "aokvqa": (FIX / "aokvqa" / "aokvqa_v1p0_val.json", FIX / "aokvqa" / "predictions_val.json", ".json"),
    "vcr": (FIX / "vcr" / "val.jsonl", FIX / "vcr" / "predictions.csv", ".csv"),
}


# a field each benchmark's records have (--by refuses one that no record has)
SLICED_BY = {"cric": "question_type", "aokvqa": "split", "vcr": "movie"}


def _benchmark_generator(benchmark: str):
    questions_path, predictions_path, _ = BENCHMARK_FILES[benchmark]

    def generate(rng: random.Random) -> bytes:
        """Annotations and predictions, one of them mutated, as two files joined by a NUL line."""
        if benchmark == "vcr":
            lines = questions_path.read_text(encoding="utf-8").splitlines()
            records = [json.loads(line) for line in rng.sample(lines, rng.randint(0, len(lines)))]
            if rng.random() < 0.6:
                records = [mutate_value(rng, r) if rng.random() < 0.5 else r for r in records]
            annotations = "\n".join(json.dumps(r, allow_nan=True) for r in records).encode()
            predictions = predictions_path.read_bytes()
            if rng.random() < 0.4:
                predictions = mutate_text(rng, predictions.decode(), pieces=(",", "\n", "nan", "1e400", '"', "x",
                                                                            "answer_0", "annot_id")).encode()
        else:
            records = _load(questions_path)
            records = [mutate_value(rng, r) if rng.random() < 0.4 else r for r in records]
            annotations = encode(rng, records if rng.random() < 0.9 else mutate_value(rng, records))
            predictions = _load(predictions_path)
            predictions = encode(rng, mutate_value(rng, predictions) if rng.random() < 0.5 else predictions)
        if rng.random() < 0.3 and b"\n" in annotations:
            annotations = mutate_text(rng, annotations.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")
        return annotations + b"\n\x00\n" + predictions

    return generate


def _benchmark_target(benchmark: str):
    def run(data: bytes) -> None:
        from nablafol.compiler.cric import CricCompiler
        from nablafol.data.cric import load_cric_questions
        from nablafol.scoring.benchmarks import score_benchmark
        annotations, _, predictions = data.partition(b"\n\x00\n")
        _, _, suffix = BENCHMARK_FILES[benchmark]
        questions = _Scratch.file(f"{benchmark}-annotations{'.jsonl' if benchmark == 'vcr' else '.json'}", annotations)
        report = score_benchmark(benchmark, questions, _Scratch.file(f"{benchmark}-predictions{suffix}", predictions),
                                 by=SLICED_BY[benchmark])
        report.format_table(), json.dumps(report.to_json())
        if benchmark == "cric":
            compiler = CricCompiler(knowledge_relations={"CapableOf", "IsA"})
            for question in load_cric_questions(questions).values():
                compiler.compile_json(list(question.program)).formula()

    run.__doc__ = f"{benchmark}'s annotations and predictions -> score_benchmark (CRIC: programs compiled too)"
    return run


class Target(NamedTuple):
    name: str
    run: Callable
    generate: Callable[[random.Random], bytes | str]


TARGETS = {t.name: t for t in [
    Target("program_text", target_program_text, gen_program_text),
    Target("semantic_list", target_semantic_list, gen_semantic_list),
    Target("questions_file", target_questions_file, gen_questions_file),
    Target("scene_graphs_file", target_scene_graphs_file, gen_scene_graphs_file),
    Target("predictions_file", target_predictions_file, gen_predictions_file),
    Target("split_file", target_split_file, gen_split_file),
    *(Target(f"{b}_files", _benchmark_target(b), _benchmark_generator(b)) for b in BENCHMARK_FILES),
]}


def attempt(target: Target, data) -> str:
    """Run one input: ``"accepted"``, ``"refused"`` (a package error) or what the target says
    (``"skipped"``: read, then skipped as eval would; ``"not JSON"``); a crash propagates."""
    try:
        outcome = target.run(data)
    except _allowed():
        return "refused"
    return outcome or "accepted"


# ----------------------------------------------------------------------------- runner
def run_for(target: Target, seconds: float, seed: int, crashes: Path | None, *, inputs: int | None = None,
            attempt_one: Callable[[Target, object], str] | None = None) -> dict:
    """Run ``target`` for ``seconds`` (or, given ``inputs``, for that many inputs) from ``seed``;
    the counts of each outcome. ``attempt_one`` runs one input (default :func:`attempt`)."""
    rng = random.Random(f"{target.name}:{seed}")
    attempt_one = attempt_one or attempt
    counts = {"inputs": 0, "accepted": 0, "refused": 0, "skipped": 0, "not JSON": 0, "crashes": 0}
    start = time.monotonic()
    while counts["inputs"] < inputs if inputs is not None else time.monotonic() < start + seconds:
        data = target.generate(rng)
        counts["inputs"] += 1
        if inputs is not None and counts["inputs"] % 1000 == 0:
            print(f"  {target.name}: {counts['inputs']:,} inputs, {counts['crashes']} crashes", file=sys.stderr,
                  flush=True)
        try:
            counts[attempt_one(target, data)] += 1
        except Exception as error:  # a crash: keep the input and say what it was
            counts["crashes"] += 1
            line = traceback.format_exception_only(type(error), error)[-1].strip()
            print(f"  crash in {target.name}: {line[:200]}", file=sys.stderr)
            if crashes is not None:
                crashes.mkdir(parents=True, exist_ok=True)
                raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
                (crashes / f"{target.name}-{counts['inputs']}.bin").write_bytes(raw)
    counts["seconds"] = time.monotonic() - start
    return counts


def main(argv=None, targets: dict | None = None, attempt_one=None, prog: str = "python -m tests.reliability.fuzz_targets",
         description: str | None = None) -> int:
    """The runner: every target (of ``targets``, default this module's) for ``--seconds`` each, or
    ``--inputs`` inputs each; prints the counts, exits 1 when anything crashed."""
    targets = targets or TARGETS
    parser = argparse.ArgumentParser(prog=prog, description=description or __doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="per target (default 60)")
    parser.add_argument("--inputs", type=int, help="per target, instead of --seconds")
    parser.add_argument("--target", choices=sorted(targets), action="append", help="default: all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--crashes", type=Path, help="save crashing inputs here")
    args = parser.parse_args(argv)
    total = 0
    print(f"{'target':<18} {'seconds':>7} {'inputs':>8} {'accepted':>8} {'skipped':>8} {'refused':>8} "
          f"{'crashes':>7}", flush=True)
    for name in args.target or list(targets):
        counts = run_for(targets[name], args.seconds, args.seed, args.crashes, inputs=args.inputs,
                         attempt_one=attempt_one)
        total += counts["crashes"]
        print(f"{name:<18} {counts['seconds']:>7.0f} {counts['inputs']:>8,} {counts['accepted']:>8,} "
              f"{counts['skipped']:>8,} {counts['refused']:>8,} {counts['crashes']:>7,}", flush=True)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
