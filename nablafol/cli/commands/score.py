"""Score any GQA predictions with every metric of GQA's evaluation script (accuracy per type,
steps and length; consistency; validity and plausibility with a choices file; grounding with an
attentions file; distribution), and with a split the paper's Acc_h (accuracy on the hard set)
and Err_e (error on the easy set) with their consistencies, for open / binary / all. The
neighbouring benchmarks (CRIC, A-OKVQA, VCR and GD-VCR) are scored by their papers' metrics,
told from the questions file or named by --benchmark; --by scores every slice of a field with
its gap to a reference slice (docs/benchmarks.md).

    nablafol score --questions Q --predictions P [--split SPLIT] [--choices C]
                   [--attentions A --scene-graphs SG] [--exact] [--json OUT]
    nablafol score --benchmark {gqa,cric,aokvqa,vcr} --questions A --predictions P
                   [--split SPLIT] [--by FIELD [--reference SLICE]] [--json OUT]
"""
from __future__ import annotations

from .common import UsageError, output_file, write_json

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
                        "also the share of answers flagged exact (docs/exactness.md)")
    parser.add_argument("--json", metavar="OUT", help="write the scores as JSON")
    parser.add_argument("--exact", action="store_true", help="exact string match (GQA's eval.py)")
    parser.add_argument("--benchmark", choices=("gqa", "cric", "aokvqa", "vcr"),
                        help="the benchmark of the questions file (default: told from the file; vcr also reads GD-VCR)")
    parser.add_argument("--by", metavar="FIELD", help="score every slice of this field of the question records "
                        "(GD-VCR: region, keywords), with each slice's gap to --reference")
    parser.add_argument("--reference", metavar="SLICE", help="the slice --by compares with (default: the largest)")


def run(args) -> int:
    from nablafol.data.benchmark_files import detect_benchmark
    benchmark = args.benchmark or detect_benchmark(args.questions)
    if benchmark != "gqa" or args.by is not None:
        return _score_benchmark(args, benchmark)
    from nablafol.scoring import format_gqa
    from nablafol.scoring.inputs import score_files
    if args.json:
        output_file(args.json, _inputs(args), read_whole=("--questions", "--scene-graphs", "--choices"))
    scores = score_files(args.questions, args.predictions, split=args.split, choices=args.choices,
                         attentions=args.attentions, attention_kind=args.attention_kind,
                         scene_graphs=args.scene_graphs, exact=args.exact)
    print(format_gqa(scores.overall))
    print()
    print(scores.format_table())
    if args.details:
        from nablafol.data.details import exact_share
        exact, answered = exact_share(args.details)
        print(f"exact answers: {100 * exact / max(answered, 1):.2f}% ({exact:,} of {answered:,} in {args.details})")
    if args.json:
        write_json(args.json, scores.to_json())
    return 0


def _score_benchmark(args, benchmark: str) -> int:
    from nablafol.scoring.benchmarks import score_benchmark
    if args.reference is not None and args.by is None:
        raise UsageError("--reference names a slice of --by FIELD; give --by")
    if args.json:
        output_file(args.json, _inputs(args), read_whole=("--questions", "--scene-graphs", "--choices"))
    report = score_benchmark(benchmark, args.questions, args.predictions, split=args.split, by=args.by,
                             reference=args.reference, exact=args.exact)
    print(report.format_table())
    if args.json:
        write_json(args.json, report.to_json())
    return 0


def _inputs(args) -> dict:
    """The files the command reads, by option (what ``--json`` must not replace)."""
    return {"--questions": args.questions, "--predictions": args.predictions, "--split": args.split,
            "--choices": args.choices, "--attentions": args.attentions, "--scene-graphs": args.scene_graphs,
            "--details": args.details}
