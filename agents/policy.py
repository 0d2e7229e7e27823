"""The self-play policy network: encode the acting seat's observation, score each legal candidate move, and value it.

One network plays every seat (it sees only the acting seat's view, :mod:`cassino_env.obs`). The action space is
the env's move list, which differs every turn, so the network does not have a fixed output per action: it embeds
each *candidate move* from its features and scores it against the observation embedding; a softmax over the legal
candidates (illegal ones are set to ``-inf``) is the policy.

>>> import numpy as np, torch
>>> from cassino_env.vector import CassinoVectorEnv
>>> env = CassinoVectorEnv(num_envs=3, rules="classic", seed=0, with_view=False)
>>> obs, _ = env.reset()
>>> net = CassinoPolicy(obs_dim=env.obs_size, hidden=32, embed=16)
>>> batch = MoveBatch.from_obs(obs)
>>> logits, value = net(batch)
>>> logits.shape[0], value.shape, bool((logits[~batch.mask] == -torch.inf).all())
(3, torch.Size([3]), True)

Architecture (sizes from :class:`NetworkShape`):

* **observation torso**: ``obs float32[N, D] -> Linear(D, hidden) -> ReLU -> Linear(hidden, hidden) -> ReLU = h``.
* **value head**: ``Linear(hidden, 1)(h)``, the acting seat's expected (scaled) reward to the end of the episode.
* **move embedding** of candidate ``(kind, card, value, cards)``: the sum of a played-card embedding
  (``Embedding(52)``), the sum of the embeddings of the table cards taken or used (``cards`` is a uint64 bitmask,
  unpacked in torch and multiplied by a ``52 x embed`` table), a kind embedding (trail, capture, build), a value
  embedding (0..14) and an embedding of the number of table cards involved (clipped at 15).
* **scorer**: ``score = MLP(ReLU(W h + m))``, the first layer of an MLP over ``[h, m]`` computed once per state
  for its ``h`` half. Only legal candidates are embedded and scored (about 5 a turn in classic), so the cost
  grows with the number of legal moves, not with the width ``M`` of the move table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

#: Largest number of table cards a move's count embedding distinguishes; larger counts share the last row.
MAX_COUNT = 15
#: Declared or capture values 0 (trail) .. 14 (ace high).
NUM_VALUES = 15

_BITS = torch.arange(52, dtype=torch.int64)


@dataclass(frozen=True)
class NetworkShape:
    """The sizes that define a :class:`CassinoPolicy`; stored in checkpoints and checked when loading.

    Attributes:
        obs_dim: D, the observation length (:func:`cassino_env.obs.obs_size`).
        hidden: width of the two observation-torso layers.
        embed: width of the move embeddings and of the scorer's hidden layers.
    """

    obs_dim: int
    hidden: int = 128
    embed: int = 64

    def to_dict(self) -> dict[str, int]:
        """Plain dict of ints (checkpoint friendly)."""
        return dataclasses.asdict(self)


@dataclass
class MoveBatch:
    """Tensors the network reads for N states (M = move-table width, trimmed to the longest legal list).

    Attributes:
        obs: float32[N, D] — observation vectors.
        kind: int64[N, M] — 0 trail, 1 capture, 2 build (-1 padding).
        card: int64[N, M] — played card id (-1 padding).
        value: int64[N, M] — capture or declared build value, 0 for a trail.
        cards: int64[N, M] — the env's uint64 ``move_cards`` bitmask reinterpreted as int64 (bits 0..51 only).
        mask: bool[N, M] — True for a legal (listed) move.
    """

    obs: torch.Tensor
    kind: torch.Tensor
    card: torch.Tensor
    value: torch.Tensor
    cards: torch.Tensor
    mask: torch.Tensor

    @staticmethod
    def from_arrays(obs: np.ndarray, kind: np.ndarray, card: np.ndarray, value: np.ndarray, cards: np.ndarray,
                    mask: np.ndarray) -> MoveBatch:
        """Build a batch from numpy arrays shaped like the vector env's (``cards`` uint64 or int64).

        The move columns are trimmed to the longest legal list in the batch, so every later step works on
        ``M = max(num legal moves)`` columns rather than the env's full table width.
        """
        width = max(int(mask.sum(axis=1).max()) if len(mask) else 1, 1)
        return MoveBatch(
            obs=torch.as_tensor(obs, dtype=torch.float32),
            kind=torch.from_numpy(np.ascontiguousarray(kind[:, :width])).long(),
            card=torch.from_numpy(np.ascontiguousarray(card[:, :width])).long(),
            value=torch.from_numpy(np.ascontiguousarray(value[:, :width])).long(),
            cards=torch.from_numpy(np.ascontiguousarray(cards[:, :width]).view(np.int64)),
            mask=torch.from_numpy(np.ascontiguousarray(mask[:, :width])).bool(),
        )

    @staticmethod
    def from_obs(obs: dict[str, Any]) -> MoveBatch:
        """From a :class:`cassino_env.vector.CassinoVectorEnv` observation dict."""
        return MoveBatch.from_arrays(obs["observation"], obs["move_kind"], obs["move_card"], obs["move_value"],
                                     obs["move_cards"], obs["action_mask"].astype(bool))


def layer_init(layer: nn.Linear, std: float = float(np.sqrt(2)), bias_const: float = 0.0) -> nn.Linear:
    """CleanRL's orthogonal initialisation."""
    nn.init.orthogonal_(layer.weight, std)
    if layer.bias is not None:
        nn.init.constant_(layer.bias, bias_const)
    return layer


class CassinoPolicy(nn.Module):
    """Actor-critic over candidate moves (see the module docstring).

    Args:
        obs_dim: D, the observation length.
        hidden: width of the observation torso.
        embed: width of the move embeddings and scorer.
    """

    def __init__(self, obs_dim: int, hidden: int = 128, embed: int = 64) -> None:
        super().__init__()
        self.shape = NetworkShape(obs_dim=obs_dim, hidden=hidden, embed=embed)
        self.torso = nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.ReLU(),
                                   layer_init(nn.Linear(hidden, hidden)), nn.ReLU())
        self.value_head = layer_init(nn.Linear(hidden, 1), std=1.0)
        self.query = layer_init(nn.Linear(hidden, embed))
        self.card_emb = nn.Embedding(52, embed)
        self.table_emb = nn.Linear(52, embed, bias=False)  # bits @ W = sum of the embeddings of the cards taken/used
        self.kind_emb = nn.Embedding(3, embed)
        self.value_emb = nn.Embedding(NUM_VALUES, embed)
        self.count_emb = nn.Embedding(MAX_COUNT + 1, embed)
        for emb in (self.card_emb, self.kind_emb, self.value_emb, self.count_emb):
            nn.init.normal_(emb.weight, std=0.1)
        nn.init.normal_(self.table_emb.weight, std=0.1)
        self.scorer = nn.Sequential(nn.ReLU(), layer_init(nn.Linear(embed, embed)), nn.ReLU(),
                                    layer_init(nn.Linear(embed, 1), std=0.01))

    @classmethod
    def from_shape(cls, shape: NetworkShape | dict[str, int]) -> CassinoPolicy:
        """A fresh network of a given shape."""
        s = shape if isinstance(shape, NetworkShape) else NetworkShape(**shape)
        return cls(obs_dim=s.obs_dim, hidden=s.hidden, embed=s.embed)

    def embed_moves(self, kind: torch.Tensor, card: torch.Tensor, value: torch.Tensor,
                    cards: torch.Tensor) -> torch.Tensor:
        """float32[K, embed]: embeddings of K candidate moves (1-D int64 tensors of legal moves only)."""
        bits = ((cards.unsqueeze(-1) >> _BITS) & 1).to(torch.float32)  # [K, 52], 1 per table card taken/used
        count = bits.sum(-1).long().clamp_(max=MAX_COUNT)
        return (self.card_emb(card) + self.table_emb(bits) + self.kind_emb(kind)
                + self.value_emb(value.clamp(0, NUM_VALUES - 1)) + self.count_emb(count))

    def forward(self, batch: MoveBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(logits float32[N, M], value float32[N])``; illegal moves have logit ``-inf``."""
        h = self.torso(batch.obs)
        value = self.value_head(h).squeeze(-1)
        rows, cols = batch.mask.nonzero(as_tuple=True)
        m = self.embed_moves(batch.kind[rows, cols], batch.card[rows, cols], batch.value[rows, cols],
                             batch.cards[rows, cols])
        scores = self.scorer(self.query(h)[rows] + m).squeeze(-1)
        logits = torch.full(batch.mask.shape, -torch.inf, dtype=scores.dtype)
        logits[rows, cols] = scores
        return logits, value

    def value(self, batch: MoveBatch) -> torch.Tensor:
        """float32[N]: the value head alone."""
        return self.value_head(self.torso(batch.obs)).squeeze(-1)


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """float32[N, M]: log-probabilities over the legal moves; 0 (not -inf) at illegal ones, so sums stay finite."""
    return torch.where(mask, torch.log_softmax(logits, dim=-1), torch.zeros((), dtype=logits.dtype))


def masked_entropy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """float32[N]: entropy of the policy over the legal moves only (illegal moves have probability 0)."""
    logp = masked_log_softmax(logits, mask)
    return -(logp.exp() * logp * mask).sum(-1)


def sample_actions(logits: torch.Tensor, rng: np.random.Generator, deterministic: bool = False) -> np.ndarray:
    """int64[N]: one legal move index per row, drawn from softmax(logits) by the Gumbel-max trick with ``rng``
    (so the caller's numpy generator decides every draw), or the arg-max when ``deterministic``."""
    if deterministic:
        return logits.argmax(-1).numpy()
    gumbel = torch.from_numpy(rng.gumbel(size=tuple(logits.shape)).astype(np.float32))
    return (logits + gumbel).argmax(-1).numpy()
