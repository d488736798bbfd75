"""Training from answers alone, through the reasoning, learns: on a small generated set the
validation accuracy ends well above the majority answer, within a test-sized budget."""
import collections

import pytest
import torch

from nablafol.compiler import Compiler
from nablafol.dsl import Ontology
from nablafol.data import FeatureStore, load_questions
from nablafol.pipeline.perception import FeaturePerception
from nablafol.neural import ConceptVocabulary, NeuralOracleModel
from nablafol.synthetic import generate_dataset
from nablafol.pipeline.oracle_training import Trainer, TrainConfig, prepare_examples


@pytest.mark.slow
def test_training_beats_the_majority_answer_by_far(tmp_path):
    # 200 scenes, 4 epochs: the margins of 400 scenes and 5 epochs (above the majority by far, last
    # epoch above the first, loss falling) at half the training
    generate_dataset(tmp_path / "data", n_train=200, n_val=60, n_testdev=2, seed=5, feature_dim=32)
    data = tmp_path / "data"
    onto = Ontology.from_folder(data / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=32, hidden_dim=128,
                                             embedding_dim=64, projection_dim=64, pair_hidden_dim=64)
    perception = FeaturePerception(FeatureStore(data / "features"), model, onto)
    compiler = Compiler(onto)
    train = load_questions(data / "train_balanced_questions.json")
    examples, skips = prepare_examples(train.values(), compiler, perception.has_image)
    assert not skips
    val = list(load_questions(data / "val_balanced_questions.json").values())
    majority = collections.Counter(q.answer for q in train.values()).most_common(1)[0][0]
    majority_accuracy = sum(q.answer == majority for q in val) / len(val)
    trainer = Trainer(model, perception, examples, tmp_path / "model", TrainConfig(epochs=4, batch_size=32, lr=3e-3),
                      compiler=compiler, val_perception=perception, val_questions=val, ontology=onto,
                      log=lambda *_: None)
    history = trainer.train()
    accuracies = [h["val_accuracy"] for h in history]
    assert accuracies[-1] >= majority_accuracy + 0.15, (majority_accuracy, accuracies)
    assert accuracies[-1] > accuracies[0]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
