"""Parse a GQA program line and print its AST, its DFOL program, its FOL formula and whether it
is read-once (its answer then is the exact probability).

    nablafol parse "select: chair->relate: _,to the left of,s [0]->exist: ? [1]"
"""
from __future__ import annotations

from .common import add_ontology_argument, load_ontology

HELP = "print a GQA program's AST, DFOL program and FOL formula"


def add_arguments(parser) -> None:
    parser.add_argument("program", help="a GQA semanticStr line (quote it)")
    add_ontology_argument(parser)


def read_once_line(program) -> str:
    """``yes`` (the engine's answer is the exact probability), or ``no`` and which predicates'
    atoms may repeat (exact only in scenes where those are certain, or with exact inference)."""
    repeated = program.repeated_predicates()
    if not repeated:
        return "yes (the answer is the exact probability)"
    names = sorted({str(p) for p in repeated})
    shown = ", ".join(names[:8]) + (f", … ({len(names)})" if len(names) > 8 else "")
    return (f"no: atoms of {shown} may repeat (exact where they are certain; "
            f"otherwise approximate, or exact with --exact-inference)")


def run(args) -> int:
    from nablafol import dsl
    from nablafol.compiler import Compiler
    program = dsl.parse_program(args.program)
    # compiled before anything is printed: a refusal (an unknown value, a bad ontology) is then
    # the only thing the command says
    compiled = Compiler(load_ontology(args.ontology, args.ontology_extension)).compile(program)
    print(program)
    print(f"DFOL: {compiled.program.term()}")
    print(f"FOL:  {compiled.formula()}")
    print(f"read-once: {read_once_line(compiled.program)}")
    answers = compiled.answers
    shown = ", ".join(answers[:12]) + (f", … ({len(answers)} in all)" if len(answers) > 12 else "")
    print(f"answers ({'yes/no' if compiled.is_binary else 'open'}): {shown}")
    return 0
