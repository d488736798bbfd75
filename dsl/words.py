"""GQA's own words: pronouns that select objects, and names that tell a person's gender.

Real GQA programs select objects by pronoun (`select: he (0)->relate: device,holding,o (2)`,
"What device is he holding?"; `select: this (3)->choose name: skateboarder|snowboarder`, "Is
this a skateboarder or a snowboarder?"). GQA writes a pronoun where its question does, and its
full answers name the object by its class ("The man is holding the phone", "This is a
skateboarder"). So a pronoun is a name that stands for classes, like a category:

* `he`, `him`, `his` stand for the person classes a man may be (every person class but the
  female ones); `she`, `her`, `hers` for those a woman may be (every person class but the
  male ones): GQA's answers say `man`, `woman`, `girl` and also plain `person`;
* `it`, `this`, `that`, `these`, `those`, `they`, `them` stand for every class.

A person's gender is written in the name more often than in an attribute (GQA's graphs hold
`girls`, `woman`, `man`, rarely `female`): `GENDER_OF_NAME` lists the names that tell it.

    >>> pronoun_gender("she"), pronoun_gender("this"), pronoun_gender("table")
    ('female', None, None)
    >>> is_pronoun("they"), GENDER_OF_NAME["girl"]
    (True, 'female')
"""
from __future__ import annotations

from types import MappingProxyType

__all__ = ["PERSON_PRONOUNS", "OBJECT_PRONOUNS", "PRONOUNS", "GENDER_OF_NAME", "GENDERS", "is_pronoun",
           "pronoun_gender", "PERSON_CATEGORY"]

#: The category person pronouns stand under.
PERSON_CATEGORY = "person"
#: Person pronouns -> the gender they say.
PERSON_PRONOUNS = MappingProxyType({"he": "male", "him": "male", "his": "male",
                                    "she": "female", "her": "female", "hers": "female"})
#: Pronouns and demonstratives that may stand for any object.
OBJECT_PRONOUNS = frozenset({"it", "this", "that", "these", "those", "they", "them"})
PRONOUNS = frozenset(PERSON_PRONOUNS) | OBJECT_PRONOUNS
GENDERS = ("female", "male")

_FEMALE = ("woman", "girl", "lady", "mother", "daughter", "bride", "wife", "waitress", "sister",
           "grandmother", "queen", "princess", "actress", "policewoman", "businesswoman")
_MALE = ("man", "boy", "guy", "gentleman", "father", "son", "groom", "husband", "waiter", "brother",
         "grandfather", "king", "prince", "actor", "policeman", "businessman", "fisherman", "cowboy")
#: Names (vocabulary forms: singulars) that tell a person's gender.
GENDER_OF_NAME = MappingProxyType({**{n: "female" for n in _FEMALE}, **{n: "male" for n in _MALE}})


def is_pronoun(word: str) -> bool:
    return word in PRONOUNS


def pronoun_gender(word: str) -> str | None:
    """The gender a person pronoun says (`he` -> `male`); None for any other word."""
    return PERSON_PRONOUNS.get(word)
