"""The box rules at their boundaries, and their laws (reverse pairs exclusive, irreflexive)."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.graph_oracles import geometry
from nablafol.graph_oracles.geometry import POSITIONS, RULES

IMAGE = torch.tensor([300.0, 600.0], dtype=torch.float64)


def box(x=0.0, y=0.0, w=10.0, h=10.0):
    return torch.tensor([x, y, w, h], dtype=torch.float64)


def hpos(b):
    return POSITIONS["hposition"][int(geometry.hposition(b, IMAGE))]


def vpos(b):
    return POSITIONS["vposition"][int(geometry.vposition(b, IMAGE))]


@pytest.mark.parametrize("centre, expected", [
    (0.0, "left"), (99.999, "left"), (100.0, "middle"), (150.0, "middle"), (200.0, "middle"),
    (200.001, "right"), (300.0, "right"), (-20.0, "left"), (350.0, "right"),  # overflowing boxes
])
def test_hposition_thirds_of_the_width(centre, expected):
    assert hpos(box(x=centre - 5, w=10)) == expected


@pytest.mark.parametrize("centre, expected", [
    (199.999, "top"), (200.0, "middle"), (400.0, "middle"), (400.001, "bottom"),
])
def test_vposition_thirds_of_the_height(centre, expected):
    assert vpos(box(y=centre - 5, h=10)) == expected


def test_size_margin_is_ten_percent():
    ten_by_ten = box(w=10, h=10)
    assert not geometry.larger(box(w=11, h=10), ten_by_ten, IMAGE)  # 110 = 1.1 * 100: a tie
    assert geometry.larger(box(w=11.01, h=10), ten_by_ten, IMAGE)
    assert not geometry.larger(ten_by_ten, ten_by_ten, IMAGE) and not geometry.smaller(ten_by_ten, ten_by_ten, IMAGE)
    assert geometry.smaller(ten_by_ten, box(w=20, h=10), IMAGE)
    assert not geometry.larger(box(w=0, h=5), box(w=0, h=9), IMAGE)  # zero areas are equal


def test_height_and_length():
    assert geometry.taller(box(h=23), box(h=20), IMAGE) and not geometry.taller(box(h=22), box(h=20), IMAGE)
    assert geometry.shorter(box(h=20), box(h=23), IMAGE)
    # longer compares the longest side: a flat surfboard (160 x 40) is longer than a man (80 x 100)
    assert geometry.longer(box(w=160, h=40), box(w=80, h=100), IMAGE)
    assert not geometry.longer(box(w=40, h=100), box(w=100, h=40), IMAGE)


def test_vertical_order_uses_centres_with_a_margin():
    # margin 0.05 * 600 = 30 pixels between centres
    assert geometry.higher(box(y=0, h=10), box(y=31, h=10), IMAGE)
    assert not geometry.higher(box(y=0, h=10), box(y=30, h=10), IMAGE)
    assert geometry.lower(box(y=100, h=10), box(y=0, h=10), IMAGE)
    # a tall tree whose centre is low is not higher than a small helmet above its centre
    assert not geometry.higher(box(y=0, h=400), box(y=150, h=20), IMAGE)


def test_rules_table_documents_every_comparative():
    assert set(RULES) == {"larger", "smaller", "taller", "shorter", "longer", "higher", "lower"}
    assert all(rule.formula and callable(rule.function) for rule in RULES.values())


sides = st.floats(0, 500, allow_nan=False, width=32)
boxes = st.tuples(st.floats(-50, 400, width=32), st.floats(-50, 700, width=32), sides, sides).map(
    lambda t: torch.tensor(t, dtype=torch.float64))


@settings(max_examples=examples(80))
@given(boxes, boxes)
def test_reverse_pairs_are_exclusive_and_nothing_beats_itself(a, b):
    for name, rule in RULES.items():
        assert not (rule.function(a, b, IMAGE) and rule.function(b, a, IMAGE)), name
        assert not rule.function(a, a, IMAGE), name
    assert bool(geometry.smaller(a, b, IMAGE)) == bool(geometry.larger(b, a, IMAGE))
    assert bool(geometry.lower(a, b, IMAGE)) == bool(geometry.higher(b, a, IMAGE))


def test_rules_broadcast_over_pairs():
    stack = torch.stack([box(w=10), box(w=20), box(w=40)])
    table = geometry.larger(stack[:, None, :], stack[None, :, :], IMAGE)
    assert table.tolist() == [[False, False, False], [True, False, False], [True, True, False]]
