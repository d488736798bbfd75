"""Generate the embedded dataset: a seeded GQA-like dataset in GQA's own file formats
(questions with programs and entailment links, scene graphs, Faster-RCNN-layout features whose
noise differs per concept, and the dataset's vocabulary), so every command runs on it as on GQA.

    nablafol generate --out data/synthetic                       # 1,500 / 300 / 300 scenes
    nablafol generate --out data/big --train 10000 --val 0 --testdev 0 --seed 1
    nablafol generate --out data/gqa-scale --train 0 --val 10000 --testdev 0 --objects 8 24 --large-scenes 0.1 \
        --spatial-neighbours 2
"""
from __future__ import annotations

from .common import non_negative_int, positive_int, probability, real_number, seed_number

HELP = "write the embedded GQA-like dataset (questions, scene graphs, features, vocabulary)"


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--train", type=non_negative_int, default=1500, metavar="N", help="training scenes (default 1500)")
    parser.add_argument("--val", type=non_negative_int, default=300, metavar="N", help="validation scenes (default 300)")
    parser.add_argument("--testdev", type=non_negative_int, default=300, metavar="N", help="test-dev scenes (default 300)")
    parser.add_argument("--questions-per-scene", type=positive_int, default=10)
    parser.add_argument("--feature-dim", type=positive_int, default=64)
    parser.add_argument("--noise", type=real_number(0.0, 1000.0), default=0.15,
                        help="standard deviation of the feature noise (0 to 1000: float32 features)")
    parser.add_argument("--objects", type=positive_int, nargs=2, default=(3, 8), metavar=("MIN", "MAX"),
                        help="objects per scene (default 3 8)")
    parser.add_argument("--large-scenes", type=probability, default=0.0, metavar="SHARE",
                        help="this share of scenes has MAX+1 to 100 objects instead (a long tail; default 0)")
    parser.add_argument("--spatial-neighbours", type=positive_int, default=None, metavar="K",
                        help="store the spatial relations (left/right, above/below, near) only towards each "
                             "object's K nearest objects, about as sparse as GQA's graphs at K=2 "
                             "(default: every pair)")
    parser.add_argument("--seed", type=seed_number, default=0)


def run(args) -> int:
    from nablafol.progress import ProgressBar
    from nablafol.synthetic import generate_dataset
    bar = ProgressBar("generate", unit="steps")
    summary = generate_dataset(args.out, n_train=args.train, n_val=args.val, n_testdev=args.testdev, seed=args.seed,
                               feature_dim=args.feature_dim, progress=lambda d, t, stage: bar(d, t, note=stage),
                               questions_per_scene=args.questions_per_scene, noise_std=args.noise,
                               min_objects=args.objects[0], max_objects=args.objects[1],
                               large_share=args.large_scenes, spatial_neighbours=args.spatial_neighbours)
    bar.close()
    counts = ", ".join(f"{split} {summary.scenes[split]:,} scenes / {summary.questions[split]:,} questions"
                       for split in summary.scenes)
    print(f"{counts} -> {args.out}")
    return 0
