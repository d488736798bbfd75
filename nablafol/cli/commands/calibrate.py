"""Train the top-down calibrator (paper, section 5) on a trained model, the oracle frozen:
Beta-calibration of every attention step, its parameters read by a Bi-LSTM from the program.
The calibrator is saved into the model folder; `nablafol eval --model` then uses it.

    nablafol calibrate --data DATASET --model MODEL [--epochs 3]
"""
from __future__ import annotations

from pathlib import Path

from .common import UsageError, device, non_negative_int, positive_float, positive_int

HELP = "train the top-down calibrator on a frozen trained oracle"


def add_arguments(parser) -> None:
    parser.add_argument("--data", metavar="DIR", help="a dataset folder (as for `nablafol train`)")
    parser.add_argument("--questions", metavar="Q")
    parser.add_argument("--features", metavar="F")
    parser.add_argument("--val-questions", metavar="V")
    parser.add_argument("--val-limit", type=non_negative_int, default=0, metavar="N")
    parser.add_argument("--model", required=True, metavar="MODEL", help="a model folder from `nablafol train`")
    parser.add_argument("--epochs", type=positive_int, default=3)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--lr", type=positive_float, default=1e-3)
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--ontology", metavar="DIR", help="ignored: the model folder carries its vocabulary")
    parser.add_argument("--device", default="cpu")


def run(args) -> int:
    import torch

    from calibration import CalibrationTrainer, TopDownCalibrator
    from compiler import Compiler
    from nablafol.data import load_questions
    from nablafol.evaluation import FeaturePerception
    from nablafol.progress import ProgressBar
    from nablafol.training import TrainConfig, prepare_examples

    from .train import dataset_paths, validation_questions

    train_q, features, val_q, _ = dataset_paths(args)
    args.device = device(args.device)
    perception = FeaturePerception.load(features, args.model, device=args.device)
    if perception.ontology is None:
        raise UsageError(f"{args.model}: the model folder records no vocabulary (train it with `nablafol train`)")
    compiler = Compiler(perception.ontology)
    examples, skips = prepare_examples(load_questions(train_q).values(), compiler, perception.has_image)
    print(f"{len(examples):,} training questions ({len(skips):,} skipped)")
    torch.manual_seed(args.seed)
    calibrator = TopDownCalibrator.for_programs([e.compiled.program for e in examples]).to(args.device)
    val = validation_questions(val_q, args.val_limit)
    bar = ProgressBar("calibrate", unit="q")
    trainer = CalibrationTrainer(perception.model, calibrator, perception, examples, Path(args.model),
                                 TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed),
                                 compiler=compiler, val_perception=perception if val else None, val_questions=val,
                                 ontology=perception.ontology, progress=bar)
    if args.resume and trainer.resume():
        print(f"resumed after epoch {trainer.epoch}")
    history = trainer.train()
    bar.close()
    if history and history[-1].get("val_accuracy") is not None:
        print(f"validation accuracy with the calibrator {100 * history[-1]['val_accuracy']:.2f}% -> {args.model}")
    return 0
