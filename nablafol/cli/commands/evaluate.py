"""Answer GQA questions with DFOL reasoning over scene graphs (golden or probabilistic) or over
object features with a trained oracle; write GQA predictions; print accuracy and consistency.

    nablafol eval --questions val_balanced_questions.json --scene-graphs val_sceneGraphs.json \\
                  --predictions out/predictions.json [--details out/details.jsonl]
    nablafol eval --questions Q --features FEATURES_DIR --model MODEL_DIR --predictions OUT

Questions that cannot be answered (malformed program, a concept the vocabulary lacks, an image
without a scene) are skipped, counted as wrong and listed with their reasons; `--strict` makes
any skip an error (exit status 2).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from .common import (UsageError, add_ontology_argument, device, load_ontology, non_negative_int, output_file,
                     positive_int, probability, write_json)

HELP = "answer questions over scene graphs or features; print accuracy and consistency"


def add_arguments(parser) -> None:
    parser.add_argument("--questions", required=True, metavar="Q", help="questions JSON file, or a folder of them")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--scene-graphs", metavar="SG", help="scene graphs JSON (plain or probabilistic)")
    src.add_argument("--features", metavar="F", help="features folder (gqa_objects_info.json + HDF5), with --model")
    parser.add_argument("--model", metavar="M", help="trained model folder (with --features)")
    parser.add_argument("--predictions", required=True, metavar="OUT", help="where to write GQA predictions JSON")
    parser.add_argument("--details", metavar="D", help="also write per-question details (JSON lines)")
    parser.add_argument("--details-top", type=non_negative_int, default=10, metavar="K",
                        help="candidates of an open question kept in details (0: all; default 10)")
    parser.add_argument("--skipped", metavar="PATH", help="write the skipped questions here (JSON); default "
                        "OUT with suffix .skipped.json when any")
    parser.add_argument("--batch-size", type=positive_int, default=1024)
    parser.add_argument("--threshold", type=probability, default=0.5, help="θ of Algorithm 1 for yes/no questions")
    parser.add_argument("--exact", action="store_true", help="score by exact string match (GQA's eval.py) "
                        "instead of vocabulary forms")
    parser.add_argument("--strict", action="store_true", help="any skipped question is an error (exit 2)")
    parser.add_argument("--knowledge", metavar="KB", help="a knowledge base (TSV or JSON triples; 'sample' for the "
                        "built-in one) for CRIC-style steps such as `filter CapableOf: lift food`")
    parser.add_argument("--device", default="cpu")
    add_ontology_argument(parser)


def run(args) -> int:
    from nablafol.data import load_questions, write_details, write_predictions
    from nablafol.data.details import Details
    from nablafol.engine import Engine
    from nablafol.evaluation import Evaluator
    from nablafol.metrics import exact_match, vocabulary_match
    from nablafol.progress import ProgressBar
    from nablafol.scoring import score

    if args.features and not args.model:
        raise UsageError("--features needs --model (a trained model folder)")
    if args.model and not args.features:
        raise UsageError("--model goes with --features")
    for out in (args.predictions, args.details, args.skipped):  # fail before the work, not after it
        if out:
            output_file(out)
    args.device = device(args.device)
    t0 = time.perf_counter()
    questions = load_questions(args.questions)
    perception, ontology = _perception(args)
    bar = ProgressBar("eval", unit="q")
    engine = Engine(calibration=getattr(perception, "calibrator", None))
    evaluator = Evaluator(perception, engine=engine, batch_size=args.batch_size, threshold=args.threshold,
                          keep_outcomes=bool(args.details), details_top=args.details_top, progress=bar,
                          compiler=_compiler(perception, ontology))
    run_ = evaluator.run(questions.values())
    bar.close()
    write_predictions(args.predictions, run_.predictions)
    if args.details:
        write_details(args.details, (Details(o.question_id, o.prediction, o.answers, list(o.grounding), o.formula,
                                             {"attention": o.attention}) for o in run_.outcomes))
    elapsed = time.perf_counter() - t0
    scorable = [q for q in questions.values() if q.answer is not None]
    print(f"{len(questions):,} questions, {len(run_.predictions):,} answered, {len(run_.skips):,} skipped, "
          f"in {elapsed:.1f} s ({len(questions) / max(elapsed, 1e-9):,.0f} questions/s)")
    if scorable:
        scores = score(scorable, run_.predictions, match=exact_match if args.exact else vocabulary_match)
        print(scores.format_table())
        by_type = scores.overall.by_structural
        if by_type:
            print("accuracy by structural type: " + ", ".join(
                f"{t} {100 * a:.2f}%" for t, a in by_type.items() if a is not None))
    _report_skips(args, run_)
    return 2 if (args.strict and run_.skips) else 0


def _compiler(perception, ontology):
    from compiler import Compiler
    return Compiler(ontology, knowledge_relations=getattr(perception, "knowledge_relations", ()))


def _perception(args):
    ontology = load_ontology(args.ontology)
    if args.scene_graphs:
        from nablafol.data import load_scene_graphs
        from nablafol.evaluation import SceneGraphPerception
        knowledge = None
        if args.knowledge:
            from nablafol.oracles import KnowledgeBase
            knowledge = KnowledgeBase.sample() if args.knowledge == "sample" else KnowledgeBase.load(args.knowledge)
        return SceneGraphPerception(load_scene_graphs(args.scene_graphs), ontology=ontology, device=args.device,
                                    knowledge=knowledge), ontology
    from nablafol.evaluation import FeaturePerception
    perception = FeaturePerception.load(args.features, args.model, device=args.device)
    return perception, perception.ontology


def _report_skips(args, run_) -> None:
    if not run_.skips:
        return
    counts = ", ".join(f"{n:,} {reason}" for reason, n in run_.skip_counts().items())
    print(f"skipped {len(run_.skips):,} questions (counted wrong): {counts}")
    for s in run_.skips[:20]:
        print(f"  {s.question_id}: {s.reason}: {s.detail}")
    path = Path(args.skipped) if args.skipped else Path(args.predictions).with_suffix(".skipped.json")
    write_json(path, [{"questionId": s.question_id, "reason": s.reason, "detail": s.detail} for s in run_.skips])
    more = f" ({len(run_.skips) - 20:,} more)" if len(run_.skips) > 20 else ""
    print(f"all skipped questions{more}: {path}")
    if args.strict:
        print("nablafol eval: --strict: questions were skipped", file=sys.stderr)
