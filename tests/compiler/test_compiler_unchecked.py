"""The translator makes most nodes ``unchecked`` (``nablafol.ir``): each must be a node the
checking constructors accept, and equal to what they make (same hash, same printing)."""
from dataclasses import fields

from hypothesis import given, settings
from tiers import examples
import pytest

from nablafol.compiler import CompileError, Compiler
from nablafol.dsl.testing import programs
from nablafol.ir import Atom, Node, Predicate, Program

COMPILER = Compiler()


def rebuilt(value):
    """``value`` made again, every node in it by its checking constructor."""
    if isinstance(value, (Node, Atom, Program)):
        return type(value)(*(rebuilt(getattr(value, f.name)) for f in fields(value)))
    if isinstance(value, tuple) and not isinstance(value, Predicate):
        return tuple(rebuilt(v) for v in value)
    return value


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None)
@given(programs())
def test_translated_programs_are_what_the_checking_constructors_make(program):
    try:
        compiled = COMPILER.compile(program).program
    except CompileError:  # made-up words the vocabulary refuses: nothing built
        return
    again = rebuilt(compiled)
    assert again == compiled and hash(again) == hash(compiled)
    assert (again.term(), again.formula(), again.labels) == (compiled.term(), compiled.formula(), compiled.labels)
