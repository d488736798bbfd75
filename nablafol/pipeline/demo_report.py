"""The demo's report: its tables (the paper's Tables 1-3 on the embedded dataset) and pictures
(accuracy by program length, hard vs easy, reliability, calibration shapes, questions hop by hop)."""
from __future__ import annotations

import json
import math

from nablafol.data.files import atomic_writer

HOP_QUESTIONS = 3  # questions drawn hop by hop
SHAPE_QUESTIONS = 2  # questions whose learned calibration curves are drawn
SHAPE_STEPS = 12  # curves per calibration picture, for a readable legend

BASE, CALIBRATED, BLACK_BOX, PRIOR = ("base model (∇-FOL)", "calibrated (∇-FOL + top-down calibration)",
                                      "black-box (question words + features)", "answer prior (blind)")
CEILING = "supervised ceiling (same oracle trained on scene-graph labels)"
BAYES = "Bayes ceiling (the generator's posteriors given the features and boxes)"
GOLDEN = "golden oracle (scene graphs)"
PREDICTED = "∇-FOL with predicted programs"  # the base model over the semantic parser's programs
ANSWERS_ONLY = "answers only (the base model)"  # the learning curves' names
LABELS_ONLY = "scene-graph labels only (the supervised ceiling)"
PRETRAINED = "scene-graph labels, then answers"
WORST_CONCEPTS = 8  # the supervised ceiling's least recalled concepts, in the report


def wilson_interval(right: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of an accuracy of ``right`` in ``total`` (95% at ``z`` 1.96):
    how far the figure may move on another draw of as many questions."""
    if total <= 0:
        return (0.0, 1.0)
    p, q = right / total, z * z / total
    centre, half = (p + q / 2) / (1 + q), z * math.sqrt(p * (1 - p) / total + q / (4 * total)) / (1 + q)
    return (max(0.0, centre - half), min(1.0, centre + half))


def write_json(path, obj) -> None:
    with atomic_writer(path) as f:
        f.write(json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


# --- tables ---------------------------------------------------------------------------------

GROUPS = ("open", "binary", "all")


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.2f}%"


def _split_table(scores: dict) -> str:
    """Models by rows (open / binary / all each): test-dev accuracy and consistency, Acc_h, Err_e."""
    lines = ["| model | questions | accuracy | consistency | Acc_h ↑ | consistency (hard) | Err_e ↓ | "
             "consistency (easy) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, s in scores.items():
        for g in GROUPS:
            lines.append(f"| {name if g == 'open' else ''} | {g} | {_pct(s.overall.accuracy[g])} | "
                         f"{_pct(s.overall.consistency[g])} | {_pct(s.hard.accuracy[g])} | "
                         f"{_pct(s.hard.consistency[g])} | {_pct(s.easy.error[g])} | {_pct(s.easy.consistency[g])} |")
    return "\n".join(lines)


def ceiling_table(ceiling, bayes, scores: dict, epochs: int, history: list, bayes_interval: tuple,
                  concepts: dict) -> str:
    """The rows above Table 1: the Bayes oracle of the generator, and the same oracle network
    trained on the train scene graphs' labels, each answering through the same engine and golden
    programs, beside the base model and the black box; the ceiling's least recalled concepts."""
    rows = [f"| {name} | " + " | ".join(_pct(s.overall.accuracy[g]) for g in GROUPS) + " |"
            for name, s in ((BAYES, bayes), (CEILING, ceiling), (BASE, scores[BASE]), (BLACK_BOX, scores[BLACK_BOX]))]
    best = next((h for h in history if h.get("best")), history[-1])
    worst = sorted(((c, f) for c, f in concepts.items() if f["recall"] is not None),
                   key=lambda item: item[1]["recall"])[:WORST_CONCEPTS]
    low, high = bayes_interval
    return "\n".join([
        "\n## The perception ceiling (test-dev)\n",
        "The Bayes ceiling: the generator's own posterior given the features and boxes alone "
        "(`nablafol.synthetic.bayes.features_only_scene_graphs`): the scene's location and weather and every "
        "object's class and attributes summed exactly over their hypotheses (the class prior and box sizes from "
        "the training graphs, objects independent given the scene), relations by the generator's rules over draws "
        f"from that posterior; its 95% interval over these questions {_pct(low)} to {_pct(high)}. "
        f"The supervised ceiling: the base model's network trained on the train scene graphs' labels (every "
        f"object's name and attributes, every pair's relations) instead of the answers, at most {epochs} epochs, "
        f"early stopping on validation (it ran {len(history)}): the weights of epoch {best['epoch'] + 1} (validation "
        f"{_pct(best.get('val_accuracy'))}, label loss {best['label_loss']:.3f}). Both answer through the same "
        "engine and golden programs; the base model learns from answers alone (`docs/oracle-learning.md`).\n",
        "| model | open | binary | all |", "|---|---:|---:|---:|", *rows,
        "\nThe supervised ceiling's least recalled concepts on the validation graphs (decided at 0.5):\n",
        "| concept | recall | accuracy | true entries |", "|---|---:|---:|---:|",
        *[f"| {c} | {_pct(f['recall'])} | {_pct(f['accuracy'])} | {f['positives']:,} |" for c, f in worst]])


def learning_curves_section(curves: dict, pretrained_epochs: int, levels: dict) -> str:
    """The learning curves' paragraph: each way of learning, where it ended, in how many seconds."""
    def end(points) -> str:
        seconds, accuracy = points[-1]
        return f"{_pct(accuracy)} after {seconds:.0f} s"

    pretrained = (f"{PRETRAINED}: the best label epoch's weights, then {pretrained_epochs} epoch(s) through the "
                  f"reasoning on the answers (`nablafol train --scene-graphs`), {end(curves[PRETRAINED])}; "
                  if curves.get(PRETRAINED) else "")  # --pretrained-epochs 0: no such line
    return "\n".join([
        "\n## Learning curves (validation accuracy against training seconds)\n",
        f"Each point is an epoch (its validation pass counted in the seconds). {ANSWERS_ONLY}: "
        f"{end(curves[ANSWERS_ONLY])}; {LABELS_ONLY}: {end(curves[LABELS_ONLY])} (early stopping keeps its best "
        f"epoch); {pretrained}{BLACK_BOX}: {end(curves[BLACK_BOX])}; dashed, "
        + "; ".join(f"{name}: {_pct(value)} of validation" for name, value in levels.items())
        + ". The base model and the supervised " + ("and the pretrained ones answer" if pretrained else "one answer")
        + " through the engine; the black box never sees a program.\n",
        "![learning curves](learning_curves.png)"])


def timings_section(main: dict, beside: dict, wall: float, cpu: dict, one_process: bool = False,
                    stage_cpu: tuple = ({}, {}), beside_span: list | None = None) -> str:
    """Seconds of every stage: those of this process, those of the second one (beside the
    training, at the same time; ``one_process``: run here first, one after the other), the wall
    clock of the whole run, and each process's CPU seconds (what the run costs whatever else the
    machine does); ``stage_cpu``: the CPU seconds of each stage, this process's and the second's;
    ``beside_span``: when the stages beside began and ended, in seconds from the run's start (which
    process waited for which)."""
    def cpu_of(k, spent):
        return f"{spent[k]:.1f}" if k in spent else "–"

    rows = [f"| {k} | {v:.1f} | {cpu_of(k, stage_cpu[0])} |" for k, v in main.items()]
    rows += [f"| beside the training: {k} | {v:.1f} | {cpu_of(k, stage_cpu[1])} |" for k, v in beside.items()]
    if beside_span is not None:
        rows += [f"| the stages beside: began, ended (seconds from the start) | {beside_span[0]:.1f}, "
                 f"{beside_span[1]:.1f} | |"]
    rows += [f"| **wall, the whole demo** | {wall:.1f} | |"]
    rows += [f"| {k} | | {v:.1f} |" for k, v in cpu.items()]
    how = ("ran in this process, before the base model's training (one process)" if one_process else
           "run in a second process from the moment the data is written (one torch thread each)")
    return (f"\n## Timings\n\nThe parser, the black box, the ceiling and the pretrained curve {how}. Wall and CPU "
            "seconds per stage, then the CPU seconds of each process: on a machine shared with other work the wall "
            "grows, the CPU seconds much less.\n\n| stage | wall s | CPU s |\n|---|---:|---:|\n" + "\n".join(rows))


def parser_section(parsing: dict) -> str:
    """The semantic parser's paragraph: how it was trained, how it read test-dev, what it cost."""
    cost = 100 * (parsing["golden_accuracy"] - parsing["predicted_accuracy"])
    return (f"\n## Reading the questions: the semantic parser\n\nTrained on the {parsing['examples']:,} training "
            f"questions ({parsing['epochs']} epochs, {parsing['seconds']:.0f} s; saved in `{parsing['folder']}` for "
            f"`nablafol answer`), it reads test-dev's words into programs: {100 * parsing['exact_match']:.2f}% exactly "
            f"the annotated program (object ids ignored), {parsing['unreadable']:,} unreadable. Answered with those "
            f"programs the base model loses {cost:.2f} points of accuracy ({PREDICTED} in Table 1"
            + (f"; skipped: {parsing['skips']}" if parsing["skips"] else "") + ").")


def tables(scores: dict, split, blackbox, calibration_epochs: int, calibration_history: list) -> str:
    table1 = ["| programs | questions | accuracy | consistency | count |", "|---|---|---:|---:|---:|"]
    for name, label in ((BASE, "golden"), (PREDICTED, "predicted (semantic parser)")):
        if name in scores:
            s = scores[name].overall
            table1 += [f"| {label if g == 'open' else ''} | {g} | {_pct(s.accuracy[g])} | {_pct(s.consistency[g])} | "
                       f"{s.count[g]:,} |" for g in GROUPS]
    val = calibration_history[-1].get("val_accuracy") if calibration_history else None
    return "\n".join([
        "\n## Table 1 — the base model on test-dev\n",
        "The trained oracle with parameter-free DFOL over the golden programs (no calibration)"
        + (f"; below, the same over the programs the semantic parser reads from the words ({PREDICTED})"
           if PREDICTED in scores else "") + ".\n",
        *table1,
        f"\n## Table 2 — hard and easy test-dev\n\nThe base model's right answers make the easy set "
        f"({len(split.easy):,} questions), its wrong or missing ones the hard set ({len(split.hard):,}); "
        "by construction it has Acc_h = Err_e = 0. Consistency within each subset (see `nablafol/scoring/scores.py`). "
        f"The black-box baseline reads the question's words and the same object features and boxes, never the "
        f"program: a GRU over the words, {blackbox.hops} hops of question-guided attention over the objects, a "
        f"classifier over the {len(blackbox.answers)} training answers ({blackbox.epochs} epochs, final training "
        f"loss {blackbox.history[-1]['train_loss']:.3f}); the stand-in for MAC and LXMERT. The answer prior "
        "answers the most frequent training answer of each question type, without looking.\n",
        _split_table({k: scores[k] for k in (BASE, BLACK_BOX, PRIOR)}),
        f"\n## Table 3 — base vs calibrated\n\nThe top-down calibrator (a Bi-LSTM over the program giving a "
        f"Beta-calibration of every attention step), trained {calibration_epochs} epoch(s) on the training "
        "questions with the oracle frozen"
        + (f" (validation accuracy with it {100 * val:.2f}%)" if val is not None else "") + ".\n",
        _split_table({k: scores[k] for k in (BASE, CALIBRATED)}),
        "\n" + _pattern_text(pattern(scores)),
    ])


def gqa_metrics_section(gqa: dict) -> str:
    """GQA's own metrics beyond accuracy and consistency (``gqa`` from the demo: split -> model ->
    SubsetScore), one table per split, in GQA's order."""
    from nablafol.scoring.report import gqa_rows
    parts = ["\n## GQA's other metrics\n\nAs GQA's `eval.py` computes them (see `docs/scoring.md`): validity and "
             "plausibility against each question's valid and plausible answers (`*_choices.json`), distribution "
             "(the chi-square distance between the predicted and the true answer distributions per question group; "
             "lower is better), grounding (the attention's share inside the regions the question names). Grounding "
             "needs the scene graphs' regions, which GQA publishes for validation only, and an attention over objects, "
             "which only the ∇-FOL runs have. Two of the script's rules show here: grounding sums over the regions of "
             "the question's and of the full answer's annotations, so an object named in both counts twice and a score can "
             "pass 100%; and a `twoCommon` answer is valid only if it is color, material or shape (real GQA asks no "
             "other), while the embedded generator also asks what two objects have in common in size or pose: the "
             "golden oracle's validity below 100% is those questions.\n"]
    for split, title in (("testdev", "test-dev"), ("val", "validation")):
        models = gqa[split]
        names = [metric for metric, _ in gqa_rows(next(iter(models.values())))]
        parts += [f"\n**{title}**\n", "| model | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        parts += [f"| {model} | " + " | ".join(value.replace(" (lower is better)", "") for _, value in gqa_rows(s))
                  + " |" for model, s in models.items()]
    return "\n".join(parts)


def pattern(scores: dict) -> dict:
    """The paper's Table 3 pattern, measured: accuracy and Acc_h up, Err_e up and consistency down."""
    base, cal = scores[BASE], scores[CALIBRATED]
    measured = {"accuracy": (base.overall.accuracy["all"], cal.overall.accuracy["all"], "up"),
                "Acc_h": (base.hard.accuracy["all"], cal.hard.accuracy["all"], "up"),
                "Err_e": (base.easy.error["all"], cal.easy.error["all"], "up"),
                "consistency": (base.overall.consistency["all"], cal.overall.consistency["all"], "down")}
    out = {}
    for name, (before, after, expected) in measured.items():
        moved = None if before is None or after is None else "up" if after > before else "down" if after < before else "same"
        out[name] = {"base": before, "calibrated": after, "paper": expected, "measured": moved,
                     "as_in_paper": moved == expected}
    return out


def _pattern_text(pattern: dict) -> str:
    held = sum(p["as_in_paper"] for p in pattern.values())
    parts = [f"{name} {_pct(p['base'])} → {_pct(p['calibrated'])} ({p['measured']}; the paper: {p['paper']})"
             for name, p in pattern.items()]
    verdict = ("The paper's pattern holds here" if held == len(pattern) else
               f"The paper's pattern holds in {held} of {len(pattern)} respects here")
    return (f"{verdict}: " + "; ".join(parts) + ". (In the paper calibration raises accuracy and Acc_h and "
            "pays for it with a higher Err_e and a lower consistency.)")


# --- pictures -------------------------------------------------------------------------------

def accuracy_by_length(questions, runs: dict, path) -> dict:
    """Accuracy of every model by the number of operations of the GQA program; drawn as bars."""
    from nablafol.scoring import vocabulary_match
    from nablafol.plotting import grouped_bars
    lengths = sorted({len(q.semantic or ()) for q in questions.values()})
    table = {}
    for name, predictions in runs.items():
        table[name] = {}
        for n in lengths:
            qs = [q for q in questions.values() if len(q.semantic or ()) == n]
            right = sum(q.id in predictions and vocabulary_match(predictions[q.id], q.answer) for q in qs)
            table[name][n] = {"accuracy": right / len(qs), "count": len(qs)}
    first = next(iter(table.values()))
    grouped_bars([str(n) for n in lengths], {name: [100 * t[n]["accuracy"] for n in lengths] for name, t in table.items()},
                 path, "operations in the GQA program", "test-dev accuracy (%)", "accuracy by program length",
                 notes=[f"n={first[n]['count']}" for n in lengths])
    return table


def hard_easy_bars(scores: dict, split, path) -> None:
    from nablafol.plotting import grouped_bars
    def percent(rate, complement=False):  # None: no question in that subset
        return None if rate is None else 100 * (1 - rate if complement else rate)
    series = {name: [percent(s.overall.accuracy["all"]), percent(s.easy.error["all"], complement=True),
                     percent(s.hard.accuracy["all"])] for name, s in scores.items()}
    grouped_bars(["test-dev", "easy", "hard"], series, path, "", "accuracy (%)", "accuracy on easy and hard test-dev",
                 notes=[f"n={len(split.easy) + len(split.hard)}", f"n={len(split.easy)}", f"n={len(split.hard)}"])


def reliability(questions, runs: dict, path) -> dict:
    """Reliability of the yes/no answers: the probability of the chosen answer against how often
    it is right; returns each model's ECE."""
    from nablafol.calibration.figures import expected_calibration_error, reliability_diagram
    from nablafol.scoring import vocabulary_match
    curves = {}
    for name, run in runs.items():
        binary = [o for o in run.outcomes if set(o.answers) == {"yes", "no"}]
        curves[name] = ([o.answers[o.prediction] for o in binary],
                        [vocabulary_match(o.prediction, questions[o.question_id].answer) for o in binary])
    reliability_diagram(curves, path, title="yes/no answers on test-dev: base vs calibrated")
    return {name: {"ece": expected_calibration_error(*c), "count": len(c[0])} for name, c in curves.items()}


def calibration_pictures(run, questions, compiler, calibrator, folder) -> list:
    """The learned calibration curves of the attention steps of the yes/no questions with the longest programs."""
    from nablafol.calibration import step_parameters
    from nablafol.calibration.figures import calibration_shapes
    from nablafol.pipeline.answering import compile_question
    binary = [questions[o.question_id] for o in run.outcomes if set(o.answers) == {"yes", "no"}]
    binary.sort(key=lambda q: (-len(q.semantic or ()), q.id))
    drawn, kinds = [], set()
    for q in binary:
        kind = q.types.get("detailed")
        if kind in kinds:
            continue
        compiled = compile_question(q, compiler)
        params = [p for p in step_parameters(calibrator, compiled.program) if p.shape != "unused"][:SHAPE_STEPS]
        if not params:
            continue
        kinds.add(kind)
        path = folder / f"calibration_shapes_{len(drawn) + 1}.png"
        calibration_shapes(params, path, title=f"{q.question}\n{compiled.program.term()[:70]}")
        drawn.append({"question": q.id, "text": q.question, "png": path.name,
                      "steps": [{"step": p.step, "token": p.token, "a": p.a, "b": p.b, "c": p.c, "d": p.d,
                                 "shape": p.shape} for p in params]})
        if len(drawn) == SHAPE_QUESTIONS:
            break
    return drawn


class _StepRecorder:
    """An engine calibration hook that changes nothing and keeps every attention step
    (``program, step`` -> attention), so that one question can be drawn hop by hop."""

    def __init__(self):
        self.steps = {}

    def __call__(self, log_a, mask, program, step):
        attention = log_a.detach().exp().masked_fill(~mask, 0.0)
        for row, (p, s) in enumerate(zip(program.tolist(), step.tolist())):
            self.steps[(p, s)] = attention[row].tolist()
        return log_a


def _step_title(step) -> str:
    from nablafol.calibration import step_token
    from nablafol.ir import Conjoin, Filter, Neg, Relate
    if isinstance(step, Filter):
        return f"filter {step_token(step)}"
    if isinstance(step, Relate):
        return f"relate ({step.quantifier.value}) {step_token(step)}"
    if isinstance(step, Neg):
        return "not"
    if isinstance(step, Conjoin):
        return "and"
    return step_token(step)


def hop_pictures(run, questions, compiler, perception, store, folder) -> list:
    """Correctly answered questions of different kinds with the most attention steps, each
    drawn as one panel per step: the attention over the scene's boxes after that step."""
    import torch

    from nablafol.engine import Engine, ProgramPlan
    from nablafol.pipeline.answering import compile_question
    from nablafol.ir import Attention, Top
    from nablafol.scoring import vocabulary_match
    from nablafol.plotting import attention_steps
    candidates = []
    for o in run.outcomes:
        q = questions[o.question_id]
        if not vocabulary_match(o.prediction, q.answer):
            continue
        compiled = compile_question(q, compiler)
        steps = [(k, s) for k, s in enumerate(ProgramPlan.of(compiled.program).attention_steps)
                 if isinstance(s, Attention) and not isinstance(s, Top)]
        if len(steps) >= 2:
            candidates.append((q, compiled, steps, o))
    candidates.sort(key=lambda c: (-len(c[2]), c[0].id))
    drawn, kinds = [], set()
    for q, compiled, steps, outcome in candidates:
        if q.types.get("structural") in kinds:
            continue
        kinds.add(q.types.get("structural"))
        recorder = _StepRecorder()
        with torch.no_grad():
            Engine(calibration=recorder)([compiled.program], perception.oracle([q.image_id]))
        features = store[q.image_id]
        n = len(features.boxes)
        panels = [(_step_title(s), recorder.steps[(0, k)][:n]) for k, s in steps]
        path = attention_steps(features.boxes, features.width, features.height, panels, [f"#{i}" for i in range(n)],
                               folder / f"{q.id}.png",
                               f"{q.question}   →   {outcome.prediction} (gold {q.answer})\n"
                               f"{q.semantic_str or ''}"[:200])
        drawn.append({"question": q.id, "text": q.question, "answer": outcome.prediction, "gold": q.answer,
                      "png": f"{folder.name}/{path.name}", "steps": [title for title, _ in panels]})
        if len(drawn) == HOP_QUESTIONS:
            break
    return drawn


def pictures_section(by_length: dict, ece: dict, shapes: list, hops: list) -> str:
    lengths = list(next(iter(by_length.values())))
    table = ["| model | " + " | ".join(f"{n} ops" for n in lengths) + " |", "|---|" + "---:|" * len(lengths)]
    table += [f"| {name} | " + " | ".join(_pct(t[n]["accuracy"]) for n in lengths) + " |" for name, t in by_length.items()]
    counts = next(iter(by_length.values()))
    lines = ["\n## Pictures\n", "### Accuracy by program length\n",
             "Questions per length: " + ", ".join(f"{n} ops: {counts[n]['count']}" for n in lengths) + ".\n",
             *table, "\n![accuracy by program length](accuracy_by_length.png)\n",
             "### Hard vs easy\n", "![hard vs easy](hard_vs_easy.png)\n",
             "### Calibration curves (yes/no answers)\n",
             "Expected calibration error of the probability of the chosen yes/no answer: "
             + ", ".join(f"{name} {100 * e['ece']:.2f}% ({e['count']} questions)" for name, e in ece.items())
             + ".\n", "![reliability](reliability.png)\n", "### What the calibrator learned\n"]
    for s in shapes:
        lines.append(f"*{s['text']}* — " + ", ".join(f"{p['token']}: {p['shape']}" for p in s["steps"])
                     + f"\n\n![calibration shapes]({s['png']})\n")
    lines.append("### Questions hop by hop (base model)\n")
    for h in hops:
        lines.append(f"*{h['text']}* → {h['answer']} (gold {h['gold']}); steps: " + " → ".join(h["steps"])
                     + f"\n\n![hop by hop]({h['png']})\n")
    return "\n".join(lines)
