"""The one answering loop: questions streamed in chunks, answered (in this process or in forked
workers), scored as they come, and, when a journal is given, committed chunk by chunk so that a
killed run resumes where it stopped with byte-identical outputs.

Every entry point answers through :func:`answer_stream`: ``nablafol eval`` (through
:func:`run_evaluation`, which adds the files), the demo, training's validation. A split
evaluation too: each shard (``--shard I/N``, or a process of ``torchrun``) answers its chunks
(:class:`nablafol.pipeline.sharding.EvalShard`) into its own journal, and the merge replays the
shards' journals through the same loop (nothing left to answer) into one run's outputs.

    >>> from nablafol.data import load_questions, load_scene_graphs
    >>> from nablafol.pipeline.answering import Answerer
    >>> from nablafol.pipeline.perception import SceneGraphPerception
    >>> from nablafol.scoring import Scorer
    >>> questions = load_questions("tests/fixtures/gqa/val_balanced_questions.json").values()
    >>> answerer = Answerer(SceneGraphPerception(load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")))
    >>> result = answer_stream(questions, answerer, scorer=Scorer(), collect=True)
    >>> result.done == result.answered + result.skipped == len(result.predictions) + len(result.skips)
    True
    >>> round(result.scores.overall.accuracy["all"], 4)  # the 10 balanced questions (GQA counts those)
    0.9

Memory stays flat in the number of questions unless ``collect`` asks for the predictions: the
scorer keeps a few bytes a question, the journal is on disk.
"""
from __future__ import annotations

import json
import os
import time
from array import array
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

from nablafol.data import iter_questions, write_predictions
from nablafol.data.details import exact_share
from nablafol.data.files import naming_full_disk
from nablafol.errors import InputFileError, NablafolError
from nablafol.pipeline.answering import Answerer, Outcome, Skip
from nablafol.pipeline.journal import FALLBACK, GUESS, PLAIN, EvalJournal, ShardedJournal
from nablafol.pipeline.sharding import EvalShard

__all__ = ["answer_stream", "answer_all", "StreamResult", "DetailsStream", "EvaluationJob", "run_evaluation",
           "chunked"]

#: Questions answered between two journal commits, by default.
CHUNK_SIZE = 16384
#: Skipped questions a result keeps to show (all of them are in the journal and the skipped file).
SHOWN_SKIPS = 20


@dataclass
class StreamResult:
    """What a stream of questions gave: counts, the skips' reasons, the scores (when a scorer was
    given) and, when ``collect`` was asked, every prediction, skip and outcome in memory."""

    done: int = 0  # questions of the stream, answered or skipped
    answered: int = 0
    skipped: int = 0
    guessed: int = 0  # of ``answered``, predictions made with every candidate at probability 0
    fallbacks: int = 0  # of ``answered``, open questions answered with their presupposition widened (Outcome.fallback)
    replayed: int = 0  # of ``done``, read back from a journal instead of answered
    seconds: float = 0.0
    skip_counts: dict = field(default_factory=dict)
    first_skips: list = field(default_factory=list)  # (questionId, None, (reason, detail), PLAIN) of the first ones
    scores: object = None
    predictions: Optional[dict] = None
    skips: Optional[list] = None
    outcomes: Optional[list] = None

    def skip_summary(self) -> str:
        return reason_counts(self.skip_counts)


def reason_counts(counts: dict) -> str:
    """``"3 no scene, 1 unknown concept"``: skips counted by reason, the most common first (ties
    in the order met)."""
    return ", ".join(f"{n:,} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]))


class _Tally:
    """Feeds one result from entries: counts, the first skips, the scorer, a hash of every id
    (to find one given twice), and the collected predictions."""

    def __init__(self, result: StreamResult, scorer, collect: bool):
        self.result, self.scorer, self.collect = result, scorer, collect
        self.ids = array("q")

    def add(self, question, entry) -> None:
        question_id, prediction, skip, guessed = entry
        result = self.result
        self.ids.append(hash(question_id))
        result.done += 1
        if skip is None:
            result.answered += 1
            result.guessed += guessed == GUESS
            result.fallbacks += guessed == FALLBACK
            if self.collect:
                result.predictions[question_id] = prediction
        else:
            result.skipped += 1
            result.skip_counts[skip[0]] = result.skip_counts.get(skip[0], 0) + 1
            if len(result.first_skips) < SHOWN_SKIPS:
                result.first_skips.append(entry)
            if self.collect:
                result.skips.append(Skip(question_id, *skip))
        if self.scorer is not None and question.answer is not None:
            self.scorer.update(question, prediction)


def journal_entry(result: Outcome | Skip) -> tuple:
    """A journal entry: ``(questionId, prediction, None, mark)`` (``journal.GUESS``, ``FALLBACK`` or
    ``PLAIN``) or ``(questionId, None, (reason, detail), PLAIN)``."""
    if isinstance(result, Skip):
        return result.question_id, None, (result.reason, result.detail), PLAIN
    return result.question_id, result.prediction, None, (FALLBACK if result.fallback else
                                                         GUESS if result.guessed else PLAIN)


def chunked(questions: Iterable, size: int) -> Iterator[list]:
    """The questions in lists of ``size`` (the last one shorter)."""
    chunk = []
    for question in questions:
        chunk.append(question)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def answer_stream(questions: Iterable, answerer: Answerer, *, scorer=None, chunk_size: int = CHUNK_SIZE,
                  workers: int = 1, threads: int = 1, journal: Optional[EvalJournal] = None,
                  details: Optional["DetailsStream"] = None, collect: bool = False,
                  progress: Optional[Callable[[int], None]] = None, source: str = "questions") -> StreamResult:
    """Answer ``questions`` (an iterable, read once) ``chunk_size`` at a time.

    ``scorer``: a :class:`nablafol.scoring.Scorer` updated with every question that has a gold
    answer; the result's ``scores`` are what it computes at the end (a
    :class:`~nablafol.scoring.Scores` with only the ``overall`` row). ``journal``: questions it has committed are read
    back instead of answered (they must come first in ``questions``, in its order; ``source``
    names the input in the refusal when they do not), every new chunk is committed to it.
    ``details``: the outcomes are appended to it. ``collect``: the result keeps every prediction
    and skip (and outcome, when the answerer keeps outcomes). ``progress(done)``: questions done.
    ``workers > 1``: chunks are answered in that many forked processes (CPU).
    """
    from nablafol.pipeline.workers import answer_chunks
    began = time.perf_counter()
    result = StreamResult()
    if collect:
        result.predictions, result.skips, result.outcomes = {}, [], []
    tally = _Tally(result, scorer, collect)
    stream = iter(questions)
    if journal is not None:
        result.replayed = _replay(journal, stream, tally, source)
    in_chunk = [0]

    def batch_done(n: int) -> None:
        in_chunk[0] += n
        progress(result.done - result.replayed + in_chunk[0])

    for chunk, answered in answer_chunks(answerer, chunked(stream, chunk_size), workers, threads,
                                         batch_done if progress is not None else None):
        in_chunk[0] = 0
        details_bytes = details.write(answered) if details is not None else 0
        entries = [journal_entry(r) for r in answered]
        if journal is not None:
            journal.commit(entries, done=result.done + len(chunk), details_bytes=details_bytes)
        for question, entry in zip(chunk, entries):
            tally.add(question, entry)
        if collect and answerer.keep_outcomes:
            result.outcomes.extend(r for r in answered if isinstance(r, Outcome))
        if progress is not None:
            progress(result.done - result.replayed)
    _check_unique_ids(tally.ids, journal, source)
    if scorer is not None and len(scorer):
        from nablafol.scoring import Scores
        result.scores = Scores(overall=scorer.compute())
    result.seconds = time.perf_counter() - began
    return result


def answer_all(questions: Iterable, answerer: Answerer, scorer=None, progress=None) -> StreamResult:
    """:func:`answer_stream` over ``questions`` as one chunk (every question batched with the
    others), keeping every prediction, skip and outcome: for sets that fit in memory (the demo,
    training's validation, tests)."""
    questions = list(questions)
    return answer_stream(questions, answerer, scorer=scorer, chunk_size=max(1, len(questions)), collect=True,
                         progress=progress)


def _replay(journal: EvalJournal, stream: Iterator, tally: _Tally, source: str) -> int:
    """Feed the journal's committed entries to the tally, taking the same questions off the
    stream (they are not answered again); how many there were."""
    replayed = 0
    for entry in journal.entries():
        question = next(stream, None)
        if question is None or question.id != entry[0]:
            found = "ends" if question is None else f"has question {question.id}"
            raise InputFileError(source, f"does not match the journal {journal.path}",
                                 f"question #{replayed + 1}: the journal has {entry[0]}, the file {found}")
        tally.add(question, entry)
        replayed += 1
    return replayed


def _check_unique_ids(ids: array, journal: Optional[EvalJournal], source: str) -> None:
    """A question id given twice is refused, naming it (ids compared by hash, then by value)."""
    import numpy as np
    keys = np.sort(np.frombuffer(ids, dtype=np.int64)) if len(ids) else np.zeros(0, np.int64)
    twice = set(keys[1:][keys[1:] == keys[:-1]].tolist())
    if not twice:
        return
    if journal is None:  # without a journal there is nothing to name it from but the hash
        raise InputFileError(source, "holds a question id twice")
    seen = set()
    for question_id, *_ in journal.entries():
        if hash(question_id) in twice:
            if question_id in seen:
                raise InputFileError(source, "appears twice", f"question {question_id}")
            seen.add(question_id)


class DetailsStream:
    """The details file being written (``PATH.partial``, renamed to ``PATH`` by :meth:`finish`),
    cut back to the journal's last commit when a run resumes."""

    def __init__(self, path, committed_bytes: int = 0):
        self.path = Path(path)
        self.part = self.part_of(self.path)
        if committed_bytes:
            size = self.part.stat().st_size if self.part.exists() else 0
            if size < committed_bytes:
                raise InputFileError(self.part, f"is shorter than its journal says ({size:,} < {committed_bytes:,} "
                                                "bytes); run without --resume to start over")
        self.stream = open(self.part, "r+b" if committed_bytes else "wb")
        self.stream.truncate(committed_bytes)
        self.stream.seek(committed_bytes)

    @staticmethod
    def part_of(path) -> Path:
        """Where the details going to ``path`` are written until :meth:`finish`."""
        path = Path(path)
        return path.with_name(path.name + ".partial")

    def write(self, results: Sequence) -> int:
        """Append the chunk's answered questions; returns the file's size, once on disk."""
        from nablafol.data.details import Details, details_line
        lines = [details_line(Details(o.question_id, o.prediction, o.answers, list(o.grounding), o.formula,
                                      {"exact": o.exact, "attention": o.attention,
                                       **({"bounds": o.bounds} if o.bounds is not None else {}),
                                       **({"fallback": True} if o.fallback else {}),
                                       **({"explanation": o.explanation} if o.explanation is not None else {})}))
                 for o in results if isinstance(o, Outcome)]
        with naming_full_disk(self.part):
            self.stream.write("".join(lines).encode("utf-8"))
            self.stream.flush()
            os.fsync(self.stream.fileno())
        return self.stream.tell()

    def finish(self) -> None:
        self.stream.close()
        os.replace(self.part, self.path)

    def abandon(self) -> None:
        """Close and remove the part written (the details of a run whose answers are not kept)."""
        self.stream.close()
        self.part.unlink(missing_ok=True)


# --- nablafol eval: the same loop, over files ------------------------------------------------

@dataclass
class EvaluationJob:
    """Everything ``nablafol eval`` is asked: the inputs, the outputs, the settings."""

    questions: Path
    predictions: Path
    scene_graphs: Optional[Path] = None
    features: Optional[Path] = None
    model: Optional[Path] = None
    details: Optional[Path] = None
    attentions: Optional[Path] = None  # GQA's attentions file, from the details' attention
    skipped: Optional[Path] = None
    knowledge: Optional[str] = None  # a file, or "sample" for the built-in base
    ontology: Optional[Path] = None
    ontology_extension: Optional[Path] = None  # classes joining the ontology's categories (dsl.extension)
    batch_size: int = 1024
    chunk_size: int = CHUNK_SIZE
    threshold: float = 0.5
    details_top: int = 10
    explain: int = 0  # with details: each answer's explanation, that many objects per step and facts (0: none)
    exact: bool = False  # compare answers as exact strings (GQA's eval.py)
    exact_inference: bool = False  # exact probabilities where atoms repeat (Engine(exact=True), docs/exactness.md)
    exact_budget: int = 12  # with exact_inference: the most repeated uncertain atoms conditioned on, per answer
    bounds: bool = False  # with details: sound bounds on each answer's probability (Engine(bounds=True))
    format: Optional[str] = None  # "gqa" or "cric" (None: told from the questions file)
    parser: Optional[Path] = None  # a semantic parser folder: its reading replaces each question's program
    workers: int = 1
    threads: int = 1
    device: object = "cpu"
    resume: bool = False
    shard: Optional[EvalShard] = None  # answer this shard's chunks only, into its own journal
    merge: bool = False  # join the shards' journals into the outputs instead of answering
    launch: object = None  # nablafol.pipeline.distributed.Launch: under torchrun, shard by rank, rank 0 merges

    def settings(self) -> dict:
        """What the outputs depend on: the options and the input files' identities (JSON values);
        a journal written with other settings is not resumed."""
        from nablafol.pipeline.journal import input_fingerprint
        knowledge = self.knowledge if self.knowledge in (None, "sample") else input_fingerprint(self.knowledge)
        settings = {"questions": input_fingerprint(self.questions), "scene_graphs": input_fingerprint(self.scene_graphs),
                    "features": input_fingerprint(self.features), "model": input_fingerprint(self.model),
                    "knowledge": knowledge, "ontology": input_fingerprint(self.ontology),
                    "parser": input_fingerprint(self.parser), "threshold": self.threshold,
                    "batch_size": self.batch_size, "chunk_size": self.chunk_size, "details": bool(self.details),
                    "details_top": self.details_top, "device": str(self.device),
                    "exact_inference": self.exact_budget if self.exact_inference else False}
        if self.ontology_extension is not None:  # only when given: a journal written before it resumes
            settings["ontology_extension"] = input_fingerprint(self.ontology_extension)
        if self.explain:  # likewise
            settings["explain"] = self.explain
        if self.bounds:  # likewise
            settings["bounds"] = self.exact_budget
        return json.loads(json.dumps(settings))

    @property
    def benchmark(self) -> str:
        """The questions' format: ``gqa`` or ``cric`` (told from the file unless given)."""
        if self.format is not None:
            return self.format
        from nablafol.data.benchmark_files import detect_benchmark
        found = detect_benchmark(self.questions, option="--format")
        if found not in ("gqa", "cric"):
            raise InputFileError(self.questions, f"holds {found} questions; `nablafol eval` answers GQA and CRIC "
                                                 "questions (`nablafol score` scores the others' predictions)")
        return found

    @property
    def details_path(self) -> Optional[Path]:
        """Where the details go: ``details``, or, for CRIC (whose predictions need each answer's
        attention), beside the predictions."""
        if self.details or self.benchmark != "cric":
            return self.details
        return Path(self.predictions).with_name(Path(self.predictions).name + ".details.jsonl")

    @property
    def skipped_path(self) -> Path:
        return Path(self.skipped) if self.skipped else Path(self.predictions).with_suffix(".skipped.json")

    def inputs(self) -> dict:
        """The files and folders the run reads, by option (None: not given)."""
        return {"--questions": self.questions, "--scene-graphs": self.scene_graphs, "--features": self.features,
                "--model": self.model, "--ontology": self.ontology, "--ontology-extension": self.ontology_extension,
                "--parser": self.parser,
                "--knowledge": None if self.knowledge == "sample" else self.knowledge}

    @property
    def journal_file(self) -> Path:
        """The run's journal: beside the predictions, or its shard's own."""
        from nablafol.pipeline.journal import journal_path
        return journal_path(self.predictions if self.shard is None else self.shard.path(self.predictions))

    @property
    def details_file(self) -> Optional[Path]:
        """The details this run writes (:attr:`details_path`, or its shard's own); None when none."""
        details = self.details_path
        return details if not details or self.shard is None else self.shard.path(details)

    def outputs(self) -> list:
        """``(name, path)`` of every file the run may write: those named and those it derives (the
        journal, the skipped list, CRIC's details, the details' part file; a shard's own)."""
        details = self.details_file
        part = DetailsStream.part_of(details) if details else None
        return [("--predictions", self.predictions), ("the journal of --predictions", self.journal_file),
                ("--details", details), ("the part file of --details", part),
                ("--attentions", self.attentions), ("--skipped", self.skipped_path)]

    def written_alone(self) -> list:
        """The outputs this process must hold alone for the run (their locks): the predictions, or
        under ``--shard`` (or torchrun, a shard per rank) its shard's, so that the shards of one run
        go side by side and a second run on any of them is refused; under torchrun rank 0 also holds
        the predictions from the start, as it merges the shards into them at the end; a merge also
        holds the shards it reads (an ``eval --shard`` meanwhile would replace its journal)."""
        if self.merge and (self.launch is None or self.launch.world == 1):
            counts = ShardedJournal.shard_counts(self.predictions)  # none or several: the merge says so, locked
            count = counts[0] if len(counts) == 1 else 0
            return [self.predictions] + [EvalShard(index, count).path(self.predictions) for index in range(count)]
        if self.shard is not None:
            return [self.shard.path(self.predictions)]
        if self.launch is not None and self.launch.world > 1:
            shard = EvalShard(self.launch.rank, self.launch.world).path(self.predictions)
            return [shard, self.predictions] if self.launch.is_main else [shard]
        return [self.predictions]


def most_exact_budget() -> int:
    """The most repeated uncertain atoms the engine conditions on (``--exact-budget``)."""
    from nablafol.engine.execution import MAX_EXACT_BUDGET
    return MAX_EXACT_BUDGET


@dataclass
class EvaluationReport:
    """What ``nablafol eval`` did: the stream's result, and the files it wrote."""

    result: StreamResult
    resumed: bool
    skipped_file: Optional[Path]
    benchmark_report: object = None  # CRIC: its scores (nablafol.scoring.benchmarks)
    shard: Optional[EvalShard] = None  # the shard this run answered
    merged: int = 0  # shards merged into the outputs
    tally: Optional[tuple] = None  # (answers flagged exact, answers) from the details file

    def lines(self) -> list[str]:
        """The summary, as the command prints it."""
        r = self.result
        before = (f"; {r.done - r.replayed:,} done in this run, {r.replayed:,} read from the journal"
                  if self.resumed else "")
        rate = (f"merged from {self.merged} shards" if self.merged else
                f"in {r.seconds:.1f} s ({(r.done - r.replayed) / max(r.seconds, 1e-9):,.0f} questions/s{before})")
        where = f"shard {self.shard}: " if self.shard is not None else ""
        out = [f"{where}{r.done:,} questions, {r.answered:,} answered, {r.skipped:,} skipped, {rate}"]
        if self.shard is not None:
            out.append("scores and outputs of the whole set come with the merge (`nablafol eval ... --merge`)")
            return out
        if r.scores is not None:
            from nablafol.scoring import format_gqa
            out += [format_gqa(r.scores.overall), "", r.scores.format_table()]
        if self.benchmark_report is not None:
            out.append(self.benchmark_report.format_table())
        if self.tally is not None and self.tally[1]:
            exact, answered = self.tally
            out.append(f"exact answers: {100 * exact / answered:.2f}% ({exact:,} of {answered:,}; the others are "
                       "the paper's approximation, see docs/exactness.md)")
        if r.guessed:
            out.append(f"guessed answers: {r.guessed:,} (every candidate at probability 0: the first one is "
                       "given, by no evidence)")
        if r.fallbacks:
            out.append(f"presupposition fallbacks: {r.fallbacks:,} (an open question's objects were none under the "
                       "ontology: answered with their category widened to every class, docs/design.md)")
        if r.skipped:
            out.append(f"skipped {r.skipped:,} questions (counted wrong): {r.skip_summary()}")
            out += [f"  {question_id}: {reason}: {detail}" for question_id, _, (reason, detail), _ in r.first_skips]
            more = f" ({r.skipped - len(r.first_skips):,} more)" if r.skipped > len(r.first_skips) else ""
            out.append(f"all skipped questions{more}: {self.skipped_file}")
        return out


def run_evaluation(job: EvaluationJob, say: Callable[[str], None] = print,
                   progress: Optional[Callable[[int], None]] = None) -> EvaluationReport:
    """``nablafol eval``: answer ``job.questions`` (GQA's, or CRIC's) over scene graphs (golden)
    or features (a trained model), write the predictions (and details, and the skipped
    questions), through the journal beside the predictions file (``--resume`` continues it).
    ``say`` hears one-line notes.

    ``job.shard``: answer that shard's chunks into its own journal (and details), kept for the
    merge; ``job.merge``: write the outputs from the shards' journals, byte-identical to one
    process's; ``job.launch`` of several processes (``torchrun``): each answers the shard of its
    rank, then rank 0 merges (the shards' files must be visible to it: a shared folder)."""
    if job.launch is not None and job.launch.world > 1:
        return _run_launched(job, say, progress)
    if job.merge:
        return _merge(job)
    return _answer(job, say, progress)


def _scorer(job: EvaluationJob, benchmark: str):
    from nablafol.scoring import Scorer, exact_match, vocabulary_match
    return Scorer(exact_match if job.exact else vocabulary_match) if benchmark == "gqa" else None


def _answer(job: EvaluationJob, say, progress, device=None) -> EvaluationReport:
    """Answer the job's questions (its shard's, with ``job.shard``) through its journal, on
    ``device`` when given (its journal still records the job's: the GPU of each rank)."""
    from nablafol.pipeline.journal import shard_settings

    benchmark, shard = job.benchmark, job.shard
    if job.parser is not None and benchmark != "gqa":
        raise InputFileError(job.questions, f"holds {benchmark} questions; a semantic parser writes GQA programs")
    path = job.journal_file
    resuming = job.resume and path.exists()
    if job.resume and not resuming:
        say(f"no journal at {path}: starting from the first question")
    settings = job.settings() if shard is None else shard_settings(job.settings(), shard)
    journal = EvalJournal.resume(path, settings) if resuming else EvalJournal.start(path, settings)
    try:
        return _answer_into(journal, job, benchmark, resuming, progress, device)
    except NablafolError:
        if not resuming and journal.done == 0:  # a refused input: no journal left to refuse a later --resume
            journal.close(remove=True)
            if job.details_file:  # nor the details' part file
                DetailsStream.part_of(job.details_file).unlink(missing_ok=True)
        raise


def _answer_into(journal, job: EvaluationJob, benchmark: str, resuming: bool, progress, device) -> EvaluationReport:
    """:func:`_answer` once its journal is open."""
    from nablafol.pipeline.collector import loading
    shard = job.shard
    with loading():
        answerer = _answerer(job if device is None else replace(job, device=device), benchmark)
        questions = _questions(job, benchmark)
    if shard is not None:
        questions = shard.take(questions, job.chunk_size)
    details = None
    if job.details_file:
        details = DetailsStream(job.details_file, journal.details_bytes)
    result = answer_stream(questions, answerer, scorer=_scorer(job, benchmark), chunk_size=job.chunk_size,
                           workers=job.workers, threads=job.threads, journal=journal, details=details,
                           progress=progress, source=str(job.questions))
    try:
        refuse_changed_inputs(journal.settings, job)
    except InputFileError:  # what was answered mixes two contents: nothing of it is kept to resume
        journal.close(remove=True)
        if details is not None:
            details.abandon()
        raise
    if shard is not None:
        journal.seal()  # kept, finished, for the merge
        journal.close()
        if details is not None:
            details.finish()
        return EvaluationReport(result, resuming, None, shard=shard)
    return _finish(job, benchmark, journal, result, resuming, details, lambda: answerer.perception)


#: the settings that are input files' fingerprints (EvaluationJob.settings)
_INPUT_SETTINGS = ("questions", "scene_graphs", "features", "model", "knowledge", "ontology", "parser")


def refuse_changed_inputs(started: dict, job: EvaluationJob) -> None:
    """InputFileError naming the first input file whose size or modification time is not what
    it was when the run started (``started``: the settings then): answers read from two contents
    of one file are no one's, and nothing is written from them."""
    now = job.settings()
    for key in _INPUT_SETTINGS:
        changed = _changed_file(started.get(key), now.get(key))
        if changed is not None:
            raise InputFileError(changed, "changed while the run read it (size or modification time): its answers "
                                          "would mix two contents; run again, without --resume, once it is final")


def _changed_file(before, after) -> Optional[str]:
    """The first file of fingerprint ``before`` (``[[path, size, time], ...]``, or a name) that is
    not the same in ``after``, or None. A file new in a folder is not a change of what was read
    (this run's journal may lie in an input's folder)."""
    if not isinstance(before, list) or not isinstance(after, list):
        return None if before == after else str(before)
    now = {entry[0]: entry for entry in after}
    return next((entry[0] for entry in before if now.get(entry[0]) != entry), None)


def _finish(job: EvaluationJob, benchmark: str, journal, result: StreamResult, resumed: bool, details,
            perception: Callable, merged: int = 0) -> EvaluationReport:
    """The outputs from the journal's entries (in question order), then the journal removed;
    ``perception()`` gives the boxes of the attentions file."""
    journal.close()
    if details is not None:
        details.finish()
    benchmark_report = None
    if benchmark == "cric":
        benchmark_report = _write_cric_predictions(job)
    else:
        write_predictions(job.predictions, ((q, p) for q, p, skip, _ in journal.entries() if skip is None),
                          check_unique=False)
    if job.attentions:
        _write_attentions(job, perception())
    skipped_file = None
    if result.skipped:
        skipped_file = job.skipped_path
        _write_json(skipped_file, [{"questionId": q, "reason": skip[0], "detail": skip[1]}
                                   for q, _, skip, _ in journal.entries() if skip is not None])
    journal.close(remove=True)
    return EvaluationReport(result, resumed, skipped_file, benchmark_report, merged=merged,
                            tally=exact_share(job.details_path) if job.details_path else None)




def _merge(job: EvaluationJob) -> EvaluationReport:
    """The outputs of a split run from its shards' journals: the questions are replayed from
    them in stream order through :func:`answer_stream` (scored as one run scores them), the
    details copied chunk by chunk; then the shards' files are removed."""
    from nablafol.pipeline.journal import ShardedJournal
    benchmark = job.benchmark
    started = job.settings()
    journal = ShardedJournal.find(job.predictions, started)
    count = len(journal.journals)
    result = answer_stream(_questions(job, benchmark), _Unanswered(job.questions), scorer=_scorer(job, benchmark),
                           chunk_size=job.chunk_size, journal=journal, source=str(job.questions))
    details = _MergedDetails(job.details_path, journal) if job.details_path else None
    refuse_changed_inputs(started, job)
    report = _finish(job, benchmark, journal, result, False, details, lambda: _answerer(job, benchmark).perception,
                     merged=count)
    if job.details_path:
        for index in range(count):
            EvalShard(index, count).path(job.details_path).unlink(missing_ok=True)
    return report


class _Unanswered:
    """The answerer of a merge: every question must come from the shards' journals."""

    keep_outcomes = False

    def __init__(self, source):
        self.source = source

    def answer_chunk(self, questions, progress=None):
        raise InputFileError(self.source, "has questions the shards did not answer (shards of other inputs?)",
                             f"question {questions[0].id}")


class _MergedDetails:
    """The details file of a merge: each chunk's bytes from its shard's details file, in order."""

    def __init__(self, path, journal):
        self.path, self.journal = Path(path), journal

    def finish(self) -> None:
        from nablafol.data.files import atomic_writer
        count = len(self.journal.journals)
        sources = [open(EvalShard(i, count).path(self.path), "rb") for i in range(count)]
        try:
            with atomic_writer(self.path, "wb") as out:
                for shard, start, end, _ in self.journal.pieces():
                    sources[shard].seek(start)
                    out.write(sources[shard].read(end - start))
        finally:
            for source in sources:
                source.close()


def _run_launched(job: EvaluationJob, say, progress) -> EvaluationReport:
    """Under ``torchrun``: this process answers the shard of its rank; when every shard is done,
    rank 0 merges them (a barrier over gloo: the processes only wait for each other)."""
    from nablafol.pipeline.distributed import EVALUATION_TIMEOUT, process_group, rank_device
    from nablafol.pipeline.sharding import ShardingError
    launch = job.launch
    if job.shard is not None or job.merge:
        raise ShardingError("under torchrun each process answers the shard of its rank and rank 0 merges: "
                            "give neither --shard nor --merge")
    with process_group(launch, "cpu", timeout=EVALUATION_TIMEOUT) as group:
        report = _answer(replace(job, shard=EvalShard(launch.rank, launch.world), launch=None), say,
                         progress if launch.is_main else None, device=rank_device(job.device, launch))
        group.barrier()
        if launch.is_main:
            report = _merge(replace(job, launch=None))
    return report


def _questions(job: EvaluationJob, benchmark: str) -> Iterable:
    if benchmark == "cric":
        from nablafol.data.cric import load_cric_questions
        return iter(load_cric_questions(job.questions).values())
    if job.parser is not None:  # the parser's reading of each question in place of its program
        from nablafol.semantic_parser import load_parser, with_predicted_programs
        return with_predicted_programs(iter_questions(job.questions), load_parser(job.parser))
    return iter_questions(job.questions)


def _write_cric_predictions(job: EvaluationJob):
    """CRIC's predictions (answer and grounding: the object the final attention points at) from
    the details just written; returns their CRIC scores."""
    from nablafol.data.cric import read_cric_predictions, write_cric_predictions
    from nablafol.scoring.benchmarks import score_benchmark
    predictions = read_cric_predictions(job.details_path) if Path(job.details_path).stat().st_size else {}
    write_cric_predictions(job.predictions, predictions)
    return score_benchmark("cric", job.questions, job.predictions, exact=job.exact)


def _write_attentions(job: EvaluationJob, perception) -> int:
    """GQA's object-based attentions file from the details just written (each question's engine
    attention on its objects' boxes); how many questions it holds."""
    from nablafol.data import iter_details
    from nablafol.data.attentions import attentions_from_details, write_attentions
    image_of = {q.id: q.image_id for q in iter_questions(job.questions)}
    return write_attentions(job.attentions, attentions_from_details(iter_details(job.details), image_of,
                                                                    perception.regions))


def _answerer(job: EvaluationJob, benchmark: str = "gqa") -> Answerer:
    """The perception the job names, and an answerer over it (with CRIC's compiler for CRIC)."""
    from nablafol.dsl import load_ontology
    from nablafol.pipeline.perception import SceneGraphPerception
    ontology = load_ontology(job.ontology, job.ontology_extension)
    if job.scene_graphs:
        from nablafol.data import SceneGraphTexts, load_scene_graphs
        from nablafol.data.cric import load_cric_scene_graphs
        knowledge = None
        if job.knowledge:
            from nablafol.graph_oracles import KnowledgeBase
            knowledge = KnowledgeBase.sample() if job.knowledge == "sample" else KnowledgeBase.load(job.knowledge)
        # with workers, scenes stay JSON text until a worker needs one: read in parallel, not copied
        if benchmark == "cric":
            graphs = load_cric_scene_graphs(job.scene_graphs)
        else:
            graphs = SceneGraphTexts(job.scene_graphs) if job.workers > 1 else load_scene_graphs(job.scene_graphs)
        if benchmark != "cric":
            # an open query's candidates are the ontology's and what the scene graphs hold (the open vocabulary);
            # relations are left out: no open question competes them
            from nablafol.data import scene_graph_words
            names, values = scene_graph_words(graphs)
            ontology = ontology.joined({"name": names, None: values})
        perception = SceneGraphPerception(graphs, ontology=ontology, device=job.device, knowledge=knowledge)
    else:
        from nablafol.pipeline.model_folder import feature_perception
        perception = feature_perception(job.features, job.model, device=job.device)
    compiler = None
    if benchmark == "cric":
        from nablafol.compiler.cric import CricCompiler
        from nablafol.pipeline.answering import CACHED_PROGRAMS
        compiler = CricCompiler(perception.ontology, perception.knowledge_relations, cache_size=CACHED_PROGRAMS)
    engine = None
    if job.exact_inference or job.bounds:
        from nablafol.engine import Engine
        if perception.calibrator is not None:
            option = "--exact-inference" if job.exact_inference else "--bounds"
            raise InputFileError(job.model, f"has a calibrator, and calibrated answers are not the formula's "
                                            f"probabilities: {option} evaluates without one (docs/exactness.md)")
        engine = Engine(exact=job.exact_inference, exact_budget=job.exact_budget, bounds=job.bounds)
    return Answerer(perception, compiler=compiler, engine=engine, batch_size=job.batch_size, threshold=job.threshold,
                    keep_outcomes=bool(job.details_path), details_top=job.details_top,
                    explain=job.explain)


def _write_json(path: Path, obj) -> None:
    from nablafol.data.files import atomic_writer
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as f:
        f.write(json.dumps(obj, indent=1, ensure_ascii=False) + "\n")
