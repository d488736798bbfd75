"""Score any GQA predictions with every metric of GQA's evaluation script (accuracy per type,
steps and length; consistency; validity and plausibility with a choices file; grounding with an
attentions file; distribution), and with a split the paper's Acc_h (accuracy on the hard set)
and Err_e (error on the easy set) with their consistencies, for open / binary / all.

    nablafol score --questions Q --predictions P [--split SPLIT] [--choices C]
                   [--attentions A --scene-graphs SG] [--exact] [--json OUT]
"""
from __future__ import annotations

from .common import output_file, write_json

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
    parser.add_argument("--json", metavar="OUT", help="write the scores as JSON")
    parser.add_argument("--exact", action="store_true", help="exact string match (GQA's eval.py)")


def run(args) -> int:
    from nablafol.scoring import format_gqa
    from nablafol.scoring.inputs import score_files
    if args.json:
        output_file(args.json)
    scores = score_files(args.questions, args.predictions, split=args.split, choices=args.choices,
                         attentions=args.attentions, attention_kind=args.attention_kind,
                         scene_graphs=args.scene_graphs, exact=args.exact)
    print(format_gqa(scores.overall))
    print()
    print(scores.format_table())
    if args.json:
        write_json(args.json, scores.to_json())
    return 0
