"""The semantic parser: train it on GQA questions, evaluate it, or give questions its programs.

    nablafol parser train --questions train_balanced_questions.json --out runs/parser \\
                          [--val val_balanced_questions.json] [--epochs 6]
    nablafol parser eval  --questions testdev_balanced_questions.json --parser runs/parser \\
                          [--scene-graphs SG] [--json OUT]
    nablafol parser apply --questions Q --parser runs/parser --out Q_PREDICTED

`train` learns from each question's text and program (`semantic`, else `semanticStr`); a
question without either is left out and counted. `eval` reports exact match (the program read
equals the question's own, object ids ignored) and, with scene graphs, execution accuracy (the
program read, run with the golden oracle, gives the gold answer) beside the golden programs'.
`apply` writes the questions with the parser's programs in place of their own (the golden line
kept as `goldSemanticStr`; a question it cannot read has no program and a `parserError`), a
file `nablafol eval` reads as any other.
"""
from __future__ import annotations

from .common import (LINK_LOOP_LINE, UsageError, add_ontology_argument, add_threads_argument, is_link_loop,
                     load_ontology, output_clash, output_file, positive_float, positive_int, probability, seed_number,
                     with_threads, write_json)

HELP = "train, evaluate or apply the semantic parser (question text -> program)"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="parser_command", required=True, metavar="ACTION")
    train = sub.add_parser("train", help="train a parser on GQA questions")
    train.add_argument("--questions", required=True, metavar="Q", help="training questions (a file or a folder)")
    train.add_argument("--out", required=True, metavar="P", help="the parser folder to write")
    train.add_argument("--val", metavar="Q2", help="validation questions: the epoch that reads them best is kept")
    # defaults are TrainingSettings' own, filled in by _train: reading them here would import torch
    # at every command's start, which costs more than the rest of the start
    own = "default: the parser's own, see docs/semantic-parser.md"
    train.add_argument("--epochs", type=positive_int, help=own)
    train.add_argument("--batch-size", type=positive_int, help=own)
    train.add_argument("--lr", type=positive_float, help=f"Adam's learning rate ({own})")
    train.add_argument("--hidden-dim", type=positive_int, help=own)
    train.add_argument("--seed", type=seed_number, help=own)
    train.add_argument("--min-probability", type=probability,
                       help=f"refuse to read a question whose program has a lower probability ({own}: read every "
                            "question that has words)")
    add_threads_argument(train)

    evaluate = sub.add_parser("eval", help="exact match and execution accuracy of a parser")
    evaluate.add_argument("--questions", required=True, metavar="Q")
    evaluate.add_argument("--parser", required=True, metavar="P", help="a parser folder")
    evaluate.add_argument("--scene-graphs", metavar="SG", help="scene graphs: also execution accuracy")
    evaluate.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    add_ontology_argument(evaluate)
    add_threads_argument(evaluate)

    apply = sub.add_parser("apply", help="write the questions with the parser's programs")
    apply.add_argument("--questions", required=True, metavar="Q")
    apply.add_argument("--parser", required=True, metavar="P")
    apply.add_argument("--out", required=True, metavar="Q_OUT", help="the questions file to write")
    add_threads_argument(apply)


def run(args) -> int:
    action = {"train": _train, "eval": _evaluate, "apply": _apply}[args.parser_command]
    return with_threads(args.threads, lambda: action(args))


def _train(args) -> int:
    from nablafol.data import iter_questions
    from nablafol.progress import ProgressBar
    from nablafol.semantic_parser import TrainingSettings, save_parser, train_parser
    given = dict(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, hidden_dim=args.hidden_dim,
                 seed=args.seed, min_probability=args.min_probability)
    settings = TrainingSettings(**{name: value for name, value in given.items() if value is not None})
    _parser_folder_apart(args.out, {"--questions": args.questions, "--val": args.val})
    bar = ProgressBar("parser train", unit="batches")
    result = train_parser(iter_questions(args.questions),
                          val_questions=iter_questions(args.val) if args.val else None,
                          settings=settings, progress=bar, log=lambda line: (bar.close(), print(line)))
    bar.close()
    path = save_parser(args.out, result.parser)
    kept = f", the best on validation (epoch {result.best_epoch})" if result.best_epoch else ""
    print(f"trained on {result.examples:,} questions ({len(result.skipped):,} left out) in "
          f"{result.seconds:.1f} s{kept} -> {path.parent}")
    for question_id, reason in result.skipped[:5]:
        print(f"  left out {question_id}: {reason}")
    return 0


def _parser_folder_apart(out, inputs: dict) -> None:
    """Before any training: the parser folder ``out`` is not a questions folder (read whole, a
    later run would read its parser.json as questions), nor inside one, and its file replaces no
    input (as `nablafol train --out` refuses)."""
    from pathlib import Path

    from nablafol.semantic_parser.folder import CONFIG_NAME
    out = Path(out)
    if is_link_loop(out):
        raise UsageError(f"--out {out}: {LINK_LOOP_LINE}")
    for option, given in inputs.items():
        if given is None:
            continue
        clash = output_clash(out, Path(given), True) or output_clash(out / CONFIG_NAME, Path(given), True)
        if clash is not None:
            raise UsageError(f"--out {out}: {clash.format(f'{option} {given}')}: give another --out")


def _evaluate(args) -> int:
    from nablafol.asking import evaluate_parser
    from nablafol.data import iter_questions
    from nablafol.semantic_parser import load_parser
    if args.json:
        output_file(args.json, {"--questions": args.questions, "--parser": args.parser,
                                "--scene-graphs": args.scene_graphs})
    parser = load_parser(args.parser)
    ontology = load_ontology(args.ontology, args.ontology_extension) if args.scene_graphs else None
    result = evaluate_parser(parser, iter_questions(args.questions), scene_graphs=args.scene_graphs,
                             ontology=ontology)
    for line in result.lines():
        print(line)
    if result.mistakes:
        print("first programs read wrongly (question | gold | read):")
        for _, question, gold, read in result.mistakes[:5]:
            print(f"  {question} | {gold} | {read}")
    if args.json:
        write_json(args.json, result.to_dict())
    return 0


def _apply(args) -> int:
    from nablafol.data import iter_questions, write_questions
    from nablafol.errors import InputFileError
    from nablafol.semantic_parser import load_parser, with_predicted_programs
    from nablafol.semantic_parser.predicted_programs import parser_error
    output_file(args.out, {"--questions": args.questions, "--parser": args.parser})
    parser = load_parser(args.parser)
    counts = {"read": 0, "unreadable": 0}
    seen: set[str] = set()

    def counted(questions):
        for question in questions:
            if question.id in seen:  # the stream does not see it: which of the two would be written?
                raise InputFileError(args.questions, "appears twice", f"question {question.id}")
            seen.add(question.id)
            counts["unreadable" if parser_error(question) else "read"] += 1
            yield question
    write_questions(args.out, counted(with_predicted_programs(iter_questions(args.questions), parser)))
    print(f"{counts['read']:,} questions read, {counts['unreadable']:,} unreadable -> {args.out}")
    return 0
