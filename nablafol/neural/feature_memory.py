"""Object features kept in memory between reads: :class:`FeatureMemory`.

Training reads every training image once per epoch, and each batch of questions touches
dozens of images: from GQA's gzip-compressed HDF5 files, reading took about as long as the
training step itself on the embedded dataset (``docs/oracle-learning.md``). A
:class:`FeatureMemory` wraps a :class:`~nablafol.data.FeatureStore` and keeps the images it
has read, the most recently used first, up to ``max_bytes`` of feature arrays (the
embedded dataset's 2,100 images take under 4 MB; GQA's 2048-wide features about 0.8 MB an
image, so the default keeps about 1,300 of them). It answers what a perception reads of a
store (``in``, ``object_count``, ``get_many``, ``[image]``, ``close``), the same arrays.

    >>> from nablafol.data import FeatureStore
    >>> memory = FeatureMemory(FeatureStore("tests/fixtures/gqa/features"))
    >>> image = memory.image_ids()[0]
    >>> memory[image] is memory[image], memory.object_count(image) == len(memory[image].features)
    (True, True)
"""
from __future__ import annotations

from typing import Iterable

from nablafol.caching import bounded_cache

__all__ = ["FeatureMemory", "DEFAULT_BYTES"]

DEFAULT_BYTES = 1 << 30


class FeatureMemory:
    """``store``'s images, each read once while it stays among the ``max_bytes`` most recently used."""

    def __init__(self, store, max_bytes: int = DEFAULT_BYTES):
        if not (isinstance(max_bytes, int) and max_bytes >= 1):
            raise ValueError(f"FeatureMemory: max_bytes must be a whole number >= 1, got {max_bytes!r}")
        self.store, self.max_bytes = store, max_bytes
        self._read = None  # made on the first read, sized by the first image's bytes

    def _cached(self, image_id: str):
        if self._read is None:
            first = self.store[image_id]
            # an image's bytes: its slots are at most what GQA pads to (100), its width the file's
            per_image = max(1, 100 * (first.features.shape[1] + 4) * 4)
            self._read = bounded_cache(self.store.__getitem__, max(1, self.max_bytes // per_image))
        return self._read(image_id)

    def __getitem__(self, image_id: str):
        return self._cached(image_id)

    def get_many(self, image_ids: Iterable[str]) -> list:
        return [self._cached(i) for i in image_ids]

    def __contains__(self, image_id: object) -> bool:
        return image_id in self.store

    def __len__(self) -> int:
        return len(self.store)

    def image_ids(self) -> list[str]:
        return self.store.image_ids()

    def object_count(self, image_id: str) -> int:
        return self.store.object_count(image_id)

    def close(self) -> None:
        """Close the store's files (before a fork); what is in memory stays."""
        self.store.close()

    def __repr__(self) -> str:
        held = self._read.cache_info().currsize if self._read is not None else 0
        return f"FeatureMemory({self.store!r}, {held} images held)"
