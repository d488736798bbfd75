"""Explanations: the facts named are those whose removal changes the brute-force answer most; the
steps' objects are the attention's most attended; the gradient method estimates the same."""
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from tiers import examples

from nablafol import Aggregate, Engine, Filter, Predicate, Program, Quantifier, TableOracle, Top, explain
from nablafol.errors import ShapeError
from nablafol.testing import brute_force
from nablafol.testing.strategies import scenes_and_programs


def _brute_effects(case, answer_index, yes_no_no):
    """P(answer) − P(answer without the fact), by brute force, for every fact of the program."""
    def p_answer(tables):
        p = brute_force(case.program, tables)[answer_index]
        return 1.0 - p if yes_no_no else p

    base = p_answer(case.tables)
    out = {}
    for p in case.program.predicates():
        for at in zip(*np.nonzero(case.tables[p] > 0)):
            changed = dict(case.tables)
            changed[p] = case.tables[p].copy()
            changed[p][at] = 0.0
            out[(p, tuple(int(i) for i in at))] = base - p_answer(changed)
    return base, out


@settings(max_examples=examples(25), deadline=None)
@given(scenes_and_programs(max_objects=3, max_uncertain=8))
def test_the_facts_named_are_those_whose_removal_moves_the_brute_force_answer_most(case):
    """On small scenes, with exact mode (the answer's exact probability), the named facts' effects are
    brute force's, and no fact left out moves the answer more than the last one named."""
    engine = Engine(exact=True, exact_budget=10)
    oracle = TableOracle([{p: torch.as_tensor(t) for p, t in case.tables.items()}])  # float64, as brute force
    why = explain(engine, case.program, oracle, k=2, facts=3)
    labels = case.program.labels
    index = 0 if labels is None else list(labels).index(why.answer)
    base, effects = _brute_effects(case, index, labels is None and why.answer == "no")
    assert why.probability == pytest.approx(base, abs=1e-9)
    assert len(why.facts) == min(3, len(effects))
    for fact in why.facts:
        assert fact.effect == pytest.approx(effects[(fact.predicate, fact.objects)], abs=1e-9)
        assert fact.probability == pytest.approx(case.tables[fact.predicate][fact.objects], rel=1e-12)
    ranked = sorted((abs(e) for e in effects.values()), reverse=True)
    assert [abs(f.effect) for f in why.facts] == pytest.approx(ranked[: len(why.facts)], abs=1e-9)


def test_steps_list_the_most_attended_objects():
    red, cube = Predicate("red"), Predicate("cube")
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(cube, Filter(red, Top()))))
    why = explain(Engine(), program, TableOracle([{red: [0.2, 0.9, 0.5, 0.0], cube: [1.0, 0.5, 1.0, 1.0]}]), k=2)
    assert [s.term for s in why.steps] == ["1", "Filter_red[1]", "Filter_cube[Filter_red[1]]"]
    assert [o for o, _ in why.steps[1].objects] == [1, 2] and [o for o, _ in why.steps[2].objects] == [2, 1]
    assert [a for _, a in why.steps[1].objects + why.steps[2].objects] == pytest.approx([0.9, 0.5, 0.5, 0.45])
    lines = why.lines()
    assert lines[0] == "why 'yes' (0.780):" and "  facts moving it most (leaving each fact out):" in lines


def test_the_gradient_method_is_the_removal_where_the_answer_is_linear_in_the_fact():
    red = Predicate("red")
    program = Program.yes_no(Aggregate(Quantifier.FORALL, Filter(red, Top())))  # p0 · p1: linear in each
    oracle = TableOracle([{red: [0.5, 0.8]}])
    exact, estimate = (explain(Engine(), program, oracle, method=m) for m in ("remove", "gradient"))
    assert exact.answer == estimate.answer == "no"
    assert [(f.objects, round(f.effect, 6)) for f in exact.facts] == [(f.objects, round(f.effect, 6))
                                                                       for f in estimate.facts]
    assert estimate.method == "gradient" and [f.effect for f in exact.facts] == pytest.approx([-0.4, -0.4])


def test_explanations_refuse_what_they_cannot_do_in_one_line():
    red = Predicate("red")
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    oracle = TableOracle([{red: [0.5]}])
    with pytest.raises(ShapeError, match=re.escape("explain: method must be one of remove, gradient, got 'shap'")):
        explain(Engine(), program, oracle, method="shap")
    with pytest.raises(ShapeError, match=re.escape("explain: scene 3 out of range for an oracle of 1 scenes")):
        explain(Engine(), program, oracle, scene=3)
    assert torch.is_grad_enabled()


def test_the_package_name_stays_the_function_once_its_module_is_loaded(monkeypatch):
    """The import system sets a loaded submodule on its package: ``nablafol.explain`` the module
    would shadow ``nablafol.explain`` the function for whoever imports it after."""
    import importlib
    import sys
    import types
    import nablafol
    monkeypatch.setattr(nablafol, "explain", nablafol.explain)  # put back after the test, as the fresh load below
    monkeypatch.delitem(sys.modules, "nablafol.explain")       # and the module loaded before
    module = importlib.import_module("nablafol.explain")  # loaded afresh, as the answering loop loads it
    from nablafol import explain as exported
    assert exported is module.explain and not isinstance(exported, types.ModuleType)
