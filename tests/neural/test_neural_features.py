"""Feature batches: GQA's feature folder read into padded tensors, and bad input refused."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from nablafol.data import FeatureStore, ObjectFeatures
from nablafol.errors import InputFileError, ShapeError
from nablafol.neural import FeatureBatch, NeuralOracleError

FEATURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa" / "features"
INFO = json.loads((FEATURES / "gqa_objects_info.json").read_text())


def test_a_batch_from_the_store_is_padded_to_its_largest_image():
    order = ["2417468", "n161313", "2354786"]
    with FeatureStore(FEATURES) as store:
        batch = FeatureBatch.from_store(store, order)
        singles = [store[i] for i in order]
    counts = [INFO[i]["objectsNum"] for i in order]
    assert batch.counts.tolist() == counts and batch.image_ids == tuple(order)
    assert tuple(batch.features.shape) == (3, max(counts), 16) and batch.features.dtype == torch.float32
    assert tuple(batch.boxes.shape) == (3, max(counts), 4)
    assert batch.image_size.tolist() == [[INFO[i]["width"], INFO[i]["height"]] for i in order]
    for b, single in enumerate(singles):
        n = counts[b]
        np.testing.assert_array_equal(batch.features[b, :n].numpy(), single.features)
        np.testing.assert_array_equal(batch.boxes[b, :n].numpy(), single.boxes)
        assert not batch.features[b, n:].any() and not batch.boxes[b, n:].any()
        assert batch.object_mask[b].tolist() == [True] * n + [False] * (max(counts) - n)


def test_an_image_the_store_lacks_raises_the_stores_error():
    with FeatureStore(FEATURES) as store, pytest.raises(InputFileError, match="image nope"):
        FeatureBatch.from_store(store, ["2417468", "nope"])


def test_nan_in_the_file_raises_the_stores_error(tmp_path):
    folder = tmp_path / "features"
    shutil.copytree(FEATURES, folder)
    entry = INFO["2354786"]
    with h5py.File(folder / f"gqa_objects_{entry['file']}.h5", "r+") as handle:
        handle["features"][entry["idx"], 0, 3] = np.nan
    with FeatureStore(folder) as store, pytest.raises(InputFileError, match="NaN") as info:
        FeatureBatch.from_store(store, ["2354786"])
    assert "2354786" in str(info.value)


def _image(n=2, d=3):
    return ObjectFeatures(np.ones((n, d), np.float32), np.tile(np.float32([[0, 0, 4, 4]]), (n, 1)), 8.0, 6.0)


@pytest.mark.parametrize("images, error, says", [
    ([], NeuralOracleError, "no images"),
    ([_image(d=3), _image(d=4)], ShapeError, "different widths"),
    ([ObjectFeatures(np.ones(3, np.float32), np.zeros((1, 4), np.float32), 8.0, 6.0)], ShapeError, "features must be"),
    ([ObjectFeatures(np.ones((2, 3), np.float32), np.zeros((3, 4), np.float32), 8.0, 6.0)], ShapeError, "boxes must be"),
    ([_image(), ObjectFeatures(np.full((1, 3), np.nan, np.float32), np.zeros((1, 4), np.float32), 8.0, 6.0)],
     NeuralOracleError, "image #1: features hold NaN"),
    ([ObjectFeatures(np.ones((1, 3), np.float32), np.float32([[0, 0, np.inf, 1]]), 8.0, 6.0)],
     NeuralOracleError, "boxes hold NaN or infinite"),
    ([ObjectFeatures(np.ones((1, 3), np.float32), np.zeros((1, 4), np.float32), 0.0, 6.0)],
     NeuralOracleError, "width must be a positive number"),
])
def test_bad_arrays_are_refused_in_one_line(images, error, says):
    with pytest.raises(error, match=says) as info:
        FeatureBatch.from_objects(images)
    assert "\n" not in str(info.value)


def test_images_without_objects_and_dtype_and_device_moves():
    empty = ObjectFeatures(np.zeros((0, 3), np.float32), np.zeros((0, 4), np.float32), 8.0, 6.0)
    batch = FeatureBatch.from_objects([empty, _image(n=2)], image_ids=["a", "b"])
    assert batch.counts.tolist() == [0, 2] and tuple(batch.features.shape) == (2, 2, 3)
    assert FeatureBatch.from_objects([empty]).features.shape == (1, 0, 3)
    moved = batch.to("cpu", torch.float64)
    assert moved.features.dtype == moved.boxes.dtype == moved.image_size.dtype == torch.float64
    assert moved.counts.dtype == torch.int64 and moved.image_ids == ("a", "b")
    with pytest.raises(ShapeError, match="1 image ids for 2 images"):
        FeatureBatch.from_objects([empty, empty], image_ids=["a"])
