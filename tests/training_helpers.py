"""What the tests of the training loop share: a tiny trainer (oracle sizes of a few units) over a
dataset ``generate_dataset`` wrote. It lives at the top of ``tests/`` (on the path of every test
module, and of the children the reliability tests fork) so that the pipeline's and the
reliability's tests build the same trainer."""
from __future__ import annotations

import torch

from nablafol.compiler import Compiler
from nablafol.data import FeatureStore, load_questions
from nablafol.dsl import Ontology
from nablafol.neural import ConceptVocabulary, NeuralOracleModel
from nablafol.pipeline.oracle_training import Trainer, TrainConfig, prepare_examples
from nablafol.pipeline.perception import FeaturePerception


def tiny_trainer(data, out, epochs, seed=0, *, batch_size=16, callbacks=(), **config):
    """A trainer of a tiny oracle on ``data``'s train split, validated on its val split, writing to
    ``out``; ``config`` adds TrainConfig fields (checkpointing), ``callbacks`` the trainer's."""
    onto = Ontology.from_folder(data / "ontology")
    torch.manual_seed(seed)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=16,
                                             embedding_dim=8, projection_dim=8, pair_hidden_dim=8)
    perception = FeaturePerception(FeatureStore(data / "features"), model, onto)
    compiler = Compiler(onto)
    examples, skips = prepare_examples(load_questions(data / "train_balanced_questions.json").values(), compiler,
                                       perception.has_image)
    assert skips == [] and examples
    val = list(load_questions(data / "val_balanced_questions.json").values())
    train_config = TrainConfig(epochs=epochs, batch_size=batch_size, lr=1e-2, seed=seed, **config)
    return Trainer(model, perception, examples, out, train_config, compiler=compiler, val_perception=perception,
                   val_questions=val, ontology=onto, log=lambda *_: None, callbacks=callbacks)
