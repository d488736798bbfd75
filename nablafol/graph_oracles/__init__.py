"""Oracles for GQA: what scene graphs and a commonsense knowledge base say about objects.

* :class:`SceneGraphOracle`: GQA's predicate kinds (``name``, ``class``, ``attr``,
  ``hposition``, ``vposition``, ``scene``, ``rel``, ``compare``, ``same``) from plain or
  probabilistic scene graphs;
* :class:`KnowledgeOracle`: facts about classes (``kind="kg"``) from a :class:`KnowledgeBase`;
* :class:`CompositeOracle`: several oracles over the same scenes, each predicate routed to the
  first that knows it;
* :mod:`~nablafol.graph_oracles.geometry` and :mod:`~nablafol.graph_oracles.traits`: the rules behind
  positions and comparatives.
"""
from .composite import CompositeOracle
from .knowledge import KnowledgeOracle
from .knowledge_base import KnowledgeBase, Triple
from .scene_graph import BINARY_KINDS, COMPARATIVES, SCENE_OBJECT_ID, UNARY_KINDS, SceneGraphOracle

__all__ = ["SceneGraphOracle", "KnowledgeOracle", "KnowledgeBase", "Triple", "CompositeOracle",
           "UNARY_KINDS", "BINARY_KINDS", "COMPARATIVES", "SCENE_OBJECT_ID"]
