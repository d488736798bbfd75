"""Train the top-down calibrator (paper, section 5) on a trained model, the oracle frozen:
Beta-calibration of every attention step, its parameters read by a Bi-LSTM from the program.
The calibrator is saved into the model folder; `nablafol eval --model` then uses it.

    nablafol calibrate --data DATASET --model MODEL [--epochs 3]

With --inspect, nothing is trained: the calibrator of MODEL prints its Beta-calibration
parameters (a, b, c, d) for every attention step of one question, read as the shapes of the
paper's Figure 2 (identity, sharpen, blur, suppress, excite, or a combination); --plot also
draws the curves C(α).

    nablafol calibrate --model MODEL --inspect "select: ball->verify color: red [0]" [--plot C.png]
    nablafol calibrate --model MODEL --data DATASET --inspect QUESTION_ID
"""
from __future__ import annotations

from pathlib import Path

from .common import UsageError, device, non_negative_int, output_file, positive_float, positive_int

HELP = "train the top-down calibrator on a frozen trained oracle, or inspect it (--inspect)"
PLOTTED_STEPS = 12


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
    parser.add_argument("--inspect", metavar="PROGRAM", help="print the calibration of each step of a GQA program "
                        "line, or of a question id of --questions / --val-questions / --data; trains nothing")
    parser.add_argument("--plot", metavar="PNG", help="with --inspect: also draw the calibration curves")


def run(args) -> int:
    if args.plot and args.inspect is None:
        raise UsageError("--plot draws what --inspect reads: give --inspect PROGRAM")
    if args.inspect is not None:
        return _inspect(args)
    from nablafol.compiler import Compiler
    from nablafol.data import load_questions
    from nablafol.pipeline.answering import FeaturePerception
    from nablafol.progress import ProgressBar
    from nablafol.pipeline.oracle_training import TrainConfig, prepare_examples

    from .train import dataset_paths, validation_questions

    train_q, features, val_q, _ = dataset_paths(args)
    args.device = device(args.device)
    perception = FeaturePerception.load(features, args.model, device=args.device)
    if perception.ontology is None:
        raise UsageError(f"{args.model}: the model folder records no vocabulary (train it with `nablafol train`)")
    compiler = Compiler(perception.ontology)
    examples, skips = prepare_examples(load_questions(train_q).values(), compiler, perception.has_image)
    print(f"{len(examples):,} training questions ({len(skips):,} skipped)")
    bar = ProgressBar("calibrate", unit="q")
    _, history = train_calibrator(perception, examples, args.model, compiler,
                                  TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                                              seed=args.seed),
                                  validation_questions(val_q, args.val_limit), progress=bar, resume=args.resume)
    bar.close()
    if history and history[-1].get("val_accuracy") is not None:
        print(f"validation accuracy with the calibrator {100 * history[-1]['val_accuracy']:.2f}% -> {args.model}")
    return 0


def train_calibrator(perception, examples, model_folder, compiler, config, val_questions=(), progress=None,
                     resume: bool = False, log=print):
    """``(calibrator, history)``: a calibrator over the tokens of the ``examples``' programs,
    trained on ``perception``'s oracle (frozen) and saved into ``model_folder``; ``resume``
    continues from its checkpoint there. ``nablafol calibrate`` and ``nablafol demo`` use it."""
    import torch

    from nablafol.pipeline.calibration_training import CalibrationTrainer
    from nablafol.calibration import TopDownCalibrator

    torch.manual_seed(config.seed)
    calibrator = TopDownCalibrator.for_programs([e.compiled.program for e in examples])
    if perception.device is not None:
        calibrator = calibrator.to(perception.device)
    val_questions = list(val_questions)
    trainer = CalibrationTrainer(perception.model, calibrator, perception, examples, Path(model_folder), config,
                                 compiler=compiler, val_perception=perception if val_questions else None,
                                 val_questions=val_questions, ontology=perception.ontology, progress=progress, log=log)
    if resume and trainer.resume():
        log(f"resumed after epoch {trainer.epoch}")
    return calibrator, trainer.train()


def _inspect(args) -> int:
    from nablafol.calibration import format_step_parameters, has_calibrator, load_calibrator, step_parameters
    from nablafol.compiler import Compiler
    from nablafol.dsl import Ontology
    from nablafol.pipeline.answering import Skip, compile_question
    from nablafol.neural import load_model

    if args.plot:
        output_file(args.plot)
    _, vocabulary, extra = load_model(args.model)
    if not has_calibrator(args.model):
        raise UsageError(f"{args.model}: no calibrator in this model folder (run `nablafol calibrate` first)")
    if "ontology" not in extra:
        raise UsageError(f"{args.model}: the model folder records no vocabulary (train it with `nablafol train`)")
    compiler = Compiler(Ontology.from_data(**extra["ontology"]))
    if args.data and not Path(args.data).is_dir():
        raise UsageError(f"{args.data}: no such dataset folder")
    question = _find_question(args)
    if question is not None:
        compiled = compile_question(question, compiler)
        if isinstance(compiled, Skip):
            raise UsageError(f"question {question.id}: {compiled.detail}")
        print(f"question {question.id}: {question.question or ''}".rstrip(": "))
    elif "->" in args.inspect or ":" in args.inspect:
        compiled = compiler.compile_text(args.inspect)
    else:
        raise UsageError(f"{args.inspect!r} is neither a GQA program line nor a question id of the given "
                         f"questions (name them with --questions, --val-questions or --data)")
    # issue 16: the vocabulary is open; a concept the model never learned cannot be inspected
    unknown = next((p for p in compiled.program.predicates() if not vocabulary.knows(p)), None)
    if unknown is not None:
        raise UsageError(vocabulary.not_learned(unknown))
    params = step_parameters(load_calibrator(args.model), compiled.program)
    print(f"DFOL: {compiled.program.term()}")
    print(format_step_parameters(params))
    if args.plot:
        from nablafol.calibration.figures import calibration_shapes
        shown = [p for p in params if p.shape != "unused"]
        if len(shown) > PLOTTED_STEPS:  # an open question's many candidates: a readable picture
            print(f"drawing the first {PLOTTED_STEPS} of {len(shown)} steps")
            shown = shown[:PLOTTED_STEPS]
        print(f"curves -> {calibration_shapes(shown, args.plot, title=compiled.program.term()[:80])}")
    return 0


def _find_question(args):
    """The question named ``--inspect`` in the questions files given, or None."""
    from nablafol.data import load_questions
    files = [Path(f) for f in (args.questions, args.val_questions) if f]
    if args.data:
        files += sorted(Path(args.data).glob("*_questions.json"))
    for path in files:
        question = load_questions(path).get(args.inspect)
        if question is not None:
            return question
    return None
