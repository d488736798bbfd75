"""Asking a question in words about one image: the semantic parser reads it, the pipeline
answers the program it read (golden scene-graph oracle, or a trained oracle over features).

    >>> from nablafol.semantic_parser import tiny_parser
    >>> asker = Asker(tiny_parser(), golden_perception("tests/fixtures/gqa/val_sceneGraphs.json"))
    >>> reply = asker.ask("2354786", "Is the cup red?")
    >>> reply.program_text, reply.answer in ("yes", "no")
    ('select: cup->verify color: red [0]', True)
    >>> asker.ask("2354786", "")
    Traceback (most recent call last):
    ...
    nablafol.semantic_parser.errors.UnreadableQuestionError: cannot read the question '': it has no words

What comes back (:class:`Reply`): the program read and how sure the parser was, the FOL
formula, the answer and its probability, the top candidates, and the grounding (the objects
the last step's attention puts at or above 0.5, with the attention over every object).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nablafol.data import Question
from nablafol.errors import NablafolError
from nablafol.semantic_parser import SemanticParser, load_parser

from .execution import Outcome, answer_questions, explain_question, feature_perception, golden_perception

__all__ = ["Asker", "Reply", "UnanswerableQuestionError", "LOW_READING"]

#: Below this probability a program read is flagged as doubtful when printed: on the embedded
#: test-dev 3.7% of the questions are read below 0.3 (a third of those exactly), while questions
#: the templates never ask ("What is the meaning of life?") are read at 0.1-0.5.
LOW_READING = 0.5


class UnanswerableQuestionError(NablafolError, ValueError):
    """A question that was read but cannot be answered here (no scene for the image, a concept
    the oracle does not know, ...): one line saying why."""


#: Shared atoms the interval of an answer that is not exact conditions on (2^k bounded worlds; a
#: question at a time, where ``eval --bounds`` takes ``--exact-budget``)
BOUNDS_BUDGET = 8


@dataclass(frozen=True)
class Reply:
    """A question asked about an image, read and answered."""

    question: str
    image_id: str
    program_text: str             # the program read (GQA's semanticStr, no object ids)
    program: object               # ... as a nablafol.dsl.Program
    read_probability: float       # how sure the parser was of that program
    formula: str                  # its FOL formula
    answer: str
    probability: float            # the answer's probability
    candidates: tuple             # ((answer, probability), ...), most probable first
    grounding: tuple              # ((object id, object name or None, attention), ...) for attention >= 0.5
    attention: dict = field(default_factory=dict)  # object id -> attention of the answer step
    guessed: bool = False  # every candidate at probability 0: the answer is the first, by no evidence
    fallback: bool = False  # its objects were none under the ontology: answered widened (the FOL shown is that one)
    explanation: object = None  # a nablafol.explain.Explanation when asked for (``nablafol answer --explain``)
    exact: bool | None = None  # the probability is the formula's exact one (docs/exactness.md)
    bounds: tuple | None = None  # (lower, upper): sound bounds on the answer's probability, when not exact

    def to_dict(self) -> dict:
        """The reply as JSON-ready data (``nablafol answer --json``)."""
        return {"question": self.question, "imageId": self.image_id, "program": self.program_text,
                "readProbability": self.read_probability, "formula": self.formula, "answer": self.answer,
                "probability": self.probability,
                "candidates": [{"answer": a, "probability": p} for a, p in self.candidates],
                "grounding": [{"object": o, "name": n, "attention": a} for o, n, a in self.grounding],
                "attention": self.attention, "guessed": self.guessed, "presuppositionFallback": self.fallback,
                "exact": self.exact, **({"bounds": list(self.bounds)} if self.bounds is not None else {}),
                **({"explanation": self.explanation.to_dict()} if self.explanation is not None else {})}

    def lines(self) -> list[str]:
        """The reply as ``nablafol answer`` prints it."""
        shown = ", ".join(f"{a} {p:.3f}" for a, p in self.candidates)
        grounded = ", ".join(f"{o}{f' ({n})' if n else ''} {a:.2f}" for o, n, a in self.grounding) or "none"
        doubt = "; low: the parser may have misread the question" if self.read_probability < LOW_READING else ""
        return [f"question: {self.question}",
                f"program:  {self.program_text}   (read with probability {self.read_probability:.3f}{doubt})",
                f"FOL:      {self.formula}",
                f"answer:   {self.answer}   (probability {self.probability:.3f}"
                + (f", not exact: between {self.bounds[0]:.3f} and {self.bounds[1]:.3f}" if self.bounds else "")
                + ("; a guess: every candidate has probability 0, nothing in the scene has what it asks)"
                   if self.guessed else "; a presupposition fallback: the objects asked about are none under the "
                   "ontology, the question's category widened to every class)" if self.fallback else ")"),
                f"top:      {shown}",
                f"grounding (attention >= 0.5): {grounded}"] + (self.explanation.lines() if self.explanation else [])


class Asker:
    """Reads questions with ``parser`` and answers them over ``perception`` (see the module doc);
    ``top``: candidates kept for an open question."""

    def __init__(self, parser: SemanticParser, perception, top: int = 5):
        self.parser, self.perception, self.top = parser, perception, top

    @classmethod
    def from_folders(cls, parser, *, scene_graphs=None, features=None, model=None, ontology=None,
                     top: int = 5) -> "Asker":
        """From a parser folder and either a scene-graphs file (the golden oracle) or a features
        folder with a trained model folder."""
        if (scene_graphs is None) == (features is None):
            raise UnanswerableQuestionError("give either scene graphs (the golden oracle) or features with a model")
        if features is not None and model is None:
            raise UnanswerableQuestionError("features need a trained model folder to read them")
        if scene_graphs is not None and model is not None:
            raise UnanswerableQuestionError("a trained model reads features; with scene graphs the golden oracle "
                                            "answers (leave the model out)")
        perception = (golden_perception(scene_graphs, ontology) if scene_graphs is not None
                      else feature_perception(features, model))
        return cls(load_parser(parser), perception, top)

    def ask(self, image_id: str, question: str, *, min_probability: float | None = None, explain: int = 0) -> Reply:
        """Read ``question`` and answer it about image ``image_id``; raise
        :class:`~nablafol.semantic_parser.UnreadableQuestionError` when the parser cannot read
        it (``min_probability``: refuse programs read with less; default the parser's own),
        :class:`UnanswerableQuestionError` when its program cannot be answered here. ``explain``:
        name that many facts moving the answer most, with each step's most attended objects."""
        read = self.parser.parse(question, min_probability=min_probability)
        if not self.perception.has_image(image_id):
            raise UnanswerableQuestionError(f"no scene for image {image_id!r}")
        asked = Question("asked", image_id, question, semantic_str=read.text)
        (outcome,) = answer_questions(self.perception, [asked], keep_outcomes=True, details_top=self.top,
                                      bounds_budget=BOUNDS_BUDGET)
        if not isinstance(outcome, Outcome):
            raise UnanswerableQuestionError(f"the program read ({read.text}) cannot be answered: {outcome.reason}: "
                                            f"{outcome.detail}")
        names = self._names(image_id)
        grounding = tuple((o, names.get(o), outcome.attention.get(o, 1.0)) for o in outcome.grounding)
        candidates = tuple(sorted(outcome.answers.items(), key=lambda kv: -kv[1]))
        why = explain_question(self.perception, asked, k=self.top, facts=explain) if explain else None
        return Reply(question, image_id, read.text, read.program, read.probability, outcome.formula,
                     outcome.prediction, outcome.answers.get(outcome.prediction, 0.0), candidates, grounding,
                     dict(outcome.attention), outcome.guessed, outcome.fallback, why, outcome.exact,
                     self._bounds(outcome))

    @staticmethod
    def _bounds(outcome) -> tuple | None:
        """The answer's interval where it is not exact (None where exact or not computed)."""
        if outcome.exact or not outcome.bounds or outcome.prediction not in outcome.bounds:
            return None
        return tuple(outcome.bounds[outcome.prediction])

    def _names(self, image_id: str) -> dict:
        """Object id -> name, where the perception knows names (scene graphs do; features do not)."""
        graphs = getattr(self.perception, "scene_graphs", None)
        if graphs is None:
            return {}
        return {o.id: o.name for o in graphs[image_id].objects}
