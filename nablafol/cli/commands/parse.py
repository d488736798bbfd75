"""Parse a GQA program line and print its AST, its DFOL program and its FOL formula.

    nablafol parse "select: chair->relate: _,to the left of,s [0]->exist: ? [1]"
"""
from __future__ import annotations

from .common import add_ontology_argument, load_ontology

HELP = "print a GQA program's AST, DFOL program and FOL formula"


def add_arguments(parser) -> None:
    parser.add_argument("program", help="a GQA semanticStr line (quote it)")
    add_ontology_argument(parser)


def run(args) -> int:
    from nablafol import dsl
    from nablafol.compiler import Compiler
    program = dsl.parse_program(args.program)
    print(program)
    compiled = Compiler(load_ontology(args.ontology)).compile(program)
    print(f"DFOL: {compiled.program.term()}")
    print(f"FOL:  {compiled.formula()}")
    answers = compiled.answers
    shown = ", ".join(answers[:12]) + (f", … ({len(answers)} in all)" if len(answers) > 12 else "")
    print(f"answers ({'yes/no' if compiled.is_binary else 'open'}): {shown}")
    return 0
