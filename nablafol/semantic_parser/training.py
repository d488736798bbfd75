"""Training the semantic parser on (question, program) pairs from GQA-format questions.

Any GQA questions file will do: each question's text (``question``) and program (``semantic``,
else ``semanticStr``). Questions without text or with a program the dsl refuses are left out
and counted. The loss is the negative log-likelihood of the program's units under teacher
forcing; a program word that occurs in the question is always *copied* (its target is every
position holding it), never written from the vocabulary, so the network learns to copy names,
and words it never saw come through. Words of the question are replaced by ``<unknown>`` at
random (``word_dropout``; only words the program copies, never the cue words such as ``or``
or ``younger``) so that copying does not depend on knowing the word. A word may also be
copied in its vocabulary form (``cups`` -> ``cup``), which is how programs name concepts. An
operation's type that the question names (``younger``, ``shape``) may be written or copied.

    >>> from nablafol.data import Question
    >>> questions = [Question(str(k), "1", f"Is there a {n}?", None, None, f"select: {n} (-)->exist: ? [0]")
    ...              for k, n in enumerate(["cup", "dog", "cat", "car", "hat", "bus"])]
    >>> result = train_parser(questions[:5], val_questions=questions[5:],
    ...                       settings=TrainingSettings(epochs=40, hidden_dim=16, word_dim=8, unit_dim=8))
    >>> result.parser.parse("Is there a zebra?").text    # never seen: copied
    'select: zebra->exist: ? [0]'
    >>> result.examples, result.history[-1]["val_exact_match"]
    (5, 1.0)
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Optional

import numpy as np
import torch

from nablafol.caching import bounded_cache
from nablafol.dsl import ProgramError, parse_program, program_from_semantic

from .errors import ParserError
from .grammar import question_words, word_forms
from .matching import same_program
from .network import COPY_GROUPS, NetworkConfig, ParserNetwork
from .reader import PAD_WORD, UNKNOWN_WORD, SemanticParser
from .units import BOS, COPY, TYPE, WORD, ProgramUnits, program_units

__all__ = ["TrainingSettings", "TrainingResult", "Example", "training_examples", "train_parser", "tiny_parser"]


@dataclass(frozen=True)
class TrainingSettings:
    """How to train: epochs, batch size, Adam's learning rate (warmed up over the first 5% of
    the updates, then down in a straight line), gradient clipping, word dropout, the network's
    widths, the seed, and the parser's refusal threshold (``min_probability``). The defaults
    are sized for the embedded dataset (15,889 questions) on a small CPU machine
    (docs/semantic-parser.md)."""

    epochs: int = 4
    batch_size: int = 64
    lr: float = 5e-3
    clip: float = 1.0
    word_dropout: float = 0.1
    word_dim: int = 48
    unit_dim: int = 48
    hidden_dim: int = 128
    seed: int = 0
    min_probability: float = 0.0

    def __post_init__(self):
        for name in ("epochs", "batch_size", "word_dim", "unit_dim", "hidden_dim", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "seed" else 1):
                raise ParserError(f"training setting {name} must be a whole number >= {0 if name == 'seed' else 1}, "
                                  f"got {value!r}")
        for name, low, high in (("lr", 0, math.inf), ("clip", 0, math.inf), ("word_dropout", 0, 1),
                                ("min_probability", 0, 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    low <= value <= high and math.isfinite(value)) or (name in ("lr", "clip") and value == 0):
                raise ParserError(f"training setting {name} must be a number in "
                                  f"{'(0, inf)' if name in ('lr', 'clip') else f'[{low}, {high}]'}, got {value!r}")


@dataclass(frozen=True)
class Example:
    """One training pair: the question's id, its words, and its program."""

    question_id: str
    words: tuple[str, ...]
    program: object


@dataclass
class TrainingResult:
    """The trained ``parser`` (the epoch with the best validation exact match, else the last),
    how many ``examples`` it learned from, the questions ``skipped`` (id, reason), and per epoch
    ``history`` (loss, validation exact match, seconds)."""

    parser: SemanticParser
    examples: int
    skipped: list = field(default_factory=list)
    history: list = field(default_factory=list)
    seconds: float = 0.0
    best_epoch: int | None = None


def training_examples(questions: Iterable) -> tuple[list[Example], list[tuple[str, str]]]:
    """(examples, skipped): the usable (question text, program) pairs of GQA questions."""
    examples, skipped = [], []
    for question in questions:
        source = question.program_source()
        words = question_words(question.question or "")
        if not words:
            skipped.append((question.id, "no question text"))
            continue
        if source is None:
            skipped.append((question.id, "no program"))
            continue
        try:
            program = (program_from_semantic(source.value) if source.field == "semantic"
                       else parse_program(source.value))
        except ProgramError as error:
            skipped.append((question.id, f"malformed program: {str(error).splitlines()[0]}"))
            continue
        examples.append(Example(question.id, tuple(words), program))
    return examples, skipped


def _vocabularies(examples: list[Example]):
    question_vocabulary = [PAD_WORD, UNKNOWN_WORD] + sorted({w for e in examples for w in e.words})
    heads, written, steps, phrase = set(), set(), 1, 1
    for example in examples:
        present = set(example.words) | set(word_forms(list(example.words)))
        run = 0
        heads.update(step.field for step in example.program.steps)
        for unit in program_units(example.program):
            if unit.startswith(WORD):
                run += 1
                phrase = max(phrase, run)
                if unit[len(WORD):] not in present:
                    written.add(unit[len(WORD):])
            else:
                run = 0
        steps = max(steps, len(example.program))
    if not written:  # the decoder needs a word it can write without copying
        written = {next(u[len(WORD):] for e in examples for u in program_units(e.program) if u.startswith(WORD))}
    # one step and one word of slack beyond the longest program and name seen
    units = ProgramUnits(sorted(heads), sorted(written), max_steps=min(steps + 1, 64))
    return question_vocabulary, units, min(phrase + 1, 64)


class _Encoded:
    """An example as index lists: source word ids and what each position may be copied as
    (:meth:`ProgramUnits.copies`); per output unit its id (-1: a copy only) and the
    ``(group, position)`` copies that also write it; decoder inputs (unit, copied position or -1)."""

    def __init__(self, example: Example, word_ids: dict, units: ProgramUnits):
        words = example.words
        self.source = [word_ids.get(w, 1) for w in words]
        self.copyable = [[c is not None for c in group] for group in units.copies(words)]
        raw, forms, types = units.copies(words)
        self.target, self.copy_from, self.inputs, self.copied = [], [], [units.id(BOS)], [-1]
        copied_positions: set[int] = set()
        for name in program_units(example.program):
            if name.startswith(WORD):  # a word of the question (or its form): copied, never written
                word = name[len(WORD):]
                places = [(g, i) for g, group in ((0, raw), (1, forms)) for i, w in enumerate(group) if w == word]
                if places:
                    self.target.append(-1)
                    self.copy_from.append(places)
                    self.inputs.append(units.id(COPY))
                    self.copied.append(places[0][1])
                    copied_positions.update(i for _, i in places)
                    continue
            unit = units.id(name)
            if unit is None:
                raise ParserError(f"question {example.question_id}: unit {name!r} is not in the vocabulary")
            named = name[len(TYPE):] if name.startswith(TYPE) else None
            self.target.append(unit)  # a type the question names may be written or copied
            self.copy_from.append([(2, i) for i, t in enumerate(types) if named and t == named])
            self.inputs.append(unit)
            self.copied.append(-1)
        self.inputs, self.copied = self.inputs[:-1], self.copied[:-1]
        self.copies = sorted(copied_positions)  # the words word dropout may hide
        # the same as arrays, made once: a batch is cut from them every epoch
        self.arrays = (np.asarray(self.source, dtype=np.int64),
                       np.asarray(self.copyable, dtype=bool).reshape(COPY_GROUPS, len(words)),
                       np.asarray(self.inputs, dtype=np.int64), np.asarray(self.copied, dtype=np.int64))
        # the wanted scores: (step, unit) of the units it writes, (step, group, position) of its copies
        self.written = np.asarray([(t, unit) for t, unit in enumerate(self.target) if unit >= 0],
                                  dtype=np.int64).reshape(-1, 2)
        self.copy_places = np.asarray([(t, g, i) for t, places in enumerate(self.copy_from) for g, i in places],
                                      dtype=np.int64).reshape(-1, 3)


def _batch(encoded: list[_Encoded], n_units: int, dropout: float, generator: torch.Generator):
    size = len(encoded)
    lengths = torch.tensor([len(e.source) for e in encoded])
    longest, steps = int(lengths.max()), max(len(e.target) for e in encoded)
    words = torch.zeros(size, longest, dtype=torch.long)
    copyable = torch.zeros(size, COPY_GROUPS, longest, dtype=torch.bool)
    droppable = torch.zeros(size, longest, dtype=torch.bool)
    inputs = torch.zeros(size, steps, dtype=torch.long)
    copied = torch.full((size, steps), -1, dtype=torch.long)
    wanted = torch.zeros(size, steps, n_units + COPY_GROUPS * longest, dtype=torch.bool)
    valid = torch.zeros(size, steps, dtype=torch.bool)
    # filled in numpy and wrapped once (a tensor per example and field was most of a batch's making)
    words_np, copyable_np, droppable_np = words.numpy(), copyable.numpy(), droppable.numpy()
    inputs_np, copied_np, valid_np = inputs.numpy(), copied.numpy(), valid.numpy()
    rows, steps_at, columns = [], [], []  # the (example, step, column) of every wanted score
    for b, e in enumerate(encoded):
        source, can_copy, e_inputs, e_copied = e.arrays
        words_np[b, :len(source)] = source
        copyable_np[b, :, :len(source)] = can_copy
        droppable_np[b, e.copies] = True
        inputs_np[b, :len(e_inputs)] = e_inputs
        copied_np[b, :len(e_copied)] = e_copied
        valid_np[b, :len(e.target)] = True
        places = e.copy_places
        rows += [np.full(len(e.written) + len(places), b, dtype=np.int64)]
        steps_at += [e.written[:, 0], places[:, 0]]
        columns += [e.written[:, 1], n_units + places[:, 1] * longest + places[:, 2]]
    if rows:
        wanted.numpy()[np.concatenate(rows), np.concatenate(steps_at), np.concatenate(columns)] = True
    if dropout:
        drop = (torch.rand(words.shape, generator=generator) < dropout) & droppable
        words = words.masked_fill(drop, 1)
    return words, lengths, inputs, copied, copyable, wanted, valid


def _batches(encoded: list, size: int, generator: torch.Generator) -> list[list[int]]:
    """Shuffled batches of similar program lengths (less padding): a random order, sorted by
    length within runs of 32 batches, cut into batches, the batches shuffled."""
    order = torch.randperm(len(encoded), generator=generator).tolist()
    run = 32 * size
    batches = []
    for first in range(0, len(order), run):
        members = sorted(order[first:first + run], key=lambda i: len(encoded[i].target))
        batches += [members[k:k + size] for k in range(0, len(members), size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def _schedule(total: int) -> Callable[[int], float]:
    """The learning rate's factor at each update: up over the first 5% of the updates, then
    down in a straight line to 5% at the end (a short run ends on small, careful steps)."""
    warm = max(1, total // 20)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.05, 1.0 - 0.95 * (step - warm) / max(1, total - warm))
    return factor


def _loss(network: ParserNetwork, batch) -> torch.Tensor:
    words, lengths, inputs, copied, copyable, wanted, valid = batch
    states, hidden = network.encode(words, lengths)
    scores, _ = network.decode(states, lengths, hidden, inputs, copied, copyable)
    log_p = scores.log_softmax(dim=-1)
    target = log_p.masked_fill(~wanted, float("-inf")).logsumexp(dim=-1)
    return -(target[valid]).mean()


def exact_match(parser: SemanticParser, examples: list[Example]) -> float:
    """The share of ``examples`` whose program the parser reads exactly (ids ignored)."""
    if not examples:
        return float("nan")
    read = parser.parse_many([" ".join(e.words) for e in examples], min_probability=0.0)
    return sum(same_program(r.program, e.program) for r, e in zip(read, examples)) / len(examples)


def train_parser(questions: Iterable, *, val_questions: Optional[Iterable] = None,
                 settings: TrainingSettings = TrainingSettings(),
                 progress: Optional[Callable[[int, int], None]] = None,
                 log: Optional[Callable[[str], None]] = None) -> TrainingResult:
    """Train a :class:`SemanticParser` on GQA questions (see the module doc). ``progress(done,
    total)`` is called after each batch; ``log`` gets one line per epoch."""
    start = time.perf_counter()
    if not isinstance(settings, TrainingSettings):
        raise ParserError("settings must be TrainingSettings")
    examples, skipped = training_examples(questions)
    if not examples:
        raise ParserError(f"no usable training questions (each needs its text and a program; {len(skipped)} "
                          f"skipped" + (f", e.g. {skipped[0][0]}: {skipped[0][1]}" if skipped else "") + ")")
    val_examples = training_examples(val_questions)[0] if val_questions is not None else []
    torch.manual_seed(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    question_vocabulary, units, max_phrase_words = _vocabularies(examples)
    word_ids = {w: i for i, w in enumerate(question_vocabulary)}
    encoded = [_Encoded(e, word_ids, units) for e in examples]
    config = NetworkConfig(len(question_vocabulary), len(units), settings.word_dim, settings.unit_dim,
                           settings.hidden_dim)
    network = ParserNetwork(config)
    longest = max(len(e.words) for e in examples)
    info = {"settings": asdict(settings), "examples": len(examples), "skipped": len(skipped)}
    parser = SemanticParser(network, question_vocabulary, units, max_phrase_words=max_phrase_words,
                            max_question_words=max(64, 2 * longest), min_probability=settings.min_probability,
                            info=info)
    optimizer = torch.optim.Adam(network.parameters(), lr=settings.lr)
    batches_per_epoch = math.ceil(len(encoded) / settings.batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(batches_per_epoch * settings.epochs))
    history, best, best_state, done = [], -1.0, None, 0
    for epoch in range(1, settings.epochs + 1):
        began = time.perf_counter()
        network.train()
        total = 0.0
        for members in _batches(encoded, settings.batch_size, generator):
            batch = _batch([encoded[i] for i in members], len(units), settings.word_dropout, generator)
            loss = _loss(network, batch)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(network.parameters(), settings.clip)
            optimizer.step()
            schedule.step()
            total += loss.item()
            done += 1
            if progress is not None:
                progress(done, batches_per_epoch * settings.epochs)
        network.eval()
        row = {"epoch": epoch, "loss": total / batches_per_epoch}
        if val_examples:
            row["val_exact_match"] = exact_match(parser, val_examples)
            if row["val_exact_match"] > best:
                best, best_state = row["val_exact_match"], {k: v.clone() for k, v in network.state_dict().items()}
                info["best_epoch"] = epoch
        row["seconds"] = time.perf_counter() - began
        history.append(row)
        if log is not None:
            log(f"epoch {epoch}: loss {row['loss']:.4f}" + (f", validation exact match "
                f"{100 * row['val_exact_match']:.2f}%" if "val_exact_match" in row else "")
                + f" ({row['seconds']:.1f} s)")
    if best_state is not None:
        network.load_state_dict(best_state)
    seconds = time.perf_counter() - start
    parser.info.update(history=history, seconds=round(seconds, 3), best_epoch=info.get("best_epoch"))
    return TrainingResult(parser, len(examples), skipped, history, seconds, info.get("best_epoch"))


def _tiny_parser() -> SemanticParser:
    """A parser trained in about a second on a handful of questions (for examples and tests;
    built once, shared)."""
    from nablafol.data import Question
    colors = ["red", "blue", "green"]
    names = ["cup", "table", "dog", "chair"]
    questions = [Question(f"q{k}{j}", "1", f"What color is the {n}?", None, None,
                          f"select: {n} (1)->query: color [0]") for k, n in enumerate(names) for j in range(3)]
    questions += [Question(f"v{k}{j}", "1", f"Is the {n} {c}?", None, None, f"select: {n} (1)->verify color: {c} [0]")
                  for k, n in enumerate(names) for j, c in enumerate(colors)]
    settings = TrainingSettings(epochs=30, batch_size=8, word_dim=16, unit_dim=16, hidden_dim=32, seed=0)
    return train_parser(questions, settings=settings).parser


#: :func:`_tiny_parser`, trained once and shared (caching rule 2: one entry).
tiny_parser = bounded_cache(_tiny_parser, 1)
