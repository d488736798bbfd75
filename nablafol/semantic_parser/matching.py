"""Comparing programs as reasoning sees them: object ids ignored.

    >>> from nablafol.dsl import parse_program
    >>> same_program(parse_program("select: cup (12)->exist: ? [0]"), parse_program("select: cup->exist: ? [0]"))
    True
    >>> without_ids(parse_program("select: cup (12)->relate: _,on,s (-) [0]->exist: ? [1]")).to_semantic_str()
    'select: cup->relate: _,on,s [0]->exist: ? [1]'
"""
from __future__ import annotations

from nablafol.dsl import Program

__all__ = ["without_ids", "same_program"]


def without_ids(program: Program) -> Program:
    """``program`` with every object-id annotation removed (what the parser writes)."""
    return program.without_ids()


def same_program(a: Program, b: Program) -> bool:
    """Whether two programs are the same up to object ids (exact match of a parser's output)."""
    return without_ids(a) == without_ids(b)
