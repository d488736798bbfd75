"""A black-box VQA baseline: question text + object features -> answer, no program.

The stand-in for MAC and LXMERT in the paper's Table 2. It sees what the base model sees
(the same object features and boxes) and the question's *words*, never its program: a GRU
reads the question, ``hops`` rounds of question-guided soft attention over the objects
gather what it asks about, and a classifier picks one answer of the training answers.

    >>> import torch
    >>> model = BlackBoxModel(n_words=10, feature_dim=6, n_answers=3, hidden_dim=8, hops=2)
    >>> logits = model(torch.tensor([[2, 3, 0]]), torch.tensor([2]), torch.zeros(1, 4, 6),
    ...                torch.zeros(1, 4, 4), torch.tensor([[True, True, False, False]]))
    >>> tuple(logits.shape)
    (1, 3)
"""
from __future__ import annotations

import re
import time
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["words", "BlackBoxModel", "BlackBoxBaseline"]

PAD, UNKNOWN = 0, 1  # word ids
_WORD = re.compile(r"[a-z0-9]+")


def words(text: Optional[str]) -> list[str]:
    """Lower-case words of a question (``"Is the cup red?"`` -> ``["is", "the", "cup", "red"]``)."""
    return _WORD.findall((text or "").lower())


class BlackBoxModel(nn.Module):
    """GRU question encoder, ``hops`` rounds of attention over objects, answer classifier.

    Inputs: word ids ``(B, T)`` (0 pads), their ``lengths`` ``(B,)``, object ``features``
    ``(B, N, F)``, ``boxes`` ``(B, N, 4)`` as fractions of the image, ``mask`` ``(B, N)``.
    Output: answer logits ``(B, A)``. :meth:`attend` also gives each hop's attention.
    """

    def __init__(self, n_words: int, feature_dim: int, n_answers: int, hidden_dim: int = 128, hops: int = 2):
        super().__init__()
        if hops < 1:
            raise ValueError(f"hops must be at least 1, got {hops}")
        self.embed = nn.Embedding(n_words, hidden_dim, padding_idx=PAD)
        self.encoder = nn.GRU(hidden_dim, hidden_dim, batch_first=True)
        self.objects = nn.Sequential(nn.LayerNorm(feature_dim + 4), nn.Linear(feature_dim + 4, hidden_dim), nn.ReLU())
        self.query = nn.ModuleList(nn.Linear(hidden_dim, hidden_dim) for _ in range(hops))
        self.score = nn.Linear(hidden_dim, 1)
        self.update = nn.GRUCell(hidden_dim, hidden_dim)  # memory <- what this hop read
        self.classify = nn.Sequential(nn.Linear(2 * hidden_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, n_answers))

    def attend(self, tokens, lengths, features, boxes, mask) -> tuple[torch.Tensor, list[torch.Tensor]]:
        emb = self.embed(tokens)
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths.clamp(min=1).cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, last = self.encoder(packed)
        question = last[0]  # (B, H)
        objects = self.objects(torch.cat([features, boxes], dim=-1))  # (B, N, H)
        memory, attentions = question, []
        for query in self.query:
            logits = self.score(torch.tanh(objects * query(memory)[:, None, :])).squeeze(-1)
            logits = logits.masked_fill(~mask, float("-inf"))
            att = torch.softmax(logits, dim=-1).nan_to_num(0.0)  # an image without objects reads nothing
            attentions.append(att)
            memory = self.update(torch.einsum("bn,bnh->bh", att, objects), memory)
        return self.classify(torch.cat([memory, question], dim=-1)), attentions

    def forward(self, tokens, lengths, features, boxes, mask) -> torch.Tensor:
        return self.attend(tokens, lengths, features, boxes, mask)[0]


class BlackBoxBaseline:
    """Fits a :class:`BlackBoxModel` on questions with answers and predicts answers.

    ``images`` maps an image id to ``(features (n, F), boxes (n, 4) in pixels, width, height)``
    (a :class:`nablafol.data.FeatureStore` does). Training is seeded: the same data and seed
    give the same model.
    """

    def __init__(self, hidden_dim: int = 128, hops: int = 2, epochs: int = 10, batch_size: int = 64,
                 lr: float = 2e-3, seed: int = 0):
        self.hidden_dim, self.hops, self.epochs, self.batch_size, self.lr, self.seed = (
            hidden_dim, hops, epochs, batch_size, lr, seed)
        self.vocabulary: dict[str, int] = {}
        self.answers: list[str] = []
        self.model: Optional[BlackBoxModel] = None
        self.history: list[dict] = []

    # -- inputs ------------------------------------------------------------------------
    def _tokens(self, questions: Sequence) -> tuple[torch.Tensor, torch.Tensor]:
        ids = [[self.vocabulary.get(w, UNKNOWN) for w in words(q.question)] or [UNKNOWN] for q in questions]
        lengths = torch.tensor([len(i) for i in ids])
        tokens = torch.full((len(ids), int(lengths.max())), PAD, dtype=torch.long)
        for k, row in enumerate(ids):
            tokens[k, : len(row)] = torch.tensor(row)
        return tokens, lengths

    @staticmethod
    def _scenes(questions: Sequence, images) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(features, boxes, mask, scene of each question)`` over the questions' distinct images."""
        ids = sorted({q.image_id for q in questions})
        index = {image: k for k, image in enumerate(ids)}
        loaded = [images[i] for i in ids]
        n = max(1, max(len(o.features) for o in loaded))
        dim = int(np.shape(loaded[0].features)[1])
        features = torch.zeros(len(ids), n, dim)
        boxes = torch.zeros(len(ids), n, 4)
        mask = torch.zeros(len(ids), n, dtype=torch.bool)
        for k, o in enumerate(loaded):
            m = len(o.features)
            features[k, :m] = torch.as_tensor(np.asarray(o.features, dtype=np.float32))
            scale = torch.tensor([o.width, o.height, o.width, o.height], dtype=torch.float32).clamp(min=1.0)
            boxes[k, :m] = torch.as_tensor(np.asarray(o.boxes, dtype=np.float32)) / scale
            mask[k, :m] = True
        return features, boxes, mask, torch.tensor([index[q.image_id] for q in questions])

    # -- training and prediction ----------------------------------------------------------
    def fit(self, questions: Iterable, images, progress: Optional[Callable] = None,
            validate: Optional[Callable[["BlackBoxBaseline"], float]] = None) -> "BlackBoxBaseline":
        """Train on ``questions`` that have an answer (``progress(done, total, note=)`` per batch).
        Each epoch's record in ``history`` has its ``train_loss`` and ``seconds`` (training only);
        ``validate(self)``, when given, is called after each epoch with the model in eval mode and
        its result kept as ``val_accuracy`` (its time as ``val_seconds``; the model has no dropout: validating changes nothing
        of what is learned)."""
        questions = [q for q in questions if q.answer is not None and q.image_id in images]
        if not questions:
            raise ValueError("black-box baseline: no training question with an answer and an image")
        vocabulary = sorted({w for q in questions for w in words(q.question)})
        self.vocabulary = {w: k + 2 for k, w in enumerate(vocabulary)}  # after PAD and UNKNOWN
        self.answers = sorted({q.answer for q in questions})
        answer_index = {a: k for k, a in enumerate(self.answers)}
        tokens, lengths = self._tokens(questions)
        features, boxes, mask, scene = self._scenes(questions, images)
        targets = torch.tensor([answer_index[q.answer] for q in questions])
        torch.manual_seed(self.seed)
        self.model = BlackBoxModel(len(self.vocabulary) + 2, features.shape[-1], len(self.answers),
                                   self.hidden_dim, self.hops)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        shuffle = torch.Generator().manual_seed(self.seed)
        self.model.train()
        self.history = []
        for epoch in range(self.epochs):
            started = time.perf_counter()
            order = torch.randperm(len(questions), generator=shuffle)
            total, seen = 0.0, 0
            for start in range(0, len(order), self.batch_size):
                rows = order[start:start + self.batch_size]
                s = scene[rows]
                loss = F.cross_entropy(self.model(tokens[rows], lengths[rows], features[s], boxes[s], mask[s]),
                                       targets[rows])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(rows)
                seen += len(rows)
                if progress is not None:
                    progress(seen, len(order), note=f"epoch {epoch + 1}/{self.epochs} loss {total / seen:.4f}")
            record = {"epoch": epoch, "train_loss": total / seen, "seconds": time.perf_counter() - started}
            if validate is not None:
                self.model.eval()
                started = time.perf_counter()
                record["val_accuracy"] = float(validate(self))
                record["val_seconds"] = time.perf_counter() - started
                self.model.train()
            self.history.append(record)
        self.model.eval()
        return self

    def predict(self, questions: Iterable, images) -> dict[str, str]:
        """Question id -> answer, for every question whose image is in ``images``."""
        if self.model is None:
            raise RuntimeError("black-box baseline: fit() before predict()")
        questions = [q for q in questions if q.image_id in images]
        if not questions:
            return {}
        tokens, lengths = self._tokens(questions)
        features, boxes, mask, scene = self._scenes(questions, images)
        out = {}
        with torch.no_grad():
            for start in range(0, len(questions), 512):
                rows = torch.arange(start, min(start + 512, len(questions)))
                s = scene[rows]
                best = self.model(tokens[rows], lengths[rows], features[s], boxes[s], mask[s]).argmax(dim=1)
                out.update((questions[int(r)].id, self.answers[int(b)]) for r, b in zip(rows, best))
        return out
