"""Train the top-down calibrator (paper, section 5) on a trained model, the oracle frozen:
Beta-calibration of every attention step, its parameters read by a Bi-LSTM from the program.
The calibrator is saved into the model folder; `nablafol eval --model` then uses it.

    nablafol calibrate --data DATASET --model MODEL [--epochs 3]
    torchrun --nproc_per_node 2 -m nablafol.cli calibrate --data DATASET --model MODEL   # split, as for train

With --inspect, nothing is trained: the calibrator of MODEL prints its Beta-calibration
parameters (a, b, c, d) for every attention step of one question, read as the shapes of the
paper's Figure 2 (identity, sharpen, blur, suppress, excite, or a combination); --plot also
draws the curves C(α).

    nablafol calibrate --model MODEL --inspect "select: ball->verify color: red [0]" [--plot C.png]
    nablafol calibrate --model MODEL --data DATASET --inspect QUESTION_ID
"""
from __future__ import annotations

from pathlib import Path

from .common import UsageError, device, non_negative_int, output_file, positive_float, positive_int, seed_number

HELP = "train the top-down calibrator on a frozen trained oracle, or inspect it (--inspect)"


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
    parser.add_argument("--seed", type=seed_number, default=0)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--ontology", metavar="DIR", help="ignored: the model folder carries its vocabulary")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda (under torchrun: the GPU of each local rank)")
    parser.add_argument("--shards", type=positive_int, metavar="N", help="data shards, as for `nablafol train` "
                        "(default: one per process; when resuming, the checkpoint's)")
    parser.add_argument("--inspect", metavar="PROGRAM", help="print the calibration of each step of a GQA program "
                        "line, or of a question id of --questions / --val-questions / --data; trains nothing")
    parser.add_argument("--plot", metavar="PNG", help="with --inspect: also draw the calibration curves")


def run(args) -> int:
    if args.plot and args.inspect is None:
        raise UsageError("--plot draws what --inspect reads: give --inspect PROGRAM")
    if args.inspect is not None:
        return _inspect(args)
    import contextlib

    from nablafol.data.output_lock import output_lock
    from nablafol.pipeline.calibration_training import CalibrationJob, calibrate_model
    from nablafol.pipeline.distributed import Launch
    from nablafol.pipeline.oracle_training import TrainConfig
    from nablafol.progress import ProgressBar

    from .train import dataset

    args.ontology = None  # the model folder carries its vocabulary
    launch = Launch.from_environment()
    job = CalibrationJob(dataset(args), Path(args.model),
                         TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed),
                         val_limit=args.val_limit, device=device(args.device), resume=args.resume,
                         shards=args.shards, launch=launch)
    # the calibrator goes into the model folder: one run at a time on it (a `train --out` of it
    # included, whose lock is the same), held by rank 0, which writes it
    with output_lock(args.model, "--model") if launch.is_main else contextlib.nullcontext():
        bar = ProgressBar("calibrate", unit="q") if launch.is_main else None
        history = calibrate_model(job, progress=bar)
        if bar is not None:
            bar.close()
    if launch.is_main and history and history[-1].get("val_accuracy") is not None:
        print(f"validation accuracy with the calibrator {100 * history[-1]['val_accuracy']:.2f}% -> {args.model}")
    return 0


def check_plot_format(path) -> None:
    """Refuse, before any work, a plot path whose extension matplotlib cannot write."""
    from matplotlib.figure import Figure
    formats = sorted(Figure().canvas.get_supported_filetypes())
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in formats:
        what = f"extension .{suffix}" if suffix else "no extension"
        raise UsageError(f"--plot {path}: {what}: the curves are drawn as one of .{', .'.join(formats)}")


def _inspect(args) -> int:
    from nablafol.pipeline.inspection import inspect_calibration

    if args.plot:
        from nablafol.pipeline.calibration_training import CalibrationTrainer
        from nablafol.pipeline.oracle_training import CALIBRATOR_FILES, METRICS_NAME, MODEL_FILES

        check_plot_format(args.plot)
        model = Path(args.model)  # its files are inputs too (and those it may hold later)
        held = {p.name for p in model.iterdir()} if model.is_dir() else set()
        inputs = {"--data": args.data, "--questions": args.questions, "--features": args.features,
                  "--val-questions": args.val_questions, "--model": args.model}
        may_hold = {*MODEL_FILES, METRICS_NAME, *CALIBRATOR_FILES, CalibrationTrainer.metrics_name}
        for name in sorted(held | may_hold):
            inputs[f"the model folder's file {name}"] = model / name
        output_file(args.plot, inputs)
    if args.data and not Path(args.data).is_dir():
        raise UsageError(f"{args.data}: no such dataset folder")
    files = [Path(f) for f in (args.questions, args.val_questions) if f]
    if args.data:
        files += sorted(Path(args.data).glob("*_questions.json"))
    inspection = inspect_calibration(args.model, args.inspect, files)
    for line in inspection.lines():
        print(line)
    if args.plot:
        path, drawn, used = inspection.plot(args.plot)
        if drawn < used:
            print(f"drawing the first {drawn} of {used} steps")
        print(f"curves -> {path}")
    return 0
