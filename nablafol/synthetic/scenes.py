"""Random scenes in GQA's scene-graph format, with relations that follow from the boxes.

A scene is a fixed-size image (640 x 480 by default) with 4 to 12 objects. Large things
(people, animals, furniture, vehicles, benches, birds) stand on the ground band of the image
(birds may fly); small things rest on a piece of furniture or a bench, or are held by a
person; clothes, hats and glasses are worn by a person (placed in the body part they
cover). Attributes are drawn per class (`Vocabulary.class_types`); ``size`` is not drawn
but read from the box: ``large`` in the top 30 % of the class's size range, ``small`` in the
bottom 30 %. Indoor scenes have no weather; outdoor scenes have one.

Relations are never drawn: :func:`relations_between` computes them from classes and boxes
(``x, y, w, h`` in pixels, ``y`` downwards), and they are stored on their subject as GQA
does. The rules, with ``cover(A, B)`` the fraction of A's area inside B's box:

| relation | holds for (A, B) when |
| --- | --- |
| ``wearing`` | A is a person, B something worn (clothing, hat, glasses), ``cover(B, A) >= 0.8`` and no other person covers B that much |
| ``holding`` | A is a person, B holdable and worn by nobody, ``cover(B, A) >= 0.6`` and no other person covers B that much |
| ``on`` | B is a support A may rest on (``Layout.rests_on``), A is worn and held by nobody, A's bottom edge lies in the top ``ON_BAND`` of B's box, A's centre is within B's width, and A is smaller than B |
| ``under`` | ``on(B, A)`` |
| ``to the left of`` | not wearing/holding each other, ``cx(A) < cx(B) - LEFT_RIGHT_MARGIN * W`` |
| ``to the right of`` | ``to the left of(B, A)`` |
| ``above`` | not attached, not on/under each other, A's bottom edge at or above B's top edge, and their boxes overlap horizontally |
| ``below`` | ``above(B, A)`` |
| ``near`` | not attached, not on/under each other, the gap between the boxes at most ``NEAR_GAP * W`` |

GQA's annotators relate an object to a few objects around it, not to every other one (the four
real scenes in ``shared/real-gqa-sample`` store 2.2 to 3.8 relations an object, mostly ``to the
left of`` / ``to the right of`` pairs). ``spatial_neighbours=K`` stores the last five relations
of the table only towards each subject's ``K`` nearest objects (the smallest gap between boxes,
ties by index); the default ``None`` stores them for every pair.

Object and image ids are GQA-like numeric strings handed in by the caller (unique over a
whole dataset).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator, NamedTuple, Sequence

import numpy as np

from nablafol.data import SceneGraph, SceneObject, SceneRelation

from .vocabulary import LOCATIONS, PRESENCE, Vocabulary, VocabularyError

__all__ = ["Layout", "LAYOUTS", "Box", "SceneGenerator", "relations_between", "cover",
           "WEAR_COVER", "HOLD_COVER", "ON_BAND", "LEFT_RIGHT_MARGIN", "NEAR_GAP", "SIZE_THIRDS"]

WEAR_COVER = 0.8
HOLD_COVER = 0.6
ON_BAND = 0.35
LEFT_RIGHT_MARGIN = 0.02
NEAR_GAP = 0.03
SIZE_THIRDS = (0.3, 0.7)  # scale below: small; above: large
_GROUND_BAND = (0.55, 0.98)  # where bottoms of standing things lie, as fractions of H
_SKY_BAND = (0.03, 0.4)
_MAX_OVERLAP = 0.3  # IoU allowed between two large things
_MAX_ATTEMPTS = 200  # draws of one scene before giving up on a vocabulary too small for min_objects
_BIG_ROLES = ("figure", "support", "vehicle", "flyer")

SUPPORTS = ("table", "chair", "couch", "bed", "bench")
_TABLE_TOP = ("table", "bench", "bed", "couch")
_SEATS = ("couch", "bed", "chair", "bench")
_BOTH = frozenset(LOCATIONS)
_IN = frozenset({"indoors"})
_OUT = frozenset({"outdoors"})


@dataclass(frozen=True)
class Layout:
    """Where a class goes. ``role``: ``figure`` (stands on the ground; people and animals),
    ``support`` (stands; things rest on it), ``vehicle``, ``flyer`` (sky or ground),
    ``item`` (rests on a support or is held) or ``wearable`` (worn in ``slot``).
    ``width``/``height``: box size range as fractions of the image. ``weight``: how often
    it is drawn."""

    role: str
    places: frozenset[str]
    width: tuple[float, float]
    height: tuple[float, float]
    weight: float = 1.0
    rests_on: tuple[str, ...] = ()
    holdable: bool = False
    slot: str | None = None


LAYOUTS: dict[str, Layout] = {
    "man": Layout("figure", _BOTH, (0.10, 0.17), (0.45, 0.75), 2.0),
    "woman": Layout("figure", _BOTH, (0.10, 0.16), (0.45, 0.72), 2.0),
    "person": Layout("figure", _BOTH, (0.10, 0.17), (0.45, 0.75), 1.0),
    "boy": Layout("figure", _BOTH, (0.08, 0.12), (0.28, 0.45), 1.0),
    "girl": Layout("figure", _BOTH, (0.08, 0.12), (0.28, 0.45), 1.0),
    "dog": Layout("figure", _BOTH, (0.14, 0.24), (0.12, 0.22), 1.0, rests_on=_SEATS),
    "cat": Layout("figure", _IN, (0.09, 0.15), (0.08, 0.14), 1.0, rests_on=_SEATS),
    "horse": Layout("figure", _OUT, (0.25, 0.40), (0.30, 0.45), 0.8),
    "cow": Layout("figure", _OUT, (0.24, 0.36), (0.24, 0.36), 0.7),
    "bird": Layout("flyer", _OUT, (0.04, 0.08), (0.04, 0.08), 0.7),
    "chair": Layout("support", _IN, (0.12, 0.20), (0.20, 0.32), 1.2),
    "table": Layout("support", _IN, (0.30, 0.48), (0.18, 0.30), 3.0),
    "couch": Layout("support", _IN, (0.35, 0.55), (0.22, 0.34), 0.8),
    "bed": Layout("support", _IN, (0.45, 0.62), (0.25, 0.38), 0.6),
    "bench": Layout("support", _OUT, (0.30, 0.45), (0.15, 0.25), 2.0),
    "car": Layout("vehicle", _OUT, (0.25, 0.40), (0.15, 0.25), 1.5),
    "bus": Layout("vehicle", _OUT, (0.45, 0.65), (0.30, 0.45), 0.7),
    "truck": Layout("vehicle", _OUT, (0.35, 0.52), (0.25, 0.38), 0.8),
    "van": Layout("vehicle", _OUT, (0.30, 0.44), (0.22, 0.32), 0.7),
    "shirt": Layout("wearable", _BOTH, (0, 0), (0, 0), 0.8, slot="torso"),
    "jacket": Layout("wearable", _BOTH, (0, 0), (0, 0), 0.5, slot="torso"),
    "pants": Layout("wearable", _BOTH, (0, 0), (0, 0), 0.6, slot="legs"),
    "shorts": Layout("wearable", _BOTH, (0, 0), (0, 0), 0.4, slot="legs"),
    "hat": Layout("wearable", _BOTH, (0, 0), (0, 0), 0.6, slot="head"),
    "glasses": Layout("wearable", _BOTH, (0.04, 0.07), (0.02, 0.03), 0.5, rests_on=("table",), slot="eyes"),
    "apple": Layout("item", _BOTH, (0.03, 0.05), (0.04, 0.06), 1.0, rests_on=_TABLE_TOP, holdable=True),
    "banana": Layout("item", _BOTH, (0.05, 0.08), (0.03, 0.05), 1.0, rests_on=_TABLE_TOP, holdable=True),
    "broccoli": Layout("item", _IN, (0.05, 0.08), (0.05, 0.08), 0.7, rests_on=("table",)),
    "carrot": Layout("item", _IN, (0.05, 0.09), (0.02, 0.04), 0.7, rests_on=("table",)),
    "pizza": Layout("item", _BOTH, (0.10, 0.16), (0.04, 0.07), 0.9, rests_on=_TABLE_TOP),
    "hamburger": Layout("item", _BOTH, (0.06, 0.09), (0.05, 0.08), 0.8, rests_on=_TABLE_TOP, holdable=True),
    "cake": Layout("item", _IN, (0.09, 0.14), (0.08, 0.12), 0.8, rests_on=("table",)),
    "sandwich": Layout("item", _BOTH, (0.06, 0.10), (0.04, 0.07), 0.8, rests_on=_TABLE_TOP, holdable=True),
    "plate": Layout("item", _IN, (0.08, 0.12), (0.03, 0.05), 1.2, rests_on=("table",)),
    "cup": Layout("item", _BOTH, (0.04, 0.06), (0.06, 0.09), 1.2, rests_on=("table", "bench"), holdable=True),
    "bowl": Layout("item", _IN, (0.07, 0.10), (0.05, 0.07), 0.9, rests_on=("table",)),
    "laptop": Layout("item", _IN, (0.12, 0.18), (0.10, 0.15), 0.8, rests_on=("table", "bed", "couch")),
    "phone": Layout("item", _BOTH, (0.02, 0.04), (0.04, 0.06), 0.9, rests_on=("table", "bench"), holdable=True),
    "umbrella": Layout("item", _OUT, (0.10, 0.16), (0.12, 0.20), 0.8, holdable=True),
}
# slot -> (width, height, top) as fractions of the wearer's box, each a range
_SLOTS = {
    "head": ((0.40, 0.60), (0.08, 0.12), (0.00, 0.02)),
    "eyes": ((0.30, 0.45), (0.03, 0.05), (0.08, 0.11)),
    "torso": ((0.75, 0.95), (0.28, 0.35), (0.17, 0.22)),
    "legs": ((0.60, 0.85), (0.40, 0.45), (0.50, 0.53)),
}
_SHORT_LEGS = (0.15, 0.20)  # shorts cover less of the legs than pants


class Box(NamedTuple):
    """GQA's box: top-left corner and size, in pixels."""

    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def area(self) -> float:
        return self.w * self.h


def cover(a: Box, b: Box) -> float:
    """The fraction of a's area inside b's box (0 for an empty box)."""
    iw = min(a.right, b.right) - max(a.x, b.x)
    ih = min(a.bottom, b.bottom) - max(a.y, b.y)
    if iw <= 0 or ih <= 0 or a.area <= 0:
        return 0.0
    return iw * ih / a.area


def _iou(a: Box, b: Box) -> float:
    inter = cover(a, b) * a.area
    union = a.area + b.area - inter
    return inter / union if union > 0 else 0.0


def _gap(a: Box, b: Box) -> float:
    dx = max(0.0, max(a.x, b.x) - min(a.right, b.right))
    dy = max(0.0, max(a.y, b.y) - min(a.bottom, b.bottom))
    return math.hypot(dx, dy)


def _single_cover(boxes: Sequence[Box], people: Sequence[int], j: int, threshold: float) -> int | None:
    """The one person covering object j by at least `threshold`, or None (none, or several)."""
    found = [p for p in people if p != j and cover(boxes[j], boxes[p]) >= threshold]
    return found[0] if len(found) == 1 else None


def _carrier(classes: Sequence[str], boxes: Sequence[Box], people: Sequence[int], j: int) -> tuple[int, str] | None:
    """``(person index, "wearing" or "holding")`` when one person wears or holds object j, else None."""
    layout = LAYOUTS[classes[j]]
    if layout.slot is None and not layout.holdable:
        return None
    kind, threshold = ("wearing", WEAR_COVER) if layout.slot else ("holding", HOLD_COVER)
    wearer = _single_cover(boxes, people, j, threshold)
    return None if wearer is None else (wearer, kind)


def _rests_on(A: Box, S: Box) -> bool:
    """Whether box A stands on box S (the geometry of "on"; the classes are checked apart)."""
    return S.y <= A.bottom <= S.y + ON_BAND * S.h and S.x <= A.cx <= S.right and A.area < S.area


def relations_between(classes: Sequence[str], boxes: Sequence[Box], width: float,
                      people: frozenset[str], spatial_neighbours: int | None = None) -> list[tuple[int, str, int]]:
    """Every stored relation ``(subject index, relation, object index)`` of a scene, by the
    rules of the module doc. ``people``: the classes that can wear and hold things;
    ``spatial_neighbours``: how many nearest objects get the spatial relations (None: all)."""
    n = len(classes)
    nearest = None if spatial_neighbours is None else [
        set(sorted((b for b in range(n) if b != a), key=lambda b: (_gap(boxes[a], boxes[b]), b))[:spatial_neighbours])
        for a in range(n)]
    person_idx = [i for i in range(n) if classes[i] in people]
    out: list[tuple[int, str, int]] = []
    attached: set[tuple[int, int]] = set()
    carried: set[int] = set()
    for j in range(n):
        carrier = _carrier(classes, boxes, person_idx, j)
        if carrier is not None:
            wearer, kind = carrier
            out.append((wearer, kind, j))
            attached |= {(wearer, j), (j, wearer)}
            carried.add(j)
    resting: set[tuple[int, int]] = set()
    for a in range(n):
        if a in carried:
            continue
        rests_on = LAYOUTS[classes[a]].rests_on
        for s in range(n):
            if s == a or classes[s] not in rests_on:
                continue
            if _rests_on(boxes[a], boxes[s]):
                out.append((a, "on", s))
                out.append((s, "under", a))
                resting |= {(a, s), (s, a)}
    for a in range(n):
        for b in range(n):
            if a == b or (a, b) in attached or (nearest is not None and b not in nearest[a]):
                continue
            A, B = boxes[a], boxes[b]
            if A.cx < B.cx - LEFT_RIGHT_MARGIN * width:
                out.append((a, "to the left of", b))
            elif A.cx > B.cx + LEFT_RIGHT_MARGIN * width:
                out.append((a, "to the right of", b))
            if (a, b) in resting:
                continue
            overlap_x = min(A.right, B.right) - max(A.x, B.x) > 0
            if overlap_x and A.bottom <= B.y:
                out.append((a, "above", b))
            elif overlap_x and B.bottom <= A.y:
                out.append((a, "below", b))
            if _gap(A, B) <= NEAR_GAP * width:
                out.append((a, "near", b))
    order = {"wearing": 0, "holding": 1, "on": 2, "under": 3, "to the left of": 4, "to the right of": 5,
             "above": 6, "below": 7, "near": 8}
    out.sort(key=lambda r: (r[0], order[r[1]], r[2]))
    return out


@dataclass
class _Placed:
    cls: str
    box: Box
    scale: float


class SceneGenerator:
    """Draws scenes over a vocabulary (every class needs a :data:`LAYOUTS` entry).

    >>> import numpy as np, itertools
    >>> from nablafol.synthetic import Vocabulary
    >>> generator = SceneGenerator(Vocabulary.default())
    >>> ids = (str(n) for n in itertools.count(1000))
    >>> graph = generator.generate(np.random.default_rng(0), "2000001", ids)
    >>> 4 <= len(graph.objects) <= 12, graph.width, graph.height
    (True, 640, 480)
    """

    def __init__(self, vocabulary: Vocabulary, width: int = 640, height: int = 480,
                 min_objects: int = 4, max_objects: int = 12, large_share: float = 0.0,
                 spatial_neighbours: int | None = None):
        missing = [c for c in vocabulary.classes if c not in LAYOUTS]
        if missing:
            raise VocabularyError(f"classes {missing} have no layout in nablafol.synthetic.scenes.LAYOUTS")
        if not 2 <= min_objects <= max_objects <= 100:
            raise ValueError(f"need 2 <= min_objects <= max_objects <= 100, got {min_objects}, {max_objects}")
        self.vocabulary = vocabulary
        self.width, self.height = width, height
        if not (0.0 <= large_share <= 1.0) or (large_share and max_objects == 100):
            raise ValueError(f"large_share must be in [0, 1] with max_objects < 100, got {large_share} "
                             f"with max_objects {max_objects}")
        if spatial_neighbours is not None and (not isinstance(spatial_neighbours, int) or isinstance(spatial_neighbours, bool)
                                               or spatial_neighbours < 1):
            raise ValueError(f"spatial_neighbours must be None or an integer >= 1, got {spatial_neighbours!r}")
        self.spatial_neighbours = spatial_neighbours
        self.min_objects, self.max_objects = min_objects, max_objects
        # a share of scenes with max_objects+1 to 100 objects: a long tail like GQA's crowded images
        self.large_share = float(large_share)
        self.people = frozenset(vocabulary.categories.get("person", ()))
        self.locations = tuple(place for place in LOCATIONS if self._pool(place, _BIG_ROLES)[0])
        if not self.locations:
            raise VocabularyError("the vocabulary has no class that stands on its own (a person, animal, "
                                  "furniture, vehicle or bench): scenes cannot be built")

    # ------------------------------------------------------------------ public
    def generate(self, rng: np.random.Generator, image_id: str, object_ids: Iterator[str]) -> SceneGraph:
        """One scene graph; its objects take the next ids of ``object_ids``."""
        location = str(rng.choice(self.locations))
        weather = str(rng.choice(self.vocabulary.weathers)) if location == "outdoors" else None
        target = int(rng.integers(self.min_objects, self.max_objects + 1))
        if self.large_share and rng.random() < self.large_share:  # no extra draw at 0: old seeds stay
            target = int(rng.integers(self.max_objects + 1, 101))
        big = self._pool(location, _BIG_ROLES)
        small = self._pool(location, ("item", "wearable", "figure"))
        placed: list[_Placed] = []
        for attempt in itertools.count():  # a crowded draw can fall short: draw again
            if len(placed) >= self.min_objects:
                break
            if attempt == _MAX_ATTEMPTS:
                raise VocabularyError(f"image {image_id}: could not place {self.min_objects} objects with the "
                                      f"vocabulary's {location} classes in {_MAX_ATTEMPTS} attempts")
            placed = []
            n_big = int(rng.integers(2, max(2, target // 2) + 1))
            for _ in range(4 * n_big):
                if len(placed) >= n_big:
                    break
                self._place_big(rng, self._draw(rng, big), placed)
            for _ in range(8 * target):
                if len(placed) >= target:
                    break
                cls = self._draw(rng, small)
                if LAYOUTS[cls].role == "figure" and not LAYOUTS[cls].rests_on:
                    continue
                self._place_small(rng, cls, placed)
        order = rng.permutation(len(placed))
        placed = [placed[i] for i in order]
        return self._graph(rng, image_id, object_ids, placed, location, weather)

    # ------------------------------------------------------------------ drawing
    def _pool(self, location: str, roles: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
        classes = [c for c in self.vocabulary.classes
                   if LAYOUTS[c].role in roles and location in LAYOUTS[c].places]
        weights = np.array([LAYOUTS[c].weight for c in classes], dtype=float)
        return classes, weights / weights.sum() if len(classes) else weights

    @staticmethod
    def _draw(rng: np.random.Generator, pool) -> str | None:
        classes, weights = pool
        return classes[int(rng.choice(len(classes), p=weights))] if classes else None

    def _size(self, rng, cls: str) -> tuple[float, float, float]:
        layout, scale = LAYOUTS[cls], float(rng.random())
        w = (layout.width[0] + scale * (layout.width[1] - layout.width[0])) * self.width
        h = (layout.height[0] + scale * (layout.height[1] - layout.height[0])) * self.height
        jitter = rng.uniform(0.92, 1.08, size=2)
        return w * jitter[0], h * jitter[1], scale

    def _box(self, x: float, y: float, w: float, h: float) -> Box:
        """Integer pixels, inside the image, at least 2 x 2."""
        w = max(2, min(int(round(w)), self.width))
        h = max(2, min(int(round(h)), self.height))
        x = min(max(0, int(round(x))), self.width - w)
        y = min(max(0, int(round(y))), self.height - h)
        return Box(x, y, w, h)

    def _place_big(self, rng, cls: str | None, placed: list[_Placed]) -> None:
        if cls is None:
            return
        for _ in range(15):
            w, h, scale = self._size(rng, cls)
            x = rng.uniform(0, max(1.0, self.width - w))
            if LAYOUTS[cls].role == "flyer" and rng.random() < 0.5:
                y = rng.uniform(*_SKY_BAND) * self.height
            else:
                y = rng.uniform(*_GROUND_BAND) * self.height - h
            box = self._box(x, y, w, h)
            if all(_iou(box, p.box) <= _MAX_OVERLAP for p in placed if LAYOUTS[p.cls].role != "item"):
                placed.append(_Placed(cls, box, scale))
                return

    def _place_small(self, rng, cls: str | None, placed: list[_Placed]) -> None:
        if cls is None:
            return
        layout = LAYOUTS[cls]
        hosts: list[tuple[str, int]] = []
        if layout.slot is not None:
            hosts += [("wear", i) for i, p in enumerate(placed) if p.cls in self.people
                      and not self._slot_taken(placed, i, layout.slot)]
        if layout.holdable:
            hosts += [("hold", i) for i, p in enumerate(placed) if p.cls in self.people
                      and not self._holds_something(placed, i)]
        hosts += [("rest", i) for i, p in enumerate(placed) if p.cls in layout.rests_on]
        if not hosts:
            return
        how, host = hosts[int(rng.integers(len(hosts)))]
        box, scale = getattr(self, f"_{how}")(rng, cls, placed[host].box)
        if box is None:
            return
        # keep only things that end up where they were put: the new object's own relation as
        # relations_between would find it (it alone, not every pair: that made 100 objects crawl)
        classes, boxes = [p.cls for p in placed] + [cls], [p.box for p in placed] + [box]
        people = [i for i, c in enumerate(classes) if c in self.people]
        carrier = _carrier(classes, boxes, people, len(placed))
        if how == "rest":
            kept = carrier is None and _rests_on(box, placed[host].box)  # host's class is in rests_on
        else:
            kept = carrier == (host, "wearing" if how == "wear" else "holding")
        if kept:
            placed.append(_Placed(cls, box, scale))

    def _slot_taken(self, placed: list[_Placed], person: int, slot: str) -> bool:
        box = placed[person].box
        return any(LAYOUTS[p.cls].slot == slot and cover(p.box, box) >= WEAR_COVER for p in placed)

    def _holds_something(self, placed: list[_Placed], person: int) -> bool:
        box = placed[person].box
        return any(LAYOUTS[p.cls].holdable and cover(p.box, box) >= HOLD_COVER for p in placed)

    def _wear(self, rng, cls: str, body: Box):
        widths, heights, tops = _SLOTS[LAYOUTS[cls].slot]
        if cls == "shorts":
            heights = _SHORT_LEGS
        w, h = body.w * rng.uniform(*widths), body.h * rng.uniform(*heights)
        cx = body.cx + body.w * rng.uniform(-0.05, 0.05)
        x = min(max(body.x, cx - w / 2), body.right - w)
        return self._box(x, body.y + body.h * rng.uniform(*tops), w, h), float(rng.random())

    def _hold(self, rng, cls: str, body: Box):
        w, h, scale = self._size(rng, cls)
        w, h = min(w, 0.7 * body.w), min(h, 0.3 * body.h)
        top = (0.0, 0.15) if cls == "umbrella" else (0.40, 0.60)
        x = body.x + rng.uniform(0, max(0.0, body.w - w))
        y = body.y + body.h * rng.uniform(*top)
        return self._box(x, min(y, body.bottom - h), w, h), scale

    def _rest(self, rng, cls: str, support: Box):
        w, h, scale = self._size(rng, cls)
        w = min(w, 0.9 * support.w)
        cx = rng.uniform(support.x + w / 2, support.right - w / 2)
        bottom = support.y + support.h * rng.uniform(0.05, 0.3)
        if bottom - h < 0:
            return None, scale
        return self._box(cx - w / 2, bottom - h, w, h), scale

    # ------------------------------------------------------------------ the graph
    def _attributes(self, rng, cls: str, scale: float) -> list[str]:
        values = []
        for type_name in self.vocabulary.types_of(cls):
            palette = self.vocabulary.palette(cls, type_name)
            if type_name == "size":
                if scale >= SIZE_THIRDS[1] and "large" in palette:
                    values.append("large")
                elif scale <= SIZE_THIRDS[0] and "small" in palette:
                    values.append("small")
                continue
            if rng.random() < PRESENCE.get(type_name, 0.5):
                values.append(str(palette[int(rng.integers(len(palette)))]))
        return values

    def _graph(self, rng, image_id: str, object_ids: Iterator[str], placed: list[_Placed],
               location: str, weather: str | None) -> SceneGraph:
        ids = [next(object_ids) for _ in placed]
        classes, boxes = [p.cls for p in placed], [p.box for p in placed]
        relations: dict[int, list[SceneRelation]] = {i: [] for i in range(len(placed))}
        for subject, name, obj in relations_between(classes, boxes, self.width, self.people,
                                                 self.spatial_neighbours):
            relations[subject].append(SceneRelation(name, ids[obj]))
        objects = tuple(
            SceneObject(id=ids[i], names={p.cls: 1.0}, name=p.cls, x=p.box.x, y=p.box.y, w=p.box.w, h=p.box.h,
                        attributes={v: 1.0 for v in self._attributes(rng, p.cls, p.scale)},
                        relations=tuple(relations[i]))
            for i, p in enumerate(placed))
        return SceneGraph(image_id=image_id, width=self.width, height=self.height, objects=objects,
                          location=location, weather=weather)
