"""How a prediction is compared with a gold answer: the one place answer matching lives.

An :class:`AnswerMatch` names a *form* of an answer; two answers match when they have the same
form. Every metric that compares answers (accuracy, consistency, validity, plausibility,
distribution, the hard/easy split) goes through the form, so a matching rule is written once:

- :data:`exact_match`, GQA's ``eval.py``: the form is the string itself (``"White" != "white"``);
- :data:`vocabulary_match`, nablafol's default: the form is the concept of GQA's vocabulary
  that the string is a real surface form of (:func:`vocabulary_form`), so a reasoner that
  answers in vocabulary forms is not marked wrong for ``ski`` where GQA wrote ``skis`` (nor
  for ``Horse`` where it wrote ``horse``).

>>> vocabulary_match("ski", "skis"), vocabulary_match("tennis", "tenni"), vocabulary_match("reds", "red")
(True, True, False)
>>> exact_match("skis", "skis"), exact_match("ski", "skis"), exact_match(None, "skis")
(True, False, False)

Pure Python (the vocabulary is read lazily, the first time a vocabulary form is asked for).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from nablafol.caching import bounded_cache

__all__ = ["AnswerMatch", "exact_match", "vocabulary_match", "vocabulary_form", "same_string"]

_POSITION_TYPES = ("hposition", "vposition")
# distinct answers a match keeps the forms of (GQA's answers are about 2,000, a model's a few more)
FORMS_KEPT = 1 << 14


class AnswerMatch:
    """A rule for comparing answers: ``form(answer)``; a prediction matches when forms are equal.

    Calling it compares one prediction (``None``: no prediction, never a match) with one gold
    answer. ``form`` must be a function of the string alone: a match keeps the forms of the
    answers it has seen (:data:`FORMS_KEPT`, most recent first) in ``kept_form``, which every
    comparison goes through. It pickles by reference to its module-level form function, so
    scorers that carry one can travel between processes.
    """

    __slots__ = ("name", "form", "kept_form")

    def __init__(self, name: str, form: Callable[[str], str]):
        self.name, self.form = name, form
        # the string itself needs no look-up; any other form is computed once per answer
        self.kept_form = form if form is same_string else bounded_cache(form, FORMS_KEPT)

    def __call__(self, prediction: str | None, answer: str) -> bool:
        form = self.kept_form
        return prediction is not None and form(prediction) == form(answer)

    def member(self, prediction: str | None, answers: Iterable[str]) -> bool:
        """Whether the prediction matches one of ``answers`` (validity, plausibility)."""
        if prediction is None:
            return False
        form = self.kept_form
        predicted = form(prediction)
        return any(form(answer) == predicted for answer in answers)

    def __repr__(self) -> str:
        return f"AnswerMatch({self.name!r})"

    def __reduce__(self):
        return AnswerMatch, (self.name, self.form)


def same_string(answer: str) -> str:
    """The exact form: the string itself."""
    return answer


def vocabulary_form(answer: str) -> str:
    """The vocabulary concept ``answer`` is a real surface form of, else ``answer`` unchanged.

    ``dsl.normalize`` maps a raw string to a vocabulary form by trying singular candidates
    of its last word; that rule over-generates on purpose (the vocabulary picks). For
    scoring, a candidate is accepted only when it is a real surface form: the string is
    already a vocabulary form, or GQA's own spelling of one (``tennis`` for ``tenni``), or
    the plural of an object name (``skis``, ``people``, ``oranges``). Attribute values have no
    plural, so ``reds``, ``smalls``, ``yellows`` stay themselves and match nothing; nor do
    positions, though GQA's vocabulary also lists ``left`` as a name (``lefts``).

    >>> vocabulary_form("skis"), vocabulary_form("people"), vocabulary_form("tennis")
    ('ski', 'person', 'tenni')
    >>> vocabulary_form("reds"), vocabulary_form("smalls"), vocabulary_form("red")
    ('reds', 'smalls', 'red')
    >>> vocabulary_form("Horse "), vocabulary_form("Horses")  # case and outer spaces folded, as plurals are
    ('horse', 'horse')

    Not cached here (:class:`AnswerMatch` keeps the forms it computes): the vocabulary
    caches its ``normalize``; the rest are set look-ups.
    """
    from nablafol.dsl import Ontology  # the vocabulary is loaded on first use only
    ontology = Ontology.gqa()
    text = answer.strip().lower()  # GQA's answers are lower case: "Horse" is the answer "horse"
    form = ontology.normalize(text)
    if form == text or ontology.raw_form(form) == text:
        return form
    if ontology.is_name(form) and not any(ontology.is_attribute_value(form, t) for t in _POSITION_TYPES):
        return form
    return text


exact_match = AnswerMatch("exact", same_string)
vocabulary_match = AnswerMatch("vocabulary", vocabulary_form)
