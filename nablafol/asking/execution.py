"""Where the parser's programs meet the pipeline: perceptions built from files, and questions
answered in one chunk. Everything in :mod:`nablafol.asking` answers through this module, so
it is the one place that names the pipeline's classes.

    >>> from nablafol.data import Question
    >>> perception = golden_perception("tests/fixtures/gqa/val_sceneGraphs.json")
    >>> question = Question("q", "2354786", semantic_str="select: scene->query: location [0]")
    >>> [type(result).__name__ for result in answer_questions(perception, [question])]
    ['Outcome']
"""
from __future__ import annotations

from typing import Sequence

from nablafol.pipeline import model_folder
from nablafol.pipeline.answering import Answerer, Outcome, Skip, compile_question
from nablafol.pipeline.perception import FeaturePerception, SceneGraphPerception

__all__ = ["golden_perception", "feature_perception", "answer_questions", "explain_question", "Outcome", "Skip",
           "compile_question"]


def golden_perception(scene_graphs, ontology=None) -> SceneGraphPerception:
    """The golden oracle over a scene-graphs file (or a loaded ``{imageId: SceneGraph}`` mapping);
    ``ontology``: a :class:`nablafol.dsl.Ontology` (default GQA's)."""
    from collections.abc import Mapping
    from nablafol.data import load_scene_graphs
    graphs = scene_graphs if isinstance(scene_graphs, Mapping) else load_scene_graphs(scene_graphs)
    return SceneGraphPerception(graphs, ontology=ontology)


def feature_perception(features, model, device=None) -> FeaturePerception:
    """A trained oracle (model folder, with its calibrator if it has one) over a features folder."""
    return model_folder.feature_perception(features, model, device=device)


def answer_questions(perception, questions: Sequence, *, keep_outcomes: bool = False,
                     details_top: int = 10, bounds_budget: int | None = None) -> list:
    """One :class:`Outcome` or :class:`Skip` per question, in order (outcomes carry answers,
    grounding, formula and attention when ``keep_outcomes``; the perception's calibrator, if any,
    calibrates the engine). ``bounds_budget``: outcomes also carry sound bounds, conditioning on
    that many shared atoms (not with a calibrator: its answers are not the formula's probabilities)."""
    engine = None
    if bounds_budget is not None and perception.calibrator is None:
        from nablafol.engine import Engine
        engine = Engine(bounds=True, exact_budget=bounds_budget)
    answerer = Answerer(perception, engine=engine, keep_outcomes=keep_outcomes, details_top=details_top)
    return answerer.answer_chunk(list(questions))


def explain_question(perception, question, *, k: int = 3, facts: int = 5):
    """Why the question's program answers as it does over its image (:func:`nablafol.explain`, facts
    left out one by one), by the engine and compiler the answering loop uses; None when the
    question cannot be answered (its :class:`Skip` says why)."""
    from nablafol.explain import explain
    answerer = Answerer(perception)
    compiled = compile_question(question, answerer.compiler)
    if isinstance(compiled, Skip):
        return None
    return explain(answerer.engine, compiled.program, perception.oracle([question.image_id]), 0, k=k, facts=facts)
