"""Answer a question in words about one image: the semantic parser reads it into a program,
the engine answers that program over the image's scene graph (the golden oracle) or its
object features (a trained oracle).

    nablafol answer --parser runs/demo/parser --scene-graphs val_sceneGraphs.json --image 2000001 \\
                    "Is the cup on the left red?"
    nablafol answer --parser runs/demo/parser --model runs/demo/model --features data/features \\
                    --image 2000001 "What color is the cup?" [--json]

Prints the program read, its FOL formula, the answer with its probability, the top
candidates and the grounding (objects the answer step attends to at 0.5 or more); with
``--explain``, each step's most attended objects and the facts whose removal moves the answer
most (:mod:`nablafol.explain`). A question
the parser cannot read, or whose program cannot be answered here, is one line on stderr
(exit status 2).
"""
from __future__ import annotations

import json

from .common import add_ontology_argument, add_renamed_option, add_threads_argument, load_ontology, positive_int, probability, with_threads

HELP = "answer a question in words about one image (semantic parser + reasoning)"


def add_arguments(parser) -> None:
    parser.add_argument("question", help="the question, in words (quote it)")
    parser.add_argument("--parser", required=True, metavar="P", help="a parser folder (nablafol parser train)")
    parser.add_argument("--image", required=True, metavar="ID", help="the image's id")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--scene-graphs", metavar="SG", help="scene graphs JSON: the golden oracle answers")
    add_renamed_option(source, "--scene-graph", "--scene-graphs", takes_value=True)
    source.add_argument("--features", metavar="F", help="a features folder, with --model")
    parser.add_argument("--model", metavar="M", help="a trained model folder (with --features)")
    parser.add_argument("--top", type=positive_int, default=5, help="candidates shown (default 5)")
    parser.add_argument("--min-probability", type=probability, default=None, metavar="P",
                        help="refuse a question whose program is read with a lower probability (default: the "
                             "parser's own threshold; a reading below 0.5 is flagged either way)")
    parser.add_argument("--explain", type=positive_int, nargs="?", const=5, default=0, metavar="N",
                        help="also say why: each step's most attended objects and the N facts (default 5) whose "
                             "removal moves the answer most")
    parser.add_argument("--json", action="store_true", help="print the reply as JSON")
    add_ontology_argument(parser)
    add_threads_argument(parser)


def run(args) -> int:
    return with_threads(args.threads, lambda: _run(args))


def _run(args) -> int:
    from nablafol.asking import Asker
    from .common import UsageError
    if args.features and not args.model:
        raise UsageError("--features needs --model (a trained model folder)")
    if args.model and not args.features:
        raise UsageError("--model goes with --features (with --scene-graphs the golden oracle answers)")
    ontology = load_ontology(args.ontology, args.ontology_extension) if args.scene_graphs else None
    asker = Asker.from_folders(args.parser, scene_graphs=args.scene_graphs, features=args.features,
                               model=args.model, ontology=ontology, top=args.top)
    reply = asker.ask(args.image, args.question, min_probability=args.min_probability, explain=args.explain)
    print(json.dumps(reply.to_dict(), indent=1, ensure_ascii=False) if args.json else "\n".join(reply.lines()))
    return 0
