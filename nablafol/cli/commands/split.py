"""Split a question set into easy and hard questions by a base model's predictions (paper,
section 4): easy = the base model answers them correctly (perception alone suffices).

    nablafol split --questions testdev_balanced_questions.json --predictions base.json --out split.json
"""
from __future__ import annotations

from .common import add_exact_match_argument, output_file, write_json

HELP = "hard/easy split from a base model's predictions"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q")
    parser.add_argument("--predictions", required=True, metavar="BASE", help="the base model's GQA predictions")
    parser.add_argument("--out", required=True, metavar="SPLIT")
    add_exact_match_argument(parser)


def run(args) -> int:
    from nablafol.data import load_questions, read_predictions
    from nablafol.scoring import exact_match, make_split, vocabulary_match
    output_file(args.out, {"--questions": args.questions, "--predictions": args.predictions})
    questions = load_questions(args.questions)
    split = make_split(questions.values(), read_predictions(args.predictions),
                       match=exact_match if args.exact_match else vocabulary_match)
    write_json(args.out, split.to_json(str(args.predictions), str(args.questions)))
    print(f"{len(split.easy):,} easy and {len(split.hard):,} hard questions -> {args.out}"
          + (f" ({len(split.base_missing):,} without a base prediction, counted hard)" if split.base_missing else ""))
    return 0
