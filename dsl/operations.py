"""What GQA's operations are: their verbs, what each one yields and consumes.

A GQA step's operation field is a verb, optionally followed by a type
(`filter color`, `verify rel`, `choose less healthy`, `same color`). Steps yield
one of three kinds of result, and the kind decides what may consume them:

    OBJECTS  an attention over the scene's objects   select, filter, relate
    BOOLEAN  a yes/no probability                     verify, exist, and, or, same, different
    ANSWER   a distribution over open answers         query, choose, common

`and`/`or` consume BOOLEAN results; every other consuming operation consumes
OBJECTS. Nothing consumes an ANSWER, so an ANSWER step can only be the last.
"""
from __future__ import annotations

import enum

__all__ = ["VERBS", "COMPARATIVES", "Kind", "NO_TYPE_VERBS"]

# Every verb GQA uses, in the order of the spec's operation table.
VERBS = ("select", "filter", "relate", "exist", "verify", "query", "choose",
         "and", "or", "same", "different", "common")

# Verbs whose operation field never carries a type (`query color` is not GQA).
NO_TYPE_VERBS = frozenset({"select", "relate", "exist", "query", "and", "or", "common"})

# `choose COMP` with two inputs: which of the two objects is COMP. GQA's whole set.
COMPARATIVES = frozenset({"healthier", "less healthy", "older", "younger", "taller", "shorter",
                          "larger", "smaller", "higher", "lower", "longer"})


class Kind(enum.Enum):
    """The kind of result a step yields."""

    OBJECTS = "objects"
    BOOLEAN = "yes/no"
    ANSWER = "answer"


YIELDS = {
    "select": Kind.OBJECTS, "filter": Kind.OBJECTS, "relate": Kind.OBJECTS,
    "verify": Kind.BOOLEAN, "exist": Kind.BOOLEAN, "and": Kind.BOOLEAN, "or": Kind.BOOLEAN,
    "same": Kind.BOOLEAN, "different": Kind.BOOLEAN,
    "query": Kind.ANSWER, "choose": Kind.ANSWER, "common": Kind.ANSWER,
}

CONSUMES = {verb: (Kind.BOOLEAN if verb in ("and", "or") else Kind.OBJECTS) for verb in VERBS}
