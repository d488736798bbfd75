"""The embedded dataset: a seeded generator of a GQA-like dataset in GQA's own formats.

Every nablafol command runs on it by default, exactly as on real GQA
(``nablafol generate --out DIR`` from the shell)::

    from nablafol.synthetic import generate_dataset
    summary = generate_dataset("data/synthetic", seed=0)

Its parts, one concept each:

* :mod:`~nablafol.synthetic.vocabulary`: the GQA vocabulary subset, written as an ontology
  folder (``dsl.Ontology.from_folder`` reads it);
* :mod:`~nablafol.synthetic.scenes`: scenes whose relations follow from their boxes;
* :mod:`~nablafol.synthetic.crisp`: the crisp executor, the ground truth of every answer;
* :mod:`~nablafol.synthetic.question_generator` (families in ``families_*``, building blocks in
  :mod:`~nablafol.synthetic.drafting`, words in :mod:`~nablafol.synthetic.text`): questions of
  every GQA operation, from templates;
* :mod:`~nablafol.synthetic.object_features`: object features with per-concept signal strengths;
* :mod:`~nablafol.synthetic.writer`: the files.
"""
from .crisp import CrispError, CrispExecutor, Execution, SceneFacts, UndefinedAnswerError
from nablafol.synthetic.object_features import ConceptCodes, write_features
from .question_generator import GeneratedQuestion, QuestionGenerator, balance_yes_no, to_questions
from .scenes import SceneGenerator, relations_between
from .vocabulary import Vocabulary, VocabularyError, write_ontology
from .writer import DatasetError, DatasetSummary, SyntheticDataset, build_dataset, generate_dataset

__all__ = [
    "generate_dataset", "build_dataset", "DatasetSummary", "SyntheticDataset", "DatasetError",
    "Vocabulary", "VocabularyError", "write_ontology",
    "SceneGenerator", "relations_between",
    "CrispExecutor", "SceneFacts", "Execution", "CrispError", "UndefinedAnswerError",
    "QuestionGenerator", "GeneratedQuestion", "balance_yes_no", "to_questions",
    "ConceptCodes", "write_features",
]
