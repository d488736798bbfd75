"""What a trained calibrator does to one question, step by step (``nablafol calibrate --inspect``).

The question is a GQA program line, or the id of a question in the questions files given; the
model folder's calibrator gives each attention step's Beta-calibration parameters, read as the
paper's Figure 2 shapes (:func:`nablafol.calibration.step_parameters`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from nablafol.errors import InputFileError, NablafolError

__all__ = ["Inspection", "inspect_calibration", "InspectionError"]

#: Curves drawn in one picture, for a readable legend.
PLOTTED_STEPS = 12


class InspectionError(NablafolError):
    """What was asked cannot be inspected (no calibrator, an unknown question id...)."""


@dataclass
class Inspection:
    """One question's calibration: its program, the DFOL term, the parameters of every step."""

    question: object  # the question read from a file, or None for a program line
    compiled: object
    parameters: list

    def lines(self) -> list[str]:
        from nablafol.calibration import format_step_parameters
        head = [f"question {self.question.id}: {self.question.question or ''}".rstrip(": ")] if self.question else []
        return head + [f"DFOL: {self.compiled.program.term()}", format_step_parameters(self.parameters)]

    def plot(self, path) -> tuple[Path, int, int]:
        """The curves of the first :data:`PLOTTED_STEPS` used steps drawn to ``path`` (an open
        question's many candidates would make an unreadable picture); (path, drawn, used steps)."""
        from nablafol.calibration.figures import calibration_shapes
        used = [p for p in self.parameters if p.shape != "unused"]
        drawn = used[:PLOTTED_STEPS]
        return calibration_shapes(drawn, path, title=self.compiled.program.term()[:80]), len(drawn), len(used)


def inspect_calibration(model_folder, what: str, question_files: Sequence = ()) -> Inspection:
    """The calibration of ``what`` (a question id of ``question_files``, else a GQA program
    line) by the calibrator of ``model_folder``."""
    from nablafol.calibration import step_parameters
    from nablafol.compiler import Compiler
    from nablafol.pipeline.answering import Skip, compile_question
    from nablafol.pipeline.model_folder import has_calibrator, load_model_folder
    if not has_calibrator(model_folder):
        load_model_folder(model_folder, calibrator=False)  # a broken model folder is named first
        raise InspectionError(f"{model_folder}: no calibrator in this model folder (run `nablafol calibrate` first)")
    folder = load_model_folder(model_folder)
    compiler = Compiler(folder.require_ontology())
    question = _find_question(what, question_files)
    if question is not None:
        compiled = compile_question(question, compiler)
        if isinstance(compiled, Skip):
            raise InspectionError(f"question {question.id}: {compiled.detail}")
    elif "->" in what or ":" in what:
        compiled = compiler.compile_text(what)
    else:
        raise InspectionError(f"{what!r} is neither a GQA program line nor a question id of the given "
                              f"questions (name them with --questions, --val-questions or --data)")
    # the vocabulary is open: a concept the model never learned has no calibration to show
    unknown = next((p for p in compiled.program.predicates() if not folder.vocabulary.knows(p)), None)
    if unknown is not None:
        raise InspectionError(folder.vocabulary.not_learned(unknown))
    return Inspection(question, compiled, step_parameters(folder.calibrator, compiled.program))


def _find_question(question_id: str, files: Sequence) -> Optional[object]:
    """The question of that id in the first of ``files`` that has it, or None."""
    from nablafol.data import load_questions
    for path in files:
        if not Path(path).exists():
            raise InputFileError(path, "no such file")
        question = load_questions(path).get(question_id)
        if question is not None:
            return question
    return None
