"""The whole pipeline on the embedded dataset, ending in a report:

1. generate the embedded GQA-like dataset (questions, scene graphs, features, vocabulary);
2. golden evaluation: DFOL over the validation scene graphs (the paper's golden-oracle experiment);
3. train the neural oracle from answers alone, through the reasoning (Algorithm 1);
4. the trained *base model* answers test-dev from features; its right and wrong answers split
   test-dev into easy and hard questions;
5. score the base model and a blind answer-prior baseline on the split (the paper's Tables 1-3);
6. draw the training curve and one question's attention over boxes; write report.md.

    nablafol demo                     # into runs/demo
    nablafol demo --quick             # a smaller dataset and fewer epochs (about a minute)
"""
from __future__ import annotations

import time
from pathlib import Path

from .common import non_negative_int, positive_float, positive_int, write_json

HELP = "run the whole pipeline on the embedded dataset and write a report"


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="runs/demo", metavar="DIR")
    parser.add_argument("--quick", action="store_true", help="small dataset, few epochs")
    parser.add_argument("--epochs", type=positive_int, default=None, help="training epochs (default 8; quick: 4)")
    parser.add_argument("--lr", type=positive_float, default=3e-3, help="Adam learning rate for the demo's short training "
                        "(the paper's 1e-4 is `nablafol train`'s default)")
    parser.add_argument("--seed", type=non_negative_int, default=0)


def run(args) -> int:
    import torch

    from compiler import Compiler
    from dsl import Ontology
    from nablafol.baselines import AnswerPrior
    from nablafol.data import FeatureStore, load_questions, load_scene_graphs, write_predictions
    from nablafol.evaluation import Evaluator, FeaturePerception, SceneGraphPerception
    from nablafol.metrics import vocabulary_match
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.progress import ProgressBar
    from nablafol.report import attention_over_boxes, training_curve
    from nablafol.scoring import make_split, score
    from nablafol.synthetic import generate_dataset
    from nablafol.training import Trainer, TrainConfig, prepare_examples

    out = Path(args.out)
    data = out / "data"
    sizes = dict(n_train=400, n_val=100, n_testdev=100) if args.quick else dict(n_train=1500, n_val=300, n_testdev=300)
    epochs = args.epochs or (4 if args.quick else 8)
    timings, lines = {}, []

    def say(text=""):
        print(text)
        lines.append(text)

    t = time.perf_counter()
    bar = ProgressBar("1/6 generate", unit="steps")
    summary = generate_dataset(data, seed=args.seed, progress=lambda d, n, stage: bar(d, n), **sizes)
    bar.close()
    timings["generate"] = time.perf_counter() - t
    say(f"# nablafol demo\n\nEmbedded dataset (seed {args.seed}): " + ", ".join(
        f"{k} {summary.scenes[k]:,} scenes / {summary.questions[k]:,} questions" for k in summary.scenes)
        + f" — {timings['generate']:.0f} s")
    ontology = Ontology.from_folder(data / "ontology")
    compiler = Compiler(ontology)
    val_q = load_questions(data / "val_balanced_questions.json")
    test_q = load_questions(data / "testdev_balanced_questions.json")

    # 2. golden evaluation
    t = time.perf_counter()
    golden = Evaluator(SceneGraphPerception(load_scene_graphs(data / "val_sceneGraphs.json"), ontology=ontology),
                       compiler=compiler).run(val_q.values())
    timings["golden"] = time.perf_counter() - t
    g = score(list(val_q.values()), golden.predictions, match=vocabulary_match).overall
    say(f"\n## Golden oracle (validation scene graphs)\n\naccuracy {100 * g.accuracy['all']:.2f}% "
        f"(open {100 * g.accuracy['open']:.2f}%, binary {100 * g.accuracy['binary']:.2f}%), "
        f"{len(golden.skips)} skipped — {timings['golden']:.1f} s")

    # 3. training
    t = time.perf_counter()
    torch.manual_seed(args.seed)
    store = FeatureStore(data / "features")
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology),
                                             feature_dim=store[store.image_ids()[0]].features.shape[1], hidden_dim=256)
    perception = FeaturePerception(store, model, ontology)
    examples, skips = prepare_examples(load_questions(data / "train_balanced_questions.json").values(), compiler,
                                       perception.has_image)
    bar = ProgressBar("3/6 train", unit="q")
    trainer = Trainer(model, perception, examples, out / "model",
                      TrainConfig(epochs=epochs, batch_size=64, lr=args.lr, seed=args.seed), compiler=compiler,
                      val_perception=perception, val_questions=list(val_q.values()), ontology=ontology, progress=bar)
    history = trainer.train()
    bar.close()
    timings["train"] = time.perf_counter() - t
    curve = training_curve(history, out / "training_curve.png")
    say(f"\n## Training the oracle through the reasoning\n\n{len(examples):,} training questions, {epochs} epochs, "
        f"Adam lr {args.lr}: validation accuracy {100 * history[-1]['val_accuracy']:.2f}% "
        f"(open {100 * history[-1]['val_open']:.2f}%, binary {100 * history[-1]['val_binary']:.2f}%) — "
        f"{timings['train']:.0f} s. Curve: `{curve.name}`.")

    # 4. base model on test-dev, and the split
    t = time.perf_counter()
    model.eval()
    base = Evaluator(perception, compiler=compiler, keep_outcomes=True).run(test_q.values())
    write_predictions(out / "base_testdev_predictions.json", base.predictions)
    split = make_split(test_q.values(), base.predictions, match=vocabulary_match)
    write_json(out / "split.json", split.to_json(str(out / "base_testdev_predictions.json"),
                                                 str(data / "testdev_balanced_questions.json")))
    timings["split"] = time.perf_counter() - t
    say(f"\n## Hard/easy split of test-dev by the base model\n\n{len(split.easy):,} easy, {len(split.hard):,} hard")

    # 5. scores
    train_q = load_questions(data / "train_balanced_questions.json")
    prior = AnswerPrior().fit(train_q.values()).predict(test_q.values())
    write_predictions(out / "prior_testdev_predictions.json", prior)
    results = {}
    for name, preds in (("base model (∇-FOL)", base.predictions), ("answer prior (blind)", prior)):
        s = score(list(test_q.values()), preds, split, match=vocabulary_match)
        results[name] = s.to_json()
        say(f"\n### {name}\n\n```\n{s.format_table()}\n```")
    write_json(out / "scores.json", results)

    # 6. one question's attention over boxes
    picture = _attention_picture(base, test_q, store, out, attention_over_boxes)
    if picture:
        say(f"\nAttention of one test-dev question over its boxes: `{picture.name}`.")
    say("\nTimings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"\nreport: {out / 'report.md'}")
    return 0


def _attention_picture(run, questions, store, out, draw):
    """The first correctly answered open question with a non-trivial attention, drawn."""
    from nablafol.metrics import vocabulary_match
    for o in run.outcomes:
        q = questions[o.question_id]
        if q.types.get("structural") != "query" or not vocabulary_match(o.prediction, q.answer):
            continue
        ids = [k for k in o.attention if k != "scene"]
        if not ids or max(o.attention[k] for k in ids) < 0.5:
            continue
        f = store[q.image_id]
        labels = [f"#{k}" for k in ids]
        return draw(f.boxes[: len(ids)], f.width, f.height, [o.attention[k] for k in ids], labels,
                    out / "attention.png",
                    f"{q.question or q.semantic_str}\nanswer: {o.prediction} (gold {q.answer}); "
                    f"focus attention of the program")
    return None
