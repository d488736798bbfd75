"""Score any GQA predictions: accuracy and consistency, and with a split Acc_h (accuracy on the
hard set) and Err_e (error on the easy set) with their consistencies, for open / binary / all
(the paper's Tables 1-3). The neighbouring benchmarks (CRIC, A-OKVQA, VCR and GD-VCR) are
scored by their papers' metrics, told from the questions file or named by --benchmark; --by
scores every slice of a field with its gap to a reference slice (docs/benchmarks.md).

    nablafol score --questions Q --predictions P [--split SPLIT] [--json OUT]
    nablafol score --benchmark {gqa,cric,aokvqa,vcr} --questions A --predictions P
                   [--split SPLIT] [--by FIELD [--reference SLICE]] [--json OUT]
"""
from __future__ import annotations

from .common import UsageError, output_file, write_json

HELP = "accuracy, consistency, Acc_h and Err_e of any predictions file"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q")
    parser.add_argument("--predictions", required=True, metavar="P")
    parser.add_argument("--split", metavar="SPLIT", help="a split file from `nablafol split`")
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
    from nablafol.data import load_questions, read_predictions
    from nablafol.data.json_stream import load_json
    from nablafol.errors import InputFileError
    from nablafol.scoring.metrics import ScoringError, exact_match, vocabulary_match
    from nablafol.scoring import Split, score
    questions = load_questions(args.questions)
    split = None
    if args.split:
        data = load_json(args.split, expected_type=dict, expected="a split {\"easy\": [...], \"hard\": [...]}")
        try:
            split = Split.from_json(data)
        except ScoringError as e:  # name the file the bad split came from
            raise InputFileError(args.split, str(e).removeprefix("split: ")) from None
    if args.json:
        output_file(args.json)
    try:
        scores = score(questions.values(), read_predictions(args.predictions), split,
                       match=exact_match if args.exact else vocabulary_match)
    except ScoringError as e:  # a split that does not fit the questions: name the split file
        if split is None:
            raise
        raise InputFileError(args.split, str(e)) from None
    print(scores.format_table())
    if args.json:
        write_json(args.json, scores.to_json())
    return 0


def _score_benchmark(args, benchmark: str) -> int:
    from nablafol.scoring.benchmarks import score_benchmark
    if args.reference is not None and args.by is None:
        raise UsageError("--reference names a slice of --by FIELD; give --by")
    if args.json:
        output_file(args.json)
    report = score_benchmark(benchmark, args.questions, args.predictions, split=args.split, by=args.by,
                             reference=args.reference, exact=args.exact)
    print(report.format_table())
    if args.json:
        write_json(args.json, report.to_json())
    return 0
