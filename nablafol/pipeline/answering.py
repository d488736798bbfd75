"""Answering a chunk of GQA questions in batches: compile, group by image, ask a perception, run the engine.

:class:`Answerer` is the one way questions are answered; the streaming loop
(:mod:`nablafol.pipeline.evaluation`) feeds it chunks, in one process or in workers. A
question that cannot be answered is never dropped: it becomes a :class:`Skip` with a reason.

    >>> from nablafol.data import load_questions, load_scene_graphs
    >>> from nablafol.pipeline.perception import SceneGraphPerception
    >>> questions = list(load_questions("tests/fixtures/gqa/val_balanced_questions.json").values())
    >>> perception = SceneGraphPerception(load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json"))
    >>> results = Answerer(perception).answer_chunk(questions)
    >>> len(results) == len(questions), sorted({type(r).__name__ for r in results})
    (True, ['Outcome'])
"""
from __future__ import annotations

import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import numpy as np
import torch

from nablafol import dsl
from nablafol.caching import bounded_cache
from nablafol.compiler import CompileError, CompiledQuestion, Compiler
from nablafol.engine import Engine
from nablafol.ir import Predicate
from nablafol.pipeline.perception import Perception

#: Compiled programs a run keeps (with their checks), the most recently used: enough for GQA's
#: validation split (~73,000 distinct programs up to object ids, a repeat often 30,000 questions
#: after its first: a smaller bound compiled a third of the repeats again), while a streaming run
#: over a million questions still does not hold every program it met.
CACHED_PROGRAMS = 1 << 17

__all__ = ["Skip", "Outcome", "Answerer", "compile_question", "CACHED_PROGRAMS"]


@dataclass(frozen=True)
class Skip:
    """A question that was not answered: ``reason`` is a short category, ``detail`` one line."""

    question_id: str
    reason: str
    detail: str


@dataclass(frozen=True)
class Outcome:
    """One answered question (what the details file records)."""

    question_id: str
    prediction: str
    answers: dict  # candidate -> probability (the top ones for open questions)
    grounding: tuple  # ids of the objects the focus attention puts at or above 0.5
    formula: str | None = None
    attention: dict = field(default_factory=dict)  # object id -> focus attention (all objects)
    exact: bool | None = None  # the answer's probabilities are the formula's exact ones (docs/exactness.md)
    guessed: bool = False  # every candidate at probability 0: the prediction, the first, is a guess (Answers.guessed)
    # the objects an open question presupposes were none under the ontology (every candidate at 0):
    # answered with their category widened to every class (Compiler.widened; docs/design.md)
    fallback: bool = False
    explanation: dict | None = None  # nablafol.explain's, as JSON data, when asked for (``eval --explain``)
    # candidate -> [lower, upper], sound bounds on its probability, with an engine that gives them
    # (``Engine(bounds=True)``, ``eval --bounds``; docs/exactness.md); the candidates of ``answers``
    bounds: dict | None = None


def compile_question(question, compiler: Compiler) -> CompiledQuestion | Skip:
    """The question's program (as its reader hands it over: GQA's ``semantic`` first, else
    ``semanticStr``; a CRIC program), compiled by ``compiler.compile_source``, or why not."""
    source = question.program_source()
    if source is None:
        # the parser's package is imported only here: a golden eval never meets a question without a program
        from nablafol.semantic_parser.predicted_programs import parser_error
        unreadable = parser_error(question)
        if unreadable is not None:  # the semantic parser could not read the question's words
            return Skip(question.id, "unreadable question", unreadable)
        return Skip(question.id, "no program", "the question has neither 'semantic' nor 'semanticStr'")
    try:
        return compiler.compile_source(source)
    except dsl.ProgramError as e:
        return Skip(question.id, "malformed program", f"{source.field}: {str(e).splitlines()[0]}")
    except CompileError as e:
        return Skip(question.id, e.reason, str(e))


class Answerer:
    """Answers questions with an engine over a perception, ``batch_size`` questions at a time.

    Questions are grouped by image so that a batch asks its oracle about few scenes, and
    images by size so that a batch pads few objects.
    ``details_top``: how many candidates of an open question an :class:`Outcome` keeps
    (0: all); outcomes are produced only when ``keep_outcomes`` (they cost formulas).
    ``explain``: with ``keep_outcomes``, each outcome also says why (:func:`nablafol.explain`, that
    many objects per step and facts); 0: not asked.

    A chunk's batches are planned one ahead in a background thread (the perception's oracle for
    the batch's images, on its device, and the engine's plan) while the current batch runs and
    its answers are read: the same answers, in the same order, with the host's work out of the
    device's way (``overlap=False``: each batch planned in turn; ``explain`` also reads the
    perception, so it plans in turn too).
    """

    def __init__(self, perception: Perception, compiler: Optional[Compiler] = None, engine: Optional[Engine] = None,
                 batch_size: int = 1024, threshold: float = 0.5, keep_outcomes: bool = False, details_top: int = 10,
                 explain: int = 0, overlap: bool = True):
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        self.perception = perception
        self.compiler = compiler or Compiler(perception.ontology, knowledge_relations=perception.knowledge_relations,
                                             cache_size=CACHED_PROGRAMS)
        self.engine = engine or Engine(calibration=perception.calibrator)
        self.batch_size, self.threshold = batch_size, threshold
        self.keep_outcomes, self.details_top, self.explain = keep_outcomes, details_top, explain
        self.overlap = overlap
        self._planning = threading.Lock()  # the engine's plans and their cache, from either thread
        self._known: set[Predicate] = set()  # predicates the perception was asked about and knows
        self._unknown: set[Predicate] = set()  # ... and does not know
        # per answerer (another perception may know other predicates); caching rule 2
        self._first_unknown_of = bounded_cache(self._first_unknown, CACHED_PROGRAMS)

    def answer_chunk(self, questions: Sequence, progress: Optional[Callable[[int], None]] = None) -> list[Outcome | Skip]:
        """One :class:`Outcome` or :class:`Skip` per question, in the order given. Batches are
        grouped by image within the chunk; ``progress(n)`` hears of each batch's ``n`` questions.
        Outcomes carry answers, grounding and formula only when ``keep_outcomes``."""
        results: list = [None] * len(questions)
        ready = []
        for position, question in enumerate(questions):
            prepared = self._prepare(question)
            if isinstance(prepared, Skip):
                results[position] = prepared
            else:
                ready.append((position, prepared))
        ready.sort(key=lambda pc: self._batch_order(pc[1]))
        batches = [[qc for _, qc in ready[start:start + self.batch_size]]
                   for start in range(0, len(ready), self.batch_size)]
        with self._planned_ahead(batches) as planned:
            for k, batch in enumerate(batches):
                for (position, _), outcome in zip(ready[k * self.batch_size:], self._answer(batch, planned(k))):
                    results[position] = outcome
                if progress is not None:
                    progress(len(batch))
        return results

    @contextmanager
    def _planned_ahead(self, batches: list):
        """Inside: ``planned(k)``, batch ``k``'s :meth:`_planned`, read one batch ahead in a
        background thread (:class:`~nablafol.pipeline.prefetch.Prefetch`) when overlapping."""
        if not self.overlap or self.explain or len(batches) < 2:
            yield lambda k: self._planned(batches[k])
            return
        from nablafol.pipeline.prefetch import Prefetch
        with Prefetch(lambda k: self._planned(batches[k]), range(len(batches))) as ahead:
            yield ahead.take

    def _planned(self, batch) -> tuple:
        """A batch's host-side work: its images' oracle (on the perception's device), each
        question's scene in it, and the engine's plan."""
        images = sorted({q.image_id for q, _ in batch})
        index = {image: b for b, image in enumerate(images)}
        oracle = self.perception.oracle(images)
        scenes = np.array([index[q.image_id] for q, _ in batch], dtype=np.int64)
        with self._planning:
            plan = self.engine.plan_for([c.program for _, c in batch], oracle, scenes)
        return oracle, scenes, plan

    def _batch_order(self, prepared: tuple) -> tuple:
        """Questions are batched in order of (objects in the image, image): a batch pads every
        scene to its largest, so one crowded image among small ones would cost the whole batch
        its size squared (relations); an image's questions stay together."""
        image_id = prepared[0].image_id
        return self.perception.object_count(image_id) or 0, image_id

    def _prepare(self, question) -> tuple | Skip:
        """``(question, compiled)`` when it can be answered, else why not."""
        compiled = compile_question(question, self.compiler)
        if isinstance(compiled, Skip):
            return compiled
        if not self.perception.has_image(question.image_id):
            return Skip(question.id, "no scene", f"no scene for image {question.image_id!r}")
        unknown = self._unknown_predicate(compiled)
        if unknown is not None:
            return Skip(question.id, *self.perception.refusal(unknown))
        return question, compiled

    def _unknown_predicate(self, compiled: CompiledQuestion) -> Predicate | None:
        return self._first_unknown_of(compiled.program)

    def _first_unknown(self, program) -> Predicate | None:
        predicates = program.predicates()
        # set operations in C: an open question lists up to 1,232 predicates, nearly all known
        if self._known.issuperset(predicates):  # the usual case, without making a set
            return None
        new = set(predicates).difference(self._known)
        for p in new.difference(self._unknown):
            (self._known if self.perception.knows(p) else self._unknown).add(p)
        if new.isdisjoint(self._unknown):
            return None
        return next(p for p in predicates if p in self._unknown)  # the first, in program order

    def _answer(self, batch, planned: tuple) -> Iterator[Outcome]:
        oracle, scenes, plan = planned
        # exact mode reads the engine's plan cache as it runs: not while the next batch is planned
        with torch.no_grad(), (self._planning if self.engine.exact else nullcontext()):
            answers = self.engine([c.program for _, c in batch], oracle, scenes, plan=plan)
        guessed = answers.guessed()
        # per question: the answers its outcome is read from, its row there, its program, whether widened
        rows = [(answers, k, compiled, False) for k, (_, compiled) in enumerate(batch)]
        self._fall_back(batch, rows, guessed, oracle, scenes)
        distinct = list({id(r[0]): r[0] for r in rows}.values())  # the batch's answers, and the widened ones
        reads = {id(a): (a.predictions(self.threshold), guessed if a is answers else a.guessed()) for a in distinct}
        if not self.keep_outcomes:
            for (q, _), (a, k, _, widened) in zip(batch, rows):
                predictions, guesses = reads[id(a)]
                yield Outcome(q.id, predictions[k], {}, (), guessed=guesses[k], fallback=widened)
            return
        with self._planning:  # the exactness flags are found with the engine's plan cache
            exact_flags = {id(a): a.exact.tolist() for a in distinct}
        kept = {id(a): (a.probs().cpu(), exact_flags[id(a)],
                        a.focus.exp().masked_fill(~a.object_mask, 0.0).cpu().numpy(),
                        None if a.bounds is None else tuple(b.cpu() for b in a.bounds)) for a in distinct}
        for (q, _), (a, k, compiled, widened), scene in zip(batch, rows, scenes):
            predictions, guesses = reads[id(a)]
            probs, exact, attention, bounds = kept[id(a)]
            row = probs[k]
            interval = None
            if compiled.is_binary:
                dist = {"yes": float(row[0]), "no": float(1.0 - row[0])}
                if bounds is not None:
                    low, high = float(bounds[0][k, 0]), float(bounds[1][k, 0])
                    interval = {"yes": [low, high], "no": [1.0 - high, 1.0 - low]}
            else:
                n = compiled.program.n_candidates
                order = torch.argsort(row[:n], descending=True, stable=True)  # ties: the predicted one first
                if self.details_top:
                    order = order[: self.details_top]
                dist = {compiled.answers[i]: float(row[i]) for i in order.tolist()}
                if bounds is not None:
                    interval = {compiled.answers[i]: [float(bounds[0][k, i]), float(bounds[1][k, i])]
                                for i in order.tolist()}
            names = oracle.object_ids(int(scene))
            grounding = tuple(names[i] for i in np.nonzero(attention[k] >= 0.5)[0])
            att = {names[i]: round(float(attention[k, i]), 6) for i in range(min(len(names), attention.shape[1]))}
            yield Outcome(q.id, predictions[k], dist, grounding, compiled.formula(), att, exact[k], guesses[k],
                          widened, self._explanation(q, compiled) if self.explain else None, interval)

    def _explanation(self, question, compiled: CompiledQuestion) -> dict:
        """Why the program answered (the widened one, when that answered) on the question's scene
        alone: the same numbers as :func:`nablafol.explain` called on that question directly."""
        from nablafol.explain import explain
        oracle = self.perception.oracle([question.image_id])
        return explain(self.engine, compiled.program, oracle, 0, k=self.explain, facts=self.explain).to_dict()

    def _fall_back(self, batch, rows: list, guessed: list, oracle, scenes) -> None:
        """Answer again, widened (``Compiler.widened``), the open questions whose every candidate
        had probability 0; a widened answer with evidence replaces the guess in ``rows``."""
        again = []
        for k, ((_, compiled), guess) in enumerate(zip(batch, guessed)):
            if guess:
                widened = self.compiler.widened(compiled)
                if widened is not None and self._unknown_predicate(widened) is None:
                    again.append((k, widened))
        if not again:
            return
        with torch.no_grad(), self._planning:
            answers = self.engine([w.program for _, w in again], oracle, scenes[[k for k, _ in again]])
        for j, ((k, widened), guess) in enumerate(zip(again, answers.guessed())):
            if not guess:
                rows[k] = (answers, j, widened, True)
