"""Answer GQA questions with DFOL reasoning over scene graphs (golden or probabilistic) or over
object features with a trained oracle; write GQA predictions; print accuracy and consistency.

    nablafol eval --questions val_balanced_questions.json --scene-graphs val_sceneGraphs.json \\
                  --predictions out/predictions.json [--details out/details.jsonl]
    nablafol eval --questions Q --features FEATURES_DIR --model MODEL_DIR --predictions OUT

Questions that cannot be answered (malformed program, a concept the vocabulary lacks, an image
without a scene) are skipped, counted as wrong and listed with their reasons; `--strict` makes
any skip an error (exit status 2).

Streaming: questions are read one at a time and answered `--chunk-size` at a time (grouped by
image within a chunk), so memory does not grow with the number of questions. After each chunk
its predictions go to a journal beside the predictions file (OUT.journal, on disk before the
next chunk starts); at the end the outputs are assembled from it in question order, each
written whole (a temporary file, then a rename), and the journal is removed. A run that was
killed continues with `--resume`: finished chunks are not answered again, and the outputs are
byte-identical to an uninterrupted run's. `--resume` refuses (exit 2) a journal written with
other options or input files (paths, sizes, modification times); without `--resume` a
leftover journal is replaced by a fresh start.

Workers: with `--workers N` the chunks are answered by N processes forked once the scenes are
loaded (shared with them, not copied up front), committed to the journal in question order.
The outputs are byte-identical to a run with one worker (a chunk is batched the same way
wherever it is answered), so `--resume` may change N.
"""
from __future__ import annotations

import json
import os
import sys
import time
from array import array
from pathlib import Path

from .common import (UsageError, add_ontology_argument, add_threads_argument, device, load_ontology, non_negative_int,
                     output_file, positive_int, probability, with_threads, write_json)

HELP = "answer questions over scene graphs or features; print accuracy and consistency"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q", help="questions JSON file, or a folder of them")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--scene-graphs", metavar="SG", help="scene graphs JSON (plain or probabilistic)")
    src.add_argument("--features", metavar="F", help="features folder (gqa_objects_info.json + HDF5), with --model")
    parser.add_argument("--model", metavar="M", help="trained model folder (with --features)")
    parser.add_argument("--predictions", required=True, metavar="OUT", help="where to write GQA predictions JSON")
    parser.add_argument("--details", metavar="D", help="also write per-question details (JSON lines)")
    parser.add_argument("--details-top", type=non_negative_int, default=10, metavar="K",
                        help="candidates of an open question kept in details (0: all; default 10)")
    parser.add_argument("--skipped", metavar="PATH", help="write the skipped questions here (JSON); default "
                        "OUT with suffix .skipped.json when any")
    parser.add_argument("--batch-size", type=positive_int, default=1024)
    parser.add_argument("--chunk-size", type=positive_int, default=16384, metavar="N",
                        help="questions answered between two journal commits (default 16384)")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run from its journal "
                        "(OUT.journal); refused when the options or input files differ")
    parser.add_argument("--threshold", type=probability, default=0.5, help="θ of Algorithm 1 for yes/no questions")
    parser.add_argument("--exact", action="store_true", help="score by exact string match (GQA's eval.py) "
                        "instead of vocabulary forms")
    parser.add_argument("--strict", action="store_true", help="any skipped question is an error (exit 2)")
    parser.add_argument("--knowledge", metavar="KB", help="a knowledge base (TSV or JSON triples; 'sample' for the "
                        "built-in one) for CRIC-style steps such as `filter CapableOf: lift food`")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workers", type=positive_int, default=1, metavar="N",
                        help="processes answering chunks side by side (CPU only; default 1). The answers do not "
                             "depend on it; on 2 cores, 2 workers measured 1.2-1.6x faster")
    add_threads_argument(parser)
    add_ontology_argument(parser)


def run(args) -> int:
    from nablafol.pipeline.collector import long_run
    with long_run():  # millions of long-lived objects: see nablafol.pipeline.collector
        return with_threads(args.threads, lambda: _run(args))


def _run(args) -> int:
    from nablafol.pipeline.collector import loading
    from nablafol.data import iter_questions
    from nablafol.pipeline.journal import EvalJournal, journal_path
    from nablafol.engine import Engine
    from nablafol.pipeline.answering import Evaluator
    from nablafol.scoring.metrics import exact_match, vocabulary_match
    from nablafol.progress import ProgressBar
    from nablafol.scoring.running import RunningScore
    from nablafol.pipeline.workers import answer_chunks

    if args.features and not args.model:
        raise UsageError("--features needs --model (a trained model folder)")
    if args.model and not args.features:
        raise UsageError("--model goes with --features")
    for out in (args.predictions, args.details, args.skipped):  # fail before the work, not after it
        if out:
            output_file(out)
    args.device = device(args.device)
    if args.workers > 1 and args.device.type != "cpu":
        raise UsageError(f"--workers {args.workers} runs on the CPU only (a forked process cannot use "
                         f"{args.device}); give --workers 1 or --device cpu")
    t0 = time.perf_counter()
    path = journal_path(args.predictions)
    resuming = args.resume and path.exists()
    if args.resume and not resuming:
        print(f"no journal at {path}: starting from the first question")
    settings = _settings(args)
    journal = EvalJournal.resume(path, settings) if resuming else EvalJournal.start(path, settings)
    with loading():
        perception, ontology = _perception(args)
    evaluator = Evaluator(perception, engine=Engine(calibration=getattr(perception, "calibrator", None)),
                          batch_size=args.batch_size, threshold=args.threshold, keep_outcomes=bool(args.details),
                          details_top=args.details_top, compiler=_compiler(perception, ontology))
    tally = _Tally(RunningScore(match=exact_match if args.exact else vocabulary_match))
    details = _DetailsPart(args.details, journal.details_bytes) if args.details else None
    questions = iter_questions(args.questions)
    replayed = done = _replay(journal, questions, tally, args.questions)
    bar = ProgressBar(f"eval (after {replayed:,} from the journal)" if replayed else "eval", unit="q")
    for chunk, results in answer_chunks(evaluator, _chunks(questions, args.chunk_size), args.workers, args.threads):
        details_bytes = details.write(results) if details is not None else 0
        entries = [_entry(r) for r in results]
        done += len(chunk)
        journal.commit(entries, done=done, details_bytes=details_bytes)
        for question, entry in zip(chunk, entries):
            tally.add(question, entry)
        bar(done - replayed)
    bar.close()
    journal.close()
    _check_unique_ids(tally, journal, args.questions)
    _write_outputs(args, journal, details)
    elapsed = time.perf_counter() - t0
    before = f"; {done - replayed:,} done in this run, {replayed:,} read from the journal" if resuming else ""
    print(f"{done:,} questions, {tally.answered:,} answered, {tally.skipped:,} skipped, in {elapsed:.1f} s "
          f"({(done - replayed) / max(elapsed, 1e-9):,.0f} questions/s{before})")
    if len(tally.score):
        scores = tally.score.scores()
        print(scores.format_table())
        by_type = scores.overall.by_structural
        if by_type:
            print("accuracy by structural type: " + ", ".join(
                f"{t} {100 * a:.2f}%" for t, a in by_type.items() if a is not None))
    _report_skips(args, tally, journal)
    journal.close(remove=True)
    return 2 if (args.strict and tally.skipped) else 0


class _Tally:
    """What the end of a run reports, kept small: the running score, counts of answered and
    skipped questions (the first skips, to print), and a hash of every id (to find one given twice)."""

    def __init__(self, score):
        self.score, self.ids = score, array("q")
        self.answered, self.skipped = 0, 0
        self.skip_counts: dict[str, int] = {}
        self.first_skips: list = []

    def add(self, question, entry) -> None:
        question_id, prediction, skip = entry
        self.ids.append(hash(question_id))
        if skip is None:
            self.answered += 1
        else:
            self.skipped += 1
            self.skip_counts[skip[0]] = self.skip_counts.get(skip[0], 0) + 1
            if len(self.first_skips) < 20:
                self.first_skips.append(entry)
        if question.answer is not None:
            self.score.add(question, prediction)


def _entry(result) -> tuple:
    """A journal entry: (questionId, prediction, None) or (questionId, None, (reason, detail))."""
    from nablafol.pipeline.answering import Skip
    if isinstance(result, Skip):
        return result.question_id, None, (result.reason, result.detail)
    return result.question_id, result.prediction, None


def _chunks(questions, size: int):
    chunk = []
    for question in questions:
        chunk.append(question)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _replay(journal, questions, tally, questions_path) -> int:
    """Feed the journal's finished questions to the tally, taking the same questions off the
    stream (so they are not answered again); returns how many there were."""
    from nablafol.errors import InputFileError
    replayed = 0
    for entry in journal.entries():
        question = next(questions, None)
        if question is None or question.id != entry[0]:
            found = "ends" if question is None else f"has question {question.id}"
            raise InputFileError(questions_path, f"does not match the journal {journal.path}",
                                 f"question #{replayed + 1}: the journal has {entry[0]}, the file {found}")
        tally.add(question, entry)
        replayed += 1
    return replayed


class _DetailsPart:
    """The details file being written (PATH.partial), cut back to the journal's last commit on resume."""

    def __init__(self, path, committed_bytes: int):
        self.path = Path(path)
        self.part = self.path.with_name(self.path.name + ".partial")
        if committed_bytes:
            from nablafol.errors import InputFileError
            size = self.part.stat().st_size if self.part.exists() else 0
            if size < committed_bytes:
                raise InputFileError(self.part, f"is shorter than its journal says ({size:,} < {committed_bytes:,} "
                                                "bytes); run without --resume to start over")
        self.stream = open(self.part, "r+b" if committed_bytes else "wb")
        self.stream.truncate(committed_bytes)
        self.stream.seek(committed_bytes)

    def write(self, results) -> int:
        """Append the chunk's answered questions; returns the file's size, once on disk."""
        from nablafol.data.details import Details, details_line
        from nablafol.pipeline.answering import Outcome
        lines = [details_line(Details(o.question_id, o.prediction, o.answers, list(o.grounding), o.formula,
                                      {"attention": o.attention}))
                 for o in results if isinstance(o, Outcome)]
        self.stream.write("".join(lines).encode("utf-8"))
        self.stream.flush()
        os.fsync(self.stream.fileno())
        return self.stream.tell()

    def finish(self) -> None:
        self.stream.close()
        os.replace(self.part, self.path)


def _check_unique_ids(tally, journal, questions_path) -> None:
    """A question id given twice is refused, naming it (ids are compared by hash first)."""
    import numpy as np
    from nablafol.errors import InputFileError
    keys = np.sort(np.frombuffer(tally.ids, dtype=np.int64)) if len(tally.ids) else np.zeros(0, np.int64)
    twice = set(keys[1:][keys[1:] == keys[:-1]].tolist())
    if not twice:
        return
    seen = set()
    for question_id, _, _ in journal.entries():
        if hash(question_id) in twice:
            if question_id in seen:
                raise InputFileError(questions_path, "appears twice", f"question {question_id}")
            seen.add(question_id)


def _write_outputs(args, journal, details) -> None:
    """The predictions file from the journal, in question order, written whole; the details file renamed."""
    from nablafol.data import write_predictions
    write_predictions(args.predictions, ((q, p) for q, p, skip in journal.entries() if skip is None),
                      check_unique=False)
    if details is not None:
        details.finish()


def _settings(args) -> dict:
    """What the outputs depend on: the options and the input files' identities (as JSON values)."""
    from nablafol.pipeline.journal import input_fingerprint
    knowledge = args.knowledge if args.knowledge in (None, "sample") else input_fingerprint(args.knowledge)
    settings = {"questions": input_fingerprint(args.questions), "scene_graphs": input_fingerprint(args.scene_graphs),
                "features": input_fingerprint(args.features), "model": input_fingerprint(args.model),
                "knowledge": knowledge, "ontology": input_fingerprint(args.ontology), "threshold": args.threshold,
                "batch_size": args.batch_size, "chunk_size": args.chunk_size, "details": bool(args.details),
                "details_top": args.details_top, "device": str(args.device)}
    return json.loads(json.dumps(settings))


def _compiler(perception, ontology):
    from nablafol.compiler import Compiler
    from nablafol.pipeline.answering import CACHED_PROGRAMS
    # a compiled program with its node order, check and packed plan is ~8 KB: this cache bounds them all
    return Compiler(ontology, knowledge_relations=getattr(perception, "knowledge_relations", ()),
                    cache_size=CACHED_PROGRAMS)


def _perception(args):
    ontology = load_ontology(args.ontology)
    if args.scene_graphs:
        from nablafol.data import SceneGraphTexts, load_scene_graphs
        from nablafol.pipeline.answering import SceneGraphPerception
        knowledge = None
        if args.knowledge:
            from nablafol.graph_oracles import KnowledgeBase
            knowledge = KnowledgeBase.sample() if args.knowledge == "sample" else KnowledgeBase.load(args.knowledge)
        # with workers, scenes stay JSON text until a worker needs one: read in parallel, not copied
        graphs = SceneGraphTexts(args.scene_graphs) if args.workers > 1 else load_scene_graphs(args.scene_graphs)
        return SceneGraphPerception(graphs, ontology=ontology, device=args.device, knowledge=knowledge), ontology
    from nablafol.pipeline.answering import FeaturePerception
    perception = FeaturePerception.load(args.features, args.model, device=args.device)
    return perception, perception.ontology


def _report_skips(args, tally, journal) -> None:
    if not tally.skipped:
        return
    counts = ", ".join(f"{n:,} {reason}" for reason, n in sorted(tally.skip_counts.items(), key=lambda kv: -kv[1]))
    print(f"skipped {tally.skipped:,} questions (counted wrong): {counts}")
    for question_id, _, (reason, detail) in tally.first_skips:
        print(f"  {question_id}: {reason}: {detail}")
    path = Path(args.skipped) if args.skipped else Path(args.predictions).with_suffix(".skipped.json")
    write_json(path, [{"questionId": q, "reason": skip[0], "detail": skip[1]}
                      for q, _, skip in journal.entries() if skip is not None])
    more = f" ({tally.skipped - 20:,} more)" if tally.skipped > 20 else ""
    print(f"all skipped questions{more}: {path}")
    if args.strict:
        print("nablafol eval: --strict: questions were skipped", file=sys.stderr)
