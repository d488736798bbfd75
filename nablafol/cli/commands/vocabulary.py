"""The concepts a questions file names (and its scene graphs hold), by kind and type: which the
ontology knows, which a trained model knows, which are new, with counts. What a user runs
before training on a new dataset (real GQA's vocabulary is open: docs/compiling-gqa.md).

    nablafol vocabulary --questions Q [--scene-graphs SG] [--model M] [--ontology DIR] [--json OUT]
"""
from __future__ import annotations

from .common import add_ontology_argument, load_ontology, non_negative_int, output_file, write_json

HELP = "the concepts a dataset names: known to the ontology, to a model, or new"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q", help="questions JSON file, or a folder of them")
    parser.add_argument("--scene-graphs", metavar="SG", help="scene graphs JSON: their names, attributes, relations")
    parser.add_argument("--model", metavar="M", help="a trained model folder: which concepts it learned")
    parser.add_argument("--json", metavar="OUT", help="also write every concept with its counts as JSON")
    parser.add_argument("--examples", type=non_negative_int, default=12, metavar="N",
                        help="new concepts shown per kind, most mentioned first (default 12)")
    add_ontology_argument(parser)


def run(args) -> int:
    from nablafol.pipeline.datasets import vocabulary_of
    if args.json:
        output_file(args.json, {"--questions": args.questions, "--scene-graphs": args.scene_graphs,
                                "--model": args.model}, read_whole=("--questions", "--scene-graphs"))
    report = vocabulary_of(args.questions, args.scene_graphs, load_ontology(args.ontology), args.model)
    print("\n".join(report.lines(args.examples)))
    if args.json:
        write_json(args.json, report.to_dict())
    return 0
