"""The parser's network: a sequence-to-sequence model with copying (torch).

The encoder is a bidirectional GRU over the question's words. The decoder is a GRU over
program units with attention over the encoder's states (Luong style); at every step it scores,
in one softmax, each unit it can write *and* each position of the question, three ways: copying
the word, copying its vocabulary form (``cups`` -> ``cup``), or taking the operation type it
names (``younger`` -> ``choose younger``); each way has its own pointer.
A copied word is fed back as the ``<copy>`` unit plus the encoder's state at the copied
position, so the decoder knows which word it took (and which follows it).

    >>> import torch
    >>> config = NetworkConfig(question_words=10, units=20, word_dim=8, unit_dim=8, hidden_dim=12)
    >>> network = ParserNetwork(config)
    >>> words, lengths = torch.tensor([[3, 4, 5], [6, 7, 0]]), torch.tensor([3, 2])
    >>> states, hidden = network.encode(words, lengths)
    >>> copyable = torch.zeros(2, COPY_GROUPS, 3, dtype=torch.bool)
    >>> copyable[:, 0] = words > 0                                   # every word may be copied as it is
    >>> scores, hidden = network.decode(states, lengths, hidden, torch.tensor([[1], [1]]), torch.tensor([[-1], [-1]]),
    ...                                 copyable)
    >>> tuple(scores.shape), bool(torch.isinf(scores[1, 0, 22]))    # 20 units + 3 blocks of 3 positions
    ((2, 1, 29), True)
    >>> parameter_count(config) == sum(t.numel() for t in network.state_dict().values())
    True
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .errors import ParserError

__all__ = ["NetworkConfig", "ParserNetwork", "parameter_count", "COPY_GROUPS"]

#: Kinds of copy, each a block of question positions in the scores: the word as it is, its
#: vocabulary form (``cups`` -> ``cup``), the operation type it names (``younger``, ``shape``).
COPY_GROUPS = 3


@dataclass(frozen=True)
class NetworkConfig:
    """Sizes: ``question_words`` input words (padding and unknown included), ``units`` decoder
    units; the widths of word and unit embeddings and of the hidden states."""

    question_words: int
    units: int
    word_dim: int = 64
    unit_dim: int = 64
    hidden_dim: int = 128

    def __post_init__(self):
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 20:
                raise ParserError(f"network setting {name} must be a whole number in 1..{1 << 20}, got {value!r}")
        if self.hidden_dim % 2:
            raise ParserError(f"hidden_dim must be even (two encoder directions), got {self.hidden_dim}")

    def to_dict(self) -> dict:
        return asdict(self)


def parameter_count(c: NetworkConfig) -> int:
    """How many numbers :class:`ParserNetwork` has for ``c``, computed without building it."""
    def gru(inputs: int, hidden: int) -> int:
        return 3 * hidden * (inputs + hidden) + 6 * hidden

    h, half = c.hidden_dim, c.hidden_dim // 2
    return (c.question_words * c.word_dim + 2 * gru(c.word_dim, half) + h * h + h  # words, encoder, bridge
            + c.units * c.unit_dim + h * c.unit_dim + c.unit_dim + gru(c.unit_dim, h)  # units, copied, decoder
            + h * h + 2 * h * h + h + h * c.units + c.units + COPY_GROUPS * h * h)  # attention, combine, generate, copies


class ParserNetwork(nn.Module):
    """Encoder, decoder, attention and the joint unit-or-copy scores (see the module doc)."""

    def __init__(self, config: NetworkConfig):
        super().__init__()
        self.config = config
        h = config.hidden_dim
        self.words = nn.Embedding(config.question_words, config.word_dim, padding_idx=0)
        self.encoder = nn.GRU(config.word_dim, h // 2, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(h, h)
        self.units = nn.Embedding(config.units, config.unit_dim)
        self.copied = nn.Linear(h, config.unit_dim)
        self.decoder = nn.GRU(config.unit_dim, h, batch_first=True)
        self.attention = nn.Linear(h, h, bias=False)
        self.combine = nn.Linear(2 * h, h)
        self.generate = nn.Linear(h, config.units)
        self.pointers = nn.Linear(h, COPY_GROUPS * h, bias=False)

    def encode(self, words: torch.Tensor, lengths: torch.Tensor):
        """``words`` (B, L) ids padded with 0, ``lengths`` (B,) >= 1 -> states (B, L, H) and the
        decoder's first hidden state (1, B, H)."""
        packed = pack_padded_sequence(self.words(words), lengths.cpu(), batch_first=True, enforce_sorted=False)
        output, last = self.encoder(packed)
        states, _ = pad_packed_sequence(output, batch_first=True, total_length=words.shape[1])
        hidden = torch.tanh(self.bridge(torch.cat([last[0], last[1]], dim=-1)))
        return states, hidden.unsqueeze(0)

    def decode(self, states: torch.Tensor, lengths: torch.Tensor, hidden: torch.Tensor, previous: torch.Tensor,
               copied: torch.Tensor, copyable: torch.Tensor):
        """One or more decoder steps (teacher forcing: all at once). ``previous`` (B, T) the units
        fed in, ``copied`` (B, T) the question position a fed-in copy came from (-1: not a copy);
        ``copyable`` (B, COPY_GROUPS, L): which question positions each kind of copy may take.
        Returns scores (B, T, units + COPY_GROUPS * L) — the units, then one block of question
        positions per kind of copy, at -inf where that copy is impossible — and the last hidden
        state."""
        taken = copied.clamp(min=0)
        source = torch.gather(states, 1, taken.unsqueeze(-1).expand(-1, -1, states.shape[-1]))
        inputs = self.units(previous) + self.copied(source) * (copied >= 0).unsqueeze(-1).to(states.dtype)
        output, hidden = self.decoder(inputs, hidden)
        copyable = copyable.to(states.device)
        padding = ~copyable[:, 0]  # every real word may be copied as it is
        weights = torch.bmm(self.attention(output), states.transpose(1, 2))
        weights = weights.masked_fill(padding.unsqueeze(1), float("-inf")).softmax(dim=-1)
        mixed = torch.tanh(self.combine(torch.cat([output, torch.bmm(weights, states)], dim=-1)))
        keys = states.transpose(1, 2)
        blocks = [self.generate(mixed)]
        for group, query in enumerate(self.pointers(mixed).chunk(COPY_GROUPS, dim=-1)):
            blocks.append(torch.bmm(query, keys).masked_fill(~copyable[:, group].unsqueeze(1), float("-inf")))
        return torch.cat(blocks, dim=-1), hidden
