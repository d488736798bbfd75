"""Who does which part of a run that is split over several processes or machines.

**Training** splits its data into ``S`` *shards* by image: the images of the questions, in the
order of the features folder (``gqa_objects_info.json``: file, then row), are cut into ``S``
contiguous blocks of about equal question counts (:class:`ImagePlan`). A shard is its images'
questions, and only its images' features are read: a machine needs only the HDF5 files of the
shards its processes play (``nablafol train --plan`` lists them). Each optimizer step takes
``batch / S`` questions from every shard (:class:`StepPlan`); a process plays one shard or a
contiguous block of them (:func:`played_shards`), so the same shards give the same training
whatever the number of processes.

**Evaluation** splits the question stream by chunk (:class:`EvalShard`): chunk ``k`` (of
``--chunk-size`` questions, in file order) belongs to shard ``k mod N``. Each chunk is answered
exactly as a single process answers it, so the shards' journals merge into outputs
byte-identical to one process's.

    >>> plan = ImagePlan.cut({"a": 3, "b": 1, "c": 2, "d": 2}, position=lambda image: (0, "abcd".index(image)),
    ...                      shards=2)
    >>> [plan.shard_of(image) for image in "abcd"], plan.counts()
    ([0, 0, 1, 1], [2, 2])
    >>> list(EvalShard(1, 2).take(range(7), chunk_size=2))
    [2, 3, 6]
    >>> played_shards(rank=1, world=2, shards=5)
    range(2, 5)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Optional, Sequence

import numpy as np

from nablafol.errors import InputFileError, NablafolError

__all__ = ["ImagePlan", "StepPlan", "EvalShard", "ShardingError", "played_shards", "feature_position",
           "count_images"]


class ShardingError(NablafolError):
    """A run that cannot be split as asked (one line: what and why)."""


def played_shards(rank: int, world: int, shards: int) -> range:
    """The shards process ``rank`` of ``world`` plays: a contiguous block, as equal as can be."""
    if not 1 <= world <= shards:
        raise ShardingError(f"{world} processes cannot share {shards} shard{'s' * (shards != 1)}: "
                            "use at most as many processes as shards")
    return range(rank * shards // world, (rank + 1) * shards // world)


def feature_position(store) -> Callable[[str], tuple]:
    """Where an image's features lie in the folder (file, row); images without features last."""
    def position(image_id: str) -> tuple:
        found = store.location(image_id)
        return (sys.maxsize, 0) if found is None else found
    return position


def count_images(questions: Iterable, source="questions") -> dict[str, int]:
    """Questions per image id, read once from a stream; a question id given twice is refused
    (naming ``source``)."""
    counts: dict[str, int] = {}
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise InputFileError(source, "appears twice", f"question {question.id}")
        seen.add(question.id)
        counts[question.image_id] = counts.get(question.image_id, 0) + 1
    return counts


class ImagePlan:
    """Which shard owns each image: ``S`` contiguous blocks of the images in ``position`` order
    (the features folder's file and row, then the id), of about equal question counts.

    An image goes to the shard in whose block its first question falls, so a shard's question
    count is within one image's questions of ``total / S``. Images the plan never saw (not in
    its question counts) belong to no shard.
    """

    def __init__(self, owner: Mapping[str, int], shards: int):
        self.owner, self.shards = dict(owner), shards

    @classmethod
    def cut(cls, counts: Mapping[str, int], position: Callable[[str], tuple], shards: int) -> "ImagePlan":
        if shards < 1:
            raise ShardingError(f"a run needs at least one shard, not {shards}")
        total = sum(counts.values())
        owner, before = {}, 0
        for image in sorted(counts, key=lambda image: (position(image), image)):
            owner[image] = min(shards - 1, before * shards // max(total, 1))
            before += counts[image]
        return cls(owner, shards)

    @classmethod
    def single(cls) -> "ImagePlan":
        """One shard owning every image."""
        return _WholePlan({}, 1)

    def shard_of(self, image_id: str) -> Optional[int]:
        return self.owner.get(image_id)

    def owns(self, shards: Sequence[int]) -> Callable[[str], bool]:
        """Whether an image belongs to one of ``shards``."""
        wanted = set(shards)
        return lambda image_id: self.owner.get(image_id) in wanted

    def counts(self) -> list[int]:
        """Images per shard."""
        out = [0] * self.shards
        for shard in self.owner.values():
            out[shard] += 1
        return out

    def images(self, shard: int) -> list[str]:
        return [image for image, owner in self.owner.items() if owner == shard]


class _WholePlan(ImagePlan):
    def shard_of(self, image_id: str) -> int:
        return 0

    def owns(self, shards: Sequence[int]) -> Callable[[str], bool]:
        return lambda image_id: True


class StepPlan:
    """The examples of each optimizer step of one epoch, for the shards one process plays.

    Every shard draws its own order of its curriculum pool (from the seed, the epoch, the shard
    count and the shard; with one shard, the seed and epoch alone, as a run that was never
    split). Step ``t`` takes the positions ``[t·b, (t+1)·b)`` of that order, ``b = batch / S``,
    over the longest pool of any shard (``longest``, agreed by every process); a shorter
    shard starts its order again, so every shard gives the same number of questions to every
    step and the mean over them is the mean over the global batch.

    >>> plan = StepPlan({0: np.array([0, 1, 2]), 1: np.array([3, 4])}, shards=2, batch=4, seed=0, epoch=0,
    ...                 longest=3)
    >>> [[part.tolist() for part in plan[step]] for step in range(len(plan))]  # shard 1 starts again
    [[[2, 1], [4, 3]], [[0], [4]]]
    >>> plan.examples
    6
    """

    def __init__(self, pools: Mapping[int, np.ndarray], shards: int, batch: int, seed: int, epoch: int,
                 longest: int):
        self.shards, self.local = shards, batch // shards
        self.orders = {}
        for shard, pool in pools.items():
            key = [seed, epoch] if shards == 1 else [seed, epoch, shards, shard]
            self.orders[shard] = pool[np.random.default_rng(key).permutation(len(pool))]
            if longest and not len(pool):
                raise ShardingError(f"shard {shard} of {shards} has no question to train on in epoch {epoch + 1} "
                                    "(its curriculum pool is empty): use fewer shards")
        self.longest = longest

    def __len__(self) -> int:
        return -(-self.longest // self.local)

    def __getitem__(self, step: int) -> list[np.ndarray]:
        """One index array per played shard (in shard order)."""
        positions = np.arange(step * self.local, min((step + 1) * self.local, self.longest))
        return [order[positions % len(order)] for order in self.orders.values()]

    @property
    def examples(self) -> int:
        """Questions in the epoch over every shard (repeats of shorter shards included)."""
        return self.longest * self.shards


@dataclass(frozen=True)
class EvalShard:
    """Shard ``index`` of ``count`` of an evaluation (0-based): the chunks ``k`` with
    ``k mod count == index``."""

    index: int
    count: int

    def __post_init__(self):
        if not (isinstance(self.count, int) and self.count >= 1 and isinstance(self.index, int)
                and 0 <= self.index < self.count):
            raise ShardingError(f"a shard is I/N with 0 <= I < N, not {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> "EvalShard":
        """``"I/N"`` (``"0/4"`` .. ``"3/4"``)."""
        index, slash, count = text.partition("/")
        try:
            if slash:
                return cls(int(index), int(count))
        except ValueError:
            pass
        except ShardingError:  # a shard out of range: said with what was given
            raise ShardingError(f"a shard is I/N with 0 <= I < N, not {text!r}") from None
        raise ShardingError(f"a shard is I/N with 0 <= I < N, not {text!r}")

    def take(self, questions: Iterable, chunk_size: int) -> Iterator:
        """This shard's questions of the stream, in order; re-chunked by ``chunk_size`` they are
        exactly its chunks of the whole stream (every chunk but the stream's last is full)."""
        for position, question in enumerate(questions):
            if (position // chunk_size) % self.count == self.index:
                yield question

    def path(self, path) -> Path:
        """Where this shard keeps what it writes for the output ``path``."""
        path = Path(path)
        return path.with_name(f"{path.name}.shard-{self.index}-of-{self.count}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def plan_report(train_questions, store, shards: int, val_questions: Sequence = ()) -> list[str]:
    """What each shard of a training run over ``store`` holds: its training questions and
    images, its validation questions, and the feature files of its images (what the machine
    that plays it needs on its disk)."""
    from nablafol.data import iter_questions
    from nablafol.data.feature_files import FILE_PATTERN
    position = feature_position(store)
    counts = count_images(iter_questions(train_questions), train_questions)
    if shards > len(counts):  # the run refuses a shard with nothing to train on: so does its plan, in one line
        raise ShardingError(f"{shards:,} shards for {len(counts):,} images of training questions: a shard would "
                            f"have no question to train on; use at most {len(counts):,}")
    train = ImagePlan.cut(counts, position, shards)
    val_counts = count_images(val_questions)
    val = ImagePlan.cut(val_counts, position, shards)
    lines = [f"{shards} shard{'s' * (shards != 1)} of {sum(counts.values()):,} training questions over "
             f"{len(counts):,} images (a process plays a contiguous block of shards)"]
    for shard in range(shards):
        images = train.images(shard)
        val_images = val.images(shard)
        files = sorted({store.location(image)[0] for image in images + val_images if store.location(image)})
        names = ", ".join(FILE_PATTERN.format(number) for number in files) or "none"
        lines.append(f"shard {shard}: {sum(counts[i] for i in images):,} training questions, {len(images):,} images; "
                     f"{sum(val_counts[i] for i in val_images):,} validation questions; features: {names}")
    return lines
