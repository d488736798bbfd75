"""Score a predictions file on any benchmark: read both files, score, report as a table and JSON.

``nablafol score --benchmark {gqa,cric,aokvqa,vcr} --questions A --predictions P [--split S]
[--by FIELD [--reference SLICE]] [--json OUT]`` calls :func:`score_benchmark` for every
benchmark but plain GQA (whose scores, consistency and hard/easy split, live in
:mod:`nablafol.scoring.scores`). Each benchmark reads its own files and has its paper's
metric:

==========  ============================================  ===========================================
benchmark   annotations (A) / predictions (P)             metrics
==========  ============================================  ===========================================
``cric``    CRIC question file / CRIC predictions or a    answer, grounding, final (Verify,
            nablafol details file                         Recognize, overall); per-module IoU
``aokvqa``  ``aokvqa_v1p0_{split}.json`` /                multiple choice, direct answer
            ``{id: {multiple_choice, direct_answer}}``
``vcr``     ``{split}.jsonl`` (VCR, GD-VCR) /             Q→A, QA→R, Q→AR
            leaderboard CSV
``gqa``     ``*_questions.json`` / GQA predictions        accuracy (all, open, binary), with --by
==========  ============================================  ===========================================

With ``--split`` (a ``nablafol split`` file of any benchmark's question ids) the hard and
easy sets are scored too, each as a set of its own: the hard set by its metrics (Acc_h), the
easy set by their errors, one minus each (Err_e), as the GQA report shows them; with ``--by``
every slice (:mod:`nablafol.scoring.slices`). In JSON every metric is a number in [0, 1] (None
where nothing was scored); the easy set's are under ``"error"``.

    >>> report = score_benchmark("vcr", "tests/fixtures/gdvcr/val.jsonl", "tests/fixtures/gdvcr/predictions.csv",
    ...                          by="region")
    >>> report.metrics["q2a"], report.slices.reference, [round(s.gaps["q2a"], 4) for s in report.slices.slices]
    (0.625, 'west', [-0.3333, 0.1667, 0.1667, 0.0])
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from nablafol.errors import InputFileError
from nablafol.scoring.questions import ScoringError
from nablafol.scoring.slices import SliceReport, score_slices

__all__ = ["BenchmarkReport", "GqaAccuracy", "score_benchmark", "read_split", "LABELS"]

#: How the table names each metric.
LABELS = {"q2a": "Q→A", "qa2r": "QA→R", "q2ar": "Q→AR", "multiple_choice": "MC", "direct_answer": "DA",
          "answer": "answer", "grounding": "grounding", "final": "final", "accuracy": "accuracy",
          "open": "open", "binary": "binary"}


@dataclass(frozen=True)
class BenchmarkReport:
    """What :func:`score_benchmark` found: the overall metrics, and the benchmark's own
    breakdowns (``sections``: title -> table text; ``details``: their JSON)."""

    benchmark: str
    count: int
    metrics: Mapping[str, float | None]
    missing: int
    sections: tuple[tuple[str, str], ...] = ()
    details: Mapping[str, object] = field(default_factory=dict)
    #: ``"hard"``: (count, metrics), Acc_h; ``"easy"``: (count, one minus each metric), Err_e
    subsets: Mapping[str, tuple[int, Mapping[str, float | None]]] = field(default_factory=dict)
    slices: SliceReport | None = None

    def to_json(self) -> dict:
        out: dict = {"benchmark": self.benchmark, "count": self.count, "missing": self.missing,
                     **dict(self.metrics), **dict(self.details)}
        for name, (count, metrics) in self.subsets.items():
            out[name] = {"count": count, **({"error": dict(metrics)} if name == "easy" else dict(metrics))}
        if self.slices is not None:
            out["by"] = self.slices.to_json()
        return out

    def format_table(self) -> str:
        lines = [f"{self.benchmark}: {self.count:,} questions"
                 + (f" ({self.missing:,} without a prediction, counted wrong)" if self.missing else "")]
        rows = [("all", self.count, self.metrics)] + [(_SUBSET_LABELS[n], c, m) for n, (c, m) in self.subsets.items()]
        names = [n for n in self.metrics if any(m[n] is not None for _, _, m in rows)] or list(self.metrics)
        table = [["set", "count"] + [LABELS.get(n, n) for n in names]]
        table += [[name, f"{count:,}"] + [_percent(m[n]) for n in names] for name, count, m in rows]
        lines.append(_aligned(table))
        if "easy" in self.subsets:
            lines.append("(easy: the error on the easy set, 100% minus each metric, as GQA's Err_e)")
        for title, text in self.sections:
            lines += ["", title, text]
        if self.slices is not None:
            lines += ["", self.slices.titled_table(LABELS)]
        return "\n".join(lines)


#: How the table names the split's sets: the hard set shows its metrics, the easy set their errors.
_SUBSET_LABELS = {"hard": "hard (Acc_h)", "easy": "easy (Err_e)"}


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in rows)


@dataclass(frozen=True)
class _Benchmark:
    """How one benchmark is read and scored."""

    questions: dict  # id -> question
    predictions: Mapping
    make_metric: Callable[[], object]
    record: Callable[[object], Mapping]
    sections: Callable[[object], tuple[tuple[tuple[str, str], ...], dict]] = lambda result: ((), {})


def score_benchmark(benchmark: str, questions_path: str | os.PathLike, predictions_path: str | os.PathLike, *,
                    split=None, by: str | None = None, reference: str | None = None,
                    exact: bool = False) -> BenchmarkReport:
    """Read and score one benchmark's files (see the module docstring).

    ``split`` is a :class:`~nablafol.scoring.Split`, the path of a split file, or None; ``exact`` compares CRIC and
    GQA answers as strings (by default: by vocabulary form, as nablafol scores GQA); A-OKVQA
    and VCR follow their official scripts either way.
    """
    bench = _READERS[benchmark](questions_path, predictions_path, exact)
    questions = list(bench.questions.values())
    metric = bench.make_metric()
    metric.update(questions, bench.predictions)
    result = metric.compute()
    sections, details = bench.sections(result)
    subsets = {}
    split_path = None
    if isinstance(split, (str, os.PathLike)):
        split_path, split = split, read_split(split)
    if split is not None:
        for name, ids in (("hard", split.hard), ("easy", split.easy)):
            unknown = [i for i in ids if i not in bench.questions]
            if unknown:
                message = f"{len(unknown)} {name} question(s) are not in the questions (e.g. {unknown[0]!r})"
                if split_path is not None:  # name the file that does not fit
                    raise InputFileError(split_path, message)
                raise ScoringError(f"split: {message}")
            subset_metric = bench.make_metric()
            subset_metric.update([bench.questions[i] for i in ids], bench.predictions)
            subset = subset_metric.compute()
            metrics = subset.metrics()
            if name == "easy":  # Err_e: the base model answered these right, so what counts is what goes wrong
                metrics = {n: None if v is None else 1 - v for n, v in metrics.items()}
            subsets[name] = (subset.count, metrics)
    slices = None
    if by is not None:
        slices = score_slices(questions, bench.predictions, by, bench.make_metric, reference, record=bench.record)
    return BenchmarkReport(benchmark, result.count, result.metrics(), len(result.missing), sections, details,
                           subsets, slices)


def read_split(path: str | os.PathLike):
    """A ``nablafol split`` file as a :class:`~nablafol.scoring.Split` (one line naming the file if unusable)."""
    from nablafol.data.json_stream import load_json
    from nablafol.scoring import Split
    data = load_json(path, expected_type=dict, expected='a split {"easy": [...], "hard": [...]}')
    try:
        return Split.from_json(data)
    except ScoringError as error:
        raise InputFileError(path, str(error).removeprefix("split: ")) from None


# -- the benchmarks ---------------------------------------------------------------------------

def _cric(questions_path, predictions_path, exact: bool) -> _Benchmark:
    from nablafol.data.cric import load_cric_questions, read_cric_predictions
    from nablafol.scoring.cric import GROUPS, CricScore
    from nablafol.scoring.answers import exact_match, vocabulary_match

    def sections(result):
        groups = result.table()
        rows = [["group", "count", "answer", "grounding", "final"]]
        rows += [[g, f"{result.counts[g]:,}"] + [_percent(groups[g][p]) for p in ("answer", "grounding", "final")]
                 for g in GROUPS]
        out = [("answer, grounding and final accuracy (the paper's Table 2)", _aligned(rows))]
        modules = result.module_iou()
        if modules:
            rows = [["module", "steps", "IoU"]] + [[f, f"{result.module_count[f]:,}", _percent(v)]
                                                    for f, v in modules.items()]
            out.append(("per-module IoU of predicted and ground-truth objects (Table 3)", _aligned(rows)))
        return tuple(out), {"groups": {g: {"count": result.counts[g], **groups[g]} for g in GROUPS},
                            "modules": {f: {"steps": result.module_count[f], "iou": v} for f, v in modules.items()}}

    return _Benchmark(load_cric_questions(questions_path), read_cric_predictions(predictions_path),
                      lambda: CricScore(exact_match if exact else vocabulary_match), lambda q: q.record(), sections)


def _aokvqa(questions_path, predictions_path, exact: bool) -> _Benchmark:
    from nablafol.data.aokvqa import load_aokvqa, read_aokvqa_predictions
    from nablafol.scoring.aokvqa import AokvqaScore
    questions = load_aokvqa(questions_path)
    predictions = read_aokvqa_predictions(predictions_path)
    # as the official script: a setting no prediction answers is not scored
    mc = any(p.multiple_choice is not None for p in predictions.values())
    da = any(p.direct_answer is not None for p in predictions.values())
    if not (mc or da):
        raise ScoringError("the predictions give neither multiple_choice nor direct_answer answers")

    def sections(result):
        with_rationales = [q for q in questions.values() if q.rationales]
        n = sum(len(q.rationales) for q in with_rationales)
        text = (f"{len(with_rationales):,} of {len(questions):,} questions have rationales ({n:,} in all); "
                f"direct answer scored on the {result.direct_answer_count:,} not marked difficult")
        return (("rationales and direct answers", text),), {
            "direct_answer_count": result.direct_answer_count,
            "rationales": {"questions": len(with_rationales), "rationales": n}}

    return _Benchmark(questions, predictions, lambda: AokvqaScore(mc, da), lambda q: q.record(), sections)


def _vcr(questions_path, predictions_path, exact: bool) -> _Benchmark:
    from nablafol.data.vcr import load_vcr, read_vcr_predictions
    from nablafol.scoring.vcr import VcrScore
    predictions = read_vcr_predictions(predictions_path)
    rationales = bool(predictions) and all(p.rationales is not None for p in predictions.values())
    return _Benchmark(load_vcr(questions_path), predictions, lambda: VcrScore(rationales), lambda q: q.record())


def _gqa(questions_path, predictions_path, exact: bool) -> _Benchmark:
    from nablafol.data import load_questions, read_predictions
    from nablafol.scoring.answers import exact_match, vocabulary_match
    match = exact_match if exact else vocabulary_match
    return _Benchmark(load_questions(questions_path), read_predictions(predictions_path),
                      lambda: GqaAccuracy(match), lambda q: q.to_record())


class GqaAccuracy:
    """GQA's :func:`~nablafol.scoring.score` behind the metric interface slices use (also
    :func:`~nablafol.scoring.inputs.score_files`' slices)."""

    def __init__(self, match):
        self._match, self._questions, self._predictions = match, [], {}

    def update(self, questions, predictions) -> None:
        self._questions += list(questions)
        self._predictions = predictions

    def compute(self) -> "_GqaResult":
        from nablafol.scoring import score
        return _GqaResult(score(self._questions, self._predictions, match=self._match).overall)


@dataclass(frozen=True)
class _GqaResult:
    result: object

    @property
    def count(self) -> int:
        return self.result.count["all"]

    @property
    def missing(self) -> tuple:
        return self.result.missing

    def metrics(self) -> dict[str, float | None]:
        accuracy = self.result.accuracy
        return {"accuracy": accuracy["all"], "open": accuracy["open"], "binary": accuracy["binary"]}


_READERS = {"cric": _cric, "aokvqa": _aokvqa, "vcr": _vcr, "gqa": _gqa}
