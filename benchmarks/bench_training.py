"""Training throughput of the neural oracle: questions per second through the Trainer.

    python -m benchmarks.bench_training [--quick] [--steps 200] [--batch 64]

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

FEATURE_DIM = 64


# scenes: training scenes generated (about 10 questions each); steps: timed optimizer steps
SIZES = {"tiny": dict(scenes=20, steps=3), "quick": dict(scenes=60, steps=20), "full": dict(scenes=300, steps=200)}


def trainer_on_generated_data(scratch: Path, batch: int, seed: int, feature_dim: int = FEATURE_DIM, device=None,
                              **generate):
    """A :class:`Trainer` (default oracle sizes) on a dataset generated into ``scratch``, the model
    on ``device`` (the CPU by default): ``(model, trainer, examples)``; ``generate`` goes to
    ``generate_dataset``."""
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
                      TrainConfig(epochs=1, batch_size=batch, seed=seed), compiler=compiler, ontology=onto,
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
            "first_loss": float(np.mean(losses[:10])), "last_loss": float(np.mean(losses[-10:]))}


def report(result: dict) -> list[str]:
    return [f"Training: {result['steps']} steps of {result['batch']} questions (neural oracle, "
            f"{result['parameters']:,} parameters): {result['loop_seconds']:.1f} s -> "
            f"{result['questions_per_s']:,.0f} questions/s; loss {result['first_loss']:.3f} -> {result['last_loss']:.3f}"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args(argv)
    print("\n".join(report(run("quick" if args.quick else "full", args.steps, args.batch))))


if __name__ == "__main__":
    main()
