"""Top-down calibration (paper, section 5): Beta-calibration parameters from the program's context.

For every attention the engine computes, the calibrator applies
``C(α) = c·α^a / (c·α^a + d·(1-c)·(1-α)^b)`` (:func:`calibration.beta.beta_calibrate`) with
parameters ``(a, b, c, d)`` of that step, read by an MLP from the state of a Bi-LSTM over the
program's sequence of steps: each step is a token (its predicate, ``relate`` by its relation,
and ``<not>``, ``<and>``, ``<top>`` for the parameter-free operators), embedded. The candidates
of an open question (one ``AggregateEach``) share one position of the sequence; each
candidate's parameters also see its own predicate's embedding.

The last layer starts at the identity (``a = b = d = 1``, ``c = 1/2``), so a fresh calibrator
leaves the base model's answers unchanged; training moves it from there, with the oracle
frozen (``nablafol calibrate``).

It implements the engine's :class:`nablafol.engine.Calibration` protocol (``prepare`` then
calls), and the engine does not import it.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from nablafol.caching import bounded_cache, memo
from nablafol.engine import ProgramPlan
from nablafol.ir import AggregateEach, Conjoin, Filter, Neg, Relate, Top

from .beta import beta_calibrate

__all__ = ["TopDownCalibrator", "step_token", "program_tokens", "constrained_parameters"]

UNKNOWN = "<unknown>"
# a, b = MIN_EXPONENT + softplus(.): strictly positive (a monotone posterior) even where
# softplus underflows to 0 for very negative outputs
MIN_EXPONENT = 1e-3
_IDENTITY_SOFTPLUS = math.log(math.expm1(1.0 - MIN_EXPONENT))  # MIN_EXPONENT + softplus(x) = 1
# programs whose token sequences a calibrator keeps: a training set's distinct programs, met again every epoch
ENCODED_PROGRAMS = 1 << 16


def attention_steps(program) -> tuple:
    """``ProgramPlan.attention_steps`` of ``program``, kept on it: a calibrator reads them at every
    step it calibrates, and building the plan anew each time was about a tenth of a calibration epoch."""
    return memo(program, "_calibration_steps", lambda: ProgramPlan.of(program).attention_steps)


def step_token(step) -> str:
    """The token of one attention step (an entry of ``ProgramPlan.attention_steps``)."""
    if isinstance(step, tuple):  # (AggregateEach, predicate): one candidate of an open question
        return "<each>"
    if isinstance(step, Filter):
        return f"{step.predicate.kind}:{step.predicate.name}"
    if isinstance(step, Relate):
        return "&".join(f"{a.predicate.kind}:{a.predicate.name}{'^-1' if a.reverse else ''}" for a in step.atoms)
    if isinstance(step, Neg):
        return "<not>"
    if isinstance(step, Conjoin):
        return "<and>"
    if isinstance(step, Top):
        return "<top>"
    return UNKNOWN


def constrained_parameters(raw: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``(a, b, log c, log(1 - c), log d)`` from the MLP's outputs ``(..., 4)``, each ``(..., 1)``.

    Any finite outputs give a valid monotone posterior: ``a, b >= MIN_EXPONENT`` (softplus),
    ``c`` in (0, 1) as a sigmoid (its two logs from ``logsigmoid(±z)``, finite for finite z),
    ``d = exp(log d) > 0`` used through its log only (never overflows).
    """
    a = MIN_EXPONENT + F.softplus(raw[..., 0:1])
    b = MIN_EXPONENT + F.softplus(raw[..., 1:2])
    return a, b, F.logsigmoid(raw[..., 2:3]), F.logsigmoid(-raw[..., 2:3]), raw[..., 3:4]


def _candidate_token(step) -> str | None:
    if isinstance(step, tuple) and isinstance(step[0], AggregateEach):
        return f"{step[1].kind}:{step[1].name}"
    return None


class TopDownCalibrator(nn.Module):
    """Bi-LSTM over a program's steps -> MLP -> per-step Beta-calibration parameters."""

    def __init__(self, tokens: Sequence[str], embedding_dim: int = 64, hidden_dim: int = 64):
        super().__init__()
        self.tokens = [UNKNOWN] + sorted(set(tokens) - {UNKNOWN})
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.embedding_dim, self.hidden_dim = embedding_dim, hidden_dim
        self.embed = nn.Embedding(len(self.tokens), embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.head = nn.Sequential(nn.Linear(2 * hidden_dim + embedding_dim, hidden_dim), nn.ReLU(),
                                  nn.Linear(hidden_dim, 4))
        nn.init.zeros_(self.head[-1].weight)  # starts as the identity calibration
        with torch.no_grad():
            self.head[-1].bias.copy_(torch.tensor([_IDENTITY_SOFTPLUS, _IDENTITY_SOFTPLUS, 0.0, 0.0]))
        self._params = None
        self._offsets = None
        self._encoded = bounded_cache(self._encode, ENCODED_PROGRAMS)

    @classmethod
    def for_programs(cls, programs, **sizes) -> "TopDownCalibrator":
        """A calibrator whose token vocabulary is every token of ``programs`` (e.g. the training set)."""
        return cls(sorted(program_tokens(programs)), **sizes)

    def config(self) -> dict:
        return {"tokens": self.tokens[1:], "embedding_dim": self.embedding_dim, "hidden_dim": self.hidden_dim}

    def _id(self, token: str | None) -> int:
        return self.index.get(token, 0) if token is not None else 0

    def prepare(self, programs, device=None) -> None:
        """Compute the parameters of every attention step of every program of the batch."""
        self._params, self._offsets = self.raw_parameters(programs, device)

    def raw_parameters(self, programs, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(outputs, offsets)``: the MLP's outputs ``(total steps, 4)`` for every attention
        step of ``programs`` (see :func:`constrained_parameters`), program ``k``'s rows from
        ``offsets[k]`` in the order of ``ProgramPlan.attention_steps``."""
        device = device or self.embed.weight.device
        seqs, entries, counts = [], [], []
        for p in programs:
            seq, positions = self._encoded(p)
            seqs.append(seq)
            entries.append(positions)
            counts.append(len(positions))
        lengths = torch.tensor([len(s) for s in seqs])
        padded = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.long)
        for k, s in enumerate(seqs):
            padded[k, : len(s)] = torch.tensor(s)
        emb = self.embed(padded.to(device))
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
        states, _ = self.lstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True)  # (P, T, 2h)
        prog = torch.tensor([k for k, e in enumerate(entries) for _ in e], device=device)
        pos = torch.tensor([p for e in entries for p, _ in e], device=device)
        own = torch.tensor([t for e in entries for _, t in e], device=device)
        features = torch.cat([states[prog, pos], self.embed(own)], dim=1)
        return self.head(features), torch.tensor([0] + counts[:-1], device=device).cumsum(0)

    def _encode(self, program) -> tuple[list[int], list[tuple[int, int]]]:
        """``(sequence, positions)``: the token ids of ``program``'s sequence, and for every
        attention step its position in it and its own token id (a candidate's predicate)."""
        positions, seq, each_pos = [], [], {}
        for step in attention_steps(program):
            if isinstance(step, tuple):  # the candidates of one AggregateEach share a position
                key = id(step[0])
                if key not in each_pos:
                    each_pos[key] = len(seq)
                    seq.append(self._id("<each>"))
                positions.append((each_pos[key], self._id(_candidate_token(step))))
            else:
                tok = self._id(step_token(step))
                positions.append((len(seq), tok))
                seq.append(tok)
        return seq, positions

    def forward(self, log_a: torch.Tensor, mask: torch.Tensor, program: torch.Tensor, step: torch.Tensor):
        if self._params is None:
            raise RuntimeError("TopDownCalibrator: prepare(programs) must run before the engine calls it")
        return beta_calibrate(log_a, *constrained_parameters(self._params[self._offsets[program] + step]))


def program_tokens(programs) -> set[str]:
    """Every token of ``programs``' attention steps (a calibrator's vocabulary; the sets of
    several shards of a training set unite into the whole set's)."""
    tokens = set()
    for p in programs:
        for step in attention_steps(p):
            tokens.add(step_token(step))
            cand = _candidate_token(step)
            if cand:
                tokens.add(cand)
    return tokens
