"""English for the question templates: articles, plurals, agreement, value phrases.

    >>> a("apple"), a("pants"), a("broccoli"), plural("bus"), plural("person"), plural("red shorts")
    ('an apple', 'pants', 'broccoli', 'buses', 'people', 'red shorts')
    >>> describe("material", "wood"), adjective("material", "wood"), describe("hposition", "left")
    ('made of wood', 'wooden', 'on the left of the image')
"""
from __future__ import annotations

__all__ = ["PLURAL_ONLY", "MASS", "a", "plural", "be", "do", "describe", "adjective", "capitalize",
           "RELATION_PHRASE", "INVERSE_PHRASE"]

PLURAL_ONLY = frozenset({"pants", "shorts", "glasses"})  # GQA writes these in the plural
MASS = frozenset({"broccoli", "furniture", "clothing", "food", "tableware", "fast food"})
_PLURALS = {"man": "men", "woman": "women", "person": "people", "child": "children"}
_ADJECTIVES = {("material", "wood"): "wooden"}
# how a stored relation R(A, B) reads: "A <phrase> B", and from B's side: "B <inverse> A"
RELATION_PHRASE = {
    "to the left of": "to the left of", "to the right of": "to the right of", "above": "above",
    "below": "below", "on": "on", "under": "under", "near": "near", "wearing": "wearing",
    "holding": "holding", "same color": "the same color as",
}
INVERSE_PHRASE = {
    "to the left of": "to the right of", "to the right of": "to the left of", "above": "below",
    "below": "above", "on": "under", "under": "on", "near": "near", "wearing": "worn by",
    "holding": "held by", "same color": "the same color as",
}


def plural(noun: str) -> str:
    """The plural of a noun or of a phrase ending in one ('red car' -> 'red cars')."""
    head, space, last = noun.rpartition(" ")
    if last in PLURAL_ONLY or last in MASS or noun in MASS:
        return noun
    if last in _PLURALS:
        return head + space + _PLURALS[last]
    if last.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if last.endswith("y") and last[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def a(phrase: str, noun: str | None = None) -> str:
    """``phrase`` with an indefinite article (none for plural-only and mass nouns)."""
    noun = noun or phrase.rpartition(" ")[2]
    if noun in PLURAL_ONLY or noun in MASS or phrase in MASS:
        return phrase
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def be(noun: str) -> str:
    return "are" if noun in PLURAL_ONLY else "is"


def do(noun: str) -> str:
    return "do" if noun in PLURAL_ONLY else "does"


def describe(type_name: str, value: str) -> str:
    """What follows "is" to say an object has the value: 'red', 'made of wood',
    'on the left of the image'."""
    if type_name == "material":
        return f"made of {value}"
    if type_name == "hposition":
        return "in the middle of the image" if value == "middle" else f"on the {value} of the image"
    if type_name == "vposition":
        return "in the middle of the image" if value == "middle" else f"at the {value} of the image"
    return value


def adjective(type_name: str, value: str) -> str:
    """The value before a noun: 'red car', 'wooden table'."""
    return _ADJECTIVES.get((type_name, value), value)


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]
