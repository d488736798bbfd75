"""Train the neural visual oracle from answers alone, through the parameter-free DFOL reasoning
(the paper's Algorithm 1 losses, Adam with the paper's settings, a curriculum from short to long
programs, a checkpoint and a validation pass each epoch).

    nablafol train --data DATASET --out MODEL                 # a dataset folder (the embedded layout)
    nablafol train --questions Q --features F --val-questions V --out MODEL [--ontology DIR]
    nablafol train ... --resume                               # continue from MODEL's last checkpoint
    nablafol train ... --scene-graphs SG --pretrain-epochs K  # first learn SG's labels, then the answers

A dataset folder holds train_balanced_questions.json, val_balanced_questions.json, features/
and, optionally, ontology/ (its vocabulary); `nablafol generate` writes one.
Metrics go to MODEL/metrics.jsonl, one line per epoch.

On several processes or machines (PyTorch's DistributedDataParallel; gloo on the CPU, nccl on
GPUs, chosen by --device):

    torchrun --nproc_per_node 2 -m nablafol.cli train --data DATASET --out MODEL
    nablafol train --data DATASET --out MODEL --shards 2        # one process, the same training
    nablafol train --data DATASET --shards 8 --plan --out MODEL # which feature files each shard reads

The images are cut into --shards blocks (default: one per process); each process reads only
its shards' questions and features; --batch-size is the global batch, batch / shards questions
from every shard; rank 0 writes MODEL. `--resume` continues with the checkpoint's shards,
on any number of processes up to the shard count.
"""
from __future__ import annotations

from pathlib import Path

from .common import (UsageError, add_ontology_argument, add_threads_argument, device, non_negative_float,
                     non_negative_int, output_clash, positive_float, positive_int, seed_number, with_threads)

HELP = "train the neural oracle through the reasoning (Algorithm 1)"


def add_arguments(parser) -> None:
    parser.add_argument("--data", metavar="DIR", help="a dataset folder (train/val questions, features/, ontology/)")
    parser.add_argument("--questions", metavar="Q", help="training questions (file or folder)")
    parser.add_argument("--features", metavar="F", help="features folder of the training (and validation) images")
    parser.add_argument("--val-questions", metavar="V", help="validation questions")
    parser.add_argument("--val-limit", type=non_negative_int, default=0, metavar="N", help="validate on the first N (0: all)")
    parser.add_argument("--out", required=True, metavar="MODEL", help="the model folder to write")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in MODEL")
    parser.add_argument("--epochs", type=positive_int, default=10, help="epochs through the reasoning")
    parser.add_argument("--scene-graphs", metavar="SG", help="train scene graphs (GQA's format): pretrain the oracle on "
                        "their labels (names, attributes, relations), then train on the answers (default: answers only)")
    parser.add_argument("--pretrain-epochs", type=positive_int, default=None,
                        help="epochs on the scene graphs' labels (default 6; needs --scene-graphs)")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--lr", type=positive_float, default=1e-4, help="Adam learning rate (paper: 1e-4)")
    parser.add_argument("--weight-decay", type=non_negative_float, default=1e-10, help="paper: 1e-10")
    parser.add_argument("--clip", type=positive_float, default=0.65, help="gradient clipping norm (paper: 0.65)")
    parser.add_argument("--curriculum-start", type=positive_int, default=2, help="program steps of the first epoch")
    parser.add_argument("--hidden", type=positive_int, default=256, help="hidden size of the oracle's layers")
    parser.add_argument("--head", choices=("cosine", "dot"), default="cosine",
                        help="the concept heads: scaled cosine (default; learned faster from answers, "
                        "docs/oracle-learning.md) or the paper's dot product")
    parser.add_argument("--seed", type=seed_number, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda (under torchrun: the GPU of each local rank)")
    parser.add_argument("--shards", type=positive_int, metavar="N", help="data shards of the run (default: one per "
                        "process; when resuming, the checkpoint's); the result depends on them, not on the processes")
    parser.add_argument("--plan", action="store_true", help="print what each shard reads (questions, images, "
                        "feature files) and stop")
    add_threads_argument(parser)
    add_ontology_argument(parser)


def dataset(args):
    """The dataset's files from ``--data`` or ``--questions``/``--features`` (and the rest)."""
    from nablafol.pipeline.datasets import dataset_files
    if not args.data and not (args.questions and args.features):
        raise UsageError("give --data DIR, or --questions and --features")
    return dataset_files(args.data, args.questions, args.features, args.val_questions,
                         getattr(args, "ontology", None), getattr(args, "ontology_extension", None))


def run(args) -> int:
    from nablafol.pipeline.allocator import keep_freed_memory
    with keep_freed_memory():  # a step's big temporaries reuse the last step's pages
        return with_threads(args.threads, lambda: _run(args))


def _run(args) -> int:
    import contextlib

    from nablafol.data.output_lock import output_lock
    from nablafol.pipeline.distributed import Launch
    from nablafol.pipeline.oracle_training import TrainConfig, TrainingJob, train_oracle
    from nablafol.progress import ProgressBar
    if args.pretrain_epochs is not None and not args.scene_graphs:
        raise UsageError("--pretrain-epochs needs --scene-graphs SG (the labels to pretrain on)")
    if args.plan:
        return _plan(args)
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, weight_decay=args.weight_decay,
                         clip_norm=args.clip, seed=args.seed, curriculum_start=args.curriculum_start)
    files = dataset(args)
    check_model_folder(args.out, files, data=args.data, scene_graphs=args.scene_graphs,
                       named={option for option, value in (("--questions", args.questions), ("--features", args.features),
                              ("--val-questions", args.val_questions), ("--ontology", args.ontology),
                              ("--ontology-extension", args.ontology_extension)) if value})
    launch = Launch.from_environment()
    job = TrainingJob(files, Path(args.out), config, hidden_dim=args.hidden, head=args.head, val_limit=args.val_limit,
                      device=device(args.device), resume=args.resume, shards=args.shards, launch=launch,
                      scene_graphs=Path(args.scene_graphs) if args.scene_graphs else None,
                      pretrain_epochs=args.pretrain_epochs or 6)
    # rank 0 writes the folder: its lock is rank 0's (the other ranks of the launch share its run)
    with output_lock(args.out, "--out") if launch.is_main else contextlib.nullcontext():
        bar = ProgressBar("train", unit="q") if launch.is_main else None
        history = train_oracle(job, progress=bar)
        if bar is not None:
            bar.close()
    if launch.is_main and history and history[-1].get("val_accuracy") is not None:
        print(f"final validation accuracy {100 * history[-1]['val_accuracy']:.2f}% -> model in {args.out}")
    return 0


def check_model_folder(out, files, data=None, scene_graphs=None, named=()) -> None:
    """Refuse, before any work, a model folder ``out`` that is one of the run's inputs (the
    dataset folder, its features or ontology folder, a questions or scene-graphs folder), lies
    inside a folder read whole (a later run would read the model's files as input), or whose
    files would replace an input (``files``: the run's :class:`DatasetFiles`; ``named``: the
    options of ``files`` given by name, the others being the dataset folder's own)."""
    from nablafol.pipeline.oracle_training import METRICS_NAME, MODEL_FILES
    written = (*MODEL_FILES, METRICS_NAME)  # what a run writes there (its tensors' other name: unlinked)
    out = Path(out)
    inputs = {"--data": data, "--questions": files.train_questions, "--val-questions": files.val_questions,
              "--features": files.features, "--ontology": files.ontology,
              "--ontology-extension": files.ontology_extension, "--scene-graphs": scene_graphs}
    for option, given in inputs.items():
        if given is None:
            continue
        given = Path(given)
        if data is not None and option not in ("--data", "--scene-graphs", *named):
            option = f"{option} (of --data)"
        # a folder of the dataset is read whole (questions, scene graphs, features) or by fixed names
        clash = output_clash(out, given, not option.startswith("--data")) or next(
            (c for c in (output_clash(out / name, given, False) for name in written) if c is not None), None)
        if clash is not None:
            raise UsageError(f"--out {out}: {clash.format(f'{option} {given}')}: give another --out")


def _plan(args) -> int:
    from nablafol.pipeline.datasets import plan_lines
    for line in plan_lines(dataset(args), args.shards or 1, args.val_limit):
        print(line)
    return 0
