"""Score any GQA predictions with every metric of GQA's evaluation script (accuracy per type,
steps and length; consistency; validity and plausibility with a choices file; grounding with an
attentions file; distribution), and with a split the paper's Acc_h (accuracy on the hard set)
and Err_e (error on the easy set) with their consistencies, for open / binary / all. The
neighbouring benchmarks (CRIC, A-OKVQA, VCR and GD-VCR) are scored by their papers' metrics,
told from the questions file or named by --benchmark; --by scores every slice of a field with
its gap to a reference slice (docs/benchmarks.md); for GQA the slices come beside the whole
report (same JSON, plus "by"). A predictions file with no prediction for any question of the
file (another split's, or `[]`) is an error unless --allow-no-answers.

    nablafol score --questions Q --predictions P [--split SPLIT] [--choices C]
                   [--attentions A --scene-graphs SG] [--exact-match] [--by FIELD] [--json OUT]
    nablafol score --benchmark {gqa,cric,aokvqa,vcr} --questions A --predictions P
                   [--split SPLIT] [--by FIELD [--reference SLICE]] [--json OUT]
"""
from __future__ import annotations

from .common import (UsageError, add_allow_no_answers_argument, add_exact_match_argument, check_inputs, output_file,
                     write_json)

HELP = "every GQA metric of any predictions file; Acc_h and Err_e with a split"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q")
    parser.add_argument("--predictions", required=True, metavar="P")
    parser.add_argument("--split", metavar="SPLIT", help="a split file from `nablafol split`")
    parser.add_argument("--choices", metavar="C", help="GQA's choices file ({split}_choices.json): validity and "
                        "plausibility")
    parser.add_argument("--attentions", metavar="A", help="an attentions file in GQA's format: grounding "
                        "(needs --scene-graphs)")
    parser.add_argument("--attention-kind", choices=("objects", "spatial"), default="objects",
                        help="object-based boxes (default) or a square spatial map, as GQA's --objectFeatures")
    parser.add_argument("--scene-graphs", metavar="SG", help="the questions' scene graphs (grounding's regions)")
    parser.add_argument("--details", metavar="D", help="the run's details file (`nablafol eval --details`): "
                        "also the share of answers flagged exact and, written with --bounds, the share of yes/no answers "
                        "their interval decides and the mean width (docs/exactness.md)")
    parser.add_argument("--json", metavar="OUT", help="write the scores as JSON")
    add_exact_match_argument(parser)
    parser.add_argument("--benchmark", choices=("gqa", "cric", "aokvqa", "vcr"),
                        help="the benchmark of the questions file (default: told from the file; vcr also reads GD-VCR)")
    parser.add_argument("--by", metavar="FIELD", help="score every slice of this field of the question records "
                        "(GD-VCR: region, keywords), with each slice's gap to --reference")
    parser.add_argument("--reference", metavar="SLICE", help="the slice --by compares with (default: the largest)")
    add_allow_no_answers_argument(parser, "score when no prediction is for a question of the file (all counted "
                                          "wrong); without it that is an error: another split's predictions?")


def run(args) -> int:
    from nablafol.data.benchmark_files import detect_benchmark
    check_inputs(_inputs(args))
    benchmark = args.benchmark or detect_benchmark(args.questions)
    if args.reference is not None and args.by is None:
        raise UsageError("--reference names a slice of --by FIELD; give --by")
    if benchmark != "gqa":
        return _score_benchmark(args, benchmark)
    from nablafol.scoring import format_gqa
    from nablafol.scoring.inputs import score_files
    if args.json:
        output_file(args.json, _inputs(args), read_whole=("--questions", "--scene-graphs", "--choices"))
    scores = score_files(args.questions, args.predictions, split=args.split, choices=args.choices,
                         attentions=args.attentions, attention_kind=args.attention_kind,
                         scene_graphs=args.scene_graphs, exact=args.exact_match, by=args.by, reference=args.reference)
    if scores.nothing_matched and not args.allow_no_answers:
        _nothing_matched(args, len(scores.unknown_predictions))
    print(format_gqa(scores.overall))
    print()
    print(scores.format_table())
    if scores.slices is not None:
        print()
        print(scores.slices.titled_table())
    if args.details:
        from nablafol.data.details import exact_share
        exact, answered = exact_share(args.details)
        print(f"exact answers: {100 * exact / max(answered, 1):.2f}% ({exact:,} of {answered:,} in {args.details})")
        _print_bounds(args.details)
    if args.json:
        write_json(args.json, scores.to_json())
    return 0


def _print_bounds(details) -> None:
    """The bounds of a details file written with ``eval --bounds``: how many yes/no answers their
    interval decides, and the mean width; nothing when it has none."""
    from nablafol.data.details import bounds_share
    share = bounds_share(details)
    if not share.answers:
        return
    decided = (f"{100 * share.decided / share.yes_no:.2f}% of yes/no answers decided by their interval "
               f"({share.decided:,} of {share.yes_no:,}), " if share.yes_no else "")
    print(f"bounds: {decided}mean width {share.mean_width:.4f} over {share.answers:,} answers (docs/exactness.md)")


def _score_benchmark(args, benchmark: str) -> int:
    from nablafol.scoring.benchmarks import score_benchmark
    if args.choices is not None:  # GQA's choices file: no other benchmark has one
        raise UsageError(f"--choices is GQA's choices file; the questions are {benchmark}'s: leave it out")
    if args.json:
        output_file(args.json, _inputs(args), read_whole=("--questions", "--scene-graphs", "--choices"))
    report = score_benchmark(benchmark, args.questions, args.predictions, split=args.split, by=args.by,
                             reference=args.reference, exact=args.exact_match)
    if report.count and report.missing >= report.count and not args.allow_no_answers:
        _nothing_matched(args, None)
    print(report.format_table())
    if args.json:
        write_json(args.json, report.to_json())
    return 0


def _nothing_matched(args, predictions: int | None) -> None:
    """Refuse a score of nothing: no prediction is for a question of the file (0% for a reason
    that is not the model's)."""
    held = "" if predictions is None else f" (it holds {predictions:,})"
    raise UsageError(f"{args.predictions}: no prediction is for a question of {args.questions}{held}: are they of "
                     f"the same split? (--allow-no-answers scores them all as missing)")


def _inputs(args) -> dict:
    """The files the command reads, by option (what ``--json`` must not replace)."""
    return {"--questions": args.questions, "--predictions": args.predictions, "--split": args.split,
            "--choices": args.choices, "--attentions": args.attentions, "--scene-graphs": args.scene_graphs,
            "--details": args.details}
