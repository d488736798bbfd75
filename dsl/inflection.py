"""Singular candidates for an English plural: the spelling rules behind `normalize`.

`singular_candidates(phrase)` lists the forms the last word of `phrase` may have in
the singular, most likely first. It over-generates on purpose (`horses` gives
`hors` and `horse`; `cookies` gives `cooky` and `cookie`): the vocabulary picks the
candidate it knows, so the rules never have to be right on their own.

    >>> singular_candidates("benches")
    ['bench', 'benche']
    >>> singular_candidates("brushing teeth")
    ['brushing tooth']
"""
from __future__ import annotations

__all__ = ["singular_candidates"]

# Plurals not formed with -s.
_IRREGULAR = {
    "people": "person", "men": "man", "women": "woman", "children": "child", "teeth": "tooth",
    "feet": "foot", "geese": "goose", "mice": "mouse", "oxen": "ox", "cacti": "cactus",
}
# Endings after which -es (not just -s) was added: box-es, bench-es, bus-es, tomato-es.
_ES_AFTER = ("ches", "shes", "sses", "xes", "zes", "ses", "oes")


def singular_candidates(phrase: str) -> list[str]:
    """Possible singular forms of `phrase` (its last word inflected), most likely first;
    [] when the last word does not look plural."""
    head, space, word = phrase.rpartition(" ")
    prefix = head + space
    if word in _IRREGULAR:
        return [prefix + _IRREGULAR[word]]
    if len(word) < 3 or not word.endswith("s") or word.endswith("ss"):
        return []
    stems: list[str] = []
    if word.endswith("ies"):
        stems += [word[:-3] + "y", word[:-1]]          # berries, cookies
    elif word.endswith("ves"):
        stems += [word[:-3] + "f", word[:-3] + "fe", word[:-1]]  # shelves, knives, olives
    elif word.endswith(_ES_AFTER):
        stems += [word[:-2], word[:-1]]                  # benches, buses, tomatoes; horses
    else:
        stems += [word[:-1]]                             # plates, skis, tennis -> tenni
    return [prefix + stem for stem in stems]
