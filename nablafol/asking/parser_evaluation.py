"""How well a semantic parser reads questions: exact match and execution accuracy.

* **exact match**: the program read equals the question's own program, object ids ignored;
* **execution accuracy**: the program read, run with the golden scene-graph oracle, gives the
  gold answer (answers compared by vocabulary form, as ``nablafol score`` does). The golden
  programs' own accuracy is measured beside it on the same scenes, as the ceiling.

A question the parser cannot read counts as wrong on both (and is counted apart).

    >>> from nablafol.data import load_questions
    >>> from nablafol.semantic_parser import tiny_parser
    >>> from nablafol.data import Question
    >>> questions = [Question("q", "2354786", "Is the cup red?", "no", None, "select: cup (1)->verify color: red [0]")]
    >>> result = evaluate_parser(tiny_parser(), questions, scene_graphs="tests/fixtures/gqa/val_sceneGraphs.json")
    >>> result.exact, result.questions, result.executed
    (1, 1, 1)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from nablafol.scoring import vocabulary_match
from nablafol.semantic_parser import same_program, with_predicted_programs
from nablafol.semantic_parser.predicted_programs import parser_error

from .execution import Outcome, answer_questions, golden_perception

__all__ = ["ParserEvaluation", "evaluate_parser"]

CHUNK = 4096
MISTAKES_KEPT = 20


@dataclass
class ParserEvaluation:
    """Counts over the questions evaluated (see the module doc); ``mistakes``: the first few
    questions read wrongly, as ``(question id, question, gold line, line read)``."""

    questions: int = 0
    unreadable: int = 0
    with_program: int = 0          # questions that carry a program to compare with
    exact: int = 0
    executed: int | None = None    # questions with a gold answer, when scene graphs were given
    correct: int | None = None     # ... answered right with the program read
    golden_correct: int | None = None  # ... answered right with their own program
    skips: dict = field(default_factory=dict)  # why programs read could not be answered: reason -> count
    mistakes: list = field(default_factory=list)

    @property
    def exact_match(self) -> float | None:
        return self.exact / self.with_program if self.with_program else None

    @property
    def execution_accuracy(self) -> float | None:
        return self.correct / self.executed if self.executed else None

    @property
    def golden_accuracy(self) -> float | None:
        return self.golden_correct / self.executed if self.executed else None

    def to_dict(self) -> dict:
        return {"questions": self.questions, "unreadable": self.unreadable, "with_program": self.with_program,
                "exact": self.exact, "exact_match": self.exact_match, "executed": self.executed,
                "correct": self.correct, "execution_accuracy": self.execution_accuracy,
                "golden_correct": self.golden_correct, "golden_accuracy": self.golden_accuracy,
                "skips": dict(self.skips),
                "mistakes": [dict(zip(("questionId", "question", "gold", "read"), m)) for m in self.mistakes]}

    def lines(self) -> list[str]:
        """The evaluation as printed by ``nablafol parser eval``."""
        def share(count, total):
            return f"{100 * count / total:.2f}% ({count:,} / {total:,})" if total else "n/a"
        out = [f"{self.questions:,} questions, {self.unreadable:,} unreadable",
               f"exact match (ids ignored): {share(self.exact, self.with_program)}"]
        if self.executed is not None:
            out.append(f"execution accuracy (golden oracle): {share(self.correct, self.executed)}; "
                       f"with the golden programs {share(self.golden_correct, self.executed)}")
            if self.skips:
                out.append("programs read that could not be answered: " + ", ".join(
                    f"{n:,} {reason}" for reason, n in sorted(self.skips.items(), key=lambda kv: -kv[1])))
        return out


def evaluate_parser(parser, questions: Iterable, *, scene_graphs=None, ontology=None,
                    progress: Optional[Callable[[int], None]] = None) -> ParserEvaluation:
    """Evaluate ``parser`` on GQA questions; with ``scene_graphs`` (a file or a loaded mapping),
    execution accuracy too. ``progress(done)`` after each chunk of questions."""
    from nablafol.semantic_parser.training import training_examples
    perception = golden_perception(scene_graphs, ontology) if scene_graphs is not None else None
    result = ParserEvaluation()
    if perception is not None:
        result.executed = result.correct = result.golden_correct = 0
    chunk: list = []

    def flush():
        read = list(with_predicted_programs(chunk, parser))
        gold_programs = dict((e.question_id, e.program) for e in training_examples(chunk)[0])
        for question, predicted in zip(chunk, read):
            result.questions += 1
            if parser_error(predicted) is not None:
                result.unreadable += 1
            gold = gold_programs.get(question.id)
            if gold is None:
                continue
            result.with_program += 1
            if predicted.semantic is not None and same_program(_program(predicted), gold):
                result.exact += 1
            elif len(result.mistakes) < MISTAKES_KEPT:
                result.mistakes.append((question.id, question.question, gold.to_semantic_str(),
                                        predicted.semantic_str or parser_error(predicted)))
        if perception is not None:
            _execute(perception, chunk, read, result)
        if progress is not None:
            progress(result.questions)
        chunk.clear()

    for question in questions:
        chunk.append(question)
        if len(chunk) == CHUNK:
            flush()
    if chunk:
        flush()
    return result


def _program(question):
    from nablafol.dsl import parse_program
    return parse_program(question.semantic_str)


def _execute(perception, gold: list, read: list, result: ParserEvaluation) -> None:
    """Answer the chunk with the programs read and with the golden ones; count right answers."""
    scored = [k for k, q in enumerate(gold) if q.answer is not None]
    answered = answer_questions(perception, [read[k] for k in scored if read[k].semantic is not None])
    golden = answer_questions(perception, [gold[k] for k in scored])
    by_id = {a.question_id: a for a in answered}
    for k, reference in zip(scored, golden):
        question = gold[k]
        result.executed += 1
        outcome = by_id.get(question.id)
        if isinstance(outcome, Outcome):
            result.correct += vocabulary_match(outcome.prediction, question.answer)
        elif outcome is not None:
            result.skips[outcome.reason] = result.skips.get(outcome.reason, 0) + 1
        if isinstance(reference, Outcome):
            result.golden_correct += vocabulary_match(reference.prediction, question.answer)
