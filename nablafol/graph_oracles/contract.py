"""The GQA predicate contract (docs/compiling-gqa.md) as data: the kinds, and why a predicate is refused.

Every GQA oracle (scene graphs, the neural oracle) implements the same kinds; this module is
where they are listed once, with the one-line reason an oracle gives for a predicate it does
not know.
"""
from __future__ import annotations

from ..ir import Predicate

UNARY_KINDS = ("name", "class", "attr", "hposition", "vposition", "scene")
BINARY_KINDS = ("rel", "compare", "same")

_REASONS = {
    "name": "not a class or category of the vocabulary",
    "class": "not a class or category of the vocabulary",
    "attr": "not an attribute value of the vocabulary",
    "hposition": "hposition is one of left, middle, right",
    "vposition": "vposition is one of top, middle, bottom",
    "scene": "the scene predicate is named 'scene'",
    "rel": "not a relation of the vocabulary",
    "compare": "not a comparative (larger, smaller, taller, shorter, higher, lower, longer, older, younger, "
               "healthier, less healthy)",
    "same": "not an attribute type of the vocabulary",
}


def refusal(predicate: Predicate, owner: str) -> str:
    """Why ``owner`` (e.g. "the scene-graph oracle") cannot answer ``predicate``, in one line."""
    kind = predicate.kind
    if kind == "" and predicate.arity in (1, 2):
        kinds, words = ((UNARY_KINDS, "name, attribute value or position") if predicate.arity == 1 else
                        (BINARY_KINDS, "relation, comparative or attribute type"))
        return (f"a plain name that is no {words} of {owner}'s vocabulary; give its kind: "
                f"Predicate({predicate.name!r}, arity={predicate.arity}, kind=K), K one of {', '.join(kinds)}")
    if kind not in UNARY_KINDS + BINARY_KINDS:
        return f"{owner}'s kinds are {', '.join(UNARY_KINDS + BINARY_KINDS)}"
    arity = 1 if kind in UNARY_KINDS else 2
    if predicate.arity != arity:
        return f"kind {kind!r} takes {arity} argument{'s' if arity == 2 else ''}"
    return _REASONS[kind]
