"""Compiled GQA programs run on the neural oracle as they do on scene graphs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from nablafol.compiler import CompileError, Compiler
from nablafol.data import FeatureStore, load_questions
from nablafol.engine import Engine, ProgramPlan
from nablafol.neural import ConceptVocabulary, FeatureBatch, NeuralOracleModel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
COMPILER = Compiler()
VOCABULARY = ConceptVocabulary.from_ontology(COMPILER.ontology)


def compiled_questions():
    """Every fixture question the compiler accepts (the compiler's own tests judge the rest)."""
    questions = list(load_questions(FIXTURES / "every_operation" / "questions.json").values())
    questions += list(load_questions(FIXTURES / "val_balanced_questions.json").values())
    out = []
    for question in questions:
        try:
            out.append((question, COMPILER.compile_semantic(list(question.semantic)).program))
        except CompileError:
            pass
    return out


COMPILED = compiled_questions()


def test_the_vocabulary_knows_every_predicate_the_compiler_emits():
    assert len(COMPILED) >= 40
    kinds = set()
    for question, program in COMPILED:
        plan = ProgramPlan.of(program)
        for predicate in plan.unary + plan.binary:
            kinds.add(predicate.kind)
            assert VOCABULARY.knows(predicate), (question.semantic_str, predicate)
    assert {"name", "class", "attr", "scene", "rel", "compare", "same", "hposition", "vposition"} <= kinds


def test_compiled_programs_run_on_the_fixture_features_with_gradients():
    with FeatureStore(FIXTURES / "features") as store:
        image_ids = store.image_ids()
        batch = FeatureBatch.from_store(store, image_ids)
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(VOCABULARY, batch.feature_dim, hidden_dim=32, embedding_dim=16,
                                             projection_dim=8, pair_hidden_dim=16)
    programs = [program for _, program in COMPILED]
    scenes = np.arange(len(programs)) % len(image_ids)
    answers = Engine()(programs, model.bind(batch), scenes)  # the engine validates every table
    probs = answers.probs()[answers.candidate_mask]
    assert torch.isfinite(probs).all() and (probs >= 0).all() and (probs <= 1).all()
    answers.log_probs[answers.candidate_mask].clamp(min=-30).sum().backward()
    assert model.encoder[0].weight.grad.abs().sum() > 0 and model.pair_hidden.weight.grad.abs().sum() > 0
    assert len(answers.predictions()) == len(programs)
