"""The demo's stages on the embedded dataset (``nablafol demo``; its help lists them): generate the
data, check the golden oracle, train the oracle through the reasoning, score the base model and
split test-dev into easy and hard, score the baselines, train the calibrator, the two ceilings
(Bayes and supervised) and the learning curves, draw the pictures, write ``OUT/report/``
(:mod:`nablafol.pipeline.demo_report` holds the tables and pictures). The stages that need
nothing of the base model run in a second process beside its training
(:mod:`nablafol.pipeline.demo_beside`).

Every number of the report comes from the run that wrote it.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from dataclasses import dataclass

from nablafol.data.files import write_text
from nablafol.pipeline.demo_report import (ANSWERS_ONLY, BASE, BAYES, BLACK_BOX, CALIBRATED, CEILING, GOLDEN,
                                           LABELS_ONLY, PREDICTED, PRETRAINED, PRIOR, accuracy_by_length,
                                           calibration_pictures, ceiling_table, gqa_metrics_section, hard_easy_bars,
                                           hop_pictures, learning_curves_section, parser_section, pattern,
                                           pictures_section, reliability, tables, timings_section, wilson_interval,
                                           write_json)

STAGES = 8


class _Report:
    """The report's Markdown lines (each also printed: the run's running summary), and each
    stage's wall and CPU seconds in this process."""

    def __init__(self):
        self.lines, self.timings, self.cpu = [], {}, {}
        self._start = self._cpu_start = None

    def say(self, text: str = "") -> None:
        print(text)
        self.lines.append(text)

    def start(self) -> None:
        self._start, self._cpu_start = time.perf_counter(), time.process_time()

    def stop(self, stage: str) -> float:
        self.timings[stage] = time.perf_counter() - self._start
        self.cpu[stage] = time.process_time() - self._cpu_start
        return self.timings[stage]


@dataclass
class DemoSettings:
    """What ``nablafol demo`` is asked (defaults: the full demo; ``quick``: a smaller one)."""

    out: Path = Path("runs/demo")
    quick: bool = False
    epochs: int | None = None  # oracle training epochs (default 8; quick: 4)
    lr: float = 1e-3  # a short training, not the paper's long one: 10x its 1e-4 (3e-3 plateaued 8 points lower: docs/oracle-learning.md)
    calibration_epochs: int | None = None  # default 2; quick: 1
    blackbox_epochs: int | None = None  # default 7 (its validation best of 10: docs/demo.md); quick: 8
    ceiling_epochs: int | None = None  # most label epochs of the supervised ceiling, early stopping (default 16; quick: 2)
    parser_epochs: int | None = None  # semantic parser training epochs (default: its own, 4)
    pretrained_epochs: int | None = None  # answer epochs after the labels, for the learning curves (default 0: docs/demo.md)
    seed: int = 0
    one_process: bool = False  # the stages beside the training run after it, in this process (same results)


def run_demo(args: DemoSettings) -> int:
    """Run every stage; write ``args.out/report``; 0, or 1 when the golden oracle is not 100%."""
    import torch

    from nablafol.compiler import Compiler
    from nablafol.dsl import Ontology
    from nablafol.baselines import AnswerPrior
    from nablafol.data import load_questions, load_scene_graphs, write_predictions
    from nablafol.engine import Engine
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.demo_beside import Beside, BesideRequest, can_spawn, demo_model, feature_memory
    from nablafol.pipeline.perception import FeaturePerception, SceneGraphPerception
    from nablafol.scoring import vocabulary_match
    from nablafol.progress import ProgressBar
    from nablafol.plotting import learning_curves, training_curve
    from nablafol.scoring import make_split, score
    from nablafol.synthetic import generate_dataset
    from nablafol.pipeline.calibration_training import train_calibrator
    from nablafol.pipeline.oracle_training import Trainer, TrainConfig, prepare_examples

    out = Path(args.out)
    data, folder = out / "data", out / "report"
    folder.mkdir(parents=True, exist_ok=True)
    sizes = dict(n_train=400, n_val=100, n_testdev=100) if args.quick else dict(n_train=1500, n_val=300, n_testdev=300)
    epochs = args.epochs or (4 if args.quick else 8)
    calibration_epochs = args.calibration_epochs or (1 if args.quick else 2)
    blackbox_epochs = args.blackbox_epochs or (8 if args.quick else 7)
    ceiling_epochs = args.ceiling_epochs or (2 if args.quick else 16)
    pretrained_epochs = args.pretrained_epochs if args.pretrained_epochs is not None else 0
    report = _Report()
    wall, cpu, began = time.perf_counter(), time.process_time(), time.time()
    say = report.say

    # the stages that need nothing of the base model, beside everything this process does until
    # the tables (demo_beside): started now, the parser on the training questions as soon as they
    # are drawn, the rest once the data is written
    request = BesideRequest(data, out, args.seed, args.parser_epochs, blackbox_epochs, ceiling_epochs,
                            pretrained_epochs, args.lr, torch.get_num_threads())
    one_process = args.one_process or not can_spawn()
    if one_process and not args.one_process:
        print(f"demo: the main script ({getattr(sys.modules['__main__'], '__file__', None)}) is no file a second "
              "process could re-read (a script from standard input?): the stages beside the training run in this "
              "process first (the same results, one after the other)")
    beside = Beside(request, one_process=one_process, before_data=True)
    try:
        # 1. the dataset
        report.start()
        bar = ProgressBar(f"1/{STAGES} generate", unit="steps")
        summary = generate_dataset(data, seed=args.seed, progress=lambda d, n, stage: bar(d, n),
                                   on_split=beside.hand, **sizes)
        bar.close()
        say(f"# nablafol demo\n\nEmbedded GQA-like dataset (seed {args.seed}) in `{data}`: " + ", ".join(
            f"{k} {summary.scenes[k]:,} scenes / {summary.questions[k]:,} questions" for k in summary.scenes)
            + f" — {report.stop('generate'):.1f} s.")
        beside.written(summary.generator)  # one process: the stages beside run now
        ontology = Ontology.from_folder(data / "ontology")
        compiler = Compiler(ontology)
        train_q = load_questions(data / "train_balanced_questions.json")
        val_q = load_questions(data / "val_balanced_questions.json")
        test_q = load_questions(data / "testdev_balanced_questions.json")

        # 2. golden evaluation
        report.start()
        val_graphs = load_scene_graphs(data / "val_sceneGraphs.json")
        golden = _evaluate(Answerer(SceneGraphPerception(val_graphs, ontology=ontology), compiler=compiler,
                                    keep_outcomes=True), val_q, f"2/{STAGES} golden")
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
        store = feature_memory(data)  # every image read from the HDF5 file once: about half a step's time otherwise
        model = demo_model(ontology, store, args.seed)
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
        base = _evaluate(Answerer(perception, compiler=compiler, keep_outcomes=True), test_q, f"4/{STAGES} base test-dev")
        write_predictions(folder / "base_testdev_predictions.json", base.predictions)
        split = make_split(test_q.values(), base.predictions, match=vocabulary_match)
        write_json(folder / "split.json", split.to_json(str(folder / "base_testdev_predictions.json"),
                                                        str(data / "testdev_balanced_questions.json")))
        scores = {BASE: score(list(test_q.values()), base.predictions, split, match=vocabulary_match)}
        report.stop("base test-dev")

        # 6. the calibrator on the frozen oracle
        report.start()
        bar = ProgressBar(f"6/{STAGES} calibrate", unit="q")
        longest = max(e.length for e in examples)  # no curriculum: the oracle is trained already
        calibrator, calibration_history = train_calibrator(
            perception, examples, out / "model", compiler,
            TrainConfig(epochs=calibration_epochs, batch_size=64, lr=1e-3, seed=args.seed, curriculum_start=longest),
            list(val_q.values()), progress=bar)
        bar.close()
        calibrated = _evaluate(Answerer(perception, compiler=compiler, engine=Engine(calibration=calibrator),
                                        keep_outcomes=True), test_q, f"6/{STAGES} calibrated test-dev")
        write_predictions(folder / "calibrated_testdev_predictions.json", calibrated.predictions)
        scores[CALIBRATED] = score(list(test_q.values()), calibrated.predictions, split, match=vocabulary_match)
        report.stop("calibrate")

        # what needs this process's runs only, done while the second process may still work
        report.start()
        base_val = _evaluate(Answerer(perception, compiler=compiler, keep_outcomes=True), val_q,
                             f"7/{STAGES} base validation (grounding)")
        report.stop("base validation (grounding)")
        report.start()
        bar = ProgressBar(f"8/{STAGES} pictures of the base model", total=3, unit="pictures")
        ece = reliability(test_q, {BASE: base, CALIBRATED: calibrated}, folder / "reliability.png")
        bar(1)
        shapes = calibration_pictures(base, test_q, compiler, calibrator, folder)
        bar(2)
        hops = hop_pictures(base, test_q, compiler, perception, store, folder / "hops")
        bar(3)
        bar.close()
        report.stop("pictures of the base model")

        # what ran beside: the parser and test-dev read by it, the black box, the ceiling, the pretrained curve
        report.start()
        side = beside.result()
        report.stop("waiting for the stages beside")

        # 4b. the base model over the programs the semantic parser reads from the words
        report.start()
        parsing = _predicted_programs(side["parser"], side["parser_read"], Answerer(perception, compiler=compiler))
        run = parsing.pop("run")
        write_predictions(folder / "predicted_programs_testdev_predictions.json", run.predictions)
        predicted = score(list(test_q.values()), run.predictions, split, match=vocabulary_match)
        parsing.update(golden_accuracy=scores[BASE].overall.accuracy["all"],
                       predicted_accuracy=predicted.overall.accuracy["all"])
        report.stop("predicted programs")

        # the Bayes ceiling: the generator's posteriors given the features, through the same engine
        scores[BAYES] = score(list(test_q.values()), side["bayes"]["testdev"], split, match=vocabulary_match)
        bayes_val = score(list(val_q.values()), side["bayes"]["val"], match=vocabulary_match).overall
        overall = scores[BAYES].overall
        bayes_interval = wilson_interval(round(overall.accuracy["all"] * overall.count["all"]), overall.count["all"])

        # 5. baselines that never see a program
        blackbox = side["black_box"]
        predictions = {BLACK_BOX: side["black_box_predictions"],
                       PRIOR: AnswerPrior().fit(train_q.values()).predict(test_q.values())}
        for name, stem in ((BLACK_BOX, "blackbox"), (PRIOR, "prior")):
            write_predictions(folder / f"{stem}_testdev_predictions.json", predictions[name])
            scores[name] = score(list(test_q.values()), predictions[name], split, match=vocabulary_match)

        # the perception ceiling: the same network trained on the train scene graphs' labels
        ceiling_history = side["ceiling_history"]
        scores[CEILING] = score(list(test_q.values()), side["ceiling_predictions"], split, match=vocabulary_match)
        curves = _learning_curves(history, ceiling_history, side["pretrained_history"], blackbox.history)
        levels = {BAYES: bayes_val.accuracy["all"]}
        learning_curves(curves, folder / "learning_curves.png", levels=levels)

        # 7. tables
        say(ceiling_table(scores[CEILING], scores[BAYES], scores, ceiling_epochs, ceiling_history, bayes_interval,
                          side["ceiling_concepts"]))
        say(learning_curves_section(curves, pretrained_epochs, levels))
        ceiling_score, bayes_score = scores.pop(CEILING), scores.pop(BAYES)
        scores = {name: scores[name] for name in (BASE, CALIBRATED, BLACK_BOX, PRIOR)}  # one order (and colour) everywhere
        say(parser_section(parsing))
        say(tables({**scores, PREDICTED: predicted}, split, blackbox, calibration_epochs, calibration_history))
        runs = {BASE: base.predictions, CALIBRATED: calibrated.predictions, BLACK_BOX: predictions[BLACK_BOX],
                PRIOR: predictions[PRIOR]}
        gqa = _gqa_metrics(runs, test_q, val_q, val_graphs, golden, (base_val, perception.regions), data)
        say(gqa_metrics_section(gqa))

        # 8. pictures and files
        report.start()
        bar = ProgressBar(f"8/{STAGES} pictures with the baselines", total=2, unit="pictures")
        by_length = accuracy_by_length(test_q, runs, folder / "accuracy_by_length.png")
        bar(1)
        hard_easy_bars(scores, split, folder / "hard_vs_easy.png")
        bar(2)
        bar.close()
        say(pictures_section(by_length, ece, shapes, hops))
        report.stop("pictures with the baselines")
        total = time.perf_counter() - wall
        # CPU seconds of each process (one process: the stages beside counted apart)
        cpus = {"this process": time.process_time() - cpu - (side["cpu_seconds"] if one_process else 0.0),
                "the second process" if not one_process else "the stages beside, in this process": side["cpu_seconds"]}
        beside_span = [moment - began for moment in side["span"]]  # seconds from this run's start
        say(timings_section(report.timings, side["timings"], total, cpus, one_process,
                            stage_cpu=(report.cpu, side["stage_cpu_seconds"]), beside_span=beside_span))
        write_json(folder / "scores.json", {BAYES: bayes_score.to_json(), CEILING: ceiling_score.to_json(),
                                            **{name: s.to_json() for name, s in scores.items()}})
        write_json(folder / "gqa_metrics.json", {split_name: {name: s.gqa_json() for name, s in by_model.items()}
                                                 for split_name, by_model in gqa.items()})
        write_json(folder / "demo.json", {
            "seed": args.seed, "quick": bool(args.quick), "sizes": sizes,
            "epochs": {"oracle": epochs, "calibrator": calibration_epochs, "black_box": blackbox_epochs,
                       "ceiling": ceiling_epochs, "pretrained": pretrained_epochs}, "ceiling_history": ceiling_history,
            "ceiling_concepts": side["ceiling_concepts"],
            "bayes": {"testdev_interval_95": bayes_interval, "val_accuracy": bayes_val.accuracy},
            "pretrained_history": side["pretrained_history"], "learning_curves": curves, "learning_levels": levels,
            "golden": {"accuracy": g.accuracy, "count": g.count, "skipped": len(golden.skips)},
            "oracle_history": history, "calibrator_history": calibration_history, "black_box_history": blackbox.history,
            "split": {"easy": len(split.easy), "hard": len(split.hard)},
            "accuracy_by_length": by_length, "yes_no_ece": ece, "table3_pattern": pattern(scores),
            "calibration_shapes": shapes, "hop_by_hop": hops,
            "timings_s": {**report.timings, **{f"beside: {k}": v for k, v in side["timings"].items()}, "wall": total},
            "cpu_s": cpus,
            "stage_cpu_s": {**report.cpu, **{f"beside: {k}": v for k, v in side["stage_cpu_seconds"].items()}},
            "beside_span_s": beside_span,
            "predicted_programs": {**parsing, "scores": predicted.to_json()}})
        write_text(folder / "report.md", "\n".join(report.lines) + "\n")
        print(f"\nreport: {folder / 'report.md'} (tables, {len(list(folder.rglob('*.png')))} pictures, raw JSON beside it)"
              f" — {total:.0f} s in all")
        return 0 if golden_ok else 1

    finally:
        beside.stop()

def _predicted_programs(trained: dict, read: dict, answerer) -> dict:
    """Test-dev answered by ``answerer`` over the programs the semantic parser (trained beside
    the base model: ``trained`` says how, and how it read) reads from the words (``read``: id ->
    question); the figures, with the run (``run``)."""
    run = _evaluate(answerer, read, f"7/{STAGES} base test-dev, predicted programs")
    return {**trained, "skips": run.skip_summary(), "run": run}


def _learning_curves(answers_only: list, labels: list, pretrained: list, black_box: list) -> dict:
    """Validation accuracy against seconds, one curve per way of learning: name ->
    ``[(seconds, accuracy), ...]`` after each epoch, every epoch's validation pass counted (the
    Trainer's ``seconds`` hold it; label training and the black box time it apart). The
    pretrained curve continues the label curve (the ceiling's, its best epoch's weights) with its
    epochs through the reasoning."""
    def curve(records, start: float = 0.0) -> list:
        points, clock = [], start
        for r in records:
            clock += r["seconds"] + r.get("val_seconds", 0.0)
            points.append((clock, r.get("val_accuracy")))
        return points

    label_curve = curve(labels)
    return {ANSWERS_ONLY: curve(answers_only), LABELS_ONLY: label_curve,
            PRETRAINED: curve(pretrained, label_curve[-1][0] if label_curve else 0.0), BLACK_BOX: curve(black_box)}


def _gqa_metrics(runs: dict, test_q: dict, val_q: dict, val_graphs, golden, base_val: tuple, data) -> dict:
    """GQA's other metrics: validity, plausibility and distribution of every model on test-dev;
    grounding on validation (GQA publishes no test-dev scene graphs, so grounding is scored where
    the gold regions are), for the golden oracle and the base model (the only runs with an
    attention over objects; ``base_val``: its validation run with outcomes, and its regions)."""
    from nablafol.data.choices import load_choices
    from nablafol.scoring.report import score_run
    test_choices, val_choices = (load_choices(data / f"{split}_choices.json") for split in ("testdev", "val"))
    grounded = {GOLDEN: (golden, None), BASE: base_val}
    return {
        "testdev": {name: score_run(test_q.values(), predictions, choices=test_choices)
                    for name, predictions in runs.items()},
        "val": {name: score_run(val_q.values(), run.predictions, choices=val_choices, details=run.outcomes,
                                scene_graphs=val_graphs, regions_of=regions)
                for name, (run, regions) in grounded.items()}}


def _evaluate(answerer, questions, label: str):
    """``questions`` (id -> question) answered in one chunk (every question batched with the
    others), with a progress bar; predictions, skips and outcomes kept."""
    from nablafol.pipeline.evaluation import answer_stream
    from nablafol.progress import ProgressBar
    bar = ProgressBar(label, total=len(questions))
    result = answer_stream(questions.values(), answerer, chunk_size=max(1, len(questions)), collect=True,
                           progress=bar)
    bar.close()
    return result


