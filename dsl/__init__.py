"""GQA programs as typed ASTs, and the GQA vocabulary they are written in.

Read a program from GQA's `semanticStr` line or its `semantic` list (both give the
same AST), inspect it, write it back:

    >>> from nablafol.dsl import parse_program, program_from_semantic, ProgramError
    >>> program = parse_program(
    ...     "select: wall (722332)->filter color: white [0]->relate: _,on,s (722335) [1]->query: name [2]")
    >>> program.steps[1]
    Step(operation='filter', type='color', argument=Value(value='white', negated=False), dependencies=(0,))
    >>> program.is_binary, program.answer_step.field
    (False, 'query')
    >>> program_from_semantic(program.to_semantic()) == program
    True
    >>> try:
    ...     parse_program("select: wall (722332)->query: name [3]")
    ... except ProgramError as error:
    ...     print(error.message, "| column", error.column)
    step 1 'query': dependency [3] must point to an earlier step (0) | column 36

Look concepts up in GQA's vocabulary (raw GQA forms are normalized first):

    >>> from nablafol.dsl import Ontology, normalize
    >>> gqa = Ontology.gqa()
    >>> normalize("benches"), gqa.is_category("furniture"), "person" in gqa.classes_under("person")
    ('bench', True, True)

Only the standard library and lark are imported; nothing here knows about tensors.
"""
from .ast import (Alternatives, Argument, AttributeType, Empty, Objects, Program, Relation, Scene,
                  Step, Value)
from .errors import ProgramError, UnknownConceptError, VocabularyFileError
from .extension import OntologyExtension, load_ontology
from .ontology import Ontology, normalize, raw_form
from .operations import COMPARATIVES, VERBS, Kind
from .parser import (clear_caches, id_template, parse_program, parse_template, program_from_semantic,
                     semantic_line, validate_program)
from .validation import MAX_STEPS

__all__ = [
    "parse_program", "program_from_semantic", "semantic_line", "id_template", "parse_template",
    "validate_program", "clear_caches", "MAX_STEPS",
    "Program", "Step", "Argument", "Objects", "Scene", "Value", "Relation", "Alternatives",
    "AttributeType", "Empty", "Kind", "VERBS", "COMPARATIVES",
    "ProgramError", "UnknownConceptError", "VocabularyFileError",
    "Ontology", "OntologyExtension", "load_ontology", "normalize", "raw_form",
]
