"""GQA object features: the HDF5 fixture read lazily, in batches, and every bad input."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from nablafol.data import FeatureStore, ObjectFeatures
from nablafol.errors import InputFileError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
FEATURES = FIXTURES / "features"
INFO = json.loads((FEATURES / "gqa_objects_info.json").read_text())


def open_paths() -> set[str]:
    """Files this process holds open (Linux), to check that the store closes its files."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return found


def stored(image_id: str) -> tuple[np.ndarray, np.ndarray]:
    entry = INFO[image_id]
    with h5py.File(FEATURES / f"gqa_objects_{entry['file']}.h5", "r") as handle:
        return handle["features"][entry["idx"]], handle["bboxes"][entry["idx"]]


@pytest.mark.parametrize("image_id", sorted(INFO))
def test_an_image_reads_its_first_objects_num_rows(image_id):
    features, boxes = stored(image_id)
    count = INFO[image_id]["objectsNum"]
    with FeatureStore(FEATURES) as store:
        result = store[image_id]
    assert isinstance(result, ObjectFeatures)
    assert result.features.shape == (count, 16) and result.features.dtype == np.float32
    assert result.boxes.shape == (count, 4) and result.boxes.dtype == np.float32
    np.testing.assert_array_equal(result.features, features[:count])
    np.testing.assert_array_equal(result.boxes, boxes[:count])
    assert not features[count:].any()  # the fixture's padding really is beyond objectsNum
    assert (result.width, result.height) == (INFO[image_id]["width"], INFO[image_id]["height"])


def test_batches_keep_the_order_asked_and_equal_single_reads():
    order = ["2417468", "n161313", "2354786", "2417468"]
    with FeatureStore(FEATURES) as store:
        batch = store.get_many(order)
        singles = [store[image_id] for image_id in order]
        assert len(store) == 3 and "n161313" in store and "nope" not in store
        assert sorted(store.image_ids()) == sorted(INFO)
    for got, expected in zip(batch, singles, strict=True):
        np.testing.assert_array_equal(got.features, expected.features)
        np.testing.assert_array_equal(got.boxes, expected.boxes)
        assert (got.width, got.height) == (expected.width, expected.height)


def test_files_open_lazily_and_close_on_exit():
    h5_files = {str((FEATURES / f"gqa_objects_{k}.h5").resolve()) for k in (0, 1)}
    store = FeatureStore(FEATURES)
    assert not h5_files & open_paths()
    with store:
        store["2417468"]  # file 1 only
        assert open_paths() & h5_files == {str((FEATURES / "gqa_objects_1.h5").resolve())}
    assert not h5_files & open_paths()
    store["n161313"]  # reusable after close: reopens lazily
    store.close()
    assert not h5_files & open_paths()


@pytest.fixture
def copy_of_features(tmp_path) -> Path:
    folder = tmp_path / "features"
    shutil.copytree(FEATURES, folder)
    return folder


def edit_info(folder: Path, image_id: str, **changes) -> None:
    path = folder / "gqa_objects_info.json"
    info = json.loads(path.read_text())
    info[image_id].update(changes)
    path.write_text(json.dumps(info))


def message(folder: Path, image_id: str) -> str:
    with FeatureStore(folder) as store, pytest.raises(InputFileError) as caught:
        store[image_id]
    return str(caught.value)


def test_unknown_image_names_the_index_and_the_image(copy_of_features):
    info = copy_of_features / "gqa_objects_info.json"
    assert message(copy_of_features, "999") == f"{info} (image 999): no features listed for this image"
    with FeatureStore(copy_of_features) as store, pytest.raises(InputFileError, match="image 999"):
        store.get_many(["n161313", "999"])


def test_missing_h5_file(copy_of_features):
    edit_info(copy_of_features, "n161313", file=7)
    assert message(copy_of_features, "n161313") == (
        f"{copy_of_features / 'gqa_objects_7.h5'} (image n161313): "
        f"no such file (the features index points to it)")


def test_nan_features_name_the_file_and_image(copy_of_features):
    with h5py.File(copy_of_features / "gqa_objects_0.h5", "r+") as handle:
        handle["features"][1, 2, 3] = np.nan
    assert message(copy_of_features, "2354786") == (
        f"{copy_of_features / 'gqa_objects_0.h5'} (image 2354786, row 1): "
        f"features hold NaN or infinite values")
    with FeatureStore(copy_of_features) as store:  # the other image of that file is fine
        assert store["n161313"].features.shape == (6, 16)


def test_infinite_boxes(copy_of_features):
    with h5py.File(copy_of_features / "gqa_objects_1.h5", "r+") as handle:
        handle["bboxes"][0, 0, 0] = np.inf
    assert message(copy_of_features, "2417468").endswith("(image 2417468, row 0): bboxes hold NaN "
                                                          "or infinite values")


def test_objects_num_and_idx_out_of_range(copy_of_features):
    info = copy_of_features / "gqa_objects_info.json"
    edit_info(copy_of_features, "2417468", objectsNum=101)
    assert message(copy_of_features, "2417468") == (
        f"{info} (image 2417468): objectsNum 101 is out of range: gqa_objects_1.h5 holds 100 "
        f"slots per image")
    edit_info(copy_of_features, "2417468", objectsNum=4, idx=1)
    assert message(copy_of_features, "2417468") == (
        f"{info} (image 2417468): idx 1 is out of range: gqa_objects_1.h5 holds 1 images")
    edit_info(copy_of_features, "2417468", idx=-1)
    with pytest.raises(InputFileError, match=r"\(image 2417468\): idx must be >= 0, found -1"):
        FeatureStore(copy_of_features).image_ids()
    edit_info(copy_of_features, "2417468", idx=0, objectsNum=2.5)
    with pytest.raises(InputFileError, match="objectsNum must be an integer, found a number"):
        FeatureStore(copy_of_features).image_ids()


def test_broken_h5_files(copy_of_features):
    path = copy_of_features / "gqa_objects_1.h5"
    path.write_text("not hdf5")
    assert message(copy_of_features, "2417468").startswith(
        f"{path} (image 2417468): is not a readable HDF5 file")
    with h5py.File(path, "w") as handle:
        handle.create_dataset("features", data=np.zeros((1, 100, 16), np.float32))
    assert message(copy_of_features, "2417468") == (
        f"{path} (image 2417468): needs a dataset 'bboxes' of shape (images, slots, 4)")
    with h5py.File(path, "a") as handle:
        handle.create_dataset("bboxes", data=np.zeros((1, 50, 4), np.float32))
    assert "disagree on images and slots" in message(copy_of_features, "2417468")


def test_missing_or_broken_index(tmp_path, copy_of_features):
    with pytest.raises(InputFileError, match=r"no such folder"):
        FeatureStore(tmp_path / "nothing")
    info = copy_of_features / "gqa_objects_info.json"
    info.unlink()
    with pytest.raises(InputFileError, match=r"gqa_objects_info\.json: no such file"):
        FeatureStore(copy_of_features)["n161313"]
    info.write_text('{"n161313": {"file": 0, "idx": 0}}')
    with pytest.raises(InputFileError, match=r"\(image n161313\): objectsNum is missing"):
        FeatureStore(copy_of_features)["n161313"]
    info.write_text('{"n161313": [0, 0, 6]}')
    with pytest.raises(InputFileError, match="the entry must be a JSON object, found a list"):
        len(FeatureStore(copy_of_features))


def test_index_may_live_elsewhere(tmp_path, copy_of_features):
    moved = tmp_path / "index.json"
    shutil.move(copy_of_features / "gqa_objects_info.json", moved)
    with FeatureStore(copy_of_features, info=moved) as store:
        assert store["2354786"].features.shape == (5, 16)
