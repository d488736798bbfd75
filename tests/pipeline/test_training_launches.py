"""The kernel launches of a training step do not grow with its batch's number of distinct programs:
the engine runs one group of rows per (level, operator kind), whatever programs the rows come from.
Counted with ``torch.profiler`` on the CPU (aten calls made from Python and autograd), never timed."""
import numpy as np
import pytest

from nablafol.testing import aten_calls
from training_helpers import tiny_trainer

#: aten calls of a step on a batch of many distinct programs, at most this many times those of a
#: step on a batch of few: 1.20x when the bound was first set (1,137 against 945 calls, 96 against 8
#: distinct programs, 16 against 10 engine groups), 1.15x with rows waiting to run beside their
#: kind (1,082 against 938; 14 against 10 groups); launches made per program would grow as the
#: distinct programs do (12x here)
LAUNCH_GROWTH = 1.3
SMALL, LARGE = 8, 96


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    data = tmp_path_factory.mktemp("launches")
    generate_dataset(data, n_train=40, n_val=2, n_testdev=2, seed=3, feature_dim=16, questions_per_scene=6,
                     min_objects=6, max_objects=6)
    trainer = tiny_trainer(data, data / "model", epochs=1)  # its steps are taken on the batches below
    trainer.trainable.train()
    return trainer, trainer.examples


def _batches(examples) -> tuple[list, list]:
    rng = np.random.default_rng(0)
    order = rng.permutation(len(examples))
    return [examples[i] for i in order[:SMALL]], [examples[i] for i in order[:LARGE]]


def _programs(batch) -> int:
    return len({id(e.compiled.program) for e in batch})


def _calls(trainer, batch) -> int:
    trainer._step(batch)  # warm: plans kept, as at every step after an epoch's first
    return aten_calls(lambda: trainer._step(batch))[0]


def test_a_steps_launches_do_not_grow_with_its_distinct_programs(trainer):
    trainer, examples = trainer
    small, large = _batches(examples)
    assert _programs(large) >= 4 * _programs(small)  # what the bound is about
    few, many = _calls(trainer, small), _calls(trainer, large)
    assert many <= LAUNCH_GROWTH * few, (few, many, _programs(small), _programs(large))


@pytest.mark.slow  # 32 steps under the profiler, for the counter itself; the bound above stays in the fast tier
def test_the_count_sees_launches_made_program_by_program(trainer):
    # the counter the bound rests on: a step that ran each program on its own would be refused
    trainer, examples = trainer
    small, large = _batches(examples)
    one_by_one, _ = aten_calls(lambda: [trainer._step([e]) for e in large[:4 * _programs(small)]])
    assert one_by_one > LAUNCH_GROWTH * _calls(trainer, small) * 2
