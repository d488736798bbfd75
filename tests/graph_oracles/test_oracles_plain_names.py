"""The scene-graph oracle answers plain predicates (no kind) where the vocabulary holds the name
under one kind only; an ambiguous or unknown plain name is one line listing the kinds to use."""
import re

import pytest
import torch

from nablafol import Aggregate, Engine, Filter, Predicate, Program, Quantifier, Relate, Top
from nablafol.data import load_scene_graphs
from nablafol.errors import UnknownPredicateError
from nablafol.graph_oracles import SceneGraphOracle

GRAPH = load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")["n161313"]


def _program(kinds: dict) -> Program:
    """∃X ∃Y: furniture(X) ∧ to_the_left_of(X, Y) ∧ white(Y), with the given kinds."""
    white, furniture = Predicate("white", kind=kinds["white"]), Predicate("furniture", kind=kinds["furniture"])
    left = Predicate("to the left of", arity=2, kind=kinds["rel"])
    return Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(furniture, Relate.of(left, Quantifier.EXISTS,
                                                                                     Filter(white, Top())))))


def test_plain_names_answer_as_their_one_kind():
    oracle = SceneGraphOracle([GRAPH])
    plain = Engine()([_program({"white": "", "furniture": "", "rel": ""})], oracle)
    kinded = Engine()([_program({"white": "attr", "furniture": "name", "rel": "rel"})], oracle)
    assert torch.equal(plain.probs(), kinded.probs())
    assert oracle.knows(Predicate("white")) and oracle.knows(Predicate("larger", arity=2))


def test_an_ambiguous_plain_name_lists_its_kinds():
    oracle = SceneGraphOracle([GRAPH])
    assert not oracle.knows(Predicate("airport"))
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(Predicate("airport"), Top())))
    with pytest.raises(UnknownPredicateError, match=re.escape(
            "ambiguous: the vocabulary holds it as name and as attr; use Predicate('airport', arity=1, kind='name') "
            "or Predicate('airport', arity=1, kind='attr')")):
        Engine()([program], oracle)


def test_an_unknown_plain_name_lists_the_kinds():
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(Predicate("unicorn"), Top())))
    with pytest.raises(UnknownPredicateError, match=re.escape(
            "'unicorn' (kind '', arity 1): a plain name that is no name, attribute value or position of the "
            "scene-graph oracle's vocabulary; give its kind: Predicate('unicorn', arity=1, kind=K), K one of name, "
            "class, attr, hposition, vposition, scene")):
        Engine()([program], SceneGraphOracle([GRAPH]))
