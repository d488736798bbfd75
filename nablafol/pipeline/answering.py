"""Answering GQA questions in batches: compile, group by image, ask an oracle, run the engine.

The same runner serves the golden oracle (scene graphs) and trained oracles (features):
a :class:`Perception` turns a list of image ids into an oracle for them. Questions that
cannot be answered are never dropped: each becomes a :class:`Skip` with a reason.

    >>> from nablafol.data import load_questions, load_scene_graphs
    >>> questions = load_questions("tests/fixtures/gqa/val_balanced_questions.json")
    >>> perception = SceneGraphPerception(load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json"))
    >>> run = Evaluator(perception).run(questions.values())
    >>> len(run.predictions) + len(run.skips) == len(questions)
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Optional, Protocol, Sequence

import numpy as np
import torch

from nablafol import dsl
from nablafol.compiler import CompileError, CompiledQuestion, Compiler

from nablafol.caching import bounded_cache
from nablafol.engine import Engine
from nablafol.ir import Predicate

#: Compiled programs a run keeps (with their plans and checks), the most recently used: a
#: streaming run over a million questions must not hold every program it met.
CACHED_PROGRAMS = 1 << 14

__all__ = ["Skip", "Outcome", "Perception", "SceneGraphPerception", "FeaturePerception", "Evaluator", "EvaluationRun", "compile_question"]


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


class Perception(Protocol):
    """Where oracles come from: one per batch of images."""

    def has_image(self, image_id: str) -> bool: ...

    def oracle(self, image_ids: Sequence[str]):
        """An oracle over these images (scene ``b`` = ``image_ids[b]``) with ``object_ids(b)``."""

    def knows(self, predicate: Predicate) -> bool: ...


class SceneGraphPerception:
    """The golden oracle over GQA scene graphs (plain or probabilistic), and optionally a
    knowledge base (CRIC-style facts about classes) composed with it."""

    def __init__(self, scene_graphs: Mapping, ontology: Optional[dsl.Ontology] = None, device=None,
                 knowledge=None):
        from nablafol import graph_oracles as oracles  # the GQA oracles live beside, not under, the engine
        self.scene_graphs, self.ontology, self.device, self.knowledge = scene_graphs, ontology, device, knowledge
        self._oracles = oracles
        probes = [oracles.SceneGraphOracle([], ontology=ontology)]  # answer `knows` without a scene
        if knowledge is not None:
            probes.append(oracles.KnowledgeOracle(knowledge, [], ontology=ontology))
        self._probes = probes

    @property
    def knowledge_relations(self) -> frozenset:
        return self.knowledge.relations if self.knowledge is not None else frozenset()

    def has_image(self, image_id: str) -> bool:
        return image_id in self.scene_graphs

    def object_count(self, image_id: str) -> int:
        count = getattr(self.scene_graphs, "object_count", None)  # SceneGraphTexts: without reading the scene
        return count(image_id) if count is not None else len(self.scene_graphs[image_id].objects)

    def knows(self, predicate: Predicate) -> bool:
        return any(p.knows(predicate) for p in self._probes)

    def oracle(self, image_ids: Sequence[str]):
        graphs = [self.scene_graphs[i] for i in image_ids]
        scene_oracle = self._oracles.SceneGraphOracle(graphs, ontology=self.ontology, device=self.device)
        if self.knowledge is None:
            return scene_oracle
        kg = self._oracles.KnowledgeOracle.from_scene_graphs(graphs, self.knowledge, ontology=self.ontology,
                                                             device=self.device)
        return _NamedObjects(self._oracles.CompositeOracle([scene_oracle, kg]), scene_oracle.object_ids)


class FeaturePerception:
    """A trained neural oracle over GQA object features (``FeatureStore``).

    Objects are reported by their row in the image's feature file (``"0"``, ``"1"``, ...;
    GQA's features carry no object ids), the scene pseudo-object as ``"scene"``.
    """

    def __init__(self, store, model, ontology: Optional[dsl.Ontology] = None, device=None, calibrator=None):
        self.store, self.model, self.device = store, model, device
        self.vocabulary = model.vocabulary
        self.ontology = ontology
        self.calibrator = calibrator  # a top-down calibrator found beside the model, if any

    @classmethod
    def load(cls, features_folder, model_folder, device=None) -> "FeaturePerception":
        """From a features folder and a model folder written by ``nablafol train``."""
        from nablafol.data import FeatureStore
        from nablafol.neural import load_model
        model, _, extra = load_model(model_folder, device=device)
        ontology = dsl.Ontology.from_data(**extra["ontology"]) if "ontology" in extra else None
        calibrator = None
        from nablafol.calibration import has_calibrator, load_calibrator  # a sibling package, used only if present
        if has_calibrator(model_folder):
            calibrator = load_calibrator(model_folder, device=device)
        store = FeatureStore(features_folder, expected_width=model.config.feature_dim)  # refusals name the file
        return cls(store, model, ontology, device, calibrator)

    def has_image(self, image_id: str) -> bool:
        return image_id in self.store

    def object_count(self, image_id: str) -> int:
        return self.store.object_count(image_id)

    def before_fork(self) -> None:
        """Close the HDF5 files (reopened on demand): an open HDF5 file must not cross a fork."""
        self.store.close()

    def knows(self, predicate: Predicate) -> bool:
        return self.vocabulary.knows(predicate)

    def oracle(self, image_ids: Sequence[str]):
        from nablafol.neural import FeatureBatch
        batch = FeatureBatch.from_store(self.store, list(image_ids), device=self.device)
        counts = batch.counts.tolist()
        return _NamedObjects(self.model.bind(batch),
                             lambda b: tuple(str(i) for i in range(counts[b])) + ("scene",))


class _NamedObjects:
    """An oracle that also names its objects (``object_ids(b)``), for grounding."""

    def __init__(self, oracle, object_ids):
        self._oracle, self.object_ids = oracle, object_ids

    def __getattr__(self, name):
        return getattr(self._oracle, name)


def compile_question(question, compiler: Compiler) -> CompiledQuestion | Skip:
    """The question's program (``semantic`` first, else ``semanticStr``), compiled, or why not."""
    source = question.program_source()
    if source is None:
        return Skip(question.id, "no program", "the question has neither 'semantic' nor 'semanticStr'")
    try:
        if source.field == "semantic":
            return compiler.compile_semantic(source.value)
        return compiler.compile_text(source.value)
    except dsl.ProgramError as e:
        return Skip(question.id, "malformed program", f"{source.field}: {str(e).splitlines()[0]}")
    except CompileError as e:
        return Skip(question.id, e.reason, str(e))


@dataclass
class EvaluationRun:
    """What a run produced: predictions, skipped questions, and (optionally) per-question outcomes."""

    predictions: dict = field(default_factory=dict)
    skips: list = field(default_factory=list)
    outcomes: list = field(default_factory=list)

    def skip_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.skips:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


class Evaluator:
    """Answers questions with an engine over a perception, ``batch_size`` questions at a time.

    Questions are grouped by image so that a batch asks its oracle about few scenes, and
    images by size so that a batch pads few objects.
    ``details_top``: how many candidates of an open question an :class:`Outcome` keeps
    (0: all); outcomes are produced only when ``keep_outcomes`` (they cost formulas).
    """

    def __init__(self, perception: Perception, compiler: Optional[Compiler] = None, engine: Optional[Engine] = None,
                 batch_size: int = 1024, threshold: float = 0.5, keep_outcomes: bool = False, details_top: int = 10,
                 progress: Optional[Callable[[int, int], None]] = None):
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        self.perception = perception
        self.compiler = compiler or Compiler(getattr(perception, "ontology", None),
                                             knowledge_relations=getattr(perception, "knowledge_relations", ()))
        self.engine = engine or Engine()
        self.batch_size, self.threshold = batch_size, threshold
        self.keep_outcomes, self.details_top = keep_outcomes, details_top
        self.progress = progress
        self._known: set[Predicate] = set()  # predicates the perception was asked about and knows
        self._unknown: set[Predicate] = set()  # ... and does not know
        # per answerer (another perception may know other predicates); caching rule 2
        self._first_unknown_of = bounded_cache(self._first_unknown, CACHED_PROGRAMS)

    def run(self, questions: Iterable) -> EvaluationRun:
        """Answer all the questions at once (grouped by image over the whole set)."""
        run = EvaluationRun()
        ready = []
        for question in questions:
            prepared = self._prepare(question)
            if isinstance(prepared, Skip):
                run.skips.append(prepared)
            else:
                ready.append(prepared)
        ready.sort(key=self._batch_order)
        total, done = len(ready), 0
        for start in range(0, total, self.batch_size):
            batch = ready[start:start + self.batch_size]
            for outcome in self._answer(batch):
                run.predictions[outcome.question_id] = outcome.prediction
                if self.keep_outcomes:
                    run.outcomes.append(outcome)
            done += len(batch)
            if self.progress is not None:
                self.progress(done, total)
        return run

    def answer_chunk(self, questions: Sequence) -> list[Outcome | Skip]:
        """One :class:`Outcome` or :class:`Skip` per question, in the order given (for streaming:
        batches are grouped by image within the chunk only). Outcomes carry answers, grounding
        and formula only when ``keep_outcomes``."""
        results: list = [None] * len(questions)
        ready = []
        for position, question in enumerate(questions):
            prepared = self._prepare(question)
            if isinstance(prepared, Skip):
                results[position] = prepared
            else:
                ready.append((position, prepared))
        ready.sort(key=lambda pc: self._batch_order(pc[1]))
        for start in range(0, len(ready), self.batch_size):
            batch = ready[start:start + self.batch_size]
            for (position, _), outcome in zip(batch, self._answer([qc for _, qc in batch])):
                results[position] = outcome
        return results

    def _batch_order(self, prepared: tuple) -> tuple:
        """Questions are batched in order of (objects in the image, image): a batch pads every
        scene to its largest, so one crowded image among small ones would cost the whole batch
        its size squared (relations); an image's questions stay together."""
        image_id = prepared[0].image_id
        count = getattr(self.perception, "object_count", None)  # a perception may not know
        return (count(image_id) if count is not None else 0), image_id

    def _prepare(self, question) -> tuple | Skip:
        """``(question, compiled)`` when it can be answered, else why not."""
        compiled = compile_question(question, self.compiler)
        if isinstance(compiled, Skip):
            return compiled
        if not self.perception.has_image(question.image_id):
            return Skip(question.id, "no scene", f"no scene for image {question.image_id!r}")
        unknown = self._unknown_predicate(compiled)
        if unknown is not None:
            return Skip(question.id, "unknown predicate", f"the oracle does not know {unknown.kind} {unknown.name!r}")
        return question, compiled

    def _unknown_predicate(self, compiled: CompiledQuestion) -> Predicate | None:
        return self._first_unknown_of(compiled.program)

    def _first_unknown(self, program) -> Predicate | None:
        predicates = program.predicates()
        # set operations in C: an open question lists up to 1,232 predicates, nearly all known
        new = set(predicates).difference(self._known)
        if not new:
            return None
        for p in new.difference(self._unknown):
            (self._known if self.perception.knows(p) else self._unknown).add(p)
        if new.isdisjoint(self._unknown):
            return None
        return next(p for p in predicates if p in self._unknown)  # the first, in program order

    def _answer(self, batch) -> Iterator[Outcome]:
        images = sorted({q.image_id for q, _ in batch})
        index = {image: b for b, image in enumerate(images)}
        oracle = self.perception.oracle(images)
        scenes = np.array([index[q.image_id] for q, _ in batch], dtype=np.int64)
        with torch.no_grad():
            answers = self.engine([c.program for _, c in batch], oracle, scenes)
        predictions = answers.predictions(self.threshold)
        if not self.keep_outcomes:
            for (q, _), prediction in zip(batch, predictions):
                yield Outcome(q.id, prediction, {}, ())
            return
        probs = answers.probs().cpu()
        attention = answers.focus.exp().masked_fill(~answers.object_mask, 0.0).cpu().numpy()
        focus = attention >= 0.5
        for k, ((q, compiled), prediction) in enumerate(zip(batch, predictions)):
            row = probs[k]
            if compiled.is_binary:
                dist = {"yes": float(row[0]), "no": float(1.0 - row[0])}
            else:
                n = compiled.program.n_candidates
                order = torch.argsort(row[:n], descending=True, stable=True)  # ties: the predicted one first
                if self.details_top:
                    order = order[: self.details_top]
                dist = {compiled.answers[i]: float(row[i]) for i in order.tolist()}
            ids = oracle.object_ids(int(scenes[k])) if hasattr(oracle, "object_ids") else None
            names = ids if ids is not None else tuple(str(i) for i in range(attention.shape[1]))
            grounding = tuple(names[i] for i in np.nonzero(focus[k])[0])
            att = {names[i]: round(float(attention[k, i]), 6) for i in range(min(len(names), attention.shape[1]))}
            yield Outcome(q.id, prediction, dist, grounding, compiled.formula(), att)
