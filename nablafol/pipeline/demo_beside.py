"""The demo's stages that need nothing of the base model, run beside its training.

``nablafol demo`` trains the base model (the longest stage) on one core; these stages only need
the dataset, so they run at the same time in a second process (``spawn``ed, one torch thread
like the first) and hand back what the report needs:

* the semantic parser, trained on the training questions and saved in ``OUT/parser``, and
  test-dev read through it (the base model answers those programs once it is trained);
* the black-box baseline, fitted (its validation accuracy after each epoch: a learning curve)
  and its test-dev predictions;
* the perception ceiling: the base model's network trained on the train scene graphs' labels
  until validation stops bettering (the best epoch's weights kept), its test-dev predictions,
  its validation accuracy after each label epoch, and how it reads each concept of the
  validation graphs;
* the pretrained-then-reasoning curve: that labelled network then trained ``pretrained_epochs``
  epochs through the reasoning on the answers (``nablafol train --scene-graphs``'s recipe),
  validated after each epoch.

Every stage seeds itself, so the results do not depend on which process runs them or in what
order: ``one_process=True`` runs the same function in the caller, and gives the same scores
(tested).
"""
from __future__ import annotations

import pickle
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

CEILING_PATIENCE = 3  # label epochs without a better validation before the ceiling stops

__all__ = ["BesideRequest", "run_beside", "Beside", "StageClock", "can_spawn", "demo_model", "feature_memory",
           "validation_accuracy"]


@dataclass(frozen=True)
class BesideRequest:
    """What the stages beside the training need: where the data is, what to write, the settings."""

    data: Path
    out: Path
    seed: int
    parser_epochs: Optional[int]
    blackbox_epochs: int
    ceiling_epochs: int
    pretrained_epochs: int
    lr: float  # answer training's (the pretrained curve's epochs through the reasoning)
    threads: int


def feature_memory(data: Path):
    """The dataset's features, each image read from its gzip'd HDF5 file once (they all fit in memory)."""
    from nablafol.data import FeatureStore
    from nablafol.neural.feature_memory import FeatureMemory
    return FeatureMemory(FeatureStore(Path(data) / "features"))


def demo_model(ontology, store, seed: int):
    """The demo's oracle network (seeded): hidden width 256, cosine heads (docs/oracle-learning.md)."""
    import torch

    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    torch.manual_seed(seed)
    return NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology),
                                            feature_dim=store[store.image_ids()[0]].features.shape[1],
                                            hidden_dim=256, head="cosine")


def validation_accuracy(perception, compiler, questions) -> float:
    """Accuracy (vocabulary forms) of ``perception``'s oracle on ``questions`` through the engine."""
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.evaluation import answer_all
    from nablafol.scoring import Scorer, vocabulary_match
    scorer = Scorer(vocabulary_match)
    answer_all(questions, Answerer(perception, compiler=compiler), scorer=scorer)
    return scorer.compute().accuracy["all"]


def run_beside(request: BesideRequest) -> dict:
    """Run every stage of this module (see its docstring); what the report needs, picklable."""
    from nablafol.pipeline.allocator import keep_freed_memory
    with keep_freed_memory():  # its trainings' big temporaries reuse the last step's pages
        return _run_beside(request)


def _run_beside(request: BesideRequest) -> dict:
    import torch

    from nablafol.compiler import Compiler
    from nablafol.data import load_questions
    from nablafol.dsl import Ontology
    torch.set_num_threads(request.threads)
    cpu, began = time.process_time(), time.time()  # the clock both processes share: when it began and ended
    data = Path(request.data)
    ontology = Ontology.from_folder(data / "ontology")
    compiler = Compiler(ontology)
    questions = {split: load_questions(data / f"{split}_balanced_questions.json") for split in ("train", "val", "testdev")}
    store = feature_memory(data)
    timings, cpus, out = {}, {}, {}
    clock = StageClock(timings, cpus)

    with clock("parser"):
        out["parser"], out["parser_read"] = _parser(request, questions["train"], questions["testdev"])
    with clock("black box"):
        out["black_box"], out["black_box_predictions"] = _black_box(request, questions, store)
    with clock("ceiling"):
        model, out["ceiling_history"], out["ceiling_predictions"], out["ceiling_concepts"] = _ceiling(
            request, ontology, compiler, questions, store)
    with clock("pretrained"):
        out["pretrained_history"] = _pretrained(request, model, ontology, compiler, questions, store)
    out["timings"], out["stage_cpu_seconds"], out["cpu_seconds"] = timings, cpus, time.process_time() - cpu
    out["span"] = (began, time.time())
    return out


class StageClock:
    """``with clock(stage):`` writes the stage's wall seconds into ``wall`` and this process's CPU
    seconds into ``cpu`` (both dicts, by stage name): the CPU seconds say what a stage costs
    whatever else the machine runs, the wall what it took here."""

    def __init__(self, wall: dict, cpu: dict):
        self.wall, self.cpu = wall, cpu

    @contextmanager
    def __call__(self, stage: str):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[stage] = time.perf_counter() - wall
            self.cpu[stage] = time.process_time() - cpu


def _parser(request: BesideRequest, train_q: dict, test_q: dict) -> tuple[dict, dict]:
    """The semantic parser trained on the training questions, saved in ``OUT/parser``; how, and
    test-dev's questions with the programs it reads (id -> question), with how many it read as
    annotated and how many it could not read."""
    from nablafol.dsl import parse_program
    from nablafol.semantic_parser import (TrainingSettings, same_program, save_parser, train_parser,
                                          with_predicted_programs)
    settings = (TrainingSettings(seed=request.seed) if request.parser_epochs is None
                else TrainingSettings(epochs=request.parser_epochs, seed=request.seed))
    trained = train_parser(train_q.values(), settings=settings)
    save_parser(Path(request.out) / "parser", trained.parser)
    read = {q.id: q for q in with_predicted_programs(test_q.values(), trained.parser)}
    exact = sum(q.semantic_str is not None and test_q[q.id].semantic_str is not None
                and same_program(parse_program(q.semantic_str), parse_program(test_q[q.id].semantic_str))
                for q in read.values())
    return ({"folder": str(Path(request.out) / "parser"), "examples": trained.examples, "epochs": settings.epochs,
             "seconds": trained.seconds, "exact_match": exact / max(1, len(read)),
             "unreadable": sum(q.semantic_str is None for q in read.values())}, read)


def _black_box(request: BesideRequest, questions: dict, store):
    """The black-box baseline fitted on the training questions (validated after each epoch) and
    its test-dev predictions."""
    from nablafol.baselines.blackbox import BlackBoxBaseline
    from nablafol.scoring import vocabulary_match
    val = list(questions["val"].values())

    def validate(baseline) -> float:
        said = baseline.predict(val, store)
        return sum(q.id in said and vocabulary_match(said[q.id], q.answer) for q in val) / len(val)

    blackbox = BlackBoxBaseline(epochs=request.blackbox_epochs, seed=request.seed).fit(
        questions["train"].values(), store, validate=validate)
    return blackbox, blackbox.predict(questions["testdev"].values(), store)


def _ceiling(request: BesideRequest, ontology, compiler, questions: dict, store):
    """The demo's network trained on the train scene graphs' labels (the perception ceiling),
    validated after each label epoch, stopped after ``CEILING_PATIENCE`` epochs without a better
    validation (the best epoch's weights kept); the model, its history, its test-dev predictions
    and its reading of each concept of the validation graphs."""
    from nablafol.data import load_scene_graphs
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.evaluation import answer_all
    from nablafol.pipeline.label_training import LabelConfig, concept_accuracy, train_on_labels
    from nablafol.pipeline.perception import FeaturePerception
    model = demo_model(ontology, store, request.seed)
    perception = FeaturePerception(store, model, ontology)
    val = list(questions["val"].values())
    history = train_on_labels(model, store, load_scene_graphs(Path(request.data) / "train_sceneGraphs.json"), ontology,
                              LabelConfig(epochs=request.ceiling_epochs, seed=request.seed, patience=CEILING_PATIENCE),
                              validate=lambda: validation_accuracy(perception, compiler, val))
    run = answer_all(questions["testdev"].values(), Answerer(perception, compiler=compiler))
    concepts = concept_accuracy(model, store, load_scene_graphs(Path(request.data) / "val_sceneGraphs.json"), ontology)
    return model, history, run.predictions, concepts


def _pretrained(request: BesideRequest, model, ontology, compiler, questions: dict, store) -> list[dict]:
    """The labelled network trained ``pretrained_epochs`` epochs through the reasoning on the
    answers, every program from the first epoch (as ``nablafol train --scene-graphs`` after its
    pretraining); one record per epoch (the Trainer's)."""
    from nablafol.pipeline.oracle_training import Trainer, TrainConfig, prepare_examples
    from nablafol.pipeline.perception import FeaturePerception
    if not request.pretrained_epochs:
        return []
    perception = FeaturePerception(store, model, ontology)
    examples, _ = prepare_examples(questions["train"].values(), compiler, perception.has_image)
    config = TrainConfig(epochs=request.pretrained_epochs, batch_size=64, lr=request.lr, seed=request.seed,
                         curriculum_start=max(e.length for e in examples))
    trainer = Trainer(model, perception, examples, Path(request.out) / "pretrained", config, compiler=compiler,
                      val_perception=perception, val_questions=list(questions["val"].values()), ontology=ontology,
                      log=lambda *_: None)
    return trainer.train()


def can_spawn() -> bool:
    """Whether a ``spawn``ed second process can start from this one: it re-runs the main script's
    imports from its file, and a script read from standard input (``python - < script``) leaves no
    file behind (``python -c``, the CLI and script files are fine)."""
    import os
    import sys
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    return path is None or os.path.exists(path)


class Beside:
    """:func:`run_beside` started now in a second process (``one_process``: run here, now);
    :meth:`result` waits for what it hands back; :meth:`stop` ends it (the demo failed)."""

    def __init__(self, request: BesideRequest, one_process: bool = False):
        self._result, self._process = None, None
        if one_process:
            self._result = run_beside(request)
            return
        import multiprocessing
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this one's torch or files
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_serve, args=(request, send), name="nablafol demo beside", daemon=True)
        self._process.start()
        send.close()

    def result(self) -> dict:
        if self._result is None:
            try:
                kind, value = pickle.loads(self._receive.recv_bytes())
            except EOFError:
                kind, value = "error", f"the second process ended without an answer (exit code {self._process.exitcode})"
            finally:
                self._process.join()
            if kind == "error":
                raise RuntimeError(f"demo, stages beside the training: {value}")
            self._result = value
        return self._result

    def stop(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.terminate()
            self._process.join()


def _serve(request: BesideRequest, send) -> None:
    """The second process: :func:`run_beside`, its result or its failure (one line) sent back."""
    # plain pickle, not the connection's: torch would share the tensors' memory through this
    # process, which has ended by the time they are read
    try:
        send.send_bytes(pickle.dumps(("result", run_beside(request))))
    except BaseException as e:  # noqa: BLE001 - the first process says it, in one line
        send.send_bytes(pickle.dumps(("error", f"{type(e).__name__}: {e}")))
    finally:
        send.close()
