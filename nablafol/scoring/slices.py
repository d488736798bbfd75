"""Scores per slice of a question set (``--by FIELD``) and each slice's gap to a reference slice.

GD-VCR (Yin et al., EMNLP 2021) reads a model's failures this way: accuracy on the images
of each region (``region``: west, east-asia, south-asia, africa) and its gap to the
Western images, ``Gap = Acc(west) - Acc(region)`` (positive: the slice does worse); the same
for scenarios (``keywords``). Any benchmark, any field of its question records:

- ``FIELD`` names a field of the question's record as its file writes it; ``a.b`` looks
  inside an object (GQA's ``types.structural``);
- a list-valued field puts the question in one slice per distinct element (a GD-VCR image
  tagged ``wedding`` and ``bride`` counts in both slices), so slices may overlap;
- a question without the field goes to the slice ``(none)``; values that are not strings
  are named by their JSON text (``1``, ``true``);
- each slice is scored by a fresh metric of the benchmark, as a question set of its own;
  the reference slice is the one given, else the largest (ties: the first by name).

    >>> from types import SimpleNamespace as Q
    >>> from nablafol.scoring.vcr import VcrScore
    >>> from nablafol.data.vcr import VcrPrediction as P
    >>> items = [Q(annot_id=str(i), id=str(i), answer_label=0, rationale_label=None, answer_choices=((),) * 2,
    ...            record=lambda r=r: {"region": r}) for i, r in enumerate(["west", "west", "africa"])]
    >>> right, wrong = P((0.9, 0.1)), P((0.1, 0.9))
    >>> report = score_slices(items, {"0": right, "1": wrong, "2": wrong}, "region", lambda: VcrScore(rationales=False))
    >>> report.reference, [(s.name, s.count, s.metrics["q2a"], s.gaps["q2a"]) for s in report.slices]
    ('west', [('africa', 1, 0.0, 0.5), ('west', 2, 0.5, 0.0)])
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from nablafol.scoring.questions import ScoringError

__all__ = ["Slice", "SliceReport", "field_values", "score_slices", "NONE"]

NONE = "(none)"


def field_values(record: Mapping, path: str) -> tuple[str, ...]:
    """The slice names of one record for a (dotted) field.

    >>> field_values({"keywords": ["wedding", "bride", "wedding"]}, "keywords")
    ('wedding', 'bride')
    >>> field_values({"types": {"structural": "query"}}, "types.structural"), field_values({}, "region")
    (('query',), ('(none)',))
    """
    value: object = record
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return (NONE,)
        value = value[key]
    items = value if isinstance(value, list) else [value]
    names = [v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in items]
    return tuple(dict.fromkeys(names)) or (NONE,)


@dataclass(frozen=True)
class Slice:
    """One slice: its questions' count, the benchmark's metrics, and each metric's gap to the
    reference slice (reference - slice; None where either is None)."""

    name: str
    count: int
    metrics: Mapping[str, float | None]
    gaps: Mapping[str, float | None]


@dataclass(frozen=True)
class SliceReport:
    field: str
    reference: str
    slices: tuple[Slice, ...]  # sorted by name

    def to_json(self) -> dict:
        return {"field": self.field, "reference": self.reference,
                "slices": {s.name: {"count": s.count, **dict(s.metrics),
                                    "gap": dict(s.gaps)} for s in self.slices}}

    def titled_table(self, labels: Mapping[str, str] | None = None) -> str:
        """:meth:`format_table` under its title line, as ``nablafol score --by`` prints it."""
        return f"by {self.field} (gap: reference minus slice, in points)\n{self.format_table(labels)}"

    def format_table(self, labels: Mapping[str, str] | None = None) -> str:
        """Accuracy per slice in percent, with its gap to the reference slice in points."""
        # a metric no slice has (GD-VCR's rationales) stays in the JSON, not in the table
        names = [n for n in (self.slices[0].metrics if self.slices else ())
                 if any(s.metrics[n] is not None for s in self.slices)]
        labels = labels or {}
        head = [self.field, "count"] + [x for n in names for x in (labels.get(n, n), "gap")]
        rows = []
        for s in self.slices:
            name = s.name + (" (reference)" if s.name == self.reference else "")
            rows.append([name, f"{s.count:,}"] + [x for n in names for x in (_percent(s.metrics[n]),
                                                                             _points(s.gaps[n]))])
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in [head] + rows]
        return "\n".join(lines)


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _points(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.2f}"


def score_slices(questions: Iterable, predictions: Mapping, field: str, make_metric: Callable,
                 reference: str | None = None, record: Callable[[object], Mapping] | None = None) -> SliceReport:
    """Score each slice of ``questions`` by ``field`` with a fresh ``make_metric()``.

    ``record(q)`` gives a question's record as its file writes it (default ``q.record()``);
    a metric has ``update(questions, predictions)`` and ``compute()``, whose result has
    ``metrics()`` (name -> fraction) and ``count``.
    """
    record = record or (lambda q: q.record())
    members: dict[str, list] = {}
    for q in questions:
        for name in field_values(record(q), field):
            members.setdefault(name, []).append(q)
    if not members:
        raise ScoringError("no questions to slice")
    if set(members) == {NONE}:  # one "(none)" slice of everything: a misspelt field, not a breakdown
        raise ScoringError(f"--by {field}: no question record has this field; give a field the question "
                           f"records have ('a.b' looks inside an object)")
    if reference is None:
        reference = min(members, key=lambda n: (-len(members[n]), n))
    elif reference not in members:
        shown = ", ".join(sorted(members)[:8]) + (", ..." if len(members) > 8 else "")
        raise ScoringError(f"reference slice {reference!r} is not a value of {field!r} (values: {shown})")
    results = {}
    for name, qs in members.items():
        metric = make_metric()
        metric.update(qs, predictions)
        results[name] = metric.compute()
    base = results[reference].metrics()
    slices = []
    for name in sorted(members):
        values = results[name].metrics()
        gaps = {k: None if v is None or base[k] is None else base[k] - v for k, v in values.items()}
        slices.append(Slice(name, results[name].count, values, gaps))
    return SliceReport(field, reference, tuple(slices))
