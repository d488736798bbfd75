"""Object features of a batch of images as padded tensors: :class:`FeatureBatch`.

Image ``b`` has ``counts[b]`` real detections in slots ``0 .. counts[b]-1``; the slots after
them are zeros and mean nothing (the oracle masks them). Tensors are padded to the batch's
largest image, not to GQA's 100 slots, so small batches stay small.

    >>> import numpy as np
    >>> from nablafol.data import ObjectFeatures
    >>> one = ObjectFeatures(np.ones((2, 3), np.float32), np.array([[0, 0, 10, 10], [5, 5, 20, 30]], np.float32), 40, 30)
    >>> empty = ObjectFeatures(np.zeros((0, 3), np.float32), np.zeros((0, 4), np.float32), 40, 30)
    >>> batch = FeatureBatch.from_objects([one, empty])
    >>> tuple(batch.features.shape), batch.counts.tolist(), batch.image_size.tolist()
    ((2, 2, 3), [2, 0], [[40.0, 30.0], [40.0, 30.0]])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from nablafol.data.feature_files import FeatureStore, ObjectFeatures
from nablafol.errors import ShapeError

from .errors import NeuralOracleError

__all__ = ["FeatureBatch"]


@dataclass(frozen=True)
class FeatureBatch:
    """Padded object features of ``B`` images (``M`` = the largest image's object count).

    ``features`` ``(B, M, D)`` float; ``boxes`` ``(B, M, 4)`` x1, y1, x2, y2 in pixels;
    ``image_size`` ``(B, 2)`` width, height in pixels; ``counts`` ``(B,)`` int64 real objects.
    """

    features: torch.Tensor
    boxes: torch.Tensor
    image_size: torch.Tensor
    counts: torch.Tensor
    image_ids: tuple[str, ...] | None = None

    @classmethod
    def from_store(cls, store: FeatureStore, image_ids: Sequence[str], device=None,
                   dtype: torch.dtype = torch.float32) -> "FeatureBatch":
        """Read ``image_ids`` from a GQA feature folder (missing images, NaN and bad shapes
        raise the store's :class:`~nablafol.errors.InputFileError`, naming file and image)."""
        image_ids = [str(i) for i in image_ids]
        return cls.from_objects(store.get_many(image_ids), device=device, dtype=dtype, image_ids=image_ids)

    @classmethod
    def from_objects(cls, images: Sequence[ObjectFeatures], device=None, dtype: torch.dtype = torch.float32,
                     image_ids: Sequence[str] | None = None) -> "FeatureBatch":
        """Pad per-image ``(features (n, D), boxes (n, 4), width, height)`` into one batch."""
        images = list(images)
        if not images:
            raise NeuralOracleError("feature batch: no images (a batch needs at least one)")
        if image_ids is not None and len(image_ids) != len(images):
            raise ShapeError(f"feature batch: {len(image_ids)} image ids for {len(images)} images")
        names = [str(i) for i in image_ids] if image_ids is not None else [f"#{b}" for b in range(len(images))]
        dims = set()
        for name, image in zip(names, images):
            _check_image(name, image)
            dims.add(np.shape(image.features)[1])
        if len(dims) > 1:
            raise ShapeError(f"feature batch: images have features of different widths {sorted(dims)}")
        counts = np.array([len(image.features) for image in images], dtype=np.int64)
        width = int(counts.max())
        features = np.zeros((len(images), width, dims.pop()), dtype=np.float32)
        boxes = np.zeros((len(images), width, 4), dtype=np.float32)
        for b, image in enumerate(images):
            features[b, : counts[b]] = image.features
            boxes[b, : counts[b]] = image.boxes
        sizes = np.array([[image.width, image.height] for image in images], dtype=np.float64)
        return cls(torch.as_tensor(features, dtype=dtype, device=device),
                   torch.as_tensor(boxes, dtype=dtype, device=device),
                   torch.as_tensor(sizes, dtype=dtype, device=device),
                   torch.as_tensor(counts, device=device),
                   tuple(image_ids) if image_ids is not None else None)

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    @property
    def feature_dim(self) -> int:
        return int(self.features.shape[-1])

    @property
    def device(self) -> torch.device:
        return self.features.device

    @property
    def object_mask(self) -> torch.Tensor:
        """``(B, M)`` bool: the real objects."""
        slots = torch.arange(self.features.shape[1], device=self.counts.device)
        return slots[None, :] < self.counts[:, None]

    def to(self, device=None, dtype: torch.dtype | None = None) -> "FeatureBatch":
        """The batch on ``device`` (float tensors in ``dtype`` when given)."""
        cast = (lambda t: t.to(device=device, dtype=dtype)) if dtype is not None else (lambda t: t.to(device))
        return FeatureBatch(cast(self.features), cast(self.boxes), cast(self.image_size),
                            self.counts.to(device), self.image_ids)

    def to_device(self, device=None) -> "FeatureBatch":
        """The batch on ``device`` (None: where it is), the same values as :meth:`to`. To a CUDA
        device, the tensors are pinned and copied with ``non_blocking`` on a stream of their own,
        which only the calling thread waits for: a reader thread prepares the next batch while
        the device runs the current step, whose stream (the default one) may use it at once."""
        if device is None or torch.device(device).type != "cuda":
            return self.to(device)
        device = torch.device(device)
        consumer, copying = torch.cuda.default_stream(device), torch.cuda.Stream(device)
        with torch.cuda.stream(copying):
            tensors = [t.pin_memory().to(device, non_blocking=True)
                       for t in (self.features, self.boxes, self.image_size, self.counts)]
        for tensor in tensors:  # the allocator keeps them until the consumer's work on them is done
            tensor.record_stream(consumer)
        copying.synchronize()
        return FeatureBatch(*tensors, self.image_ids)


def _check_image(name: str, image) -> None:
    """One line on what is wrong with an image's arrays (shapes, non-finite values, size)."""
    features, boxes = np.asarray(image.features), np.asarray(image.boxes)
    where = f"feature batch, image {name}"
    if features.ndim != 2:
        raise ShapeError(f"{where}: features must be (objects, D), got shape {features.shape}")
    if boxes.ndim != 2 or boxes.shape[1] != 4 or boxes.shape[0] != features.shape[0]:
        raise ShapeError(f"{where}: boxes must be ({features.shape[0]}, 4) to match the features, "
                         f"got shape {boxes.shape}")
    for label, values in (("features", features), ("boxes", boxes)):
        if not np.isfinite(values).all():
            raise NeuralOracleError(f"{where}: {label} hold NaN or infinite values")
    for label, value in (("width", image.width), ("height", image.height)):
        if not (isinstance(value, (int, float, np.number)) and np.isfinite(value) and value > 0):
            raise NeuralOracleError(f"{where}: image {label} must be a positive number, got {value!r}")
