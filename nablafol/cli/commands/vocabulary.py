"""The concepts a questions file names (and its scene graphs hold), by kind and type: which the
ontology knows, which a trained model knows, which are new, with counts. What a user runs
before training on a new dataset (real GQA's vocabulary is open: docs/compiling-gqa.md).

    nablafol vocabulary --questions Q [--scene-graphs SG] [--model M] [--ontology DIR] [--json OUT]

With ``--categories-out FILE`` it learns instead the categories the questions use, from their
groundings over their scene graphs (the training split's, never the questions evaluated), and
writes them as an ontology extension for ``--ontology-extension`` (docs/real-gqa.md):

    nablafol vocabulary --questions train_balanced_questions.json --scene-graphs train_sceneGraphs.json \\
                        --categories-out gqa-categories.json
"""
from __future__ import annotations

from .common import (UsageError, add_ontology_argument, load_ontology, non_negative_int, output_file, positive_int,
                     write_json)

HELP = "the concepts a dataset names: known to the ontology, to a model, or new"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q", help="questions JSON file, or a folder of them")
    parser.add_argument("--scene-graphs", metavar="SG", help="scene graphs JSON: their names, attributes, relations")
    parser.add_argument("--model", metavar="M", help="a trained model folder: which concepts it learned")
    parser.add_argument("--json", metavar="OUT", help="also write every concept with its counts as JSON")
    parser.add_argument("--examples", type=non_negative_int, default=12, metavar="N",
                        help="new concepts shown per kind, most mentioned first (default 12)")
    parser.add_argument("--categories-out", metavar="FILE", help="instead: write the classes the questions' "
                        "groundings put under each category beyond the ontology (an ontology extension, with "
                        "counts to review), from --questions over --scene-graphs: training records only")
    parser.add_argument("--min-groundings", type=positive_int, default=1, metavar="N",
                        help="with --categories-out: a class joins a category when grounded under it at least N "
                             "times (default 1)")
    add_ontology_argument(parser)


def run(args) -> int:
    if args.categories_out:
        return _categories(args)
    from nablafol.pipeline.datasets import vocabulary_of
    if args.json:
        output_file(args.json, {"--questions": args.questions, "--scene-graphs": args.scene_graphs,
                                "--model": args.model}, read_whole=("--questions", "--scene-graphs"))
    report = vocabulary_of(args.questions, args.scene_graphs, load_ontology(args.ontology, args.ontology_extension),
                           args.model)
    print("\n".join(report.lines(args.examples)))
    if args.json:
        write_json(args.json, report.to_dict())
    return 0


def _categories(args) -> int:
    from pathlib import Path

    from nablafol.compiler.categories import dataset_categories
    if not args.scene_graphs:
        raise UsageError("--categories-out reads the questions' groundings in their scene graphs: give --scene-graphs")
    for option in ("model", "json"):
        if getattr(args, option):
            raise UsageError(f"--categories-out writes an ontology extension; --{option} goes with the vocabulary "
                             "report (run them apart)")
    output_file(args.categories_out, {"--questions": args.questions, "--scene-graphs": args.scene_graphs,
                                      "--ontology-extension": args.ontology_extension},
                read_whole=("--questions", "--scene-graphs"))
    evidence = dataset_categories(args.questions, args.scene_graphs,
                                  load_ontology(args.ontology, args.ontology_extension))
    learned = {"questions file": Path(args.questions).name, "scene graphs file": Path(args.scene_graphs).name,
               "min groundings": args.min_groundings, **evidence.summary()}
    extension = evidence.extension(args.min_groundings, learned)
    write_json(args.categories_out, extension.to_data())
    summary = evidence.summary()
    print(f"{summary['questions']:,} questions ({summary['unreadable programs']:,} unreadable, "
          f"{summary['questions without a scene graph']:,} without a scene graph); "
          f"{summary['groundings of categories']:,} objects grounded under a category, "
          f"{summary['agreeing with the ontology']:,} as the ontology files them"
          + (f"; {summary['ids missing from their scene graph']:,} ids missing from their scene graph"
             if summary["ids missing from their scene graph"] else ""))
    print(f"{extension.additions:,} classes join {len(extension.categories):,} categories"
          + (":" if extension.additions else "") + f" -> {args.categories_out}")
    for line in extension.lines(args.examples):
        print(line)
    return 0
