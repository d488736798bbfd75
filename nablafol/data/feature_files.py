"""GQA's Faster-RCNN object features, read lazily: :class:`FeatureStore`.

GQA ships them as a folder (https://cs.stanford.edu/people/dorarad/gqa/download.html,
"objects features")::

    gqa_objects_info.json   {imageId: {"file": K, "idx": i, "objectsNum": n,
                                       "width": W, "height": H}}
    gqa_objects_K.h5        "features": (images, 100, 2048) float32
                            "bboxes":   (images, 100, 4)    x1, y1, x2, y2 in pixels

Image ``imageId`` is row ``idx`` of file ``K``; its first ``objectsNum`` slots are real
detections, the rest padding. The feature width is taken from the file (any width works).

The index is read once (member by member, kept as compact tuples); each HDF5 file is
opened on first use and closed by :meth:`FeatureStore.close` or the ``with`` block. Every
problem (missing file or dataset, unknown image, ``objectsNum`` or ``idx`` out of range,
NaN or infinite values) raises :class:`InputFileError` naming the file and the image.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, NamedTuple

import numpy as np

from nablafol.data.fields import RecordChecker
from nablafol.data.json_stream import iter_object_members
from nablafol.errors import InputFileError

if TYPE_CHECKING:  # imported where files are opened: every command imports this module, few read features
    import h5py

INFO_NAME = "gqa_objects_info.json"
FILE_PATTERN = "gqa_objects_{}.h5"


class ObjectFeatures(NamedTuple):
    """One image's detections: ``features`` (n, D) float32, ``boxes`` (n, 4) float32 as
    x1, y1, x2, y2 pixels, and the image size."""

    features: np.ndarray
    boxes: np.ndarray
    width: float
    height: float


class _Entry(NamedTuple):
    file: int
    idx: int
    count: int
    width: float
    height: float


def _outside_reference(handle, name: str) -> str | None:
    """How dataset ``name`` of an open HDF5 file would read outside the file (a link to another
    file or within it, storage in raw external files, a virtual dataset mapping others), or None.
    An HDF5 file can name any file of the machine, a pipe included (a read that never ends): the
    link is read as a link, never followed, before the dataset is opened."""
    import h5py
    link = handle.get(name, getlink=True)
    if link is None:
        return None  # missing: the caller says what is needed
    if isinstance(link, h5py.ExternalLink):
        return f"is a link to {link.filename!r}"
    if not isinstance(link, h5py.HardLink):
        return f"is a link ({type(link).__name__}) to {getattr(link, 'path', '?')!r}"
    dataset = handle.get(name)
    if isinstance(dataset, h5py.Dataset):
        if dataset.external:
            return f"keeps its data in external files ({dataset.external[0][0]!r}...)"
        if dataset.is_virtual:
            return "is a virtual dataset (its data lie in other files)"
    return None


class FeatureStore:
    """``{imageId: ObjectFeatures}`` over a GQA features folder, read on demand.

    >>> with FeatureStore("tests/fixtures/gqa/features") as store:
    ...     features, boxes, width, height = store["2354786"]
    >>> features.shape[1], boxes.shape[1]
    (16, 4)
    """

    def __init__(self, folder: str | os.PathLike, info: str | os.PathLike | None = None,
                 expected_width: int | None = None):
        """``folder`` holds the ``gqa_objects_K.h5`` files; ``info`` is the index JSON
        (default: ``folder/gqa_objects_info.json``); ``expected_width``, when given, is the
        feature width a reader needs (a model's), checked file by file so a refusal names the file."""
        self.folder = Path(folder)
        self.expected_width = expected_width
        self.info_path = Path(info) if info is not None else self.folder / INFO_NAME
        if not self.folder.is_dir():
            raise InputFileError(self.folder, "no such folder (expected GQA's object features)")
        self._entries: dict[str, _Entry] | None = None
        self._files: dict[int, h5py.File] = {}

    # -- index ---------------------------------------------------------------------------
    @property
    def _index(self) -> dict[str, _Entry]:
        if self._entries is None:
            self._entries = self._read_info()
        return self._entries

    def _read_info(self) -> dict[str, _Entry]:
        entries: dict[str, _Entry] = {}
        for image_id, record in iter_object_members(self.info_path, expected="{imageId: {file, idx, "
                                                    "objectsNum, width, height}}"):
            check = RecordChecker(self.info_path, f"image {image_id}")
            check.object(record, "the entry")
            for key in ("file", "idx", "objectsNum", "width", "height"):
                if key not in record:
                    raise check.fail(f"{key} is missing")
            if image_id in entries:
                raise check.fail("appears twice")
            entries[image_id] = _Entry(
                file=check.integer(record["file"], "file"),
                idx=check.integer(record["idx"], "idx"),
                count=check.integer(record["objectsNum"], "objectsNum"),
                width=check.positive(record["width"], "width"),
                height=check.positive(record["height"], "height"))
        return entries

    def __contains__(self, image_id: object) -> bool:
        return image_id in self._index

    def __len__(self) -> int:
        return len(self._index)

    def image_ids(self) -> list[str]:
        return list(self._index)

    def location(self, image_id: str) -> tuple[int, int] | None:
        """``(file, row)`` of the image's features, or None when the index does not list it
        (reads no HDF5 file: a process planning its share of a folder opens nothing)."""
        entry = self._index.get(image_id)
        return None if entry is None else (entry.file, entry.idx)

    def object_count(self, image_id: str) -> int:
        """The image's number of real detections (``objectsNum``)."""
        return self._entry(image_id).count

    # -- reading -------------------------------------------------------------------------
    def _entry(self, image_id: str) -> _Entry:
        try:
            return self._index[image_id]
        except KeyError:
            raise InputFileError(self.info_path, "no features listed for this image",
                                 f"image {image_id}") from None

    def _file(self, number: int, image_id: str) -> h5py.File:
        if number not in self._files:
            import h5py
            path = self.folder / FILE_PATTERN.format(number)
            if not path.is_file():
                what = "is not a regular file (a pipe, a device or a folder)" if os.path.lexists(path) else \
                    "no such file"  # a pipe is never opened: its reader would wait for a writer
                raise InputFileError(path, f"{what} (the features index points to it)", f"image {image_id}")
            try:
                handle = h5py.File(path, "r")
            except OSError as error:
                raise InputFileError(path, f"is not a readable HDF5 file ({error})",
                                     f"image {image_id}") from None
            for name, last in (("features", None), ("bboxes", 4)):
                outside = _outside_reference(handle, name)
                if outside is not None:
                    handle.close()
                    raise InputFileError(path, f"dataset {name!r} {outside}: features are read from the file "
                                               f"itself only; copy the data in (h5repack)", f"image {image_id}")
                dataset = handle.get(name)
                if not isinstance(dataset, h5py.Dataset) or dataset.ndim != 3 or (
                        last is not None and dataset.shape[2] != last):
                    handle.close()
                    shape = "(images, slots, D)" if last is None else "(images, slots, 4)"
                    raise InputFileError(path, f"needs a dataset {name!r} of shape {shape}",
                                         f"image {image_id}")
            width = handle["features"].shape[2]
            if self.expected_width is not None and width != self.expected_width:
                handle.close()
                raise InputFileError(path, f"features are {width} numbers wide, the model reads "
                                           f"{self.expected_width}", f"image {image_id}")
            known = next(iter(self._files.values()), None)
            if known is not None and known["features"].shape[2] != width:  # one folder, one width
                handle.close()
                raise InputFileError(path, f"features are {width} numbers wide, the folder's other "
                                           f"files {known['features'].shape[2]}", f"image {image_id}")
            if handle["features"].shape[:2] != handle["bboxes"].shape[:2]:
                shapes = (handle["features"].shape, handle["bboxes"].shape)
                handle.close()
                raise InputFileError(path, f"features {shapes[0]} and bboxes {shapes[1]} "
                                           f"disagree on images and slots", f"image {image_id}")
            self._files[number] = handle
        return self._files[number]

    def _read(self, image_id: str, entry: _Entry) -> ObjectFeatures:
        handle = self._file(entry.file, image_id)
        path = self.folder / FILE_PATTERN.format(entry.file)
        images, slots = handle["features"].shape[:2]
        if entry.idx >= images:
            raise InputFileError(self.info_path, f"idx {entry.idx} is out of range: {path.name} "
                                                 f"holds {images} images", f"image {image_id}")
        if entry.count > slots:
            raise InputFileError(self.info_path, f"objectsNum {entry.count} is out of range: "
                                                 f"{path.name} holds {slots} slots per image",
                                 f"image {image_id}")
        with np.errstate(over="ignore"):  # float64 beyond float32 becomes inf, refused below (no warning)
            features = np.asarray(handle["features"][entry.idx, : entry.count], dtype=np.float32)
            boxes = np.asarray(handle["bboxes"][entry.idx, : entry.count], dtype=np.float32)
        for name, values in (("features", features), ("bboxes", boxes)):
            if not np.isfinite(values).all():
                raise InputFileError(path, f"{name} hold NaN or infinite values",
                                     f"image {image_id}, row {entry.idx}")
        return ObjectFeatures(features, boxes, entry.width, entry.height)

    def __getitem__(self, image_id: str) -> ObjectFeatures:
        """``(features[:n], boxes[:n], width, height)`` of one image."""
        return self._read(image_id, self._entry(image_id))

    def get_many(self, image_ids: Iterable[str]) -> list[ObjectFeatures]:
        """Several images, in the order asked; read in (file, row) order, each row once."""
        image_ids = list(image_ids)
        wanted = {image_id: self._entry(image_id) for image_id in image_ids}
        read = {image_id: self._read(image_id, entry)
                for image_id, entry in sorted(wanted.items(), key=lambda item: item[1][:2])}
        return [read[image_id] for image_id in image_ids]

    # -- life ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close every open HDF5 file (the store can be used again: files reopen lazily)."""
        files, self._files = self._files, {}
        for handle in files.values():
            handle.close()

    def __enter__(self) -> FeatureStore:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FeatureStore({str(self.folder)!r}, open files: {sorted(self._files)})"
