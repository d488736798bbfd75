"""The levers of docs/oracle-learning.md, one run each: train the demo's oracle through the
reasoning on a generated dataset with one setting changed, print the validation accuracy after
each epoch (and test-dev's with ``--test``), append the result to ``--results``.

    python -c "from nablafol.synthetic import generate_dataset; generate_dataset('/tmp/learn/data', seed=0)"
    python docs/levers.py /tmp/learn/data --head cosine --epochs 8 --test
    python docs/levers.py /tmp/learn/data --head dot --epochs 3
    python docs/levers.py /tmp/learn/data --head cosine --epochs 6 --lr 2e-3 --schedule cosine
    python docs/levers.py /tmp/learn/data --head cosine --epochs 8 --curriculum-start 5 --test
    python docs/levers.py /tmp/learn/data --epochs 1 --from-disk
    python docs/levers.py /tmp/learn/data --labels --epochs 6 --lr 1e-2

One torch thread, features read into memory once, seed 0, batch 64, Adam, clipping 0.65 (the
demo's settings unless changed).
"""
import argparse
import json
import math
import time
from pathlib import Path

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", type=Path)
    p.add_argument("--head", default="cosine", choices=("cosine", "dot"))
    p.add_argument("--scale", type=float, default=10.0, help="cosine heads' scale")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--schedule", default="constant", choices=("constant", "cosine"),
                   help="cosine: epoch e trains at lr · (1 + cos(π e / epochs)) / 2")
    p.add_argument("--curriculum-start", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--test", action="store_true", help="also answer test-dev at the end")
    p.add_argument("--from-disk", action="store_true", help="read the features from the HDF5 file at every step "
                   "(as before FeatureMemory)")
    p.add_argument("--labels", action="store_true", help="train on the train scene graphs' labels instead (the "
                   "supervised ceiling: --epochs label epochs at --lr), then answer test-dev")
    p.add_argument("--results", type=Path, default=Path("/tmp/learn/results.jsonl"))
    a = p.parse_args()
    torch.set_num_threads(1)
    from nablafol.compiler import Compiler
    from nablafol.data import FeatureStore, load_questions
    from nablafol.dsl import Ontology
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.pipeline.demo_beside import feature_memory, validation_accuracy
    from nablafol.pipeline.oracle_training import Trainer, TrainConfig, prepare_examples
    from nablafol.pipeline.perception import FeaturePerception
    ontology = Ontology.from_folder(a.data / "ontology")
    compiler = Compiler(ontology)
    questions = {s: load_questions(a.data / f"{s}_balanced_questions.json") for s in ("train", "val", "testdev")}
    store = FeatureStore(a.data / "features") if a.from_disk else feature_memory(a.data)
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology),
                                             feature_dim=store[store.image_ids()[0]].features.shape[1],
                                             hidden_dim=256, head=a.head, cosine_scale=a.scale)
    perception = FeaturePerception(store, model, ontology)
    examples, _ = prepare_examples(questions["train"].values(), compiler, perception.has_image)
    if a.labels:
        from nablafol.data import load_scene_graphs
        from nablafol.pipeline.label_training import LabelConfig, train_on_labels
        history = train_on_labels(model, store, load_scene_graphs(a.data / "train_sceneGraphs.json"), ontology,
                                  LabelConfig(epochs=a.epochs, lr=a.lr, seed=0))
        result = {"args": {k: str(v) for k, v in vars(a).items()}, "label_loss": [h["label_loss"] for h in history],
                  "testdev": validation_accuracy(perception, compiler, list(questions["testdev"].values()))}
        print("RESULT", json.dumps(result))
        return
    trainer = Trainer(model, perception, examples, Path("/tmp/learn/levers_model"),
                      TrainConfig(epochs=a.epochs, batch_size=a.batch, lr=a.lr, seed=0,
                                  curriculum_start=a.curriculum_start),
                      compiler=compiler, val_perception=perception, val_questions=list(questions["val"].values()),
                      ontology=ontology)

    def schedule(event) -> None:  # the next epoch's learning rate
        if event.kind == "epoch" and a.schedule == "cosine":
            for group in trainer.optimizer.param_groups:
                group["lr"] = a.lr * 0.5 * (1 + math.cos(math.pi * event.epoch / a.epochs))

    trainer.callbacks.append(schedule)
    start = time.perf_counter()
    history = trainer.train()
    result = {"args": {k: str(v) for k, v in vars(a).items()}, "val": [h["val_accuracy"] for h in history],
              "seconds": [h["seconds"] for h in history], "total": time.perf_counter() - start}
    if a.test:
        model.eval()
        result["testdev"] = validation_accuracy(perception, compiler, list(questions["testdev"].values()))
    print("RESULT", json.dumps(result))
    a.results.parent.mkdir(parents=True, exist_ok=True)
    with a.results.open("a") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
