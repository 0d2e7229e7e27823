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
* **value**: the acting seat's expected (scaled) reward to the end of the episode. ``critic="shared"``: a head
  ``Linear(hidden, 1)(h)`` on the policy's torso. ``critic="separate"``: its own MLP
  ``[obs, critic_obs] -> hidden -> hidden -> 1``, where ``critic_obs`` (``critic_dim`` > 0) is what the acting seat
  cannot see: every hand and the stock (:func:`agents.features.critic_state`).
* **move embedding** of candidate ``(kind, card, value, cards)``: the sum of a played-card embedding
  (``Embedding(52)``), the sum of the embeddings of the table cards taken or used (``cards`` is a uint64 bitmask,
  unpacked in torch and multiplied by a ``52 x embed`` table), a kind embedding (trail, capture, build), a value
  embedding (0..14), an embedding of the number of table cards involved (clipped at 15) and, with
  ``move_features`` = F > 0, ``MLP(F -> embed -> embed)`` of the move's features (:mod:`agents.features`: the points
  it takes, sweep, what it leaves the next player, ...), which relate the move to the position.
* **scorer**: ``score = MLP(ReLU(W h + m))``, the first layer of an MLP over ``[h, m]`` computed once per state
  for its ``h`` half (DouZero's state-action scoring), plus, with move features, a linear term ``w . features``
  (:meth:`CassinoPolicy.set_feature_prior` can start it at the ``advanced`` bot's score). Only legal candidates
  are embedded and scored (about 5 a turn in classic), so the cost grows with the number of legal moves, not with
  the width ``M`` of the move table.
* **last-round head** (``last_round`` = W > 0; none in a network without it): in the rows where the stock is empty
  (the observation entry ``last_round_gate`` is 0: the last round of a deal), each legal move's score becomes
  ``keep * score + MLP(ReLU(A obs + B x))``, where ``x`` is the move itself (played card one-hot, table cards taken
  or used, kind and value one-hots, the move features: :data:`MOVE_INPUT` + F inputs), ``A obs`` is computed once
  per row, and the MLP is ``W -> W -> W -> 1``; ``keep`` starts at 1 and the output layer at 0, so a network given
  a head (:func:`add_last_round_head`) plays as before until the head is trained (``cassino exit`` with
  ``train_params: last_round_head``, docs/expert_iteration.md). In a two-seat last round nothing is hidden, the
  labels can be exact, and the network alone loses most there; the observation and the move meet in the head's
  first layer because a move's value there turns on which cards it leaves to whom.
* **earlier-rounds head** (``early_rounds`` = W > 0): the same head, with its own weights (``er_*``), in the rows
  where the stock is *not* empty (every round before the last), reading the same gate entry. It starts silent too
  (:func:`add_early_rounds_head`) and is trained on a search's move values with everything else of the network
  frozen (``cassino exit`` with ``train_params: early_rounds_head``), so what it learns is a correction on top of
  the self-play network's play that cannot erase it. With ``early_rounds_input="classes"`` it reads the cards by
  class instead (:func:`cassino_env.symmetry.card_classes`: a spade per rank, 10♦, the other cards rank by rank):
  each card block of the observation, the played card and the table cards taken are summed class by class
  (the buffers ``er_obs_index`` int64[D] and ``er_card_class`` int64[52]; the layers keep their sizes, the entries
  past the classes read 0), so positions alike up to the suits the scoring ignores look alike to it and each label
  teaches all of them.

Why a critic that reads hidden cards does not bias the policy gradient (asymmetric actor-critic: Pinto et al. 2017;
PerfectDou, Yang et al. 2022; Baisero & Amato 2022). The critic is used only during training, as the baseline and
the bootstrap of GAE; it never acts. A baseline that does not depend on the action leaves the policy gradient
unbiased whatever it reads. For the bootstrap, Baisero & Amato show that a critic of the state alone can be biased
in general, but not when the actor is memoryless with an input computed from the state: that is the case here, since
the observation is a function of the core state (:mod:`cassino_env.obs` encodes it from the state, nothing from
earlier turns), and the critic reads that observation too (``[obs, critic_obs]``). It sees the stock as a set, not
its order, so it conditions on less than the full state, never on less than the actor's view.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

#: Largest number of table cards a move's count embedding distinguishes; larger counts share the last row.
MAX_COUNT = 15
#: Declared or capture values 0 (trail) .. 14 (ace high).
NUM_VALUES = 15
#: Length of a move's own input to the last-round head: played card one-hot (52), table cards taken or used (52),
#: kind one-hot (3), value one-hot (:data:`NUM_VALUES`); the move features follow.
MOVE_INPUT = 52 + 52 + 3 + NUM_VALUES

#: The widest last-round head :func:`add_last_round_head` (and ``cassino exit --last-round-head``) makes.
MAX_LAST_ROUND_WIDTH = 4096

#: The value estimators a network may have (:attr:`NetworkShape.critic`).
CRITICS = ("shared", "separate")
#: What the earlier-rounds head reads (:class:`NetworkShape` ``early_rounds_input``).
HEAD_INPUTS = ("cards", "classes")

#: float32[256, 8]: row v holds the 8 bits of the byte v, lowest first (a card mask's bytes unpacked by one lookup).
_BYTE_BITS = torch.from_numpy(np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1,
                                            bitorder="little").astype(np.float32))
#: :data:`_BYTE_BITS` on each device a network has run on.
_BYTE_BITS_ON: dict[torch.device, torch.Tensor] = {_BYTE_BITS.device: _BYTE_BITS}


def card_bits(cards: torch.Tensor) -> torch.Tensor:
    """float32[..., 52]: entry c is 1.0 where bit c (card c) of the mask ``cards`` (int64[...], bits 0..51) is set,
    else 0.0.

    The same values as ``((cards[..., None] >> arange(52)) & 1).float()``, read as the mask's 8 bytes, each unpacked
    by one table lookup (one gather instead of three passes over the shifted int64 values); on a big-endian machine,
    the shift form itself.

    Raises:
        ValueError: ``cards`` is not an int64 tensor.
    """
    if not isinstance(cards, torch.Tensor) or cards.dtype != torch.int64:
        raise ValueError(f"cards must be an int64 tensor of card masks, got {getattr(cards, 'dtype', type(cards))}")
    if sys.byteorder != "little":
        return ((cards.unsqueeze(-1) >> torch.arange(52, device=cards.device)) & 1).to(torch.float32)
    table = _BYTE_BITS_ON.get(cards.device)
    if table is None:
        table = _BYTE_BITS_ON.setdefault(cards.device, _BYTE_BITS.to(cards.device))
    if cards.numel() == 0:
        return torch.zeros((*cards.shape, 52), dtype=torch.float32, device=cards.device)
    # little-endian bytes: byte j holds cards 8j .. 8j+7
    byte = cards.reshape(-1).contiguous().view(torch.uint8).view(-1, 8).long()
    return nn.functional.embedding(byte, table).reshape(*cards.shape, 64)[..., :52]


@dataclass(frozen=True)
class NetworkShape:
    """The sizes that define a :class:`CassinoPolicy`; stored in checkpoints and checked when loading.

    Attributes:
        obs_dim: D, the observation length (:func:`cassino_env.obs.obs_size`).
        hidden: width of the two observation-torso layers (and of the separate critic's).
        embed: width of the move embeddings and of the scorer's hidden layers.
        move_features: F, the number of move features each candidate carries (:mod:`agents.features`); 0: none.
        critic: ``"shared"`` (value head on the policy's torso) or ``"separate"`` (its own two-layer MLP).
        critic_dim: C, the length of the extra input only the separate critic reads (the full state during
            training, :func:`agents.features.critic_state`); 0: the critic sees the acting seat's view only.
        last_round: width of the last-round head (see the module docstring); 0: none.
        last_round_gate: with either head, the index of the observation entry that is 0 exactly in the last
            round: the stock-size entry of the ``progress`` block (:func:`last_round_gate`).
        early_rounds: width of the earlier-rounds head (the rows where the stock is not empty); 0: none.
        early_rounds_input: what the earlier-rounds head reads: ``"cards"`` (each card by its id) or ``"classes"``
            (cards summed by suit class; see the module docstring; needs an earlier-rounds head).

    Raises:
        ValueError: a size that is not a positive int (``move_features`` and ``critic_dim`` may be 0), an unknown
            ``critic``, ``critic_dim`` without a separate critic, a ``last_round_gate`` outside the observation, or
            one without either head (it must be 0 there), an unknown ``early_rounds_input`` or ``"classes"``
            without an earlier-rounds head.
    """

    obs_dim: int
    hidden: int = 128
    embed: int = 64
    move_features: int = 0
    critic: str = "shared"
    critic_dim: int = 0
    last_round: int = 0
    last_round_gate: int = 0
    early_rounds: int = 0
    early_rounds_input: str = "cards"

    def __post_init__(self) -> None:
        for name in ("obs_dim", "hidden", "embed"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"network {name} must be a positive int, got {v!r}")
        for name in ("move_features", "critic_dim", "last_round", "last_round_gate", "early_rounds"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"network {name} must be an int >= 0, got {v!r}")
        if self.critic not in CRITICS:
            raise ValueError(f"network critic must be one of {', '.join(CRITICS)}, got {self.critic!r}")
        if self.critic_dim and self.critic != "separate":
            raise ValueError("network critic_dim (full-state critic input) needs critic='separate'")
        if (self.last_round or self.early_rounds) and self.last_round_gate >= self.obs_dim:
            raise ValueError(f"network last_round_gate must index the observation (< obs_dim {self.obs_dim}), got "
                             f"{self.last_round_gate}")
        if self.early_rounds_input not in HEAD_INPUTS:
            raise ValueError(f"network early_rounds_input must be one of {', '.join(HEAD_INPUTS)}, got "
                             f"{self.early_rounds_input!r:.40}")
        if self.early_rounds_input != "cards" and not self.early_rounds:
            raise ValueError(f"network early_rounds_input={self.early_rounds_input!r} without an earlier-rounds head "
                             "(early_rounds=0)")
        if not (self.last_round or self.early_rounds) and self.last_round_gate:
            raise ValueError(f"network last_round_gate={self.last_round_gate} without a last-round head or an "
                             "earlier-rounds head (last_round=0, early_rounds=0): it must be 0")

    def to_dict(self) -> dict[str, int | str]:
        """Plain dict of ints and strings (checkpoint friendly); a head's fields are left out where the network has
        no such head, so such a network's dict is the one of before the head existed."""
        out = dataclasses.asdict(self)
        if self.early_rounds_input == "cards":
            del out["early_rounds_input"]
        if not self.early_rounds:
            del out["early_rounds"]
            if not self.last_round:
                del out["last_round"], out["last_round_gate"]
        return out


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
        feats: float32[N, M, F] — move features (:mod:`agents.features`), or None for a network without them.
        critic_obs: float32[N, C] — the separate critic's extra input, or None.
    """

    obs: torch.Tensor
    kind: torch.Tensor
    card: torch.Tensor
    value: torch.Tensor
    cards: torch.Tensor
    mask: torch.Tensor
    feats: torch.Tensor | None = None
    critic_obs: torch.Tensor | None = None

    @staticmethod
    def from_arrays(obs: np.ndarray, kind: np.ndarray, card: np.ndarray, value: np.ndarray, cards: np.ndarray,
                    mask: np.ndarray, feats: np.ndarray | None = None,
                    critic_obs: np.ndarray | None = None) -> MoveBatch:
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
            feats=None if feats is None else torch.from_numpy(np.ascontiguousarray(feats[:, :width],
                                                                                   dtype=np.float32)),
            critic_obs=None if critic_obs is None else torch.as_tensor(critic_obs, dtype=torch.float32),
        )

    def to(self, device: torch.device | str) -> MoveBatch:
        """The batch on ``device``: itself when every tensor is there already (the CPU's case: no copy), else a
        batch of copies, each tensor moved once (what a network's forward pass does first)."""
        device = torch.device(device)
        tensors = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if all(t is None or t.device == device for t in tensors.values()):
            return self
        return MoveBatch(**{k: None if t is None else t.to(device) for k, t in tensors.items()})

    @staticmethod
    def from_obs(obs: dict[str, Any], feats: np.ndarray | None = None) -> MoveBatch:
        """From a :class:`cassino_env.vector.CassinoVectorEnv` observation dict (and its move features)."""
        return MoveBatch.from_arrays(obs["observation"], obs["move_kind"], obs["move_card"], obs["move_value"],
                                     obs["move_cards"], obs["action_mask"].astype(bool), feats)


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

    def __init__(self, obs_dim: int, hidden: int = 128, embed: int = 64, move_features: int = 0,
                 critic: str = "shared", critic_dim: int = 0, last_round: int = 0, last_round_gate: int = 0,
                 early_rounds: int = 0, early_rounds_input: str = "cards") -> None:
        super().__init__()
        self.shape = NetworkShape(obs_dim=obs_dim, hidden=hidden, embed=embed, move_features=move_features,
                                  critic=critic, critic_dim=critic_dim, last_round=last_round,
                                  last_round_gate=last_round_gate, early_rounds=early_rounds,
                                  early_rounds_input=early_rounds_input)
        self.torso = nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.ReLU(),
                                   layer_init(nn.Linear(hidden, hidden)), nn.ReLU())
        if critic == "shared":
            self.value_head = layer_init(nn.Linear(hidden, 1), std=1.0)
        else:
            self.critic_net = nn.Sequential(layer_init(nn.Linear(obs_dim + critic_dim, hidden)), nn.ReLU(),
                                            layer_init(nn.Linear(hidden, hidden)), nn.ReLU(),
                                            layer_init(nn.Linear(hidden, 1), std=1.0))
        if move_features:
            self.feat_mlp = nn.Sequential(layer_init(nn.Linear(move_features, embed)), nn.ReLU(),
                                          layer_init(nn.Linear(embed, embed)))
            # a linear path from the features straight to the logit; starts at 0 (:meth:`set_feature_prior`)
            self.feat_skip = nn.Linear(move_features, 1, bias=False)
            nn.init.zeros_(self.feat_skip.weight)
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
        for prefix, W in (("lr", last_round), ("er", early_rounds)):
            if not W:
                continue
            # early fusion: the raw observation and the raw move meet in the first layer (a move's value in the last
            # round turns on which cards it leaves to whom, bit by bit), then an MLP per move
            setattr(self, f"{prefix}_obs", layer_init(nn.Linear(obs_dim, W)))
            setattr(self, f"{prefix}_move", layer_init(nn.Linear(MOVE_INPUT + move_features, W), bias_const=0.0))
            # the head's output layer starts at 0: a network that gains a head plays as it did (add_last_round_head)
            scorer = nn.Sequential(nn.ReLU(), layer_init(nn.Linear(W, W)), nn.ReLU(),
                                   layer_init(nn.Linear(W, W)), nn.ReLU(), nn.Linear(W, 1))
            nn.init.zeros_(scorer[-1].weight)
            nn.init.zeros_(scorer[-1].bias)
            setattr(self, f"{prefix}_scorer", scorer)
            # the weight of the rest of the network's score in the head's rows, learned: the head can overrule a
            # confident score (whose softmax would otherwise give the head almost no gradient)
            setattr(self, f"{prefix}_keep", nn.Parameter(torch.ones(())))
        if early_rounds_input == "classes":
            # identity until set_card_classes; saved with the weights, and checked against the checkpoint's rules
            # and observation blocks when it loads (agents.ppo_agent.policy_from_checkpoint)
            self.register_buffer("er_obs_index", torch.arange(obs_dim, dtype=torch.int64))
            self.register_buffer("er_card_class", torch.arange(52, dtype=torch.int64))

    @property
    def device(self) -> torch.device:
        """The device of the network's parameters; its forward passes move their batch there first
        (:meth:`MoveBatch.to`) and return tensors on it."""
        return self.torso[0].weight.device

    @classmethod
    def from_shape(cls, shape: NetworkShape | dict[str, int]) -> CassinoPolicy:
        """A fresh network of a given shape."""
        s = shape if isinstance(shape, NetworkShape) else NetworkShape(**shape)
        return cls(**s.to_dict())

    def set_card_classes(self, obs_index: np.ndarray, card_class: np.ndarray) -> None:
        """Set what the earlier-rounds head of ``early_rounds_input="classes"`` sums: ``obs_index`` int64[D]
        (:func:`cassino_env.symmetry.class_index` of the rules and observation blocks) and ``card_class`` int64[52]
        (:func:`cassino_env.symmetry.card_classes`).

        Raises:
            ValueError: the network's head reads cards, or maps of another length or outside ``0..D-1``, ``0..51``.
        """
        if self.shape.early_rounds_input != "classes":
            raise ValueError("set_card_classes: the network's earlier-rounds head reads cards, not classes")
        for name, arr, n in (("obs_index", obs_index, self.shape.obs_dim), ("card_class", card_class, 52)):
            a = np.asarray(arr)
            if a.shape != (n,) or a.dtype.kind not in "iu" or (a < 0).any() or (a >= n).any():
                raise ValueError(f"set_card_classes: {name} must be {n} integers in 0..{n - 1}, got {a.dtype} "
                                 f"{a.shape}")
        with torch.no_grad():
            self.er_obs_index.copy_(torch.as_tensor(np.asarray(obs_index), dtype=torch.int64))
            self.er_card_class.copy_(torch.as_tensor(np.asarray(card_class), dtype=torch.int64))

    def set_feature_prior(self, index: int, weight: float) -> None:
        """Start the logits at ``weight * feats[..., index]`` (e.g. the ``advanced`` bot's score, so the untrained
        policy is a softmax over that bot's move scores); needs move features."""
        if not self.shape.move_features:
            raise ValueError("set_feature_prior needs a network with move features")
        with torch.no_grad():
            self.feat_skip.weight.zero_()
            self.feat_skip.weight[0, index] = weight

    def embed_moves(self, kind: torch.Tensor, card: torch.Tensor, value: torch.Tensor,
                    cards: torch.Tensor) -> torch.Tensor:
        """float32[K, embed]: embeddings of K candidate moves (1-D int64 tensors of legal moves only)."""
        bits = card_bits(cards)  # [K, 52], 1 per card taken/used
        count = bits.sum(-1).long().clamp_(max=MAX_COUNT)
        return (self.card_emb(card) + self.table_emb(bits) + self.kind_emb(kind)
                + self.value_emb(value.clamp(0, NUM_VALUES - 1)) + self.count_emb(count))

    def forward(self, batch: MoveBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(logits float32[N, M], value float32[N])``, on the network's device (``batch`` is moved there
        first); illegal moves have logit ``-inf``."""
        batch = batch.to(self.device)
        if self.shape.critic == "shared":
            h = self.torso(batch.obs)
            return self._logits(batch, h), self._value(batch, h)
        h, v = self._both_torsos(batch)
        return self._logits(batch, h), v

    def _both_torsos(self, batch: MoveBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy torso's output and the separate critic's value in one pass: both first layers read the
        observation, so they run as one matrix product of ``[N, D] x [D, 2 hidden]`` (the critic's columns of its
        extra input ``critic_obs`` as a second product), which is the two layers' arithmetic, without the
        ``[obs, critic_obs]`` copy; the result equals :meth:`logits` and :meth:`value` up to float rounding."""
        t1, c1 = self.torso[0], self.critic_net[0]
        H, D = t1.out_features, self.shape.obs_dim
        w = torch.cat([t1.weight, c1.weight[:, :D]])
        b = torch.cat([t1.bias, c1.bias])
        first = torch.nn.functional.linear(batch.obs, w, b)
        pre_h, pre_c = first[:, :H], first[:, H:]
        if self.shape.critic_dim:
            if batch.critic_obs is None:
                raise ValueError("this network's critic reads the full state: build the MoveBatch with critic_obs")
            _check_critic_rows(batch.critic_obs, batch.obs)
            pre_c = pre_c + torch.nn.functional.linear(batch.critic_obs, c1.weight[:, D:])
        h = self.torso[1:](pre_h)
        return h, _last_layer_fp32(self.critic_net[1:], pre_c)

    def logits(self, batch: MoveBatch) -> torch.Tensor:
        """float32[N, M]: the policy's logits alone (``-inf`` at illegal moves); what acting needs, so a critic
        that reads the full state needs no ``critic_obs`` here. On the network's device, as :meth:`forward`."""
        batch = batch.to(self.device)
        return self._logits(batch, self.torso(batch.obs))

    def _logits(self, batch: MoveBatch, h: torch.Tensor) -> torch.Tensor:
        N, M = batch.mask.shape
        # the legal moves as flat positions of the [N, M] table: one 1-D gather a tensor (its backward an index_add),
        # the same values as indexing by (rows, cols)
        flat = batch.mask.reshape(-1).nonzero().squeeze(-1)
        rows, cols = flat // M, flat % M

        def legal(t: torch.Tensor) -> torch.Tensor:  # [N, M, ...] -> the legal moves' [K, ...]
            return t.reshape(N * M, *t.shape[2:]).index_select(0, flat)

        m = self.embed_moves(legal(batch.kind), legal(batch.card), legal(batch.value), legal(batch.cards))
        skip = None
        if self.shape.move_features:
            if batch.feats is None:
                raise ValueError("this network reads move features: build the MoveBatch with feats "
                                 "(agents.features.MoveFeaturizer)")
            f = legal(batch.feats)
            m = m + self.feat_mlp(f)
            skip = self.feat_skip(f).squeeze(-1)
        scores = _last_layer_fp32(self.scorer, self.query(h)[rows] + m)
        if skip is not None:
            scores = scores + skip
        if self.shape.last_round:
            sel, extra = self._last_round_scores(batch, rows, cols)
            scores = torch.where(sel, scores * self.lr_keep + extra, scores)
        if self.shape.early_rounds:
            sel, extra = self._head_scores("er", batch.obs[:, self.shape.last_round_gate] != 0, batch, rows, cols)
            scores = torch.where(sel, scores * self.er_keep + extra, scores)
        logits = torch.full((N * M,), -torch.inf, dtype=scores.dtype, device=scores.device)
        return logits.index_put((flat,), scores).view(N, M)

    def last_round_rows(self, obs: torch.Tensor) -> torch.Tensor:
        """bool[N]: the rows the last-round head scores (the stock is empty); all False without a head."""
        if not self.shape.last_round:
            return torch.zeros(obs.shape[0], dtype=torch.bool, device=obs.device)
        return obs[:, self.shape.last_round_gate] == 0

    def last_round_parameters(self) -> list[nn.Parameter]:
        """The last-round head's parameters (empty without one): what training on last-round labels alone moves."""
        return [p for n, p in self.named_parameters() if n.startswith("lr_")]

    def early_rounds_parameters(self) -> list[nn.Parameter]:
        """The earlier-rounds head's parameters (empty without one)."""
        return [p for n, p in self.named_parameters() if n.startswith("er_")]

    def _last_round_scores(self, batch: MoveBatch, rows: torch.Tensor,
                           cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(bool[K], float32[K]): which of the K legal moves are in the last round, and the head's score of each
        (0 outside it)."""
        return self._head_scores("lr", self.last_round_rows(batch.obs), batch, rows, cols)

    def _head_scores(self, prefix: str, last: torch.Tensor, batch: MoveBatch, rows: torch.Tensor,
                     cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(bool[K], float32[K]): which of the K legal moves are in the rows ``last`` (bool[N]) that the head
        ``prefix`` (``lr`` or ``er``) scores, and its score of each (0 elsewhere)."""
        out = torch.zeros(rows.shape[0], dtype=torch.float32, device=rows.device)
        sel = last[rows]
        if not bool(sel.any()):
            return sel, out
        at = torch.cumsum(last.long(), 0) - 1  # row -> its place among the last-round rows
        obs = batch.obs[last]
        r, c = rows[sel], cols[sel]
        bits = card_bits(batch.cards[r, c])
        card = batch.card[r, c].clamp(0, 51)
        if prefix == "er" and self.shape.early_rounds_input == "classes":
            obs = torch.zeros_like(obs).index_add_(1, self.er_obs_index, obs)
            bits = torch.zeros_like(bits).index_add_(1, self.er_card_class, bits)
            card = self.er_card_class[card]
        g = getattr(self, f"{prefix}_obs")(obs)
        parts = [nn.functional.one_hot(card, 52).float(), bits,
                 nn.functional.one_hot(batch.kind[r, c].clamp(0, 2), 3).float(),
                 nn.functional.one_hot(batch.value[r, c].clamp(0, NUM_VALUES - 1), NUM_VALUES).float()]
        if self.shape.move_features:
            parts.append(batch.feats[r, c])
        head_move, head_scorer = getattr(self, f"{prefix}_move"), getattr(self, f"{prefix}_scorer")
        s = _last_layer_fp32(head_scorer, g[at[r]] + head_move(torch.cat(parts, dim=-1)))
        return sel, out.index_put((sel.nonzero().squeeze(-1),), s.to(out.dtype))

    def _value(self, batch: MoveBatch, h: torch.Tensor | None = None) -> torch.Tensor:
        if self.shape.critic == "shared":
            return _fp32_out(self.value_head, self.torso(batch.obs) if h is None else h)
        x = batch.obs
        if self.shape.critic_dim:
            if batch.critic_obs is None:
                raise ValueError("this network's critic reads the full state: build the MoveBatch with critic_obs")
            # its first layer over [obs, critic_obs] as two products, without copying the two into one input (the
            # search's critic leaves read tens of thousands of rows a call)
            _check_critic_rows(batch.critic_obs, x)
            first, d = self.critic_net[0], x.shape[-1]
            h = nn.functional.linear(x, first.weight[:, :d], first.bias) \
                + nn.functional.linear(batch.critic_obs, first.weight[:, d:])
            return _last_layer_fp32(self.critic_net[1:], h)
        return _last_layer_fp32(self.critic_net, x)

    def value(self, batch: MoveBatch) -> torch.Tensor:
        """float32[N]: the value estimate alone (on the network's device, as :meth:`forward`)."""
        return self._value(batch.to(self.device))

    def state_value(self, obs: torch.Tensor, critic_obs: torch.Tensor | None = None) -> torch.Tensor:
        """float32[N]: the value estimate of N positions from their observations alone (no move table needed).

        Args:
            obs: float32[N, D], the acting seat's observation.
            critic_obs: float32[N, C], the separate critic's full-state input (:func:`agents.features.critic_state`);
                needed when ``critic_dim`` > 0.

        Returns:
            float32[N] on the network's device (``obs`` and ``critic_obs`` are moved there first).

        Raises:
            ValueError: ``critic_obs`` missing for a critic that reads it.
        """
        empty = torch.zeros((len(obs), 0), dtype=torch.int64, device=obs.device)
        batch = MoveBatch(obs=obs, kind=empty, card=empty, value=empty, cards=empty, mask=empty.bool(),
                          critic_obs=critic_obs)
        return self._value(batch.to(self.device))


def _check_critic_rows(critic_obs: torch.Tensor, obs: torch.Tensor) -> None:
    """The separate critic's full-state input has a row per observation row (a first layer computed as two products
    would otherwise broadcast one game's state over every row)."""
    if critic_obs.shape[:-1] != obs.shape[:-1]:
        raise ValueError(f"critic_obs must have a row per observation row: {tuple(critic_obs.shape)} against obs "
                         f"{tuple(obs.shape)}")


def _fp32_out(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """float32[K]: ``layer(x).squeeze(-1)`` computed in float32 whatever autocast is on (:mod:`agents.precision`).
    ``layer`` maps to one number (a score, a value): logits of tens whose differences of a tenth matter, which a
    bfloat16 output (8 bits of mantissa: steps of 0.125 at 16-32) would round away. Without autocast it is exactly
    ``layer(x).squeeze(-1)``; on a device other than the CPU or CUDA (where :mod:`agents.precision` never turns
    autocast on) it is that, with no autocast context."""
    if x.device.type not in ("cpu", "cuda"):
        return layer(x).squeeze(-1)
    with torch.autocast(x.device.type, enabled=False):
        return layer(x.float()).squeeze(-1)


def _last_layer_fp32(mlp: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """float32[K]: ``mlp(x).squeeze(-1)``, its layers but the last in the autocast type (they carry the arithmetic),
    the last (a linear map to one number) in float32 (:func:`_fp32_out`)."""
    return _fp32_out(mlp[-1], mlp[:-1](x))


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """float32[N, M]: log-probabilities over the legal moves; 0 (not -inf) at illegal ones, so sums stay finite."""
    return torch.where(mask, torch.log_softmax(logits, dim=-1), torch.zeros((), dtype=logits.dtype,
                                                                            device=logits.device))


def masked_entropy(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """float32[N]: entropy of the policy over the legal moves only (illegal moves have probability 0)."""
    logp = masked_log_softmax(logits, mask)
    return -(logp.exp() * logp * mask).sum(-1)


def sample_actions(logits: torch.Tensor, rng: np.random.Generator, deterministic: bool = False) -> np.ndarray:
    """int64[N]: one legal move index per row, drawn from softmax(logits) by the Gumbel-max trick with ``rng``
    (so the caller's numpy generator decides every draw), or the arg-max when ``deterministic``. ``logits`` may be
    on any device; the draw is made on the CPU (the logits come across once)."""
    if deterministic:
        return logits.argmax(-1).cpu().numpy()
    gumbel = torch.from_numpy(rng.gumbel(size=tuple(logits.shape)).astype(np.float32))
    return (logits.cpu() + gumbel).argmax(-1).numpy()


def last_round_gate(num_players: int, num_sides: int, blocks: Any = None) -> int:
    """The index of the stock-size entry (``progress`` block, :mod:`cassino_env.obs`) in the observation of
    ``blocks`` (None: the default blocks): 0 exactly when the stock is empty, i.e. in the last round of a deal.

    Raises:
        ValueError: the blocks have no ``progress`` block.
    """
    from cassino_env.obs import obs_layout

    layout = obs_layout(num_players, num_sides, blocks)
    if "progress" not in layout:
        raise ValueError("a last-round head needs the observation's progress block (its stock size tells the round)")
    return layout["progress"][0]


def add_last_round_head(policy: CassinoPolicy, width: int, gate: int) -> CassinoPolicy:
    """A copy of ``policy`` with a last-round head of ``width`` (output layer 0: it plays exactly as ``policy``
    until the head is trained); ``gate``: :func:`last_round_gate` of the observation blocks ``policy`` reads (a
    checkpoint's gate is checked against its blocks when it is loaded, :func:`agents.ppo_agent.check_network`).
    The copy is in ``policy``'s train or eval mode, and its copied parameters keep their ``requires_grad``.

    Raises:
        ValueError: ``policy`` has a head already, a width that is not an int from 1 to
            :data:`MAX_LAST_ROUND_WIDTH`, or a gate outside the observation.
    """
    return _with_head(policy, "last_round", width, gate)


def add_early_rounds_head(policy: CassinoPolicy, width: int, gate: int,
                          classes: tuple[np.ndarray, np.ndarray] | None = None) -> CassinoPolicy:
    """A copy of ``policy`` with an earlier-rounds head of ``width``: the last-round head's architecture, with its
    own weights, scoring the rows where the stock is not empty (output layer 0: it plays exactly as ``policy`` until
    the head is trained). ``gate`` as :func:`add_last_round_head`'s (the same entry, read the other way round).
    ``classes``: None, a head that reads each card by its id; or ``(obs_index, card_class)`` of
    :meth:`CassinoPolicy.set_card_classes`, a head that reads cards by suit class (``early_rounds_input="classes"``).

    Raises:
        ValueError: ``policy`` has an earlier-rounds head already, a width that is not an int from 1 to
            :data:`MAX_LAST_ROUND_WIDTH`, a gate outside the observation, one other than the gate of the
            last-round head ``policy`` has, or bad ``classes``.
    """
    if classes is None:
        return _with_head(policy, "early_rounds", width, gate)
    if not isinstance(classes, tuple | list) or len(classes) != 2:
        raise ValueError("classes: expected (obs_index, card_class), the two maps of set_card_classes, got "
                         f"{type(classes).__name__}")
    out = _with_head(policy, "early_rounds", width, gate, early_rounds_input="classes")
    out.set_card_classes(*classes)
    return out


def remove_early_rounds_head(policy: CassinoPolicy) -> CassinoPolicy:
    """A copy of ``policy`` without its earlier-rounds head (the network below it, which plays the rounds before the
    last as before the head was added; the last-round head, if any, is kept), in ``policy``'s train or eval mode.

    Raises:
        ValueError: ``policy`` has no earlier-rounds head.
    """
    if not policy.shape.early_rounds:
        raise ValueError("the network has no earlier-rounds head to remove")
    shape = dataclasses.replace(policy.shape, early_rounds=0, early_rounds_input="cards",
                                last_round_gate=policy.shape.last_round_gate if policy.shape.last_round else 0)
    out = CassinoPolicy.from_shape(shape)
    out.load_state_dict({k: v for k, v in policy.state_dict().items() if not k.startswith("er_")})
    return out.train(policy.training)


def _with_head(policy: CassinoPolicy, field: str, width: int, gate: int, **extra: str) -> CassinoPolicy:
    name = "a last-round" if field == "last_round" else "an earlier-rounds"
    if getattr(policy.shape, field):
        raise ValueError(f"the network has {name} head already")
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_LAST_ROUND_WIDTH:
        raise ValueError(f"{name.split()[1]} head width must be an int from 1 to {MAX_LAST_ROUND_WIDTH}, got {width!r}")
    if isinstance(gate, bool) or not isinstance(gate, int) or not 0 <= gate < policy.shape.obs_dim:
        raise ValueError(f"last_round_gate must index the observation (0 to {policy.shape.obs_dim - 1}), got "
                         f"{gate!r}")
    if (policy.shape.last_round or policy.shape.early_rounds) and gate != policy.shape.last_round_gate:
        raise ValueError(f"last_round_gate={gate}: the network's other head reads entry "
                         f"{policy.shape.last_round_gate}; both heads read the same one")
    shape = dataclasses.replace(policy.shape, last_round_gate=gate, **{field: width}, **extra)
    out = CassinoPolicy.from_shape(shape)
    missing, unexpected = out.load_state_dict(policy.state_dict(), strict=False)
    prefix = "lr_" if field == "last_round" else "er_"
    assert not unexpected and all(k.startswith(prefix) for k in missing)
    grads = {n: q.requires_grad for n, q in policy.named_parameters()}
    for n, q in out.named_parameters():
        q.requires_grad_(grads.get(n, True))
    return out.train(policy.training)
