"""The top-down calibrator: identity at start, trainable, stored beside the oracle."""
import torch

from nablafol.pipeline.calibration_training import CalibrationTrainer
from nablafol.calibration import TopDownCalibrator, has_calibrator, load_calibrator, save_calibrator
from nablafol.compiler import Compiler
from nablafol.dsl import Ontology
from nablafol.data import FeatureStore, load_questions
from nablafol.engine import Engine
from nablafol.pipeline.perception import FeaturePerception
from nablafol.neural import ConceptVocabulary, NeuralOracleModel
from nablafol.synthetic import generate_dataset
from nablafol.pipeline.oracle_training import TrainConfig, prepare_examples


def _setup(tmp_path):
    generate_dataset(tmp_path / "d", n_train=20, n_val=5, n_testdev=2, seed=2, feature_dim=16, questions_per_scene=6)
    onto = Ontology.from_folder(tmp_path / "d" / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=16,
                                             embedding_dim=8, projection_dim=8, pair_hidden_dim=8).eval()
    perception = FeaturePerception(FeatureStore(tmp_path / "d" / "features"), model, onto)
    compiler = Compiler(onto)
    examples, _ = prepare_examples(load_questions(tmp_path / "d" / "train_balanced_questions.json").values(),
                                   compiler, perception.has_image)
    return onto, model, perception, compiler, examples


def _answers(engine, perception, examples):
    images = sorted({e.image_id for e in examples})
    oracle = perception.oracle(images)
    scenes = [images.index(e.image_id) for e in examples]
    return engine([e.compiled.program for e in examples], oracle, scenes)


def test_a_fresh_calibrator_is_the_identity_and_gradients_reach_it(tmp_path):
    _, _, perception, _, examples = _setup(tmp_path)
    batch = examples[:20]
    calibrator = TopDownCalibrator.for_programs([e.compiled.program for e in examples])
    with torch.no_grad():
        plain = _answers(Engine(), perception, batch).log_probs
    calibrated = _answers(Engine(calibration=calibrator), perception, batch).log_probs
    assert torch.allclose(plain.exp(), calibrated.exp(), atol=1e-6)
    calibrated.exp().nan_to_num().sum().backward()
    assert calibrator.head[-1].weight.grad is not None and calibrator.head[-1].weight.grad.abs().sum() > 0


def test_calibration_training_moves_only_the_calibrator_and_round_trips(tmp_path):
    onto, model, perception, compiler, examples = _setup(tmp_path)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    calibrator = TopDownCalibrator.for_programs([e.compiled.program for e in examples])
    start = {k: v.clone() for k, v in calibrator.state_dict().items()}
    out = tmp_path / "model"
    trainer = CalibrationTrainer(model, calibrator, perception, examples, out, TrainConfig(epochs=2, lr=1e-2),
                                 compiler=compiler, ontology=onto, log=lambda *_: None)
    trainer.train()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # the oracle is frozen
    assert any(not torch.equal(start[k], v) for k, v in calibrator.state_dict().items())
    assert has_calibrator(out) and (out / "calibrator_metrics.jsonl").exists()
    loaded = load_calibrator(out)
    batch = examples[:10]
    with torch.no_grad():
        a = _answers(Engine(calibration=calibrator.eval()), perception, batch).log_probs
        b = _answers(Engine(calibration=loaded), perception, batch).log_probs
    assert torch.equal(a, b)


def test_missing_or_bad_calibrator_files_are_one_line_errors(tmp_path):
    import pytest

    from nablafol.errors import InputFileError
    (tmp_path / "calibrator.json").write_text("{not json")
    with pytest.raises(InputFileError, match="calibrator.json: not a calibrator"):
        load_calibrator(tmp_path)
    save_calibrator(tmp_path, TopDownCalibrator(["attr:red"]))
    assert load_calibrator(tmp_path).tokens == ["<unknown>", "attr:red"]


def test_a_program_met_again_is_read_from_what_was_kept_with_the_same_parameters(tmp_path, monkeypatch):
    from nablafol.calibration import calibrator as module
    _, _, _, _, examples = _setup(tmp_path)
    programs = [e.compiled.program for e in examples[:12]]
    calibrator = TopDownCalibrator.for_programs(programs)
    first, offsets = calibrator.raw_parameters(programs)
    built = []
    original = module.ProgramPlan.of
    monkeypatch.setattr(module.ProgramPlan, "of", lambda p: built.append(p) or original(p))
    again, offsets_again = calibrator.raw_parameters(programs)
    assert not built  # the plans were built once, when the vocabulary was read
    assert torch.equal(first, again) and torch.equal(offsets, offsets_again)
    fresh = TopDownCalibrator(calibrator.tokens[1:])
    fresh.load_state_dict(calibrator.state_dict())
    assert torch.equal(fresh.raw_parameters(programs)[0], first)  # a new calibrator reads the same sequences
