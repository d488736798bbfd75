"""Names a user writes: a TableOracle keyed by plain names answers compiled programs, whose
predicates carry a kind (``attr``, ``name``, ...), where that is unambiguous; a missing or
ambiguous predicate is one line listing the kinds and the keys to use."""
import re

import pytest
import torch

from nablafol import Engine, Predicate, TableOracle
from nablafol.compiler import Compiler
from nablafol.errors import UnknownPredicateError

RED_TABLE = "select: table->filter color: red [0]->exist: ? [1]"


def test_plain_names_answer_a_compiled_program():
    """The friction: ``TableOracle([{"table": [...], "red": [...]}])`` on a compiled GQA program failed
    with ``UnknownPredicateError … no table for predicate 'red' (arity 1)``."""
    program = Compiler().compile_text(RED_TABLE).program
    assert {p.kind for p in program.predicates()} == {"name", "attr"}
    plain = Engine()([program], TableOracle([{"table": [0.9, 0.0, 0.5], "red": [0.8, 1.0, 0.5]}])).probs()
    kinded = Engine()([program], TableOracle([{Predicate("table", kind="name"): [0.9, 0.0, 0.5],
                                                Predicate("red", kind="attr"): [0.8, 1.0, 0.5]}])).probs()
    assert torch.equal(plain, kinded)
    assert plain.item() == pytest.approx(1 - (1 - 0.72) * (1 - 0.25))


def test_a_kinded_table_answers_a_plain_predicate_and_gradients_reach_it():
    red = torch.tensor([0.5, 0.25], requires_grad=True)
    from nablafol import Aggregate, Filter, Program, Quantifier, Top
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(Predicate("red"), Top())))
    oracle = TableOracle([{Predicate("red", kind="attr"): red}, {"red": [1.0]}])
    assert oracle.knows(Predicate("red")) and oracle.knows(Predicate("red", kind="attr"))
    answers = Engine()([program, program], oracle)
    answers.probs()[0, 0].backward()
    assert answers.probs()[:, 0].tolist() == pytest.approx([1 - 0.5 * 0.75, 1.0])
    assert red.grad.tolist() == pytest.approx([0.75, 0.5])


def test_an_ambiguous_plain_predicate_lists_the_tables_that_answer_it():
    from nablafol import Aggregate, Filter, Program, Quantifier, Top
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(Predicate("orange"), Top())))
    oracle = TableOracle([{Predicate("orange", kind="name"): [0.5], Predicate("orange", kind="attr"): [0.5]}])
    with pytest.raises(UnknownPredicateError, match=re.escape(
            "TableOracle: scene 0: predicate 'orange' (kind '', arity 1) is ambiguous: its tables "
            "Predicate('orange', kind='attr'), Predicate('orange', kind='name') all answer it")):
        Engine()([program], oracle)


def test_a_missing_predicate_lists_the_keys_to_use():
    program = Compiler().compile_text(RED_TABLE).program
    with pytest.raises(UnknownPredicateError) as caught:
        Engine()([program], TableOracle([{"table": [0.9], "blue": [0.5], "left": [[0.0]]}]))
    line = str(caught.value)
    assert "\n" not in line
    assert line == ("TableOracle: scene 0 has no table for predicate 'red' (kind 'attr', arity 1); give it under "
                    "'red' (any kind) or Predicate('red', kind='attr'); its unary tables: 'blue', 'table'")
    with pytest.raises(UnknownPredicateError, match=re.escape(
            "Predicate('red', kind='name') has another arity or kind")):
        Engine()([program], TableOracle([{"table": [0.9], Predicate("red", kind="name"): [0.5]}]))
