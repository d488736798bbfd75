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

import copyreg
import io
import pickle
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import MappingProxyType
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


def run_beside(request: BesideRequest, inbox=None, generator=None) -> dict:
    """Run every stage of this module (see its docstring); what the report needs, picklable.
    ``inbox``: where the training questions, the word that the data is written and its generator
    come from (:class:`_Messages`, from a first process still writing it); None: the data is
    written, and ``generator`` wrote it (None: rebuilt from the data's card)."""
    from nablafol.pipeline.allocator import keep_freed_memory
    with keep_freed_memory():  # its trainings' big temporaries reuse the last step's pages
        return _run_beside(request, inbox if inbox is not None else _Written(request.data, generator))


class _Written:
    """The inbox of a run whose data is written already: the training questions from their file,
    the generator as handed."""

    def __init__(self, data: Path, generator=None):
        self.data, self.generator = Path(data), generator

    def train_questions(self) -> list:
        from nablafol.data import load_questions
        return list(load_questions(self.data / "train_balanced_questions.json").values())

    def wait_for_data(self):
        return self.generator


class _Messages:
    """The inbox of a second process started before the data is written: the first process sends
    the training questions as soon as they are drawn (the parser needs nothing else), then word
    that every file is written, with the generator that wrote it (the Bayes ceiling's model)."""

    def __init__(self, connection):
        self._connection = connection

    def _next(self, kind: str):
        try:
            got, value = pickle.loads(self._connection.recv_bytes())
        except EOFError:
            raise RuntimeError("the first process stopped before it had written the data") from None
        if got != kind:
            raise RuntimeError(f"the first process sent {got!r} where {kind!r} belonged")
        return value

    def train_questions(self) -> list:
        return self._next("train")

    def wait_for_data(self):
        generator = self._next("written")
        self._connection.close()
        return generator


def _run_beside(request: BesideRequest, inbox) -> dict:
    import torch

    from nablafol.compiler import Compiler
    from nablafol.data import load_questions
    from nablafol.dsl import Ontology
    torch.set_num_threads(request.threads)
    cpu, began = time.process_time(), time.time()  # the clock both processes share: when it began and ended
    timings, cpus, out = {}, {}, {}
    clock = StageClock(timings, cpus)
    with clock("parser"):  # on the training questions alone: it can start before the rest is written
        trained, settings = _train_parser(request, inbox.train_questions())
    generator = inbox.wait_for_data()
    data = Path(request.data)
    if generator is None:  # none handed over: rebuilt from the data's card
        from nablafol.synthetic.bayes import rebuilt_generator
        generator = rebuilt_generator(data)
    ontology = Ontology.from_folder(data / "ontology")
    compiler = Compiler(ontology)
    questions = {split: load_questions(data / f"{split}_balanced_questions.json") for split in ("train", "val", "testdev")}
    store = feature_memory(data)

    with clock("parser"):
        out["parser"], out["parser_read"] = _parser_read(request, trained, settings, questions["testdev"])
    with clock("black box"):
        out["black_box"], out["black_box_predictions"] = _black_box(request, questions, store)
    with clock("ceiling"):
        model, out["ceiling_history"], out["ceiling_predictions"], out["ceiling_concepts"] = _ceiling(
            request, ontology, compiler, questions, store)
    with clock("Bayes ceiling"):
        out["bayes"] = _bayes(generator, ontology, compiler, questions, store)
    with clock("pretrained"):
        out["pretrained_history"] = _pretrained(request, model, ontology, compiler, questions, store)
    out["timings"], out["stage_cpu_seconds"], out["cpu_seconds"] = timings, cpus, time.process_time() - cpu
    out["span"] = (began, time.time())
    return out


class StageClock:
    """``with clock(stage):`` adds the stage's wall seconds to ``wall`` and this process's CPU
    seconds to ``cpu`` (both dicts, by stage name): the CPU seconds say what a stage costs
    whatever else the machine runs, the wall what it took here."""

    def __init__(self, wall: dict, cpu: dict):
        self.wall, self.cpu = wall, cpu

    @contextmanager
    def __call__(self, stage: str):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:  # a stage timed in parts adds them up
            self.wall[stage] = self.wall.get(stage, 0.0) + time.perf_counter() - wall
            self.cpu[stage] = self.cpu.get(stage, 0.0) + time.process_time() - cpu


def _train_parser(request: BesideRequest, train_questions: list):
    """The semantic parser trained on the training questions, and its settings."""
    from nablafol.semantic_parser import TrainingSettings, train_parser
    settings = (TrainingSettings(seed=request.seed) if request.parser_epochs is None
                else TrainingSettings(epochs=request.parser_epochs, seed=request.seed))
    return train_parser(train_questions, settings=settings), settings


def _parser_read(request: BesideRequest, trained, settings, test_q: dict) -> tuple[dict, dict]:
    """The trained parser saved in ``OUT/parser``; how it was trained, and test-dev's questions
    with the programs it reads (id -> question), with how many it read as annotated and how many
    it could not read."""
    from nablafol.dsl import parse_program
    from nablafol.semantic_parser import same_program, save_parser, with_predicted_programs
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


def _bayes(generator, ontology, compiler, questions: dict, store) -> dict:
    """The Bayes ceiling's answers: the generator's posteriors given the features and boxes
    (:func:`nablafol.synthetic.bayes.features_only_scene_graphs`) through the same engine and
    golden programs; split (test-dev, validation) -> predictions."""
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.evaluation import answer_stream
    from nablafol.pipeline.perception import SceneGraphPerception
    from nablafol.synthetic.bayes import bayes_split
    out = {}
    for split in ("testdev", "val"):
        graphs = {g.image_id: g for g in bayes_split(generator, store, split, features_only=True)}
        answerer = Answerer(SceneGraphPerception(graphs, ontology=ontology), compiler=compiler)
        asked = questions[split]
        out[split] = answer_stream(asked.values(), answerer, chunk_size=max(1, len(asked)), collect=True).predictions
    return out


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
    :meth:`result` waits for what it hands back; :meth:`stop` ends it (the demo failed).

    ``before_data``: started before the data is written (the second process's start-up and the
    parser's training then overlap the dataset's generation): the caller hands over the training
    questions with :meth:`hand` (``generate_dataset``'s ``on_split``), then calls :meth:`written`
    (in one process, the stages run then)."""

    def __init__(self, request: BesideRequest, one_process: bool = False, before_data: bool = False):
        # _outbox: messages for the second process (bytes; None: the last), None once closed
        self._result, self._process, self._request, self._outbox, self._sending = None, None, request, None, None
        if one_process:
            if not before_data:
                self._result = run_beside(request)
            return
        import multiprocessing
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this one's torch or files
        self._receive, send = context.Pipe(duplex=False)
        inbox = None
        if before_data:
            import queue
            import threading
            inbox, outbox = context.Pipe(duplex=False)
            # a pipe takes a large message only as fast as the second process reads it, and that
            # process reads its inbox between stages: sending from the caller's thread would stall it
            self._outbox = queue.SimpleQueue()
            self._sending = threading.Thread(target=_send_all, args=(self._outbox, outbox),
                                             name="nablafol demo hand-over", daemon=True)
            self._sending.start()
        self._process = context.Process(target=_serve, args=(request, send, inbox), name="nablafol demo beside",
                                        daemon=True)
        with _blas_threads(request.threads):
            self._process.start()
        send.close()
        if inbox is not None:
            inbox.close()

    def hand(self, split: str, questions: list) -> None:
        """The training questions, to the second process as soon as they are drawn."""
        if split == "train":
            self._send("train", list(questions))

    def written(self, generator=None) -> None:
        """Every file of the data is written (by ``generator``: the Bayes ceiling's model; None:
        rebuilt from the data's card): the second process goes on (one process: runs now)."""
        if self._outbox is not None:
            if generator is not None:  # the Bayes oracle reads the scenes only: the questions stay here
                generator = replace(generator, dataset=replace(generator.dataset, questions={}))
            self._send("written", generator)
            self._outbox.put(None)
            self._outbox = None
        elif self._process is None and self._result is None:
            self._result = run_beside(self._request, generator=generator)

    def _send(self, kind: str, value) -> None:
        if self._outbox is not None:
            self._outbox.put(_dumps((kind, value)))

    def result(self) -> dict:
        if self._result is None:
            try:
                kind, value = pickle.loads(self._receive.recv_bytes())
            except EOFError:
                kind, value = "error", f"the second process ended without an answer (exit code {self._process.exitcode})"
            finally:
                self._process.join()
                if self._sending is not None:
                    self._sending.join()
            if kind == "error":
                raise RuntimeError(f"demo, stages beside the training: {value}")
            self._result = value
        return self._result

    def stop(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.terminate()
            self._process.join()


@contextmanager
def _blas_threads(threads: int):
    """numpy's BLAS threads in a process spawned inside: as many as torch's (BLAS reads them once,
    at start-up; more threads than that take the other process's core)."""
    import os
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    before = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.setdefault(name, str(max(1, threads)))
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)


def _send_all(messages, outbox) -> None:
    """Send ``messages`` (bytes, None: the last) down ``outbox`` in order, then close it."""
    try:
        while (message := messages.get()) is not None:
            outbox.send_bytes(message)
    except OSError:  # the second process has ended: Beside.result says why
        pass
    finally:
        outbox.close()


def _dumps(value) -> bytes:
    """``pickle.dumps(value)``, read-only mappings (a scene graph's, a vocabulary's) written as their
    items and read back as read-only mappings (pickle refuses them)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, MappingProxyType: lambda proxy: (_read_only, (dict(proxy),))}
    pickler.dump(value)
    return buffer.getvalue()


def _read_only(items: dict) -> MappingProxyType:
    return MappingProxyType(items)


def _serve(request: BesideRequest, send, inbox=None) -> None:
    """The second process: :func:`run_beside`, its result or its failure (one line) sent back
    (``inbox``: the connection the first process hands the data's news over, or None)."""
    # plain pickle, not the connection's: torch would share the tensors' memory through this
    # process, which has ended by the time they are read
    try:
        send.send_bytes(pickle.dumps(("result", run_beside(request, _Messages(inbox) if inbox is not None else None))))
    except BaseException as e:  # noqa: BLE001 - the first process says it, in one line
        send.send_bytes(pickle.dumps(("error", f"{type(e).__name__}: {e}")))
    finally:
        send.close()
