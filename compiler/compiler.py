"""The GQA compiler: parsed program (``dsl``) -> DFOL program (``nablafol.ir``), cached.

    >>> from nablafol.compiler import Compiler
    >>> c = Compiler()
    >>> q = c.compile_text("select: wall (722332)->filter color: white [0]->relate: _,on,s (722335) [1]->exist: ? [2]")
    >>> print(q.program.term())
    A_∃(Relate_{on,∃}[Filter_white[Filter_wall[1]]])
    >>> print(q.program.formula())
    ∃X ∃Y: on(X, Y) ∧ white(Y) ∧ wall(Y)
    >>> q.is_binary, q.answers
    (True, ('yes', 'no'))

Compiling is pure. Object ids in parentheses are GQA's annotation of the ground truth and
never reach reasoning, so programs that differ only in ids share one compilation; text and
`semantic` lists are looked up by their id-free line (``dsl.id_template``) before parsing,
so a repeated program is neither parsed nor translated again.
"""
from __future__ import annotations

from nablafol.caching import bounded_cache, memo

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from nablafol import dsl
from nablafol.dsl import ast as A

from nablafol.ir import Program

from .concepts import Concepts
from .errors import CompileError
from .presupposition import widened_program
from .skeletons import Skeletons
from .translate import Translator

CACHE_SIZE = 1 << 16


@dataclass(frozen=True, eq=False)
class CompiledQuestion:
    """A GQA program compiled: the DFOL program and how to read its answer.

    ``program.labels`` are the plausible answers in GQA's raw form (``None`` for yes/no);
    ``source`` is the parsed program with object ids removed, given as ``origin`` or, for a
    program filled in from its text, parsed from ``origin`` (its id template) when first asked
    for. Equal when program and source are.
    """

    program: Program
    origin: "A.Program | str" = field(repr=False)

    @property
    def source(self) -> A.Program:
        origin = self.origin
        if isinstance(origin, str):
            return memo(self, "_source", lambda: dsl.parse_template(origin, without_ids=True))
        return origin

    def __eq__(self, other) -> bool:
        if not isinstance(other, CompiledQuestion):
            return NotImplemented
        return self.program == other.program and self.source == other.source

    def __hash__(self) -> int:  # the program alone: hashing never parses a source
        return hash(self.program)

    @property
    def is_binary(self) -> bool:
        return self.program.labels is None

    @property
    def answers(self) -> tuple[str, ...]:
        return ("yes", "no") if self.program.labels is None else self.program.labels

    def formula(self) -> str:
        """The FOL formula (computed once: compiled questions are shared by many questions)."""
        return memo(self, "_formula", self.program.formula)


def without_ids(program: A.Program) -> A.Program:
    """The program with every object-id annotation dropped (what reasoning may see)."""
    return program.without_ids()


class _Unreadable(Exception):
    """An id template the parser refuses: the question's own text is read again, so that the
    error quotes it (a failure is not cached)."""


class CacheInfo(NamedTuple):
    """Lookups answered from a cache (by id-free line or by parsed program) and programs compiled
    (a program compiled both from text and with :meth:`Compiler.compile` counts twice, as do two
    lines of it of two id templates, ``dsl.id_template``: one with id groups, one without)."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


class Compiler:
    """Compiles GQA programs against one ontology (GQA's by default), with a cache.

    ``knowledge_relations`` name the relations of a knowledge base that ``filter REL: TAIL``
    and ``verify REL: TAIL`` steps may use (CRIC-style questions; see :class:`Concepts`).

    ``known_values``: what the oracle knows beyond the ontology, by type (``"name"``,
    ``"relation"``, an attribute type, ``None`` for untyped values; see
    :meth:`dsl.Ontology.joined` and :func:`nablafol.compiler.vocabulary.known_values`). They join
    the ontology, so open questions (``query name``, ``query TYPE``, ``choose``) compete them too:

        >>> Compiler(known_values={"material": ["granite"]}).compile_text(
        ...     "select: wall->query: material [0]").answers[:4]
        ('brick', 'concrete', 'glass', 'granite')
    """

    def __init__(self, ontology: Optional[dsl.Ontology] = None, cache_size: int = CACHE_SIZE,
                 knowledge_relations=(), known_values=None, by_skeleton: bool = True):
        self.ontology = ontology or dsl.Ontology.gqa()
        if known_values:
            self.ontology = self.ontology.joined(known_values)
        self.concepts = Concepts(self.ontology, knowledge_relations)
        self._translator = Translator(self.concepts)
        # by skeleton (compiler.skeletons): the same programs, a met skeleton filled in rather than
        # translated and walked; by_skeleton=False translates each alone (docs/design.md)
        self._skeletons = Skeletons(self.concepts, self._translator.program) if by_skeleton else None
        self._compile_stripped = bounded_cache(self._compile_checked, cache_size)
        self._compile_line = bounded_cache(self._compile_parsed, cache_size)

    def compile(self, program: A.Program) -> CompiledQuestion:
        """Compile a parsed program; raises :class:`CompileError` naming the step, or
        ``dsl.ProgramError`` for a program built by hand that its readers would not give (an
        argument of another operation's shape, a dependency that points forward)."""
        if not isinstance(program, A.Program):
            raise CompileError(f"expected a dsl Program, got {type(program).__name__}", reason="unsupported")
        return self._compile_stripped(without_ids(program))

    def compile_text(self, text: str) -> CompiledQuestion:
        """Parse (``dsl.parse_program``) and compile a ``semanticStr`` line."""
        if not isinstance(text, str):
            return self.compile(dsl.parse_program(text))  # parse_program names what is wrong
        try:
            return self._compile_line(dsl.id_template(text))
        except _Unreadable:
            return self.compile(dsl.parse_program(text))

    def compile_semantic(self, steps: list) -> CompiledQuestion:
        """Parse (``dsl.program_from_semantic``) and compile a ``semantic`` list."""
        line = dsl.semantic_line(steps)
        if line is None:  # unusual: read step by step, so that errors name the step
            return self.compile(dsl.program_from_semantic(steps))
        try:
            return self._compile_line(dsl.id_template(line))
        except _Unreadable:
            return self.compile(dsl.program_from_semantic(steps))

    def compile_source(self, source) -> CompiledQuestion:
        """Compile a question's program as its reader hands it over (``("semantic", steps)`` or
        ``("semanticStr", line)``: :meth:`nablafol.data.Question.program_source`)."""
        if source.field == "semantic":
            return self.compile_semantic(source.value)
        if source.field == "semanticStr":
            return self.compile_text(source.value)
        raise CompileError(f"a GQA compiler reads 'semantic' or 'semanticStr', not {source.field!r}",
                           reason="unsupported")

    def widened(self, compiled: CompiledQuestion) -> Optional[CompiledQuestion]:
        """The question with the category its open answer presupposes widened to every class
        (:mod:`nablafol.compiler.presupposition`: what an answer falls back to when every candidate
        has probability 0), or None when there is nothing to widen."""
        program = widened_program(compiled.source, self.ontology)
        if program is None:
            return None
        try:
            return self.compile(program)
        except CompileError:
            return None

    def cache_info(self) -> CacheInfo:
        by_line, parsed = self._compile_line.cache_info(), self._compile_stripped.cache_info()
        return CacheInfo(by_line.hits + parsed.hits, by_line.misses + parsed.misses, parsed.maxsize,
                         by_line.currsize + parsed.currsize)

    def _compile_parsed(self, template: str) -> CompiledQuestion:
        # the same template reads as the same program up to ids, which compiling drops: one
        # compilation serves every line of the template (failures raise and are not cached)
        if self._skeletons is not None:  # a key met before: filled in from the text, nothing parsed
            program = self._skeletons.known(template)
            if program is not None:
                return CompiledQuestion(program, template)
        try:
            parsed = dsl.parse_template(template, without_ids=True)
        except dsl.ProgramError:
            raise _Unreadable from None
        return self._compile_uncached(parsed)

    def _compile_checked(self, program: A.Program) -> CompiledQuestion:
        # a program may be built by hand: checked as the readers check theirs, so that the
        # translator meets only well-formed steps and any other error in it is a bug
        return self._compile_uncached(dsl.validate_program(program))

    def _compile_uncached(self, program: A.Program) -> CompiledQuestion:
        translate = self._translator.program if self._skeletons is None else self._skeletons.program
        return CompiledQuestion(translate(program), program)
