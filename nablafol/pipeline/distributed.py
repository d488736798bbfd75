"""Runs over several processes with PyTorch's own distributed engine, as ``torchrun`` launches them.

* :class:`Launch`: this process's rank, the world size and the local rank, from the environment
  ``torchrun`` sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``; ``MASTER_ADDR``/``MASTER_PORT``
  for the rendezvous). Without ``torchrun`` it is one process, rank 0 of 1.
* :func:`process_group`: joins the run's process group (``gloo`` on the CPU, ``nccl`` on
  CUDA devices, chosen by the device), yields its :class:`Collectives`, leaves it on exit.
* :class:`Distribution`: the part of a training run this process plays (the shards of
  :mod:`nablafol.pipeline.sharding`), and everything the trainer needs from the other
  processes: the loss over its shards' part of the global batch (wrapped in
  ``DistributedDataParallel``, which averages the gradients), agreed step totals, the
  checkpoint's random states, validation predictions. In one process each is the identity.

    >>> launch = Launch.from_environment({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"})
    >>> launch, launch.is_main, backend_for("cpu")
    (Launch(rank=1, world=2, local_rank=1), False, 'gloo')
    >>> Launch.from_environment({})
    Launch(rank=0, world=1, local_rank=0)
    >>> single = Distribution.single()
    >>> list(single.played), single.is_writer, single.group.sum([1.5, 2.0])
    ([0], True, [1.5, 2.0])
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable, Iterator, Mapping, Optional, Sequence

import torch

from nablafol.errors import NablafolError
from nablafol.pipeline.sharding import ImagePlan, ShardingError, played_shards

__all__ = ["Launch", "Collectives", "Distribution", "ShardStreams", "PeerLost", "backend_for", "rank_device",
           "process_group", "TRAINING_TIMEOUT", "EVALUATION_TIMEOUT"]

#: How long a collective may wait for the slowest process while training (a step, a validation
#: pass, rank 0 writing a checkpoint): torch's own default.
TRAINING_TIMEOUT = timedelta(minutes=30)
#: How long the shards of a ``torchrun`` evaluation wait for each other before the merge: a
#: whole shard may stand between the first and the last (a process that dies ends the run at once).
EVALUATION_TIMEOUT = timedelta(days=2)
#: Distance between the dropout seeds of two shards (shard 0 keeps the seed of an unsplit run).
STREAM_STRIDE = 1_000_003


class PeerLost(NablafolError):
    """Another process of the run stopped, so this one cannot go on (one line; resume the run)."""


@dataclass(frozen=True)
class Launch:
    """Where this process stands in a ``torchrun`` launch (rank 0 of 1 without one)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> "Launch":
        values = {}
        for key, name in (("rank", "RANK"), ("world", "WORLD_SIZE"), ("local_rank", "LOCAL_RANK")):
            text = environ.get(name)
            try:
                values[key] = int(text) if text is not None else (1 if key == "world" else 0)
            except ValueError:
                raise ShardingError(f"the environment variable {name} must be a whole number, not {text!r}") from None
        if not (values["world"] >= 1 and 0 <= values["rank"] < values["world"] and values["local_rank"] >= 0):
            raise ShardingError(f"RANK {values['rank']} and WORLD_SIZE {values['world']} do not describe a launch")
        return cls(**values)

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def backend_for(device) -> str:
    """``nccl`` for CUDA devices, ``gloo`` for the CPU."""
    return "nccl" if torch.device(device).type == "cuda" else "gloo"


def rank_device(device, launch: Launch) -> torch.device:
    """The device of this process: ``cuda`` without an index is the GPU of its local rank."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None and launch.world > 1:
        return torch.device("cuda", launch.local_rank)
    return device


class Collectives:
    """What the processes of one run do together; with one process (``active`` False) every
    operation is the identity on this process's value."""

    def __init__(self, launch: Launch = Launch(), active: bool = False, device=None):
        self.launch, self.active = launch, active
        self.rank, self.world = launch.rank, launch.world
        # nccl reduces tensors on the GPU; gloo on the CPU
        self.device = torch.device(device) if device is not None and backend_for(device) == "nccl" else torch.device("cpu")

    def sum(self, values: Sequence[float]) -> list[float]:
        """Every process's ``values`` added up (float64)."""
        return self._reduce(values, "SUM")

    def max(self, value: int) -> int:
        return int(self._reduce([value], "MAX")[0])

    def min(self, value: int) -> int:
        return int(self._reduce([value], "MIN")[0])

    def _reduce(self, values: Sequence[float], op: str) -> list[float]:
        if not self.active:
            return [float(v) for v in values]
        import torch.distributed as dist
        tensor = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self.device)
        with _peers():
            dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op))
        return tensor.cpu().tolist()

    def broadcast(self, value):
        """Rank 0's ``value``, on every process (pickled: small things only)."""
        if not self.active:
            return value
        import torch.distributed as dist
        box = [value]
        with _peers():
            dist.broadcast_object_list(box, src=0, device=self.device)
        return box[0]

    def gather(self, value) -> list:
        """Every process's ``value``, in rank order, on every process."""
        if not self.active:
            return [value]
        import torch.distributed as dist
        out = [None] * self.world
        with _peers():
            dist.all_gather_object(out, value)
        return out

    def barrier(self) -> None:
        if self.active:
            import torch.distributed as dist
            with _peers():
                dist.barrier()


@contextmanager
def _peers() -> Iterator[None]:
    """A collective that fails because a peer is gone becomes one line naming what to do."""
    import torch.distributed as dist
    try:
        yield
    except RuntimeError as error:  # a backend's failure (a closed connection, a timeout); not a bug's
        if not (isinstance(error, dist.DistError) or _BACKEND_FAILURE.search(str(error))):
            raise
        raise PeerLost(f"another process of the run stopped ({_reason(error)}); restart the run with --resume") from None


#: How gloo and NCCL word a failed exchange when they raise a plain RuntimeError (from backward).
_BACKEND_FAILURE = re.compile(r"gloo|nccl|NCCL|Connection (closed|reset)|remote worker")


def _reason(error: Exception) -> str:
    """The backend's reason, without its source location: ``Connection closed by peer [host]:port``."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", str(error).strip().splitlines()[0] if str(error).strip() else "")
    return text.split(". ")[0][:160] or type(error).__name__


@contextmanager
def process_group(launch: Launch, device=None, timeout: timedelta = TRAINING_TIMEOUT) -> Iterator[Collectives]:
    """Join the process group of ``launch`` (nothing to join for one process) on the backend
    ``device`` calls for; yields the :class:`Collectives`; the group is left on exit."""
    if launch.world == 1:
        yield Collectives(launch, active=False, device=device)
        return
    import torch.distributed as dist
    device = rank_device(device if device is not None else "cpu", launch)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            raise ShardingError(f"{name} is not set: launch the processes with torchrun")
    dist.init_process_group(backend_for(device), init_method="env://", rank=launch.rank, world_size=launch.world,
                            timeout=timeout)
    try:
        yield Collectives(launch, active=True, device=device)
        # leave together: a rank tearing gloo down while a peer still uses the group was seen to
        # abort at exit ("terminate called without an active exception")
        dist.barrier()
    finally:
        dist.destroy_process_group()


class ShardStreams:
    """The dropout random streams of the shards one process plays: a shard's masks come from
    its own stream, so they are the same whichever process plays it.

    With one shard per process the stream is torch's global generator itself (an unsplit run
    draws exactly what it drew before runs could be split); with several, each shard's state is
    swapped in around its forward pass (the CPU generator's, and the device's on CUDA).
    """

    def __init__(self, played: Sequence[int], device=None):
        self.played = list(played)
        self.cuda = torch.device(device).type == "cuda" if device is not None else False
        self._states: dict[int, tuple] = {}

    def _seed(self, seed: int, epoch: int, shard: int) -> int:
        return seed * 100_003 + epoch + shard * STREAM_STRIDE

    def start(self, seed: int, epoch: int, states: Optional[Mapping[int, torch.Tensor]] = None,
              resumed_at: int = 0) -> None:
        """Seed every stream for ``epoch``; or restore the ``states`` a checkpoint kept; or, when
        it kept none that fit (another shard count), seed them from the step ``resumed_at`` too."""
        for shard in self.played:
            if states is not None:
                torch.set_rng_state(states[shard])
            else:
                torch.manual_seed(self._seed(seed, epoch, shard) + 7_919 * resumed_at)
            self._states[shard] = self._capture()
        if len(self.played) == 1:
            self._restore(self._states[self.played[0]])

    def states(self) -> dict[int, torch.Tensor]:
        """Each played shard's CPU generator state, as a checkpoint keeps it."""
        if len(self.played) == 1:
            return {self.played[0]: torch.get_rng_state()}
        return {shard: state[0] for shard, state in self._states.items()}

    @contextmanager
    def drawing(self, shard: int) -> Iterator[None]:
        """Random draws inside come from ``shard``'s stream."""
        if len(self.played) == 1:
            yield
            return
        self._restore(self._states[shard])
        try:
            yield
        finally:
            self._states[shard] = self._capture()

    def _capture(self) -> tuple:
        return torch.get_rng_state(), (torch.cuda.get_rng_state() if self.cuda else None)

    def _restore(self, state: tuple) -> None:
        torch.set_rng_state(state[0])
        if self.cuda and state[1] is not None:
            torch.cuda.set_rng_state(state[1])


class _ShardLoss(torch.nn.Module):
    """The loss this process contributes to a step: ``(world / shards) · Σ`` of its shards'
    mean losses. Averaged over the processes (what ``DistributedDataParallel`` does to the
    gradients) it is the mean over every shard's part, i.e. over the global batch."""

    def __init__(self, trainable: torch.nn.Module, loss_of: Callable, distribution: "Distribution"):
        super().__init__()
        self.trainable = trainable
        self._loss_of, self._distribution = loss_of, distribution

    def forward(self, parts: Sequence[Sequence]) -> torch.Tensor:
        d = self._distribution
        losses = []
        for shard, part in zip(d.played, parts):
            with d.streams.drawing(shard):
                losses.append(self._loss_of(part))
        loss = losses[0] if len(losses) == 1 else torch.stack(losses).sum()
        if d.loss_factor != 1:
            loss = loss * d.loss_factor
        return loss


@dataclass
class Distribution:
    """The part of a training run this process plays, and its dealings with the others.

    ``shards`` data shards (``train``/``val``: which images each owns) shared by the
    ``group``'s processes, a contiguous block each (``played``). One process may play every
    shard of a plan: it then trains exactly as the processes of a split run would together.
    """

    group: Collectives = field(default_factory=Collectives)
    shards: int = 1
    train: ImagePlan = field(default_factory=ImagePlan.single)
    val: ImagePlan = field(default_factory=ImagePlan.single)
    device: object = None

    def __post_init__(self):
        self.played = played_shards(self.group.rank, self.group.world, self.shards)
        self.streams = ShardStreams(self.played, self.device)

    @classmethod
    def single(cls) -> "Distribution":
        """One process, one shard: a run that is not split."""
        return cls()

    @property
    def is_writer(self) -> bool:
        """Whether this process writes the run's files (rank 0)."""
        return self.group.rank == 0

    @property
    def loss_factor(self) -> float:
        return self.group.world / self.shards

    def describe(self) -> str:
        shards = ", ".join(str(s) for s in self.played)
        return f"process {self.group.rank + 1}/{self.group.world}, shard{'s' * (len(self.played) > 1)} {shards} of {self.shards}"

    def loss(self, trainable: torch.nn.Module, loss_of: Callable) -> Callable:
        """``forward(parts)`` -> this process's loss for a step (``parts``: the examples of each
        played shard); across processes, wrapped in ``DistributedDataParallel``."""
        module = _ShardLoss(trainable, loss_of, self)
        if not self.group.active:
            return module
        from torch.nn.parallel import DistributedDataParallel
        # unused parameters are searched for: a parameter no process used this step (the pair
        # layers, in a step without relations) keeps no gradient, and Adam leaves it alone as in
        # one process (a zero gradient would still move it by its momentum)
        with _peers():  # the wrapper starts by giving every process rank 0's weights (and buffers)
            return DistributedDataParallel(module, device_ids=None, forward_sync_buffers=False,
                                           find_unused_parameters=True)

    def shard_indices(self, image_ids: Sequence[str]) -> dict[int, list[int]]:
        """For each played shard, the positions of ``image_ids`` (its examples' images) it owns."""
        out = {shard: [] for shard in self.played}
        for position, image_id in enumerate(image_ids):
            shard = self.train.shard_of(image_id)
            if shard in out:
                out[shard].append(position)
        return out

    def validation_parts(self, questions: Sequence) -> list[list]:
        """The validation questions of each played shard (each answered as one chunk)."""
        parts = {shard: [] for shard in self.played}
        for question in questions:
            shard = self.val.shard_of(question.image_id)
            if shard in parts:
                parts[shard].append(question)
        return list(parts.values())

    def merged_scores(self, scorer):
        """The scores of every process's ``scorer`` (each updated with its shards' validation
        questions), merged: exactly one scorer's over the whole set (consistency looks across
        shards; :class:`nablafol.scoring.Scorer` merges exactly). None when nothing was scored.
        The one place where the processes' validation results meet."""
        from nablafol.scoring import Scores
        merged, *others = self.group.gather(scorer)
        for other in others:
            merged.merge(other)
        return Scores(overall=merged.compute()) if len(merged) else None


def run_shards(group: Collectives, requested: Optional[int], checkpoint=None) -> int:
    """The shard count of a training run: ``requested`` when given, else the one the checkpoint
    at ``checkpoint`` was planned with (a resumed run keeps its shards), else one per process."""
    if requested:
        return requested
    found = None
    if checkpoint is not None and group.rank == 0 and os.path.exists(checkpoint):
        from nablafol.neural.checkpoint import load_weights_only
        try:
            found = int(load_weights_only(checkpoint).get("shards", 1))
        except Exception:  # unreadable: resuming reports it, in one line
            found = None
    found = group.broadcast(found)
    return found if found is not None else group.world


def plan_training(group: Collectives, shards: int, store, train_questions, val_questions: Sequence = (),
                  device=None) -> tuple[Distribution, dict]:
    """``(distribution, questions)``: the shards of a run over the features ``store`` (each its
    block of images), and the training questions of the shards this process plays, read from
    the file or folder ``train_questions`` (twice when split: once to count the questions of
    every image, once to keep this process's; memory holds only its shards' questions)."""
    from nablafol.data import iter_questions, load_questions
    from nablafol.pipeline.sharding import count_images, feature_position
    if shards == 1:
        played_shards(group.rank, group.world, shards)  # refuses more processes than shards
        return Distribution(group, 1, device=device), load_questions(train_questions)
    position = feature_position(store)
    train = ImagePlan.cut(count_images(iter_questions(train_questions), train_questions), position, shards)
    val = ImagePlan.cut(count_images(val_questions), position, shards)
    distribution = Distribution(group, shards, train, val, device)
    owns = train.owns(distribution.played)
    return distribution, {q.id: q for q in iter_questions(train_questions) if owns(q.image_id)}


@contextmanager
def peers_guard(group: Collectives) -> Iterator[None]:
    """Inside, a failed exchange with the other processes (a gradient all-reduce whose peer
    died) ends in one line (:class:`PeerLost`) instead of the backend's traceback."""
    if not group.active:
        yield
        return
    with _peers():
        yield
