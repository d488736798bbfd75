"""The neural visual oracle: a network over detected objects answers GQA predicates.

The paper's perception system (section 6): object features plus box features through a
3-hidden-layer network, one embedding per concept, unary scores from object and concept,
binary scores from the two objects' projections. Trained from answers alone, through the
parameter-free engine.

* :class:`ConceptVocabulary` (``concepts``): predicate -> embedding row, built from an ontology;
* :class:`FeatureBatch` (``features``): padded object features of a batch of images;
* :class:`NeuralOracleModel` (``model``): the network; ``model.bind(batch)`` gives a
  :class:`NeuralOracle` (``oracle``) the engine queries;
* :func:`save_model` / :func:`load_model` (``checkpoint``): the model folder.

    >>> import numpy as np
    >>> from nablafol.dsl import Ontology
    >>> from nablafol import Engine
    >>> from nablafol.data import ObjectFeatures
    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Top
    >>> model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(Ontology.gqa()), feature_dim=4)
    >>> image = ObjectFeatures(np.ones((3, 4), np.float32), np.tile([[0, 0, 5, 5]], (3, 1)).astype(np.float32), 10, 10)
    >>> oracle = model.bind(FeatureBatch.from_objects([image]))
    >>> answer = Engine()([Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(Predicate("red", kind="attr"), Top())))], oracle)
    >>> answer.log_probs.shape, answer.log_probs.requires_grad
    (torch.Size([1, 1]), True)
"""
from .checkpoint import load_model, load_tensors, save_model, save_tensors
from nablafol.neural.concept_vocabulary import BINARY_KINDS, SCENE_CONCEPT, UNARY_KINDS, ConceptVocabulary
from .errors import NeuralOracleError
from nablafol.neural.feature_batch import FeatureBatch
from .model import NeuralOracleConfig, NeuralOracleModel, ObjectEncoding
from nablafol.neural.bound_oracle import NeuralOracle

__all__ = [
    "ConceptVocabulary", "FeatureBatch", "NeuralOracle", "NeuralOracleConfig", "NeuralOracleError",
    "NeuralOracleModel", "ObjectEncoding", "load_model", "load_tensors", "save_model", "save_tensors",
    "UNARY_KINDS", "BINARY_KINDS", "SCENE_CONCEPT",
]
