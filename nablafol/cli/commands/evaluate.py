"""Answer GQA questions with DFOL reasoning over scene graphs (golden or probabilistic) or over
object features with a trained oracle; write GQA predictions; print accuracy and consistency.

    nablafol eval --questions val_balanced_questions.json --scene-graphs val_sceneGraphs.json \\
                  --predictions out/predictions.json [--details out/details.jsonl]
    nablafol eval --questions Q --features FEATURES_DIR --model MODEL_DIR --predictions OUT

Questions that cannot be answered (malformed program, a concept the vocabulary lacks, an image
without a scene) are skipped, counted as wrong and listed with their reasons; `--strict` makes
any skip an error (exit status 2). A run that answers none of its questions exits 2 (its 0% is
no one's accuracy: the scene graphs of another split?) unless `--allow-no-answers`.

With `--parser P` (a folder from `nablafol parser train`) the questions are answered with the
programs the parser reads from their words, not with their own (golden) programs: what parsing
costs. A question it cannot read is skipped as "unreadable question".

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

Shards (several machines, or processes): `--shard I/N` (0 <= I < N) answers the chunks k with
k mod N = I into its own journal (OUT.shard-I-of-N.journal, kept, and its details); `--merge`,
with the same options, joins the N shards into OUT (and the details, and the skipped list),
byte-identical to one process's run with the same --chunk-size, and prints the scores of the
whole set. Under torchrun every process answers the shard of its rank and rank 0 merges:

    torchrun --nproc_per_node 2 -m nablafol.cli eval --questions Q --features F --model M --predictions OUT
"""
from __future__ import annotations

import sys

from .common import (UsageError, add_allow_no_answers_argument, add_exact_match_argument, add_ontology_argument,
                     add_threads_argument, check_inputs, device, non_negative_int, output_file, positive_int, probability,
                     whole_number, with_threads)

HELP = "answer questions over scene graphs or features; print accuracy and consistency"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q", help="questions JSON file, or a folder of them")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--scene-graphs", metavar="SG", help="scene graphs JSON (plain or probabilistic)")
    src.add_argument("--features", metavar="F", help="features folder (gqa_objects_info.json + HDF5), with --model")
    parser.add_argument("--model", metavar="M", help="trained model folder (with --features)")
    parser.add_argument("--predictions", required=True, metavar="OUT", help="where to write GQA predictions JSON")
    parser.add_argument("--details", metavar="D", help="also write per-question details (JSON lines)")
    parser.add_argument("--attentions", metavar="A", help="with --details: also write the engine's attention as GQA's "
                        "attentions file (object-based; `nablafol score --attentions A` scores its grounding)")
    parser.add_argument("--details-top", type=non_negative_int, default=10, metavar="K",
                        help="candidates of an open question kept in details (0: all; default 10)")
    parser.add_argument("--explain", type=positive_int, nargs="?", const=5, default=0, metavar="K",
                        help="with --details: each line also says why (\"explanation\", as `nablafol answer "
                             "--explain --json`): each step's K most attended objects and the K facts (default 5) "
                             "whose removal moves the answer most")
    parser.add_argument("--skipped", metavar="PATH", help="write the skipped questions here (JSON); default "
                        "OUT with suffix .skipped.json when any")
    parser.add_argument("--batch-size", type=positive_int, default=1024)
    parser.add_argument("--chunk-size", type=positive_int, default=16384, metavar="N",
                        help="questions answered between two journal commits (default 16384)")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run from its journal "
                        "(OUT.journal); refused when the options or input files differ")
    parser.add_argument("--threshold", type=probability, default=0.5, help="θ of Algorithm 1 for yes/no questions")
    add_exact_match_argument(parser)
    parser.add_argument("--exact-inference", action="store_true", help="the exact probability where a program "
                        "repeats uncertain atoms (conditioning on them; docs/exactness.md) instead of the paper's "
                        "approximation; each answer's flag in --details")
    parser.add_argument("--exact-budget", type=exact_budget, default=12, metavar="K", help="with --exact-inference "
                        "or --bounds: the most repeated uncertain atoms conditioned on per answer (2^K worlds; beyond, a compiled "
                        "circuit; past its node budget, the approximation, flagged; default 12)")
    parser.add_argument("--bounds", action="store_true", help="with --details: each answer's sound bounds "
                        "[lower, upper] on its probabilities (\"bounds\"; an exact answer's are its value), "
                        "conditioning on --exact-budget shared atoms (docs/exactness.md)")
    parser.add_argument("--strict", action="store_true", help="any skipped question is an error (exit 2)")
    add_allow_no_answers_argument(parser, "a run that answers no question (every one skipped) exits 0; without it "
                                          "that is an error (exit 2): the scene graphs of another split?")
    parser.add_argument("--format", choices=("gqa", "cric"), help="the questions' format (default: told from the "
                        "file); CRIC questions are answered with CRIC's programs, and their predictions (answer "
                        "and grounding) are written in CRIC's format, the details beside them")
    parser.add_argument("--knowledge", metavar="KB", help="a knowledge base (TSV or JSON triples; 'sample' for the "
                        "built-in one) for CRIC-style steps such as `filter CapableOf: lift food`")
    parser.add_argument("--parser", metavar="P", help="a semantic parser folder (`nablafol parser train`): answer "
                        "with the program it reads from each question's words, not the question's own; a question "
                        "it cannot read is skipped as 'unreadable question'")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workers", type=positive_int, default=1, metavar="N",
                        help="processes answering chunks side by side (CPU only; default 1). The answers do not "
                             "depend on it")
    parser.add_argument("--shard", type=shard, metavar="I/N", help="answer shard I of N (0-based; chunks k with "
                        "k mod N = I) into its own journal, for --merge")
    parser.add_argument("--merge", action="store_true", help="write the outputs from the journals of the N shards "
                        "(run with the same options)")
    add_threads_argument(parser)
    add_ontology_argument(parser)


def _outputs_apart(job) -> None:
    """Before any work: no file the run writes (``job.outputs()``: those named and those it
    derives) replaces an input, by any name, or another of them, or lands in a folder read whole
    (questions, scene graphs)."""
    written = job.inputs()
    check_inputs(written)  # before job.outputs(), which reads the questions' format
    for name, out in job.outputs():
        if out is not None:
            output_file(out, written, read_whole=("--questions", "--scene-graphs"))
            written[name] = out


def exact_budget(text: str) -> int:
    """``--exact-budget K``: as the engine takes it, 0 to its most."""
    from nablafol.pipeline.evaluation import most_exact_budget
    return whole_number(0, most_exact_budget())(text)


def shard(text: str):
    """``--shard I/N``."""
    import argparse

    from nablafol.pipeline.sharding import EvalShard, ShardingError
    try:
        return EvalShard.parse(text)
    except ShardingError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args) -> int:
    from nablafol.pipeline.collector import long_run
    # millions of long-lived objects: see nablafol.pipeline.collector; a command's process ends
    # after its run, so the run's little cyclic garbage is not worth a scan of all it made
    with long_run(collect_after=False):
        return with_threads(args.threads, lambda: _run(args))


def _run(args) -> int:
    import contextlib

    from nablafol.data.output_lock import output_lock
    from nablafol.pipeline.distributed import Launch
    from nablafol.pipeline.evaluation import EvaluationJob, run_evaluation
    from nablafol.progress import ProgressBar

    if args.features and not args.model:
        raise UsageError("--features needs --model (a trained model folder)")
    if args.model and not args.features:
        raise UsageError("--model goes with --features")
    if args.model and args.ontology_extension:
        raise UsageError("--ontology-extension goes with --scene-graphs: a model folder answers with the ontology it "
                         "was trained with (train it with --ontology-extension)")
    if args.attentions and not args.details:
        raise UsageError("--attentions is written from the details: give --details too")
    if args.bounds and not args.details:
        raise UsageError("--bounds writes each answer's bounds into the details: give --details too")
    if args.explain and not args.details:
        raise UsageError("--explain writes its explanations into the details: give --details too")
    args.device = device(args.device)
    if args.workers > 1 and args.device.type != "cpu":
        raise UsageError(f"--workers {args.workers} runs on the CPU only (a forked process cannot use "
                         f"{args.device}); give --workers 1 or --device cpu")
    job = EvaluationJob(
        questions=args.questions, predictions=args.predictions, scene_graphs=args.scene_graphs,
        features=args.features, model=args.model, details=args.details, attentions=args.attentions,
        skipped=args.skipped,
        knowledge=args.knowledge, ontology=args.ontology, ontology_extension=args.ontology_extension,
        batch_size=args.batch_size, chunk_size=args.chunk_size,
        threshold=args.threshold, details_top=args.details_top, explain=args.explain, exact=args.exact_match,
        format=args.format,
        exact_inference=args.exact_inference, exact_budget=args.exact_budget, bounds=args.bounds,
        parser=args.parser, workers=args.workers, threads=args.threads, device=args.device, resume=args.resume,
        shard=args.shard, merge=args.merge, launch=Launch.from_environment())
    if args.shard is not None and args.merge:
        raise UsageError("--shard answers one shard, --merge joins them: give one of the two")
    _outputs_apart(job)  # fail before the work, not after it
    with contextlib.ExitStack() as locks:
        for output in job.written_alone():
            locks.enter_context(output_lock(output, "--predictions"))
        bar = ProgressBar("eval", unit="q") if job.launch.is_main and not args.merge else None
        report = run_evaluation(job, progress=bar)
        if bar is not None:
            bar.close()
    for line in report.lines():
        print(line)
    if args.strict and report.result.skipped:
        print("nablafol eval: --strict: questions were skipped", file=sys.stderr)
        return 2
    result = report.result
    if report.shard is None and result.done and not result.answered and not args.allow_no_answers:
        print(f"nablafol eval: none of the {result.done:,} questions was answered ({result.skip_summary()}; "
              f"listed in {report.skipped_file}): are the inputs of the same split? (--allow-no-answers makes "
              f"this exit 0)", file=sys.stderr)
        return 2
    return 0
