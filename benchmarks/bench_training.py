"""Training throughput of the neural oracle: questions per second through the Trainer; and the
share of a step spent waiting for features, the Trainer's epoch loop reading them in the step
(``read_ahead`` off) against reading them ahead in a background thread.

    python -m benchmarks.bench_training [--quick] [--steps 200] [--batch 64] [--wait-only]

Generates a small embedded dataset (in a temporary folder), builds the neural oracle with
its default sizes, and times ``steps`` optimizer steps of :class:`nablafol.pipeline.oracle_training.Trainer`
(features -> oracle -> engine -> answer loss -> backward -> Adam) on batches of ``batch``
training questions, after a few warm-up steps. Validation and checkpoints are not timed:
the figure is the training loop's own rate.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from .timing import calls_timed

FEATURE_DIM = 64


# scenes: training scenes generated (about 10 questions each); steps: timed optimizer steps;
# wait: the feature-wait case (objects a scene, batch, scenes generated, epochs timed each way)
SIZES = {"tiny": dict(scenes=20, steps=3, wait=dict(objects=4, batch=8, scenes=12, rounds=1, feature_dim=FEATURE_DIM)),
         "quick": dict(scenes=60, steps=20, wait=dict(objects=36, batch=64, scenes=96, rounds=1)),
         "full": dict(scenes=300, steps=200, wait=dict(objects=36, batch=256, scenes=256, rounds=1))}
GQA_FEATURE_DIM = 2048
WAIT_SHARE_AIM = 0.05


def trainer_on_generated_data(scratch: Path, batch: int, seed: int, feature_dim: int = FEATURE_DIM, device=None,
                              train: dict | None = None, **generate):
    """A :class:`Trainer` (default oracle sizes) on a dataset generated into ``scratch``, the model
    on ``device`` (the CPU by default): ``(model, trainer, examples)``; ``train`` holds more
    :class:`TrainConfig` settings, ``generate`` goes to ``generate_dataset``."""
    from nablafol.compiler import Compiler
    from nablafol.dsl import Ontology
    from nablafol.data import FeatureStore, load_questions
    from nablafol.pipeline.perception import FeaturePerception
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.neural.feature_memory import FeatureMemory
    from nablafol.synthetic import generate_dataset
    from nablafol.pipeline.oracle_training import TrainConfig, Trainer, prepare_examples

    data = Path(scratch) / "data"
    generate_dataset(data, seed=seed, feature_dim=feature_dim, **generate)
    onto = Ontology.from_folder(data / "ontology")
    torch.manual_seed(seed)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=feature_dim).to(device)
    perception = FeaturePerception(FeatureMemory(FeatureStore(data / "features")), model, onto,  # as `nablafol train`
                                   device=device)
    compiler = Compiler(onto)
    examples, _ = prepare_examples(load_questions(data / "train_balanced_questions.json").values(), compiler,
                                   perception.has_image)
    trainer = Trainer(model, perception, examples, Path(scratch) / "model",
                      TrainConfig(epochs=1, batch_size=batch, seed=seed, **(train or {})), compiler=compiler, ontology=onto,
                      log=lambda *_: None)
    return model, trainer, examples


def run(size: str = "full", steps: int | None = None, batch: int = 64, seed: int = 0) -> dict:
    steps = steps or SIZES[size]["steps"]
    warmup = 3
    with tempfile.TemporaryDirectory() as scratch:
        model, trainer, examples = trainer_on_generated_data(Path(scratch), batch, seed, n_train=SIZES[size]["scenes"],
                                                             n_val=2, n_testdev=2)
        rng = np.random.default_rng(seed)
        model.train()

        def batches(count):
            for _ in range(count):
                yield [examples[i] for i in rng.choice(len(examples), size=min(batch, len(examples)), replace=False)]

        for b in batches(warmup):
            trainer._step(b)
        questions, losses = 0, []
        start = time.perf_counter()
        for b in batches(steps):
            losses.append(trainer._step(b))
            questions += len(b)
        seconds = time.perf_counter() - start
    return {"steps": steps, "batch": batch, "questions": questions, "loop_seconds": seconds,
            "questions_per_s": questions / seconds, "training_questions": len(examples),
            "parameters": sum(p.numel() for p in model.parameters()),
            "first_loss": float(np.mean(losses[:10])), "last_loss": float(np.mean(losses[-10:])),
            "feature_wait": feature_wait(**SIZES[size]["wait"], seed=seed)}


def feature_wait(objects: int, batch: int, scenes: int, rounds: int, feature_dim: int = GQA_FEATURE_DIM,
                 seed: int = 0) -> dict:
    """The share of a training step the epoch loop waits for its features, reading them in the
    step (``before``: ``Trainer.read_ahead`` off) and ahead in a background thread (``after``), on
    the CPU, ``objects`` objects a scene, ``feature_dim``-wide features (GQA's 2048): read from
    the files (``files``: as every epoch on GQA, whose images outgrow the ``FeatureMemory``), then
    with every image in the memory (``memory``: as after a first epoch on a small set). Each way
    trains ``rounds`` epochs (every question once: the curriculum admits every program),
    alternating, each from the same weights and optimizer state; the two ways' weights after an
    epoch are compared bit for bit. The share is over the steps after each epoch's first: the
    first has nothing to overlap its read with (its wait is kept apart, ``first_wait_s``)."""
    import copy

    with tempfile.TemporaryDirectory() as scratch:
        every_question = dict(curriculum_start=1 << 20, checkpoint_seconds=0)  # no checkpoint timed
        model, trainer, examples = trainer_on_generated_data(
            Path(scratch), batch, seed, feature_dim, train=every_question, n_train=scenes, n_val=1, n_testdev=1,
            min_objects=objects, max_objects=objects, questions_per_scene=4)
        start_state = copy.deepcopy((model.state_dict(), trainer.optimizer.state_dict()))
        perception = trainer.train_perception
        memory = perception.store
        out = {"objects": objects, "batch": batch, "training_questions": len(examples), "rounds": rounds}
        perception.store = memory.store
        out["files"] = _waits_both_ways(trainer, start_state, rounds)
        perception.store = memory
        memory.get_many(sorted({e.image_id for e in examples}))
        out["memory"] = _waits_both_ways(trainer, start_state, rounds)
    return out


def _waits_both_ways(trainer, start_state, rounds: int) -> dict:
    from nablafol.pipeline.perception import FeaturePerception
    from nablafol.pipeline.prefetch import Prefetch

    # what the step's own thread spends on its features, reading them or waiting for them, so
    # far: noted with the clock at the end of every step
    waited, ends = {"wait": 0.0}, []
    tell = lambda event: ends.append((time.perf_counter(), waited["wait"])) if event.kind == "step" else None  # noqa: E731
    trainer.callbacks.append(tell)
    ways = {"before": (False, FeaturePerception, "read"), "after": (True, Prefetch, "take")}
    spent = {way: {"wait": 0.0, "first_wait": 0.0, "seconds": 0.0, "steps": 0, "epochs": 0} for way in ways}
    weights = {}
    for _ in range(rounds):
        for way, (ahead, owner, name) in ways.items():
            trainer.model.load_state_dict(start_state[0])
            trainer.optimizer.load_state_dict(start_state[1])
            trainer.read_ahead = ahead
            waited["wait"], ends[:] = 0.0, []
            with calls_timed(owner, name, waited, "wait"):
                trainer._epoch(0)
            t, (first_end, first_wait), (last_end, last_wait) = spent[way], ends[0], ends[-1]
            t["first_wait"] += first_wait
            t["wait"] += last_wait - first_wait  # over the steps after the first
            t["seconds"] += last_end - first_end
            t["steps"] += len(ends) - 1
            t["epochs"] += 1
            weights[way] = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    trainer.callbacks.remove(tell)
    out = {"weights_identical": all(torch.equal(weights["before"][k], weights["after"][k]) for k in weights["before"])}
    for way, t in spent.items():
        out[way] = {"steps": t["steps"], "step_s": t["seconds"] / t["steps"], "wait_s": t["wait"] / t["steps"],
                    "wait_share": t["wait"] / t["seconds"], "first_wait_s": t["first_wait"] / t["epochs"]}
    return out


def report(result: dict) -> list[str]:
    lines = [f"Training: {result['steps']} steps of {result['batch']} questions (neural oracle, "
             f"{result['parameters']:,} parameters): {result['loop_seconds']:.1f} s -> "
             f"{result['questions_per_s']:,.0f} questions/s; loss {result['first_loss']:.3f} -> {result['last_loss']:.3f}"]
    if "feature_wait" in result:
        lines += wait_report(result["feature_wait"])
    return lines


def wait_report(w: dict) -> list[str]:
    lines = [f"Waiting for features, N={w['objects']} batch {w['batch']}, the share of a step (the steps after "
             f"an epoch's first), read in the step -> read ahead:"]
    for source, label in (("files", "from the files"), ("memory", "from memory")):
        c = w[source]
        b, a = c["before"], c["after"]
        lines.append(f"  {label} ({b['steps']} steps each way): {b['wait_share']:.1%} ({b['wait_s'] * 1e3:,.0f} of "
                     f"{b['step_s'] * 1e3:,.0f} ms) -> {a['wait_share']:.1%} ({a['wait_s'] * 1e3:,.0f} of "
                     f"{a['step_s'] * 1e3:,.0f} ms); an epoch's first step waits {b['first_wait_s'] * 1e3:,.0f} -> "
                     f"{a['first_wait_s'] * 1e3:,.0f} ms; weights identical: {'yes' if c['weights_identical'] else 'NO'}")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--wait-only", action="store_true", help="only the feature-wait case")
    args = ap.parse_args(argv)
    size = "quick" if args.quick else "full"
    if args.wait_only:
        print("\n".join(wait_report(feature_wait(**SIZES[size]["wait"]))))
        return
    print("\n".join(report(run(size, args.steps, args.batch))))


if __name__ == "__main__":
    main()
