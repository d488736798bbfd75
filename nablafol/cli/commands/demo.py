"""The whole pipeline on the embedded dataset, ending in a report folder:

1. generate the embedded GQA-like dataset (train / validation / test-dev) into ``OUT/data``;
2. golden evaluation: DFOL over the validation scene graphs with the golden programs (must be
   100% on generated data);
3. train the neural oracle from answers alone, through the reasoning, with the curriculum;
4. the trained *base model* answers test-dev (the paper's Table 1); its right and wrong
   answers split test-dev into easy and hard questions;
5. a black-box baseline (question words + the same features, no program) and a blind answer
   prior, scored on the split (Table 2);
6. the top-down calibrator, trained on the frozen oracle; base vs calibrated (Table 3);
7. pictures: accuracy by program length, reliability diagrams, learned calibration shapes,
   hard vs easy bars, the training curve, and a few questions' attention hop by hop;
8. ``OUT/report/report.md`` with every table, the pictures, raw JSON beside it.

    nablafol demo                     # into runs/demo (a few minutes)
    nablafol demo --quick             # a smaller dataset and fewer epochs (about a minute)

Every number of the report comes from the run that wrote it.
"""
from __future__ import annotations

import time
from pathlib import Path

from .common import non_negative_int, positive_float, positive_int, with_threads, write_json

HELP = "run the whole pipeline on the embedded dataset and write a report"
STAGES = 8
HOP_QUESTIONS = 3  # questions drawn hop by hop
SHAPE_QUESTIONS = 2  # questions whose learned calibration curves are drawn
SHAPE_STEPS = 12  # curves per calibration picture, for a readable legend

BASE, CALIBRATED, BLACK_BOX, PRIOR = ("base model (∇-FOL)", "calibrated (∇-FOL + top-down calibration)",
                                      "black-box (question words + features)", "answer prior (blind)")


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="runs/demo", metavar="DIR")
    parser.add_argument("--quick", action="store_true", help="small dataset, few epochs")
    parser.add_argument("--epochs", type=positive_int, default=None, help="oracle training epochs (default 8; quick: 4)")
    parser.add_argument("--lr", type=positive_float, default=3e-3, help="Adam learning rate for the demo's short training "
                        "(the paper's 1e-4 is `nablafol train`'s default)")
    parser.add_argument("--calibration-epochs", type=positive_int, default=None,
                        help="calibrator training epochs (default 2; quick: 1)")
    parser.add_argument("--blackbox-epochs", type=positive_int, default=None,
                        help="black-box baseline training epochs (default 10; quick: 8)")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch threads (default 1: the demo's tensors are small, and more threads mostly wait "
                        "on each other, badly so on a busy machine)")


class _Report:
    """The report's Markdown lines (each also printed: the run's running summary) and timings."""

    def __init__(self):
        self.lines, self.timings = [], {}
        self._start = None

    def say(self, text: str = "") -> None:
        print(text)
        self.lines.append(text)

    def start(self) -> None:
        self._start = time.perf_counter()

    def stop(self, stage: str) -> float:
        self.timings[stage] = time.perf_counter() - self._start
        return self.timings[stage]


def run(args) -> int:
    return with_threads(args.threads, lambda: _run(args))


def _run(args) -> int:
    import torch

    from nablafol.compiler import Compiler
    from nablafol.dsl import Ontology
    from nablafol.baselines import AnswerPrior
    from nablafol.baselines.blackbox import BlackBoxBaseline
    from nablafol.data import FeatureStore, load_questions, load_scene_graphs, write_predictions
    from nablafol.engine import Engine
    from nablafol.pipeline.answering import Evaluator, FeaturePerception, SceneGraphPerception
    from nablafol.scoring.metrics import vocabulary_match
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.progress import ProgressBar
    from nablafol.plotting import training_curve
    from nablafol.scoring import make_split, score
    from nablafol.synthetic import generate_dataset
    from nablafol.pipeline.oracle_training import Trainer, TrainConfig, prepare_examples

    from .calibrate import train_calibrator

    out = Path(args.out)
    data, folder = out / "data", out / "report"
    folder.mkdir(parents=True, exist_ok=True)
    sizes = dict(n_train=400, n_val=100, n_testdev=100) if args.quick else dict(n_train=1500, n_val=300, n_testdev=300)
    epochs = args.epochs or (4 if args.quick else 8)
    calibration_epochs = args.calibration_epochs or (1 if args.quick else 2)
    blackbox_epochs = args.blackbox_epochs or (8 if args.quick else 10)
    report = _Report()
    say = report.say

    # 1. the dataset
    report.start()
    bar = ProgressBar(f"1/{STAGES} generate", unit="steps")
    summary = generate_dataset(data, seed=args.seed, progress=lambda d, n, stage: bar(d, n), **sizes)
    bar.close()
    say(f"# nablafol demo\n\nEmbedded GQA-like dataset (seed {args.seed}) in `{data}`: " + ", ".join(
        f"{k} {summary.scenes[k]:,} scenes / {summary.questions[k]:,} questions" for k in summary.scenes)
        + f" — {report.stop('generate'):.1f} s.")
    ontology = Ontology.from_folder(data / "ontology")
    compiler = Compiler(ontology)
    train_q = load_questions(data / "train_balanced_questions.json")
    val_q = load_questions(data / "val_balanced_questions.json")
    test_q = load_questions(data / "testdev_balanced_questions.json")

    # 2. golden evaluation
    report.start()
    golden = _evaluate(Evaluator(SceneGraphPerception(load_scene_graphs(data / "val_sceneGraphs.json"),
                                                      ontology=ontology), compiler=compiler),
                       val_q, f"2/{STAGES} golden")
    g = score(list(val_q.values()), golden.predictions, match=vocabulary_match).overall
    golden_ok = g.accuracy["all"] == 1.0 and not golden.skips
    say(f"\n## Golden oracle (validation scene graphs, golden programs)\n\naccuracy {100 * g.accuracy['all']:.2f}% "
        f"(open {100 * g.accuracy['open']:.2f}%, binary {100 * g.accuracy['binary']:.2f}%) on "
        f"{g.count['all']:,} questions, {len(golden.skips)} skipped — {report.stop('golden'):.1f} s. "
        + ("As it must be on generated data: the DFOL translation of every program, run over the exact scene "
           "graph, gives the generator's answer." if golden_ok else
           "**NOT 100%: on generated data the golden oracle must answer every question; this run is broken.**"))

    # 3. the oracle, trained through the reasoning
    report.start()
    torch.manual_seed(args.seed)
    store = FeatureStore(data / "features")
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology),
                                             feature_dim=store[store.image_ids()[0]].features.shape[1], hidden_dim=256)
    perception = FeaturePerception(store, model, ontology)
    examples, _ = prepare_examples(train_q.values(), compiler, perception.has_image)
    bar = ProgressBar(f"3/{STAGES} train oracle", unit="q")
    trainer = Trainer(model, perception, examples, out / "model",
                      TrainConfig(epochs=epochs, batch_size=64, lr=args.lr, seed=args.seed), compiler=compiler,
                      val_perception=perception, val_questions=list(val_q.values()), ontology=ontology, progress=bar)
    history = trainer.train()
    bar.close()
    training_curve(history, folder / "training_curve.png")
    say(f"\n## Training the oracle through the reasoning\n\n{len(examples):,} training questions, {epochs} epochs "
        f"(curriculum: programs of at most {history[0]['max_program_steps']} steps first, one more each epoch), "
        f"Adam lr {args.lr}: validation accuracy {100 * history[-1]['val_accuracy']:.2f}% "
        f"(open {100 * history[-1]['val_open']:.2f}%, binary {100 * history[-1]['val_binary']:.2f}%) — "
        f"{report.stop('train oracle'):.0f} s.\n\n![training curve](training_curve.png)")

    # 4. the base model on test-dev, and the split
    report.start()
    model.eval()
    base = _evaluate(Evaluator(perception, compiler=compiler, keep_outcomes=True), test_q, f"4/{STAGES} base test-dev")
    write_predictions(folder / "base_testdev_predictions.json", base.predictions)
    split = make_split(test_q.values(), base.predictions, match=vocabulary_match)
    write_json(folder / "split.json", split.to_json(str(folder / "base_testdev_predictions.json"),
                                                    str(data / "testdev_balanced_questions.json")))
    scores = {BASE: score(list(test_q.values()), base.predictions, split, match=vocabulary_match)}
    report.stop("base test-dev")

    # 5. baselines that never see a program
    report.start()
    bar = ProgressBar(f"5/{STAGES} black-box", unit="q")
    blackbox = BlackBoxBaseline(epochs=blackbox_epochs, seed=args.seed).fit(train_q.values(), store, progress=bar)
    bar.close()
    predictions = {BLACK_BOX: blackbox.predict(test_q.values(), store),
                   PRIOR: AnswerPrior().fit(train_q.values()).predict(test_q.values())}
    for name, stem in ((BLACK_BOX, "blackbox"), (PRIOR, "prior")):
        write_predictions(folder / f"{stem}_testdev_predictions.json", predictions[name])
        scores[name] = score(list(test_q.values()), predictions[name], split, match=vocabulary_match)
    report.stop("black-box")

    # 6. the calibrator on the frozen oracle
    report.start()
    bar = ProgressBar(f"6/{STAGES} calibrate", unit="q")
    longest = max(e.length for e in examples)  # no curriculum: the oracle is trained already
    calibrator, calibration_history = train_calibrator(
        perception, examples, out / "model", compiler,
        TrainConfig(epochs=calibration_epochs, batch_size=64, lr=1e-3, seed=args.seed, curriculum_start=longest),
        list(val_q.values()), progress=bar)
    bar.close()
    calibrated = _evaluate(Evaluator(perception, compiler=compiler, engine=Engine(calibration=calibrator),
                                     keep_outcomes=True), test_q, f"6/{STAGES} calibrated test-dev")
    write_predictions(folder / "calibrated_testdev_predictions.json", calibrated.predictions)
    scores[CALIBRATED] = score(list(test_q.values()), calibrated.predictions, split, match=vocabulary_match)
    report.stop("calibrate")

    # 7. tables
    scores = {name: scores[name] for name in (BASE, CALIBRATED, BLACK_BOX, PRIOR)}  # one order (and colour) everywhere
    say(_tables(scores, split, blackbox, calibration_epochs, calibration_history))

    # 8. pictures and files
    report.start()
    bar = ProgressBar(f"8/{STAGES} pictures", total=5, unit="pictures")
    runs = {BASE: base.predictions, CALIBRATED: calibrated.predictions, BLACK_BOX: predictions[BLACK_BOX],
            PRIOR: predictions[PRIOR]}
    by_length = _accuracy_by_length(test_q, runs, folder / "accuracy_by_length.png")
    bar(1)
    _hard_easy_bars(scores, split, folder / "hard_vs_easy.png")
    bar(2)
    ece = _reliability(test_q, {BASE: base, CALIBRATED: calibrated}, folder / "reliability.png")
    bar(3)
    shapes = _calibration_pictures(base, test_q, compiler, calibrator, folder)
    bar(4)
    hops = _hop_pictures(base, test_q, compiler, perception, store, folder / "hops")
    bar(5)
    bar.close()
    say(_pictures_section(by_length, ece, shapes, hops))
    report.stop("pictures")
    say("\n## Timings\n\n| stage | seconds |\n|---|---:|\n"
        + "\n".join(f"| {k} | {v:.1f} |" for k, v in report.timings.items())
        + f"\n| **total** | {sum(report.timings.values()):.1f} |")
    write_json(folder / "scores.json", {name: s.to_json() for name, s in scores.items()})
    write_json(folder / "demo.json", {
        "seed": args.seed, "quick": bool(args.quick), "sizes": sizes,
        "epochs": {"oracle": epochs, "calibrator": calibration_epochs, "black_box": blackbox_epochs},
        "golden": {"accuracy": g.accuracy, "count": g.count, "skipped": len(golden.skips)},
        "oracle_history": history, "calibrator_history": calibration_history, "black_box_history": blackbox.history,
        "split": {"easy": len(split.easy), "hard": len(split.hard)},
        "accuracy_by_length": by_length, "yes_no_ece": ece, "table3_pattern": _pattern(scores),
        "calibration_shapes": shapes, "hop_by_hop": hops, "timings_s": report.timings})
    (folder / "report.md").write_text("\n".join(report.lines) + "\n", encoding="utf-8")
    print(f"\nreport: {folder / 'report.md'} (tables, {len(list(folder.rglob('*.png')))} pictures, raw JSON beside it)"
          f" — {sum(report.timings.values()):.0f} s in all")
    return 0 if golden_ok else 1


def _evaluate(evaluator, questions, label: str):
    """``evaluator`` over ``questions`` (id -> question) with a progress bar."""
    from nablafol.progress import ProgressBar
    evaluator.progress = bar = ProgressBar(label)
    run = evaluator.run(questions.values())
    bar.close()
    return run


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


def _tables(scores: dict, split, blackbox, calibration_epochs: int, calibration_history: list) -> str:
    base = scores[BASE].overall
    table1 = ["| questions | accuracy | consistency | count |", "|---|---:|---:|---:|"]
    table1 += [f"| {g} | {_pct(base.accuracy[g])} | {_pct(base.consistency[g])} | {base.count[g]:,} |" for g in GROUPS]
    val = calibration_history[-1].get("val_accuracy") if calibration_history else None
    return "\n".join([
        "\n## Table 1 — the base model on test-dev\n",
        "The trained oracle with parameter-free DFOL over the golden programs (no calibration).\n",
        *table1,
        f"\n## Table 2 — hard and easy test-dev\n\nThe base model's right answers make the easy set "
        f"({len(split.easy):,} questions), its wrong or missing ones the hard set ({len(split.hard):,}); "
        "by construction it has Acc_h = Err_e = 0. Consistency within each subset (see `nablafol/scoring.py`). "
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
        "\n" + _pattern_text(_pattern(scores)),
    ])


def _pattern(scores: dict) -> dict:
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

def _accuracy_by_length(questions, runs: dict, path) -> dict:
    """Accuracy of every model by the number of operations of the GQA program; drawn as bars."""
    from nablafol.scoring.metrics import vocabulary_match
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


def _hard_easy_bars(scores: dict, split, path) -> None:
    from nablafol.plotting import grouped_bars
    def percent(rate, complement=False):  # None: no question in that subset
        return None if rate is None else 100 * (1 - rate if complement else rate)
    series = {name: [percent(s.overall.accuracy["all"]), percent(s.easy.error["all"], complement=True),
                     percent(s.hard.accuracy["all"])] for name, s in scores.items()}
    grouped_bars(["test-dev", "easy", "hard"], series, path, "", "accuracy (%)", "accuracy on easy and hard test-dev",
                 notes=[f"n={len(split.easy) + len(split.hard)}", f"n={len(split.easy)}", f"n={len(split.hard)}"])


def _reliability(questions, runs: dict, path) -> dict:
    """Reliability of the yes/no answers: the probability of the chosen answer against how often
    it is right; returns each model's ECE."""
    from nablafol.calibration.figures import expected_calibration_error, reliability_diagram
    from nablafol.scoring.metrics import vocabulary_match
    curves = {}
    for name, run in runs.items():
        binary = [o for o in run.outcomes if set(o.answers) == {"yes", "no"}]
        curves[name] = ([o.answers[o.prediction] for o in binary],
                        [vocabulary_match(o.prediction, questions[o.question_id].answer) for o in binary])
    reliability_diagram(curves, path, title="yes/no answers on test-dev: base vs calibrated")
    return {name: {"ece": expected_calibration_error(*c), "count": len(c[0])} for name, c in curves.items()}


def _calibration_pictures(run, questions, compiler, calibrator, folder) -> list:
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


def _hop_pictures(run, questions, compiler, perception, store, folder) -> list:
    """Correctly answered questions of different kinds with the most attention steps, each
    drawn as one panel per step: the attention over the scene's boxes after that step."""
    import torch

    from nablafol.engine import Engine, ProgramPlan
    from nablafol.pipeline.answering import compile_question
    from nablafol.ir import Attention, Top
    from nablafol.scoring.metrics import vocabulary_match
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


def _pictures_section(by_length: dict, ece: dict, shapes: list, hops: list) -> str:
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
