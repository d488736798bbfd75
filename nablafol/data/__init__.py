"""Reading and writing the files nablafol meets: GQA's questions, scene graphs (plain and
probabilistic) and object features; GQA-format predictions and per-question details.

Torch-free (numpy and h5py only), so tools that never run the engine can use it. Every
unusable input raises :class:`nablafol.errors.InputFileError`, one line naming the file,
the record and the problem.
"""
from nablafol.data.details import Details, iter_details, read_details, write_details
from nablafol.data.feature_files import FeatureStore, ObjectFeatures
from nablafol.data.predictions import read_predictions, write_predictions
from nablafol.data.questions import (ProgramSource, Question, iter_questions, load_questions,
                                     question_from_record, write_questions)
from nablafol.data.scene_graphs import (SceneGraph, SceneGraphTexts, SceneObject, SceneRelation,
                                        iter_scene_graphs, load_scene_graphs,
                                        scene_graph_from_record, scene_graph_words, write_scene_graphs)

__all__ = [
    "Details", "FeatureStore", "ObjectFeatures", "ProgramSource", "Question", "SceneGraph", "SceneGraphTexts",
    "SceneObject", "SceneRelation", "iter_details", "iter_questions", "iter_scene_graphs",
    "load_questions", "load_scene_graphs", "question_from_record", "scene_graph_words", "read_details",
    "read_predictions", "scene_graph_from_record", "write_details", "write_predictions",
    "write_questions", "write_scene_graphs",
]
