"""Features read ahead in a background thread: the same weights bit for bit, errors where they belong,
the thread stopped however the loop ends."""
import itertools
import json
import threading

import pytest
import torch
from hypothesis import given, strategies as st

from nablafol.compiler import Compiler
from nablafol.data import FeatureStore, load_questions
from nablafol.dsl import Ontology
from nablafol.errors import InputFileError
from nablafol.neural import ConceptVocabulary, NeuralOracleModel
from nablafol.pipeline.oracle_training import Trainer, TrainConfig, TrainingEvent, prepare_examples
from nablafol.pipeline.perception import FeaturePerception
from nablafol.pipeline.prefetch import Prefetch
from nablafol.testing.devices import devices

THREAD = "nablafol-prefetch"


def _prefetch_threads() -> list:
    return [t for t in threading.enumerate() if t.name == THREAD]


# --- Prefetch alone ------------------------------------------------------------------------------

@given(keys=st.lists(st.integers(), max_size=12), fail=st.none() | st.integers(0, 11), taken=st.integers(0, 12))
def test_prefetch_gives_every_result_in_order_or_the_readers_error_at_its_key(keys, fail, taken):
    failing = fail is not None and fail < len(keys)
    fails_at = keys.index(keys[fail]) if failing else None  # its first time

    def read(key):
        if failing and key == keys[fail]:
            raise InputFileError("features.h5", f"cannot read image {key}")
        return (key, key * 3)

    got = []
    with Prefetch(read, keys) as ahead:
        for position, key in enumerate(keys[:taken]):
            if position == fails_at:
                with pytest.raises(InputFileError) as raised:
                    ahead.take(key)
                assert str(raised.value) == f"features.h5: cannot read image {key}"
                break
            got.append(ahead.take(key))
    assert got == [(key, key * 3) for key in keys[:len(got)]]
    assert len(got) == min(taken, len(keys), fails_at if fails_at is not None else len(keys))
    assert not _prefetch_threads()


def test_prefetch_stops_reading_when_the_consumer_leaves_early():
    read = []
    with Prefetch(lambda key: read.append(key) or key, itertools.count()) as ahead:  # keys without end
        assert [ahead.take(k) for k in range(3)] == [0, 1, 2]
    assert not _prefetch_threads()
    assert read == list(range(len(read))) and len(read) <= 3 + 2  # at most the queue and one read beyond


def test_prefetch_refuses_a_key_out_of_order_and_past_the_end():
    with Prefetch(str, [1, 2]) as ahead:
        with pytest.raises(RuntimeError, match="prefetch: 2 asked where 1 comes next"):
            ahead.take(2)
    with Prefetch(str, [1]) as ahead:
        assert ahead.take(1) == "1"
        with pytest.raises(RuntimeError, match="asked after the last key"):
            ahead.take(2)
    with pytest.raises(RuntimeError, match="asked outside the with block"):
        Prefetch(str, [1]).take(1)
    with pytest.raises(ValueError, match="depth must be a whole number >= 1"):
        Prefetch(str, [], depth=0)


# --- in the training loop ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    out = tmp_path_factory.mktemp("prefetch")
    generate_dataset(out, n_train=24, n_val=4, n_testdev=2, seed=5, feature_dim=16, questions_per_scene=6)
    return out


class RecordingPerception(FeaturePerception):
    """A feature perception that notes which thread read each step's features, and can wait for
    (``hold``) or fail (``fail``) the read of a chosen step's images."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads, self.hold, self.fail = [], {}, {}

    def read(self, image_ids):
        position = len(self.reads)
        self.reads.append(threading.current_thread().name)
        if position in self.hold:
            assert self.hold[position].wait(60), "the step the read waited for never came"
        if position in self.fail:
            raise self.fail[position]
        return super().read(image_ids)


def _trainer(data, out, device="cpu", read_ahead=True, epochs=2, callbacks=()):
    onto = Ontology.from_folder(data / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=16,
                                             embedding_dim=8, projection_dim=8, pair_hidden_dim=8).to(device)
    perception = RecordingPerception(FeatureStore(data / "features"), model, onto, device=device)
    compiler = Compiler(onto)
    examples, _ = prepare_examples(load_questions(data / "train_balanced_questions.json").values(), compiler,
                                   perception.has_image)
    val = list(load_questions(data / "val_balanced_questions.json").values())
    trainer = Trainer(model, perception, examples, out, TrainConfig(epochs=epochs, batch_size=8, lr=1e-2),
                      compiler=compiler, val_perception=perception, val_questions=val, ontology=onto,
                      log=lambda *_: None, callbacks=callbacks)
    trainer.read_ahead = read_ahead
    return trainer


@pytest.mark.slow
@pytest.mark.parametrize("device", devices())
def test_reading_ahead_trains_the_same_weights_bit_for_bit(tiny_dataset, tmp_path, device):
    today = _trainer(tiny_dataset, tmp_path / "today", device, read_ahead=False)
    today.train()
    ahead = _trainer(tiny_dataset, tmp_path / "ahead", device)
    ahead.train()
    a, b = today.model.state_dict(), ahead.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    metrics = [[json.loads(line)["train_loss"] for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
               for run in ("today", "ahead")]
    assert metrics[0] == metrics[1] and len(metrics[0]) == 2
    # the same reads, the ones of training in the background thread
    assert set(today.train_perception.reads) == {threading.main_thread().name}
    assert len(ahead.train_perception.reads) == len(today.train_perception.reads)
    assert THREAD in ahead.train_perception.reads and not _prefetch_threads()


def test_an_error_of_the_reader_mid_epoch_stops_the_run_at_its_step(tiny_dataset, tmp_path):
    steps, second_step = [], threading.Event()

    def tell(event: TrainingEvent):
        if event.kind == "step":
            steps.append(event.batch)
            if event.batch == 2:
                second_step.set()
    trainer = _trainer(tiny_dataset, tmp_path / "m", epochs=1, callbacks=[tell])
    error = InputFileError(tiny_dataset / "features", "image 7: the features hold NaN")
    # the third step's read waits until the second step is taken (the reader is ahead of the
    # steps, not behind), then fails
    trainer.train_perception.hold[2] = second_step
    trainer.train_perception.fail[2] = error
    with pytest.raises(InputFileError) as raised:
        trainer.train()
    assert raised.value is error and str(raised.value).count("\n") == 0
    assert str(raised.value) == f"{tiny_dataset / 'features'}: image 7: the features hold NaN"
    assert steps == [1, 2]  # the steps before it ran, no step after it
    assert trainer.train_perception.reads == [THREAD] * 3  # nothing read after the error
    assert not _prefetch_threads() and trainer._ahead is None


def test_an_interrupted_run_stops_the_reader(tiny_dataset, tmp_path):
    def interrupt(event: TrainingEvent):
        if event.kind == "step" and event.batch == 1:
            raise KeyboardInterrupt
    trainer = _trainer(tiny_dataset, tmp_path / "m", epochs=1, callbacks=[interrupt])
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert not _prefetch_threads() and trainer._ahead is None
    assert THREAD in trainer.train_perception.reads
