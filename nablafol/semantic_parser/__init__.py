"""A semantic parser: question text -> GQA program, so questions need not come with programs.

A small sequence-to-sequence network (torch) reads the question's words and writes the
program's units, copying question words where the program names them (so unseen names come
through), decoded under the GQA grammar so that every program it writes parses. Programs are
written without object ids (reasoning never reads them).

    >>> from nablafol.semantic_parser import tiny_parser
    >>> parser = tiny_parser()               # trained for a second on a dozen questions
    >>> parser.parse("Is the dog green?").text
    'select: dog->verify color: green [0]'

Train on any GQA-format questions with :func:`train_parser` (``nablafol parser train``), store
with :func:`save_parser` / load with :func:`load_parser` (JSON and safetensors; loading runs no
code), and give questions predicted programs with :func:`with_predicted_programs`.
"""
from .errors import ParserError, UnreadableQuestionError
from .folder import load_parser, save_parser
from .matching import same_program, without_ids
from .predicted_programs import with_predicted_programs
from .reader import ParsedQuestion, SemanticParser
from .training import TrainingResult, TrainingSettings, tiny_parser, train_parser

__all__ = ["SemanticParser", "ParsedQuestion", "train_parser", "TrainingSettings", "TrainingResult",
           "load_parser", "save_parser", "with_predicted_programs", "same_program", "without_ids",
           "ParserError", "UnreadableQuestionError", "tiny_parser"]
