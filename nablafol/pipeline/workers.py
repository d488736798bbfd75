"""Answering chunks of questions in forked worker processes, results back in input order.

The workers are forked after the scenes are loaded and the answerer is built, so they share
both with the parent (copy-on-write) and nothing large crosses a pipe: each chunk's questions
go out, its outcomes come back. A chunk is answered the same way whichever process answers it
(batches are formed within a chunk), so the results are those of a run without workers.

    >>> from nablafol.data import load_questions, load_scene_graphs
    >>> from nablafol.pipeline.answering import Answerer
    >>> from nablafol.pipeline.perception import SceneGraphPerception
    >>> answerer = Answerer(SceneGraphPerception(load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")))
    >>> questions = list(load_questions("tests/fixtures/gqa/val_balanced_questions.json").values())
    >>> chunks = [questions[:3], questions[3:]]
    >>> answered = list(answer_chunks(answerer, chunks, workers=2))
    >>> [len(results) for _, results in answered] == [len(c) for c in chunks]
    True
"""
from __future__ import annotations

import multiprocessing
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Iterable, Iterator, Sequence

from nablafol.errors import NablafolError
from nablafol.pipeline.collector import frozen_for_fork

__all__ = ["answer_chunks", "WorkerError"]

_ANSWERER = None  # what a forked worker answers with (set in the parent just before the fork)


class WorkerError(NablafolError):
    """A worker process ended without answering (killed, or out of memory)."""


def _start_worker(threads: int) -> None:
    import torch
    if threads:
        torch.set_num_threads(threads)


def _answer(chunk: Sequence) -> list:
    return _ANSWERER.answer_chunk(chunk)


def answer_chunks(answerer, chunks: Iterable[Sequence], workers: int = 1, threads: int = 1,
                  progress=None) -> Iterator[tuple[Sequence, list]]:
    """``(chunk, answerer.answer_chunk(chunk))`` for each chunk, in order.

    With ``workers > 1`` the chunks are answered by that many forked processes (``threads``
    torch threads each), at most ``workers + 1`` chunks in flight, so memory stays bounded
    however many chunks there are. CPU only: a forked process cannot use a CUDA context.
    ``progress(n)`` hears of every batch answered in this process (of nothing from workers).
    """
    if workers <= 1:
        for chunk in chunks:
            yield chunk, answerer.answer_chunk(chunk, progress)
        return
    global _ANSWERER
    _ANSWERER = answerer
    answerer.perception.before_fork()
    pending: deque = deque()
    try:
        with frozen_for_fork(), ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                                    initializer=_start_worker, initargs=(threads,)) as pool:
            for chunk in chunks:
                pending.append((chunk, pool.submit(_answer, chunk)))
                if len(pending) > workers:
                    chunk_done, future = pending.popleft()
                    yield chunk_done, future.result()
            while pending:
                chunk_done, future = pending.popleft()
                yield chunk_done, future.result()
    except BrokenProcessPool:
        raise WorkerError("a worker process ended without answering (killed, or out of memory); "
                          "the journal keeps every finished chunk: run again with --resume") from None
    finally:
        for _, future in pending:
            future.cancel()
        _ANSWERER = None
