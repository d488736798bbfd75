"""Train the neural visual oracle from answers alone, through the parameter-free DFOL reasoning
(the paper's Algorithm 1 losses, Adam with the paper's settings, a curriculum from short to long
programs, a checkpoint and a validation pass each epoch).

    nablafol train --data DATASET --out MODEL                 # a dataset folder (the embedded layout)
    nablafol train --questions Q --features F --val-questions V --out MODEL [--ontology DIR]
    nablafol train ... --resume                               # continue from MODEL's last checkpoint

A dataset folder holds train_balanced_questions.json, val_balanced_questions.json, features/
and, optionally, ontology/ (its vocabulary); `nablafol generate` writes one.
Metrics go to MODEL/metrics.jsonl, one line per epoch.
"""
from __future__ import annotations

from pathlib import Path

from .common import (UsageError, add_ontology_argument, add_threads_argument, device, load_ontology,
                     non_negative_float, non_negative_int, positive_float, positive_int, with_threads)

HELP = "train the neural oracle through the reasoning (Algorithm 1)"


def add_arguments(parser) -> None:
    parser.add_argument("--data", metavar="DIR", help="a dataset folder (train/val questions, features/, ontology/)")
    parser.add_argument("--questions", metavar="Q", help="training questions (file or folder)")
    parser.add_argument("--features", metavar="F", help="features folder of the training (and validation) images")
    parser.add_argument("--val-questions", metavar="V", help="validation questions")
    parser.add_argument("--val-limit", type=non_negative_int, default=0, metavar="N", help="validate on the first N (0: all)")
    parser.add_argument("--out", required=True, metavar="MODEL", help="the model folder to write")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in MODEL")
    parser.add_argument("--epochs", type=positive_int, default=10)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--lr", type=positive_float, default=1e-4, help="Adam learning rate (paper: 1e-4)")
    parser.add_argument("--weight-decay", type=non_negative_float, default=1e-10, help="paper: 1e-10")
    parser.add_argument("--clip", type=positive_float, default=0.65, help="gradient clipping norm (paper: 0.65)")
    parser.add_argument("--curriculum-start", type=positive_int, default=2, help="program steps of the first epoch")
    parser.add_argument("--hidden", type=positive_int, default=256, help="hidden size of the oracle's layers")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--device", default="cpu")
    add_threads_argument(parser)
    add_ontology_argument(parser)


def dataset_paths(args) -> tuple[Path, Path, Path | None, Path | None]:
    """(train questions, features, validation questions, ontology folder) from the options."""
    if args.data:
        data = Path(args.data)
        if not data.is_dir():
            raise UsageError(f"{data}: no such dataset folder")
        onto = Path(args.ontology) if args.ontology else (data / "ontology" if (data / "ontology").is_dir() else None)
        val = data / "val_balanced_questions.json"
        return (data / "train_balanced_questions.json", data / "features", val if val.exists() else None, onto)
    if not (args.questions and args.features):
        raise UsageError("give --data DIR, or --questions and --features")
    return (Path(args.questions), Path(args.features), Path(args.val_questions) if args.val_questions else None,
            Path(args.ontology) if args.ontology else None)


def validation_questions(path, limit: int) -> list:
    """The validation questions (the first ``limit`` when it is not 0), or none without a file."""
    from nablafol.data import load_questions
    questions = list(load_questions(path).values()) if path else []
    return questions[:limit] if limit else questions


def run(args) -> int:
    return with_threads(args.threads, lambda: _run(args))


def _run(args) -> int:
    import torch

    from nablafol.compiler import Compiler
    from nablafol.data import FeatureStore, load_questions
    from nablafol.pipeline.answering import FeaturePerception
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.progress import ProgressBar
    from nablafol.pipeline.oracle_training import Trainer, TrainConfig, prepare_examples

    train_q, features, val_q, onto_dir = dataset_paths(args)
    args.device = device(args.device)
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise UsageError(f"{args.out}: exists and is not a folder (a model is a folder)")
    ontology = load_ontology(onto_dir)
    store = FeatureStore(features)
    questions = load_questions(train_q)
    torch.manual_seed(args.seed)
    vocabulary = ConceptVocabulary.from_ontology(ontology)
    ids = store.image_ids()
    if not ids:
        raise UsageError(f"{features}: the features folder lists no image")
    feature_dim = store[ids[0]].features.shape[1]
    model = NeuralOracleModel.for_vocabulary(vocabulary, feature_dim=feature_dim, hidden_dim=args.hidden).to(args.device)
    compiler = Compiler(ontology)
    perception = FeaturePerception(store, model, ontology, device=args.device)
    examples, skips = prepare_examples(questions.values(), compiler, perception.has_image)
    print(f"{len(questions):,} training questions: {len(examples):,} to train on, {len(skips):,} skipped")
    for s in skips[:10]:
        print(f"  {s.question_id}: {s.reason}: {s.detail}")
    val = validation_questions(val_q, args.val_limit)
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, weight_decay=args.weight_decay,
                         clip_norm=args.clip, seed=args.seed, curriculum_start=args.curriculum_start)
    bar = ProgressBar("train", unit="q")
    trainer = Trainer(model, perception, examples, Path(args.out), config, compiler=compiler,
                      val_perception=perception if val else None, val_questions=val, ontology=ontology,
                      progress=bar)
    if args.resume and trainer.resume():
        print(f"resumed from {args.out} after epoch {trainer.epoch}")
    history = trainer.train()
    bar.close()
    if history and history[-1].get("val_accuracy") is not None:
        print(f"final validation accuracy {100 * history[-1]['val_accuracy']:.2f}% -> model in {args.out}")
    return 0
