"""GQA programs -> DFOL programs: every GQA operation, with plausible answers and answer forms.

    >>> from nablafol.compiler import Compiler, CompileError
    >>> q = Compiler().compile_text("select: bird (329774)->query: name [0]")
    >>> q.is_binary, q.answers
    (False, ('angry bird', 'bird', 'eagle', 'owl', 'parrot', 'pigeon'))

See :mod:`compiler.translate` for the table of translations and :mod:`compiler.concepts`
for how GQA strings become predicates (the contract in docs/compiling-gqa.md).
"""
from .compiler import CompiledQuestion, Compiler, without_ids
from .concepts import Concepts
from .errors import CompileError
from .translate import Translator

__all__ = ["Compiler", "CompiledQuestion", "CompileError", "Concepts", "Translator", "without_ids"]
