"""Questions in words: read by the semantic parser, answered by the pipeline.

* :class:`Asker` / :class:`Reply`: one question about one image (``nablafol answer``);
* :func:`evaluate_parser`: a parser's exact match and execution accuracy (``nablafol parser eval``);
* :mod:`~nablafol.asking.execution`: the one place these call the pipeline.

The parser itself lives in :mod:`nablafol.semantic_parser` (a trained model, beside the
oracles); this package sits with the pipeline because answering needs it.
"""
from .ask import Asker, Reply, UnanswerableQuestionError
from .parser_evaluation import ParserEvaluation, evaluate_parser

__all__ = ["Asker", "Reply", "UnanswerableQuestionError", "ParserEvaluation", "evaluate_parser"]
