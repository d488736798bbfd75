"""Score any GQA predictions: accuracy and consistency, and with a split Acc_h (accuracy on the
hard set) and Err_e (error on the easy set) with their consistencies, for open / binary / all
(the paper's Tables 1-3).

    nablafol score --questions Q --predictions P [--split SPLIT] [--json OUT]
"""
from __future__ import annotations

from .common import output_file, write_json

HELP = "accuracy, consistency, Acc_h and Err_e of any predictions file"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q")
    parser.add_argument("--predictions", required=True, metavar="P")
    parser.add_argument("--split", metavar="SPLIT", help="a split file from `nablafol split`")
    parser.add_argument("--json", metavar="OUT", help="write the scores as JSON")
    parser.add_argument("--exact", action="store_true", help="exact string match (GQA's eval.py)")


def run(args) -> int:
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
