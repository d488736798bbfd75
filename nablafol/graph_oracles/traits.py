"""The comparatives boxes cannot tell: ``older``, ``younger``, ``healthier``, ``less healthy``.

They are read from what a scene graph says of each object, through six per-object
*traits*, each a probability:

| trait | from | P(trait of X) |
| --- | --- | --- |
| ``old`` | attribute ``old`` | ``p_X(old)`` |
| ``young`` | attributes ``young``, ``little`` (GQA's ``age`` values) | ``1 − (1 − p_X(young))(1 − p_X(little))`` |
| ``adult`` | classes ``ADULT_CLASSES`` (grown-up people) | ``min(1, Σ_{c ∈ ADULT} p_X(c))`` |
| ``child`` | classes ``CHILD_CLASSES`` (children, young animals) | same over ``CHILD_CLASSES`` |
| ``healthy`` | classes under ``fruit``, ``vegetable`` + ``HEALTHY_CLASSES`` | same |
| ``unhealthy`` | classes under ``fast food``, ``dessert``, ``pastry`` + ``UNHEALTHY_CLASSES`` | same |

Attributes are independent (noisy-or); an object's classes are exclusive (sums), as for
``name`` predicates. The rules (``COMP(X, Y)``: X is COMP than Y; 0 when X = Y):

* ``older(X, Y) = 1 − (1 − old(X)·young(Y)) · (1 − adult(X)·child(Y))``: an old one is older
  than a young one, a grown-up older than a child;
* ``younger(X, Y) = older(Y, X)``;
* ``healthier(X, Y) = healthy(X) · unhealthy(Y)``: fruit and vegetables beat fast food and
  sweets, and nothing else is ranked;
* ``less healthy(X, Y) = healthier(Y, X)``.

Plain scene graphs make every trait 0/1, hence every rule. The class lists are ours
(written for GQA's vocabulary); names a vocabulary lacks are ignored.

    >>> import torch
    >>> man = {t: torch.tensor(v) for t, v in dict(old=0., young=0., adult=1., child=0., healthy=0., unhealthy=0.).items()}
    >>> boy = {t: torch.tensor(v) for t, v in dict(old=0., young=1., adult=0., child=1., healthy=0., unhealthy=0.).items()}
    >>> float(older(man, boy)), float(younger(man, boy))
    (1.0, 0.0)
"""
from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

import torch

__all__ = ["TRAITS", "TRAIT_ATTRIBUTES", "ADULT_CLASSES", "CHILD_CLASSES", "HEALTHY_CATEGORIES",
           "HEALTHY_CLASSES", "UNHEALTHY_CATEGORIES", "UNHEALTHY_CLASSES", "RULES", "TraitRule",
           "trait_classes", "older", "younger", "healthier", "less_healthy"]

TRAITS = ("old", "young", "adult", "child", "healthy", "unhealthy")
TRAIT_ATTRIBUTES = {"old": ("old",), "young": ("young", "little")}
ADULT_CLASSES = frozenset({"man", "woman", "lady", "gentleman", "guy", "father", "mother", "parent"})
CHILD_CLASSES = frozenset({"boy", "girl", "child", "toddler", "calf", "puppy", "kitten", "lamb"})
HEALTHY_CATEGORIES = ("fruit", "vegetable")
HEALTHY_CLASSES = frozenset({"salad", "fruit", "vegetable", "broccoli", "spinach", "yogurt", "oatmeal"})
UNHEALTHY_CATEGORIES = ("fast food", "dessert", "pastry")
UNHEALTHY_CLASSES = frozenset({"donut", "candy", "cotton candy", "gummy bear", "marshmallow", "potato chip",
                               "soda", "soft drink", "coke", "fry", "onion ring", "chocolate", "dessert",
                               "cookie", "pie", "milkshake"})


def trait_classes(ontology) -> dict[str, frozenset[str]]:
    """The vocabulary classes of each class-based trait (categories expanded)."""
    def expand(categories, classes):
        out = set(c for c in classes if ontology.is_name(c))
        for category in categories:
            if ontology.is_category(category):
                out |= ontology.classes_under(category)
        return frozenset(out)

    healthy = expand(HEALTHY_CATEGORIES, HEALTHY_CLASSES)
    unhealthy = expand(UNHEALTHY_CATEGORIES, UNHEALTHY_CLASSES) - healthy  # never both
    return {"adult": expand((), ADULT_CLASSES), "child": expand((), CHILD_CLASSES),
            "healthy": healthy, "unhealthy": unhealthy}


Traits = Mapping[str, torch.Tensor]


def older(x: Traits, y: Traits) -> torch.Tensor:
    """``1 − (1 − old(X)·young(Y)) · (1 − adult(X)·child(Y))``."""
    return 1 - (1 - x["old"] * y["young"]) * (1 - x["adult"] * y["child"])


def younger(x: Traits, y: Traits) -> torch.Tensor:
    """``older(Y, X)``."""
    return older(y, x)


def healthier(x: Traits, y: Traits) -> torch.Tensor:
    """``healthy(X) · unhealthy(Y)``."""
    return x["healthy"] * y["unhealthy"]


def less_healthy(x: Traits, y: Traits) -> torch.Tensor:
    """``healthier(Y, X)``."""
    return healthier(y, x)


class TraitRule(NamedTuple):
    """A comparative over traits: ``(traits of X, traits of Y) -> probability``, and its formula."""

    function: Callable[[Traits, Traits], torch.Tensor]
    formula: str


RULES: dict[str, TraitRule] = {
    "older": TraitRule(older, "1 − (1 − old(X)·young(Y))·(1 − adult(X)·child(Y))"),
    "younger": TraitRule(younger, "older(Y, X)"),
    "healthier": TraitRule(healthier, "healthy(X)·unhealthy(Y)"),
    "less healthy": TraitRule(less_healthy, "healthier(Y, X)"),
}
