"""The whole pipeline on the embedded dataset, ending in a report folder:

1. generate the embedded GQA-like dataset (train / validation / test-dev) into ``OUT/data``;
2. golden evaluation: DFOL over the validation scene graphs with the golden programs (must be
   100% on generated data);
3. train the neural oracle from answers alone, through the reasoning, with the curriculum;
4. the trained *base model* answers test-dev (the paper's Table 1); its right and wrong
   answers split test-dev into easy and hard questions;
5. a black-box baseline (question words + the same features, no program) and a blind answer
   prior, scored on the split (Table 2);
6. the top-down calibrator, trained on the frozen oracle; base vs calibrated (Table 3); the
   Bayes ceiling (the generator's posteriors) and the supervised ceiling (the same network
   trained on the scene graphs' labels), above Table 1; the learning curves;
7. pictures: accuracy by program length, reliability diagrams, learned calibration shapes,
   hard vs easy bars, the training and learning curves, and a few questions' attention hop by hop;
8. ``OUT/report/report.md`` with every table, the pictures, raw JSON beside it.

    nablafol demo                     # into runs/demo
    nablafol demo --quick             # a smaller dataset and fewer epochs

The parser, the black box and the supervised ceiling run in a second process beside the base
model's training (``--one-process``: in this one, the same scores). Every number of the report
comes from the run that wrote it.
"""
from __future__ import annotations

from pathlib import Path

from .common import MAX_THREADS, non_negative_int, positive_float, positive_int, seed_number, whole_number, with_threads

HELP = "run the whole pipeline on the embedded dataset and write a report"


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="runs/demo", metavar="DIR")
    parser.add_argument("--quick", action="store_true", help="small dataset, few epochs")
    parser.add_argument("--epochs", type=positive_int, default=None, help="oracle training epochs (default 8; quick: 4)")
    parser.add_argument("--lr", type=positive_float, default=1e-3, help="Adam learning rate for the demo's short training "
                        "(the paper's 1e-4 is `nablafol train`'s default)")
    parser.add_argument("--calibration-epochs", type=positive_int, default=None,
                        help="calibrator training epochs (default 2; quick: 1)")
    parser.add_argument("--blackbox-epochs", type=positive_int, default=None,
                        help="black-box baseline training epochs (default 7; quick: 8)")
    parser.add_argument("--ceiling-epochs", type=positive_int, default=None,
                        help="most epochs of the supervised ceiling (the oracle trained on the scene graphs' labels, "
                        "early stopping on validation; default 16; quick: 2)")
    parser.add_argument("--parser-epochs", type=positive_int, default=None,
                        help="semantic parser training epochs (default 4)")
    parser.add_argument("--pretrained-epochs", type=non_negative_int, default=None,
                        help="epochs through the reasoning after the ceiling's best label epoch, for the learning curves' "
                        "pretrained line (default 0: the label epochs only, the demo's time on 2 cores; 1 draws it)")
    parser.add_argument("--seed", type=seed_number, default=0)
    parser.add_argument("--one-process", action="store_true",
                        help="run the stages that need nothing of the base model (parser, black box, ceiling) in this "
                        "process instead of a second one beside the training (same results, one core, slower)")
    parser.add_argument("--threads", type=whole_number(1, MAX_THREADS), default=1,
                        help="torch threads (default 1: the demo's tensors are small, and more threads mostly wait "
                        "on each other, badly so on a busy machine)")


def run(args) -> int:
    from nablafol.pipeline.demo import DemoSettings, run_demo
    settings = DemoSettings(out=Path(args.out), quick=args.quick, epochs=args.epochs, lr=args.lr,
                            calibration_epochs=args.calibration_epochs, blackbox_epochs=args.blackbox_epochs,
                            ceiling_epochs=args.ceiling_epochs, parser_epochs=args.parser_epochs,
                            pretrained_epochs=args.pretrained_epochs, seed=args.seed, one_process=args.one_process)
    from nablafol.pipeline.allocator import keep_freed_memory
    with keep_freed_memory():  # training's big temporaries reuse the last step's pages
        return with_threads(args.threads, lambda: run_demo(settings))
