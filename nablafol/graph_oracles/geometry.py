"""What a box says: positions in the image and the geometric comparatives of GQA.

Boxes are GQA's: ``(x, y, w, h)`` in pixels, ``(x, y)`` the top-left corner, ``y`` growing
downwards; the image is ``W x H`` pixels. Every rule is a small function over torch tensors
(a box is the last dimension, size 4; an image size the last dimension, size 2) so one call
answers many object pairs at once. All rules are crisp (a box is certain).

Positions. A box is placed by its centre, in thirds of the image (the design table of
``docs/compiling-gqa.md``; the same convention is used by public GQA tooling that derives
positions from GQA scene graphs). A centre exactly on a boundary belongs to the middle third:
``left`` is ``cx < W/3``, ``right`` is ``cx > 2W/3``; ``top``/``bottom`` likewise with
``cy`` and ``H``. Centres outside the image (boxes that overflow it) fall in the outer thirds.

Comparatives. ``COMP(X, Y)``: X is COMP than Y. Sizes compare with a relative tie margin
(``SIZE_MARGIN``: X must exceed Y by more than 10 %), so equal or nearly equal boxes are
neither larger nor smaller; vertical order compares box centres with an absolute margin of
``POSITION_MARGIN`` of the image height. Each rule and its reverse are exclusive, and a box
is never COMP than itself.

    >>> import torch
    >>> man, cup = torch.tensor([190., 60., 90., 200.]), torch.tensor([420., 200., 40., 50.])
    >>> image = torch.tensor([640., 480.])
    >>> bool(larger(man, cup, image)), bool(smaller(man, cup, image)), bool(higher(man, cup, image))
    (True, False, True)
    >>> chair = torch.tensor([10., 260., 120., 210.])  # centre (70, 365): left third, bottom third
    >>> POSITIONS["hposition"][int(hposition(chair, image))], POSITIONS["vposition"][int(vposition(chair, image))]
    ('left', 'bottom')

``RULES`` lists every comparative rule with its formula (the README's table is made from it).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch

__all__ = [
    "SIZE_MARGIN", "POSITION_MARGIN", "POSITIONS", "RULES", "Rule",
    "centre_x", "centre_y", "area", "longest_side",
    "hposition", "vposition", "larger", "smaller", "taller", "shorter", "higher", "lower", "longer",
]

SIZE_MARGIN = 0.10  # X is larger than Y iff area(X) > (1 + SIZE_MARGIN) * area(Y)
POSITION_MARGIN = 0.05  # X is higher than Y iff cy(Y) - cy(X) > POSITION_MARGIN * H

# value names, in the order of the indices `hposition` / `vposition` return
POSITIONS = {"hposition": ("left", "middle", "right"), "vposition": ("top", "middle", "bottom")}


# --- measures of one box -------------------------------------------------------------------

def centre_x(box: torch.Tensor) -> torch.Tensor:
    """``cx = x + w / 2``."""
    return box[..., 0] + box[..., 2] / 2


def centre_y(box: torch.Tensor) -> torch.Tensor:
    """``cy = y + h / 2`` (smaller is higher in the image)."""
    return box[..., 1] + box[..., 3] / 2


def area(box: torch.Tensor) -> torch.Tensor:
    """``w * h``."""
    return box[..., 2] * box[..., 3]


def longest_side(box: torch.Tensor) -> torch.Tensor:
    """``max(w, h)``."""
    return torch.maximum(box[..., 2], box[..., 3])


def _third(c: torch.Tensor, extent: torch.Tensor) -> torch.Tensor:
    # 0 below the first third, 2 above the second, 1 in between (boundaries included)
    return (c >= extent / 3).long() + (c > 2 * extent / 3).long()


def hposition(box: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """Index into ``("left", "middle", "right")``: ``left`` iff ``cx < W/3``, ``right`` iff
    ``cx > 2W/3``, else ``middle``."""
    return _third(centre_x(box), image[..., 0])


def vposition(box: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """Index into ``("top", "middle", "bottom")``: ``top`` iff ``cy < H/3``, ``bottom`` iff
    ``cy > 2H/3``, else ``middle``."""
    return _third(centre_y(box), image[..., 1])


# --- comparatives: COMP(X, Y) = "X is COMP than Y" -----------------------------------------

def _exceeds(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a > (1 + SIZE_MARGIN) * b


def larger(x: torch.Tensor, y: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``area(X) > (1 + m) area(Y)``, ``m = SIZE_MARGIN``."""
    return _exceeds(area(x), area(y))


def smaller(x: torch.Tensor, y: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``larger(Y, X)``: ``area(Y) > (1 + m) area(X)``."""
    return larger(y, x, image)


def taller(x: torch.Tensor, y: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``h(X) > (1 + m) h(Y)`` (box height)."""
    return _exceeds(x[..., 3], y[..., 3])


def shorter(x: torch.Tensor, y: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``taller(Y, X)``."""
    return taller(y, x, image)


def longer(x: torch.Tensor, y: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``max(w, h)(X) > (1 + m) max(w, h)(Y)`` (the longest side)."""
    return _exceeds(longest_side(x), longest_side(y))


def higher(x: torch.Tensor, y: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``cy(Y) - cy(X) > d H``, ``d = POSITION_MARGIN``: X's centre is above Y's."""
    return centre_y(y) - centre_y(x) > POSITION_MARGIN * image[..., 1]


def lower(x: torch.Tensor, y: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``higher(Y, X)``."""
    return higher(y, x, image)


class Rule(NamedTuple):
    """A comparative: the function ``(x, y, image) -> bool tensor`` and its formula."""

    function: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    formula: str


RULES: dict[str, Rule] = {
    "larger": Rule(larger, "w·h(X) > 1.1 · w·h(Y)"),
    "smaller": Rule(smaller, "w·h(Y) > 1.1 · w·h(X)"),
    "taller": Rule(taller, "h(X) > 1.1 · h(Y)"),
    "shorter": Rule(shorter, "h(Y) > 1.1 · h(X)"),
    "longer": Rule(longer, "max(w, h)(X) > 1.1 · max(w, h)(Y)"),
    "higher": Rule(higher, "cy(Y) − cy(X) > 0.05 · H, cy = y + h/2"),
    "lower": Rule(lower, "cy(X) − cy(Y) > 0.05 · H"),
}
