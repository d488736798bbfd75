"""The embedded dataset, generated and written in GQA's own formats.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     summary = generate_dataset(out, n_train=4, n_val=2, n_testdev=2, questions_per_scene=3)
    >>> summary.scenes
    {'train': 4, 'val': 2, 'testdev': 2}

writes::

    train_balanced_questions.json  val_balanced_questions.json  testdev_balanced_questions.json
    train_choices.json             val_choices.json              testdev_choices.json
    train_sceneGraphs.json         val_sceneGraphs.json          (no scene graphs for testdev, as in GQA)
    features/gqa_objects_info.json features/gqa_objects_0.h5     (every split; rows in scene-graph object order)
    ontology/                      hypernyms.json, attributes.json, relations.json, SOURCE.md
    dataset_card.json              seed, sizes, answer counts, feature settings, per-concept strengths, vocabulary

Deterministic: the same arguments give byte-identical files (every random draw comes from
numpy generators seeded by ``(seed, stream, split)``, and nothing iterates over an
unordered set). Each split's scenes, questions and the concept codes have their own
stream, so changing ``n_val`` leaves the training split unchanged. The default sizes
(1,500 / 300 / 300 scenes, about 10 questions each) keep a demo's training to a couple of
minutes on two cores.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from nablafol.data import Question, SceneGraph, write_questions, write_scene_graphs
from nablafol.data.choices import write_choices
from nablafol.errors import NablafolError

from .choices import dataset_choices
from .crisp import CrispExecutor
from nablafol.synthetic.object_features import SLOTS, ConceptCodes, write_features
from nablafol.data.files import write_text
from .question_generator import QuestionGenerator, balance_yes_no, to_questions
from .scenes import SceneGenerator
from .vocabulary import Vocabulary, write_ontology

__all__ = ["generate_dataset", "build_dataset", "SyntheticDataset", "DatasetSummary", "DatasetError",
           "SPLITS", "FORMAT_VERSION"]

SPLITS = ("train", "val", "testdev")
FORMAT_VERSION = 1
_IMAGE_BASE = 2_000_000
_OBJECT_BASE = 1_000_000
_QUESTION_BASE = 10_000_000
_STREAMS = {"scenes": 1, "questions": 2, "balance": 3, "codes": 4, "features": 5}

Progress = Callable[[int, int, str], None]


class DatasetError(NablafolError, ValueError):
    """Arguments the generator cannot use (one line saying which and why)."""


@dataclass
class SyntheticDataset:
    """The dataset in memory: per split its scene graphs and questions, and the vocabulary."""

    seed: int
    vocabulary: Vocabulary
    scenes: dict[str, list[SceneGraph]]
    questions: dict[str, list[Question]]
    width: int
    height: int
    spatial_neighbours: int | None = None  # see SceneGenerator: None stores every spatial relation


@dataclass(frozen=True)
class Generator:
    """The generator's own knowledge of a dataset it wrote (what the files do not all say:
    test-dev's scene graphs, every concept's code)."""

    dataset: SyntheticDataset
    codes: ConceptCodes
    noise_std: float
    context_scale: float


@dataclass(frozen=True)
class DatasetSummary:
    """What :func:`generate_dataset` wrote: folder, seed, scenes and questions per split, files."""

    out_dir: Path
    seed: int
    scenes: dict[str, int]
    questions: dict[str, int]
    files: tuple[str, ...] = field(default=())
    # what made the files, in memory (for the Bayes oracle, nablafol.synthetic.bayes): the
    # dataset, the concept codes, the noise and context scale of the features
    generator: "Generator | None" = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"out_dir": str(self.out_dir), "seed": self.seed, "scenes": dict(self.scenes),
                "questions": dict(self.questions), "files": list(self.files)}


def stream_rng(seed: int, stream: str, split: int = 0) -> np.random.Generator:
    """The random stream ``stream`` of a dataset's ``seed`` (one per split index): the streams do
    not draw from one another, so adding draws to one leaves the others as they were."""
    return np.random.default_rng(np.random.SeedSequence([seed, _STREAMS[stream], split]))


CARD_NAME = "dataset_card.json"
#: who wrote a folder, as its card says (the first thing written, the last rewritten)
CARD_MAKER = {"name": "nablafol synthetic GQA", "generator": "nablafol.synthetic"}


def _check_replaceable(out: Path) -> None:
    """Refuse a folder with something in it that no earlier generate wrote: its files may be a
    user's real GQA files of the names written here (questions, scene graphs, features)."""
    if not out.is_dir() or next(out.iterdir(), None) is None:
        return
    card = out / CARD_NAME
    try:
        written_here = json.loads(card.read_text(encoding="utf-8")).get("generator") == CARD_MAKER["generator"]
    except (OSError, ValueError, AttributeError):
        written_here = False
    if not written_here:
        raise DatasetError(f"{out}: holds files, and no dataset_card.json of an earlier generate: its files could be "
                           "replaced; give a new or empty folder")


def _check(n_train, n_val, n_testdev, seed, feature_dim, questions_per_scene) -> None:
    for name, value in (("n_train", n_train), ("n_val", n_val), ("n_testdev", n_testdev)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DatasetError(f"{name} must be a whole number >= 0, got {value!r}")
    if n_train + n_val + n_testdev == 0:
        raise DatasetError("the dataset needs at least one scene (n_train + n_val + n_testdev > 0)")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise DatasetError(f"seed must be a whole number >= 0, got {seed!r}")
    if not isinstance(feature_dim, int) or isinstance(feature_dim, bool) or feature_dim < 2:
        raise DatasetError(f"feature_dim must be a whole number >= 2, got {feature_dim!r}")
    if not isinstance(questions_per_scene, int) or isinstance(questions_per_scene, bool) or questions_per_scene < 1:
        raise DatasetError(f"questions_per_scene must be a whole number >= 1, got {questions_per_scene!r}")


# Scene sizes and feature noise of the default dataset: small scenes and moderate noise, so that
# an oracle trained from answers alone learns in minutes on two cores (credit assignment over
# fewer objects), while weak and near-invisible concepts keep perception imperfect.
MIN_OBJECTS, MAX_OBJECTS = 3, 8
NOISE_STD = 0.15


def build_dataset(n_train: int = 1500, n_val: int = 300, n_testdev: int = 300, seed: int = 0, *,
                  questions_per_scene: int = 10, vocabulary: Vocabulary | None = None,
                  progress: Progress | None = None, min_objects: int = MIN_OBJECTS,
                  max_objects: int = MAX_OBJECTS, large_share: float = 0.0,
                  spatial_neighbours: int | None = None,
                  on_split: Callable[[str, list], None] | None = None) -> SyntheticDataset:
    """Scenes and questions of every split, in memory (what :func:`generate_dataset` writes).
    ``on_split(split, questions)`` hears of each split's questions as soon as they are made (the
    demo's second process starts on the training questions while the other splits are drawn)."""
    _check(n_train, n_val, n_testdev, seed, 2, questions_per_scene)
    if not (isinstance(min_objects, int) and isinstance(max_objects, int) and 2 <= min_objects <= max_objects <= 100):
        raise DatasetError(f"objects per scene: need 2 <= min <= max <= 100, got {min_objects!r}, {max_objects!r}")
    if not (isinstance(large_share, (int, float)) and 0 <= large_share <= 1) or (large_share and max_objects == 100):
        raise DatasetError(f"large scenes: the share must be in [0, 1] and the largest ordinary scene below 100 "
                           f"objects, got {large_share!r} with {max_objects!r}")
    if spatial_neighbours is not None and (not isinstance(spatial_neighbours, int) or isinstance(spatial_neighbours, bool)
                                           or spatial_neighbours < 1):
        raise DatasetError(f"spatial neighbours: need a whole number >= 1 (or None for every pair), "
                           f"got {spatial_neighbours!r}")
    vocabulary = vocabulary if vocabulary is not None else Vocabulary.default()
    scene_generator = SceneGenerator(vocabulary, min_objects=min_objects, max_objects=max_objects,
                                     large_share=large_share, spatial_neighbours=spatial_neighbours)
    question_generator = QuestionGenerator(vocabulary, CrispExecutor(vocabulary.ontology()))
    sizes = dict(zip(SPLITS, (n_train, n_val, n_testdev)))
    total, done = sum(sizes.values()), 0
    image_ids = (str(_IMAGE_BASE + k) for k in itertools.count())
    object_ids = (str(_OBJECT_BASE + k) for k in itertools.count())
    next_question = _QUESTION_BASE
    scenes: dict[str, list[SceneGraph]] = {}
    questions: dict[str, list[Question]] = {}
    for index, split in enumerate(SPLITS):
        scene_rng, question_rng = stream_rng(seed, "scenes", index), stream_rng(seed, "questions", index)
        graphs, generated = [], []
        for _ in range(sizes[split]):
            graph = scene_generator.generate(scene_rng, next(image_ids), object_ids)
            graphs.append(graph)
            generated += question_generator.for_scene(graph, question_rng, questions_per_scene)
            done += 1
            if progress is not None:
                progress(done, total, f"{split} scenes and questions")
        kept = balance_yes_no(generated, stream_rng(seed, "balance", index))
        questions[split] = to_questions(kept, next_question)
        if on_split is not None:
            on_split(split, questions[split])
        next_question += len(kept)
        scenes[split] = graphs
    return SyntheticDataset(seed, vocabulary, scenes, questions, scene_generator.width, scene_generator.height,
                            spatial_neighbours)


def generate_dataset(out_dir, n_train: int = 1500, n_val: int = 300, n_testdev: int = 300, seed: int = 0,
                     feature_dim: int = 64, progress: Progress | None = None, *, questions_per_scene: int = 10,
                     noise_std: float = NOISE_STD, context_scale: float = 0.5,
                     vocabulary: Vocabulary | None = None, min_objects: int = MIN_OBJECTS,
                     max_objects: int = MAX_OBJECTS, large_share: float = 0.0,
                     spatial_neighbours: int | None = None,
                     on_split: Callable[[str, list], None] | None = None) -> DatasetSummary:
    """Generate the dataset and write it into ``out_dir``: a new or empty folder, or one an earlier
    ``generate_dataset`` wrote (its ``dataset_card.json`` says so), whose files are replaced; any
    other folder with something in it is refused (it may hold a user's GQA files of the same names).

    ``progress(done, total, stage)`` is called as scenes are made and as their features are
    written (``total`` is twice the number of scenes); ``on_split`` as :func:`build_dataset`'s,
    before anything is written. Returns a :class:`DatasetSummary`.
    """
    _check(n_train, n_val, n_testdev, seed, feature_dim, questions_per_scene)
    if not (isinstance(noise_std, (int, float)) and noise_std >= 0 and np.isfinite(noise_std)):
        raise DatasetError(f"noise_std must be a finite number >= 0, got {noise_std!r}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder")
    _check_replaceable(out)
    out.mkdir(parents=True, exist_ok=True)
    card = out / CARD_NAME
    # the folder marked as this generator's before anything else is written: a run stopped
    # half-way (interrupted, out of memory) leaves a folder the next run may write again
    write_text(card, json.dumps({**CARD_MAKER, "complete": False}, indent=1) + "\n")
    total_scenes = n_train + n_val + n_testdev
    total = 2 * total_scenes
    scene_progress = None if progress is None else (lambda done, _total, stage: progress(done, total, stage))
    dataset = build_dataset(n_train, n_val, n_testdev, seed, questions_per_scene=questions_per_scene,
                            vocabulary=vocabulary, progress=scene_progress, min_objects=min_objects,
                            max_objects=max_objects, large_share=large_share,
                            spatial_neighbours=spatial_neighbours, on_split=on_split)
    written: list[Path] = []
    choices = dataset_choices(dataset)
    for split in SPLITS:
        path = out / f"{split}_balanced_questions.json"
        write_questions(path, dataset.questions[split])
        written.append(path)
        path = out / f"{split}_choices.json"  # every split: the embedded test-dev has answers too
        write_choices(path, choices[split])
        written.append(path)
        if split != "testdev":
            path = out / f"{split}_sceneGraphs.json"
            write_scene_graphs(path, dataset.scenes[split])
            written.append(path)
    written += write_ontology(out / "ontology", dataset.vocabulary)
    codes = ConceptCodes.draw(dataset.vocabulary, feature_dim, stream_rng(seed, "codes"))
    all_graphs = [g for split in SPLITS for g in dataset.scenes[split]]
    done = [total_scenes]

    def feature_progress(count: int) -> None:
        done[0] += count
        if progress is not None:
            progress(done[0], total, "features")
    written += write_features(out / "features", all_graphs, codes, stream_rng(seed, "features"),
                              noise_std=noise_std, context_scale=context_scale, progress=feature_progress)
    write_text(card, json.dumps(_card(dataset, codes, feature_dim, noise_std, context_scale), indent=1,
                               ensure_ascii=False) + "\n")
    written.append(card)
    return DatasetSummary(out, seed, {s: len(dataset.scenes[s]) for s in SPLITS},
                          {s: len(dataset.questions[s]) for s in SPLITS},
                          tuple(sorted(str(p.relative_to(out)) for p in written)),
                          Generator(dataset, codes, noise_std, context_scale))


def _card(dataset: SyntheticDataset, codes: ConceptCodes, feature_dim: int, noise_std: float,
          context_scale: float) -> dict:
    splits = {}
    for split in SPLITS:
        answers = [q.answer for q in dataset.questions[split]]
        splits[split] = {"scenes": len(dataset.scenes[split]), "questions": len(answers),
                         "yes": answers.count("yes"), "no": answers.count("no"),
                         "sceneGraphs": split != "testdev"}
    return {
        **CARD_MAKER,
        "format_version": FORMAT_VERSION,
        "seed": dataset.seed,
        "image_size": {"width": dataset.width, "height": dataset.height},
        "spatial_neighbours": dataset.spatial_neighbours,
        "splits": splits,
        "features": {
            "file": "features/gqa_objects_0.h5", "info": "features/gqa_objects_info.json",
            "dim": feature_dim, "slots": SLOTS, "noise_std": noise_std, "context_scale": context_scale,
            "formula": "f = sum_c s_c u_c (class, attribute values) + context_scale * sum_c s_c u_c "
                       "(scene location, weather) + noise_std * N(0, I); u_c unit random codes",
            "row_order": "objects in scene-graph order, then zero padding; images: train, val, testdev",
            "hidden_concepts": codes.hidden(),
        },
        "concepts": codes.to_json(),
        "vocabulary": dataset.vocabulary.to_json(),
        "ontology": "ontology/",
    }
