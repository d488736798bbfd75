"""Training a visual oracle from answers alone, through the parameter-free DFOL reasoning.

The paper's Algorithm 1 turned into losses (section 6; dfol.md):

* a yes/no question: ``-log α(F)`` when the answer is yes, ``-log(1 - α(F))`` when no;
* an open question: ``-log softmax_a log α(F_a)`` at the right answer, over its plausible
  answers (the candidates the compiler lists).

Adam with the paper's settings (lr 1e-4, weight decay 1e-10, gradient clipping at norm
0.65; the model's dropout is 0.1), and a curriculum from short programs to long ones:
epoch ``e`` trains on the programs of at most ``start + e·step`` steps, every program from
then on. Each epoch ends with a validation pass and a checkpoint; ``resume`` continues from
the last checkpoint and gives the same result as an uninterrupted run (every epoch's order
and dropout come from ``seed`` and the epoch number).

Faults: a run may be killed at any moment. Besides the end of each epoch, a checkpoint is
taken every ``checkpoint_every`` batches and at least every ``checkpoint_seconds``; it holds
the weights, Adam's state, the position in the epoch's order, the running loss and the
dropout generator's state, so a resumed run continues mid-epoch bit-identically. Every file
is written through :func:`nablafol.data.files.atomic_writer` (a temporary name, flushed to
disk, renamed), so a kill never leaves a truncated checkpoint or metrics file that a later run
would load (docs/reliability.md). ``callbacks`` hear of each step, checkpoint and epoch
(:class:`TrainingEvent`): a user's logging, or a test that stops the run at a chosen step.

The loss sees only answers: gradients flow from them through the engine into the oracle.
"""
from __future__ import annotations

import json
import math
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import torch

from nablafol import dsl
from nablafol.compiler import CompiledQuestion, Compiler

from nablafol.calibration.storage import CONFIG_NAME as CALIBRATOR_CONFIG, PART as CALIBRATOR_PART
from nablafol.data.files import atomic_writer
from nablafol.engine import Answers, Engine
from nablafol.errors import InputFileError, NablafolError, OracleError
from nablafol.losses import answer_loss
from nablafol.neural.checkpoint import CONFIG_NAME as MODEL_CONFIG, MODEL_PART, tensor_file_names
from nablafol.neural.optimizer import adam
from nablafol.pipeline.answering import Answerer, Skip, compile_question
from nablafol.pipeline.datasets import DatasetFiles
from nablafol.pipeline.evaluation import answer_all, reason_counts
from nablafol.pipeline.perception import FeaturePerception
from nablafol.scoring import vocabulary_match

__all__ = ["TrainConfig", "TrainingExample", "TrainingEvent", "Curriculum", "answer_loss", "prepare_examples",
           "Trainer", "TrainingJob", "train_oracle"]

STATE_NAME = "training_state.pt"
METRICS_NAME = "metrics.jsonl"
CALIBRATOR_STATE_NAME = "calibrator_state.pt"  # CalibrationTrainer's checkpoint
# the files that make a folder hold a trained oracle (its tensors under either name), and a
# calibrator (its checkpoint too, which an interrupted calibration leaves alone)
MODEL_FILES = (MODEL_CONFIG, *tensor_file_names(MODEL_PART), STATE_NAME)
CALIBRATOR_FILES = (CALIBRATOR_CONFIG, *tensor_file_names(CALIBRATOR_PART), CALIBRATOR_STATE_NAME)


class DivergedError(NablafolError):
    """Training diverged: the loss or the weights are no longer finite numbers."""


def held_files(folder, names: Sequence[str]) -> list[str]:
    """Which of ``names`` exist in ``folder`` (none when it is not a folder)."""
    folder = Path(folder)
    return [name for name in names if (folder / name).exists()] if folder.is_dir() else []


def nothing_to_train_on(source, read: int, reasons: Counter) -> InputFileError:
    """The refusal of a run whose every question (``read`` of them) was skipped, ``reasons``
    counting why."""
    why = f", all skipped ({reason_counts(reasons)})" if reasons else ""
    return InputFileError(source, f"no question to train on: {read:,} read{why}")


@dataclass
class TrainConfig:
    """Training settings; the defaults are the paper's (section 6)."""

    epochs: int = 10
    batch_size: int = 64
    lr: float = 1e-4
    weight_decay: float = 1e-10
    clip_norm: float = 0.65
    seed: int = 0
    curriculum_start: int = 2  # steps of the shortest programs trained on first
    curriculum_step: int = 1  # steps added per epoch
    threshold: float = 0.5
    checkpoint_every: int = 0  # batches between mid-epoch checkpoints (0: none by count)
    checkpoint_seconds: float = 300.0  # a mid-epoch checkpoint at least this often (0: none by time)

    def __post_init__(self):
        for name in ("epochs", "batch_size", "curriculum_start", "curriculum_step"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"TrainConfig.{name} must be a whole number >= 1, got {value!r}")
        if not (isinstance(self.checkpoint_every, int) and self.checkpoint_every >= 0):
            raise ValueError(f"TrainConfig.checkpoint_every must be a whole number >= 0, got {self.checkpoint_every!r}")
        if not (isinstance(self.checkpoint_seconds, (int, float)) and math.isfinite(self.checkpoint_seconds)
                and self.checkpoint_seconds >= 0):
            raise ValueError(f"TrainConfig.checkpoint_seconds must be a number >= 0, got {self.checkpoint_seconds!r}")
        for name in ("lr", "clip_norm"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"TrainConfig.{name} must be a positive number, got {value!r}")
        if not (isinstance(self.weight_decay, (int, float)) and math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"TrainConfig.weight_decay must be a number >= 0, got {self.weight_decay!r}")
        if not (isinstance(self.threshold, (int, float)) and 0.0 <= self.threshold <= 1.0):
            raise ValueError(f"TrainConfig.threshold must be in [0, 1], got {self.threshold!r}")


@dataclass(frozen=True)
class TrainingExample:
    """A question ready to train on: its compiled program and the index of its answer."""

    question_id: str
    image_id: str
    compiled: CompiledQuestion
    target: int  # open: index of the right candidate; yes/no: 0 for yes, 1 for no
    length: int  # program steps (the curriculum's measure)


def answer_target(compiled: CompiledQuestion, answer: str) -> int | None:
    """The answer's index among the question's answers (``yes`` 0 / ``no`` 1), or None."""
    if compiled.is_binary:
        return {"yes": 0, "no": 1}.get(answer)
    for i, label in enumerate(compiled.answers):
        if vocabulary_match(label, answer):
            return i
    return None


def prepare_examples(questions, compiler: Compiler, has_image: Callable[[str], bool]):
    """``(examples, skips)``: every question becomes an example or a listed skip."""
    examples, skips = [], []
    for q in questions:
        compiled = compile_question(q, compiler)
        if isinstance(compiled, Skip):
            skips.append(compiled)
        elif q.answer is None:
            skips.append(Skip(q.id, "no answer", "a training question needs its answer"))
        elif not has_image(q.image_id):
            skips.append(Skip(q.id, "no scene", f"no features for image {q.image_id!r}"))
        else:
            target = answer_target(compiled, q.answer)
            if target is None:
                skips.append(Skip(q.id, "answer not plausible", f"answer {q.answer!r} is not among the "
                                  f"question's {len(compiled.answers)} plausible answers"))
            else:
                examples.append(TrainingExample(q.id, q.image_id, compiled, target, len(compiled.source.steps)))
    return examples, skips


def step_images(batch: Sequence[TrainingExample]) -> tuple[str, ...]:
    """The images a batch's questions ask about, each once, in order: the oracle's scenes."""
    return tuple(sorted({e.image_id for e in batch}))


def read_metrics(path: Path) -> list[dict]:
    """The records of a metrics file (one JSON object a line; none when there is no file); a line
    that is not one (truncated, blank, not UTF-8, not an object) is refused, naming the line."""
    if not path.exists():
        return []
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise InputFileError(path, "cannot resume: this metrics file is not UTF-8 text", f"line {line}") from None
    except OSError as e:
        raise InputFileError(path, f"cannot resume: {e.strerror or e}") from None
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError as e:
            what = "a blank line" if not line.strip() else f"not JSON ({e.msg})"
            raise InputFileError(path, f"cannot resume: {what} where a metrics record (a JSON object) belongs",
                                 f"line {number}") from None
        if not isinstance(record, dict):
            raise InputFileError(path, f"cannot resume: a JSON {type(record).__name__} where a metrics record "
                                 "(a JSON object) belongs", f"line {number}")
        records.append(record)
    return records


def _shape(module) -> Optional[dict]:
    """The settings that fix the shape of ``module``'s network (its dataclass ``config``), or None."""
    from dataclasses import is_dataclass
    config = getattr(module, "config", None)
    return asdict(config) if is_dataclass(config) and not isinstance(config, type) else None


class Curriculum:
    """Which examples an epoch trains on: programs of at most ``start + epoch * step`` steps.

    >>> c = Curriculum([3, 2, 5, 2], start=2, step=1)
    >>> [c.max_length(e) for e in range(4)], c.pool(0).tolist(), c.pool(1).tolist()
    ([2, 3, 4, 5], [1, 3], [0, 1, 3])
    """

    def __init__(self, lengths: Sequence[int], start: int = 2, step: int = 1):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.start, self.step = start, step
        self.longest = int(self.lengths.max()) if self.lengths.size else 0

    def max_length(self, epoch: int) -> int:
        return min(self.longest, max(self.start + epoch * self.step, int(self.lengths.min(initial=self.start))))

    def pool(self, epoch: int) -> np.ndarray:
        return np.nonzero(self.lengths <= self.max_length(epoch))[0]


@dataclass(frozen=True)
class TrainingEvent:
    """What a training run tells its callbacks: ``kind`` is ``"step"`` (an optimizer step was
    taken: ``batch`` batches of this epoch are done), ``"checkpoint"`` (a checkpoint is on disk)
    or ``"epoch"`` (an epoch ended; ``epoch`` is the number done). ``step`` counts optimizer
    steps taken by this process."""

    kind: str
    epoch: int
    batch: int
    step: int


@dataclass
class EpochRecord:
    epoch: int
    steps: int
    examples: int
    max_program_steps: int
    train_loss: float
    val_accuracy: Optional[float]
    val_open: Optional[float]
    val_binary: Optional[float]
    seconds: float
    extra: dict = field(default_factory=dict)


class Trainer:
    """Trains ``model`` on ``train`` examples; validates on ``val`` questions; checkpoints to ``out``."""

    def __init__(self, model, train_perception: FeaturePerception, examples: list, out: Path,
                 config: TrainConfig = TrainConfig(), compiler: Optional[Compiler] = None,
                 val_perception: Optional[FeaturePerception] = None, val_questions: Sequence = (),
                 ontology: Optional[dsl.Ontology] = None, progress=None, log=print,
                 trainable: Optional[torch.nn.Module] = None, engine: Optional[Engine] = None,
                 callbacks: Sequence[Callable[[TrainingEvent], None]] = (), distribution=None):
        self.model, self.train_perception, self.examples = model, train_perception, examples
        self.out, self.config = Path(out), config
        self.compiler = compiler or Compiler(ontology)
        self.val_perception, self.val_questions = val_perception, list(val_questions)
        self.ontology = ontology or self.compiler.ontology
        self.progress, self.log = progress, log
        # what is trained: the oracle by default; a calibrator over a frozen oracle (calibration/)
        self.trainable = trainable if trainable is not None else model
        self.engine = engine or Engine()
        self.optimizer = adam(self.trainable.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        # distribution (nablafol.pipeline.distributed): the shards this process plays and the
        # other processes; one process, one shard by default (every hook is then the identity)
        from nablafol.pipeline.distributed import Distribution
        self.world = distribution if distribution is not None else Distribution.single()
        if config.batch_size % self.world.shards:
            from nablafol.pipeline.sharding import ShardingError
            raise ShardingError(f"the batch size {config.batch_size} must be a multiple of the shard count "
                                f"{self.world.shards} (every shard gives batch / shards questions to each step)")
        self._shard_examples = {shard: np.asarray(indices, dtype=np.int64) for shard, indices in
                                self.world.shard_indices([e.image_id for e in examples]).items()}
        self._lengths = np.asarray([e.length for e in examples], dtype=np.int64)
        lengths = [e.length for e in examples]
        if self.world.group.active:  # the curriculum reads only the shortest and longest program of every shard
            lengths = [self.world.group.min(min(lengths, default=1 << 30)), self.world.group.max(max(lengths, default=0))]
        self.curriculum = Curriculum(lengths, config.curriculum_start, config.curriculum_step)
        self._forward = self.world.loss(self.trainable, self._loss)
        self.epoch = 0
        self.history: list[dict] = []
        self._position: Optional[dict] = None  # where a mid-epoch checkpoint left the current epoch
        self._last_checkpoint = time.monotonic()
        self.callbacks = list(callbacks)
        self._steps = 0  # optimizer steps taken by this process

    def _tell(self, kind: str, batch: int = 0) -> None:
        if self.callbacks:
            event = TrainingEvent(kind, self.epoch, batch, self._steps)
            for callback in self.callbacks:
                callback(event)

    # -- checkpoints ----------------------------------------------------------------------
    state_name = STATE_NAME
    metrics_name = METRICS_NAME
    written_files = MODEL_FILES  # what save_trained writes (with the checkpoint and the metrics)

    def save_trained(self) -> None:
        """Write what was trained into the model folder (the oracle; a calibrator overrides this)."""
        from nablafol.pipeline.model_folder import save_oracle
        save_oracle(self.out, self.model, self.ontology, {"train": asdict(self.config), "epochs_done": self.epoch,
                                                          "history": self.history})

    def save(self, position: Optional[dict] = None) -> None:
        """Checkpoint: after a whole epoch (``position`` None; the model folder is written too), or
        inside one (``position``: batches done, running loss sums, the dropout generator's state)."""
        if position is not None:  # every shard's random state, wherever it is played
            position = self._gather_position(position)
        if self.world.is_writer:  # rank 0 writes the run's files
            self.out.mkdir(parents=True, exist_ok=True)
            if position is None:
                self.save_trained()
            state = {"epoch": self.epoch, "optimizer": self.optimizer.state_dict(),
                     "model": {k: v.detach().clone() for k, v in self.trainable.state_dict().items()}}
            shape = _shape(self.trainable)
            if shape is not None:  # what a resumed run must build to continue it
                state["shape"] = shape
            if self.world.shards > 1:
                state["shards"] = self.world.shards
            if position is not None:
                state["position"] = position
            with atomic_writer(self.out / self.state_name, "wb") as handle:
                torch.save(state, handle)
        self._last_checkpoint = time.monotonic()
        self._tell("checkpoint", position["batch"] if position is not None else 0)

    def _gather_position(self, position: dict) -> dict:
        """``position`` with the random state of every shard (``rng``; ``rngs``, one per shard,
        when the run has several), gathered from the processes that play them."""
        states = {}
        for part in self.world.group.gather(self.world.streams.states()):
            states.update(part)
        if self.world.shards == 1:
            return {**position, "rng": states[0]}
        return {**position, "rngs": [states[shard] for shard in range(self.world.shards)]}

    def resume(self) -> bool:
        """Load the last checkpoint of ``out`` if there is one; True when resumed. Temporary files of its own
        a killed run left behind (written, never renamed) are removed: this run owns the folder.
        Rank 0 reads the folder and hands what it read to the other processes (they need no
        access to it)."""
        found = self.world.group.broadcast(self._read_checkpoint() if self.world.is_writer else None)
        if isinstance(found, InputFileError):
            raise found
        if found is None:
            return False
        state, history = found
        mismatch = self._shape_error(state)
        if mismatch is not None:
            raise mismatch
        try:
            self.trainable.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            position = self._position_of(state)
        except Exception as e:  # a corrupt or foreign file: one line naming it
            raise InputFileError(self.out / self.state_name,
                                 f"cannot resume from this checkpoint ({type(e).__name__}: {e})") from None
        self.epoch = int(state["epoch"])
        self._position = position
        self.history = history[: self.epoch]
        return True

    def _read_checkpoint(self):
        """``(state, history)`` of the last checkpoint in ``out``, None when there is none, or the
        :class:`InputFileError` that refuses it (returned, so that it reaches every process)."""
        if self.out.is_dir():  # only the temporary files of what a run writes: a user's .tmp files are theirs
            for name in {*self.written_files, self.state_name, self.metrics_name}:
                for stale in self.out.glob(f".{name}.*.tmp"):
                    stale.unlink(missing_ok=True)
        path = self.out / self.state_name
        if not path.exists():
            return None
        from nablafol.neural.checkpoint import load_weights_only
        try:  # nothing in the file runs; another process gets CPU tensors
            state = load_weights_only(path, map_location="cpu" if self.world.group.active else None)
        except InputFileError as e:  # unreadable or hostile: torch's reason, never its advice to load unsafely
            return InputFileError(path, f"cannot resume from this checkpoint: {e.message}")
        except Exception as e:  # a corrupt or foreign file: one line naming it
            return InputFileError(path, f"cannot resume from this checkpoint ({type(e).__name__}: {e})")
        try:
            history = read_metrics(self.out / self.metrics_name)
        except InputFileError as e:
            return e
        return state, history

    def _shape_error(self, state: dict) -> Optional[InputFileError]:
        """The refusal of a checkpoint whose network has another shape than this run's (another
        --head, --hidden, feature width or vocabulary), or None. The shape is the checkpoint's own
        record; a checkpoint written before it had one is compared with the folder's config.json."""
        ours = _shape(self.trainable)
        theirs = state.get("shape")
        if theirs is None and self.trainable is self.model and ours is not None:
            config = self.out / "config.json"
            try:
                theirs = json.loads(config.read_text())["model"] if config.exists() else None
            except (OSError, ValueError, KeyError, TypeError):
                theirs = None  # a broken config.json is the model loader's to refuse
        if ours is None or not isinstance(theirs, dict):
            return None
        options = {"head": "--head", "hidden_dim": "--hidden", "feature_dim": "feature width",
                   "num_unary": "unary concepts", "num_binary": "binary concepts"}
        differ = [f"{options.get(k, k)} {ours[k]} (the checkpoint's: {theirs[k]})"
                  for k in ours if k in theirs and theirs[k] != ours[k]]
        if not differ:
            return None
        return InputFileError(self.out / self.state_name, f"cannot resume: this run's network differs from the "
                              f"checkpoint's: {', '.join(differ)}: give the checkpoint's settings, or another folder")

    def _position_of(self, state: dict) -> Optional[dict]:
        """Where in its epoch the checkpoint was taken. The random states of the shards come back
        only when the run has the same shards (then it continues exactly, however many processes
        play them); with other shards, the epoch continues at the same step of the new plan."""
        position = state.get("position")
        if position is None:
            return None
        out = {"batch": int(position["batch"]), "total": float(position["total"]), "count": int(position["count"]),
               "rngs": None}
        if int(state.get("shards", 1)) == self.world.shards:
            states = [position["rng"]] if self.world.shards == 1 else position["rngs"]
            out["rngs"] = {shard: states[shard].to(torch.uint8) for shard in self.world.played}
        return out

    # -- training -------------------------------------------------------------------------
    # the coming step's features read and decoded in a background thread while a step runs
    # (docs/design.md); False: each step reads its own, as a step run alone does
    read_ahead = True
    _ahead = None  # the epoch's Prefetch, while one runs

    def train(self) -> list[dict]:
        cfg = self.config
        self._last_checkpoint = time.monotonic()
        while self.epoch < cfg.epochs:
            start = time.perf_counter()
            record = self._epoch(self.epoch)
            self.epoch += 1
            record.seconds = time.perf_counter() - start
            self.history.append(asdict(record))
            self._write_metrics()
            self.save()
            self._tell("epoch")
            acc = "-" if record.val_accuracy is None else f"{100 * record.val_accuracy:.2f}%"
            skipped = record.extra.get("val_skipped")
            if skipped:
                acc += (f" ({sum(skipped.values()):,} of {len(self.val_questions):,} validation questions skipped, "
                        f"counted wrong: {reason_counts(skipped)})")
            self.log(f"epoch {record.epoch + 1}/{cfg.epochs}: loss {record.train_loss:.4f}, "
                     f"validation accuracy {acc}, programs of <= {record.max_program_steps} steps, "
                     f"{record.examples:,} questions, {record.seconds:.1f} s")
        return self.history

    def _epoch(self, epoch: int) -> EpochRecord:
        cfg = self.config
        plan = self._step_plan(epoch)
        position, self._position = self._position, None
        if position is None:  # dropout: reproducible per epoch (and shard), so resume matches
            self.world.streams.start(cfg.seed, epoch)
            first, total, count = 0, 0.0, 0
        else:  # resumed mid-epoch: the generators exactly as the checkpoint left them
            self.world.streams.start(cfg.seed, epoch, position["rngs"], resumed_at=position["batch"])
            first, total, count = position["batch"], position["total"], position["count"]
        self.trainable.train()
        begin = getattr(self.progress, "begin", None)  # a ProgressBar: the pass's rate counts from now
        if begin is not None:
            begin(count)
        with self._features_ahead(plan, first):  # read in a background thread (pipeline.prefetch)
            for b in range(first, len(plan)):
                parts = [[self.examples[i] for i in part] for part in plan[b]]
                try:
                    loss = self._step(parts)
                except OracleError as error:  # probabilities out of range: from the data, or from the training
                    self._check_weights(b)
                    if self._steps:  # after steps taken, finite but huge weights give NaN as well
                        steps = f"{self._steps:,} training step{'s' if self._steps > 1 else ''}"
                        raise DivergedError(f"{str(error).splitlines()[0]}, after {steps}: training may have diverged "
                                            "(lower --lr), or the features are not finite") from None
                    raise
                share, n, due = self._agree(loss, parts, b + 1)
                if not math.isfinite(share):  # the same on every process: their losses are summed
                    raise self._diverged("loss", b + 1)
                total += share
                count += n
                self._steps += 1
                self._tell("step", b + 1)
                if due:
                    self._check_weights(b + 1)
                    self.save({"batch": b + 1, "total": total, "count": count})
                if self.progress is not None:
                    self.progress(count, plan.examples, note=f"epoch {epoch + 1} loss {total / count:.4f}")
        self._check_weights(len(plan))  # before they are validated or saved
        val = self.validate()
        extra = {"val_skipped": val["skipped"]} if "skipped" in val else {}
        return EpochRecord(epoch, len(plan), count, self.curriculum.max_length(epoch), total / max(count, 1),
                           val.get("all"), val.get("open"), val.get("binary"), 0.0, extra)

    def _diverged(self, what: str, batch: int) -> DivergedError:
        return DivergedError(f"training diverged: non-finite {what} after step {batch} of epoch {self.epoch + 1} "
                             f"(learning rate {self.config.lr:g}): lower --lr (no checkpoint holds these weights)")

    def _check_weights(self, batch: int) -> None:
        """Refuse to go on (validate, checkpoint) with weights that are no longer finite (checked
        once an epoch, before each checkpoint, and when the oracle's output is refused; the loss,
        a scalar, is checked after every step)."""
        if not all(bool(torch.isfinite(p).all()) for p in self.trainable.parameters()):
            raise self._diverged("weights", batch)

    def _step_plan(self, epoch: int):
        """Which examples each step of ``epoch`` trains on: the curriculum's pool of every played
        shard, in its own order (:class:`nablafol.pipeline.sharding.StepPlan`)."""
        from nablafol.pipeline.sharding import StepPlan
        limit = self.curriculum.max_length(epoch)
        pools = {shard: indices[self._lengths[indices] <= limit] for shard, indices in self._shard_examples.items()}
        longest = self.world.group.max(max(len(pool) for pool in pools.values()))
        return StepPlan(pools, self.world.shards, self.config.batch_size, self.config.seed, epoch, longest)

    def _agree(self, loss: float, parts: list, batches_done: int) -> tuple[float, int, bool]:
        """``(loss × questions, questions, checkpoint due)`` of this step over every process
        (``loss``: this process's, ``world / shards`` times the sum of its shards' means)."""
        share, n = loss / self.world.loss_factor * len(parts[0]), sum(len(part) for part in parts)
        due = self._checkpoint_due(batches_done)
        if not self.world.group.active:
            return share, n, due
        share, n, due = self.world.group.sum([share, n, due])  # every process checkpoints, or none
        return share, int(n), due > 0

    def _checkpoint_due(self, batches_done: int) -> bool:
        cfg = self.config
        if cfg.checkpoint_every and batches_done % cfg.checkpoint_every == 0:
            return True
        return bool(cfg.checkpoint_seconds) and time.monotonic() - self._last_checkpoint >= cfg.checkpoint_seconds

    def _step(self, batch: list) -> float:
        """One optimizer step on ``batch``: one list of examples, or one per shard this process
        plays; returns this process's loss."""
        parts = [batch] if not batch or isinstance(batch[0], TrainingExample) else batch
        loss = self._forward(parts)  # across processes, DistributedDataParallel averages the gradients
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.trainable.parameters(), self.config.clip_norm)
        self.optimizer.step()
        return float(loss.detach())

    @contextmanager
    def _features_ahead(self, plan, first: int):
        """While inside, the features of the steps ``first ..`` of ``plan`` are read in a background
        thread ahead of the steps that use them (``read_ahead`` False: each step reads its own)."""
        if not self.read_ahead:
            yield
            return
        from nablafol.pipeline.prefetch import Prefetch
        keys = (step_images([self.examples[i] for i in part]) for b in range(first, len(plan)) for part in plan[b])
        with Prefetch(self.train_perception.read, keys) as self._ahead:
            try:
                yield
            finally:
                self._ahead = None

    def _oracle(self, images: tuple):
        """The oracle over ``images``: their features read ahead when they were (in order)."""
        if self._ahead is None:
            return self.train_perception.oracle(images)
        return self.train_perception.oracle_of(self._ahead.take(images))

    def _loss(self, batch: list[TrainingExample]) -> torch.Tensor:
        """The mean answer loss of ``batch`` (Algorithm 1's two cases), with its graph."""
        images = step_images(batch)
        index = {image: b for b, image in enumerate(images)}
        oracle = self._oracle(images)
        scenes = np.array([index[e.image_id] for e in batch], dtype=np.int64)
        answers = self.engine([e.compiled.program for e in batch], oracle, scenes)
        device = answers.log_probs.device
        targets = torch.tensor([e.target for e in batch], device=device)
        binary = torch.tensor([e.compiled.is_binary for e in batch], device=device)
        return answer_loss(answers, targets, binary)

    def validate(self) -> dict:
        """Accuracy (vocabulary forms) on the validation questions: all / open / binary."""
        if self.val_perception is None or not self.val_questions:
            return {}
        from nablafol.scoring import Scorer
        self.trainable.eval()
        answerer = Answerer(self.val_perception, compiler=self.compiler, engine=self.engine,
                            threshold=self.config.threshold)
        scorer = Scorer(vocabulary_match)
        skipped = Counter()
        # one chunk per shard: every validation question of a shard batched together, one pass
        for part in self.world.validation_parts(self.val_questions):
            if part:
                skipped.update(answer_all(part, answerer, scorer=scorer).skip_counts)
        self.trainable.train()
        scores = self.world.merged_scores(scorer)
        if self.world.group.active:  # every shard's skips, on every process
            skipped = sum(self.world.group.gather(skipped), Counter())
        if scores is None:
            return {}
        acc = scores.overall.accuracy
        out = {k: (None if v is None or (isinstance(v, float) and math.isnan(v)) else v) for k, v in acc.items()}
        if skipped:
            out["skipped"] = dict(skipped.most_common())
        return out

    def _write_metrics(self) -> None:
        if not self.world.is_writer:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        with atomic_writer(self.out / self.metrics_name) as f:
            for record in self.history:
                f.write(json.dumps(record) + "\n")


# --- nablafol train ---------------------------------------------------------------------------

@dataclass
class TrainingJob:
    """What ``nablafol train`` is asked: the dataset's files, the model folder, the settings."""

    files: DatasetFiles
    out: Path
    config: TrainConfig = field(default_factory=TrainConfig)
    hidden_dim: int = 256
    head: str = "cosine"  # the concept heads (NeuralOracleConfig.head)
    val_limit: int = 0
    device: object = "cpu"
    resume: bool = False
    shards: Optional[int] = None  # data shards (None: the checkpoint's when resuming, else one per process)
    launch: object = None  # nablafol.pipeline.distributed.Launch (None: one process)
    callbacks: Sequence[Callable[[TrainingEvent], None]] = ()
    scene_graphs: Optional[Path] = None  # train scene graphs: pretrain on their labels first
    pretrain_epochs: int = 6


def train_oracle(job: TrainingJob, log=print, progress=None) -> list[dict]:
    """Train a new neural oracle over the job's features (or continue the checkpoint in
    ``job.out`` when ``job.resume``); returns the history, one record per epoch. Under
    ``torchrun`` (``job.launch``) every process trains its shards; rank 0 writes the folder."""
    from nablafol.pipeline.distributed import Launch, peers_guard, process_group
    launch = job.launch or Launch()
    with process_group(launch, job.device) as group:
        trainer = _oracle_trainer(job, group, log, progress)
        with peers_guard(group):
            return trainer.train()


def _oracle_trainer(job: TrainingJob, group, log, progress) -> "Trainer":
    from nablafol.data import FeatureStore
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.neural.feature_memory import FeatureMemory
    from nablafol.pipeline.datasets import validation_questions
    from nablafol.pipeline.distributed import plan_training, rank_device, run_shards
    files = job.files
    out = Path(job.out)
    if out.exists() and not out.is_dir():
        raise InputFileError(out, "exists and is not a folder (a model is a folder)")
    held = [] if job.resume else held_files(out, MODEL_FILES)
    if held:  # a new training would replace it (and leave its calibrator to a new oracle)
        raise InputFileError(out, f"already holds a trained model ({', '.join(held)}): --resume to continue it, "
                             f"or another --out")
    metrics = out / METRICS_NAME
    if metrics.exists() and not (job.resume and (out / STATE_NAME).exists()):  # not a training's we continue
        raise InputFileError(metrics, "is not a checkpointed training's and this run would replace it: move it "
                             "away, or give another --out")
    calibrated = held_files(out, CALIBRATOR_FILES) if job.resume else []
    if calibrated:  # trained on these weights: training on would leave it (or its checkpoint) stale
        raise InputFileError(out, f"this oracle was calibrated ({', '.join(calibrated)}): training it on would leave "
                             "the calibrator to other weights (eval --model applies it); move the calibrator's files "
                             "out of the folder first, and calibrate again after")
    device = rank_device(job.device, group.launch)
    ontology = dsl.load_ontology(files.ontology, files.ontology_extension)
    store = FeatureStore(files.features)
    ids = store.image_ids()
    if not ids:
        raise InputFileError(files.features, "the features folder lists no image")
    val = validation_questions(files.val_questions, job.val_limit)
    shards = run_shards(group, job.shards, out / STATE_NAME if job.resume else None)
    distribution, questions = plan_training(group, shards, store, files.train_questions, val, device)
    say = log if distribution.is_writer else (lambda *_: None)
    # the vocabulary is open: the model learns every concept its training questions name
    base, ontology = ontology, _training_ontology(ontology, questions.values(), group)
    if ontology is not base:
        say(f"the training questions name {_new_concepts(base, ontology):,} concepts beyond the ontology: "
            f"the model learns them too")
    torch.manual_seed(job.config.seed)
    # the feature width from an image of this process's shards (another machine may hold the others)
    first = next((q.image_id for q in questions.values() if q.image_id in store), ids[0])
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology),
                                             feature_dim=store[first].features.shape[1], hidden_dim=job.hidden_dim,
                                             head=job.head)
    model = model.to(device)
    compiler = Compiler(ontology)
    # every epoch reads every training image again: keep what was read (up to 1 GiB, the most
    # recently used first); the generated sets' gzip'd HDF5 cost half a step's time otherwise
    memory = FeatureMemory(store)
    perception = FeaturePerception(memory, model, ontology, device=device)
    examples, skips = prepare_examples(questions.values(), compiler, perception.has_image)
    where = f"{distribution.describe()}: " if shards > 1 else ""
    log(f"{where}{len(questions):,} training questions: {len(examples):,} to train on, {len(skips):,} skipped")
    for skip in skips[:10]:
        log(f"  {skip.question_id}: {skip.reason}: {skip.detail}")
    refuse_nothing_to_train_on(group, files.train_questions, len(questions), examples, skips)
    trainer = Trainer(model, perception, examples, out, job.config, compiler=compiler,
                      val_perception=perception if val else None, val_questions=val, ontology=ontology,
                      progress=progress if distribution.is_writer else None, log=say, callbacks=job.callbacks,
                      distribution=distribution)
    if job.resume and trainer.resume():
        say(f"resumed from {out} after epoch {trainer.epoch}")
    elif job.scene_graphs is not None and job.pretrain_epochs:
        # every process pretrains on the same labels from the same seed: the same weights everywhere
        _pretrain(job, model, memory, ontology, say)
    return trainer


def refuse_nothing_to_train_on(group, source, read: int, examples: Sequence, skips: Sequence) -> None:
    """Raise :func:`nothing_to_train_on` when no process has an example (before anything is
    written: an untrained model would pass for a trained one). Every process decides alike."""
    reasons = Counter(s.reason for s in skips)
    found = len(examples)
    if group.active:  # the counts only: a process may have skipped thousands
        parts = group.gather((read, found, reasons))
        read, found, reasons = sum(p[0] for p in parts), sum(p[1] for p in parts), sum((p[2] for p in parts), Counter())
    if not found:
        raise nothing_to_train_on(source, read, reasons)


def _pretrain(job: TrainingJob, model, store, ontology, log) -> list[dict]:
    """Train ``model`` on the labels of ``job.scene_graphs`` (the images it shares with ``store``,
    a :class:`~nablafol.neural.feature_memory.FeatureMemory`)."""
    from nablafol.data import load_scene_graphs
    from nablafol.pipeline.label_training import LabelConfig, train_on_labels
    graphs = load_scene_graphs(job.scene_graphs)
    log(f"pretraining on the labels of {sum(i in store for i in graphs):,} of {len(graphs):,} scene graphs "
        f"({job.pretrain_epochs} epochs)")
    return train_on_labels(model, store, graphs, ontology,
                           LabelConfig(epochs=job.pretrain_epochs, seed=job.config.seed), log=log)


def _new_concepts(base: dsl.Ontology, grown: dsl.Ontology) -> int:
    """How many more rows a model of ``grown`` has than one of ``base``."""
    from nablafol.neural import ConceptVocabulary
    before, after = ConceptVocabulary.from_ontology(base), ConceptVocabulary.from_ontology(grown)
    return after.num_unary + after.num_binary - before.num_unary - before.num_binary


def _training_ontology(base: dsl.Ontology, questions, group) -> dsl.Ontology:
    """``base`` widened by every concept the run's training questions name: every process's
    questions (each holds only its shards'), so that every process builds the same model, the
    one a single process over the whole set builds."""
    from nablafol.compiler.vocabulary import ConceptInventory, known_values
    inventory = ConceptInventory()
    for part in group.gather(ConceptInventory().update(questions).counts):
        inventory.counts.update(part)
    return base.joined(known_values(inventory))
