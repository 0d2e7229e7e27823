"""Search over the learned network: ``search:SPEC[:BUDGET]``, determinised search guided by a trained policy.

For each decision of B games at once:

1. **Exact last round.** Where the seat to move knows every card (two seats, empty stock,
   :func:`cassino_env.endgame.solvable`) the move is the exact best one (:func:`agents.endgame.play_endgame`; the
   network's move is kept whenever it is as good as the best).
2. **The network ranks the moves.** One forward pass of the policy over all B root positions gives a prior over
   each game's legal moves; the search considers only the ``top_k`` most probable (all of them when fewer), so the
   budget is spent on the promising moves instead of being spread over every legal one as ``pimc`` does.
3. **Determinised rollouts** as :mod:`agents.pimc`: K samples of the hidden cards consistent with the seat's view
   (:func:`cassino_env.determinize.determinize`), every candidate played in every sample (common random numbers),
   then a rollout to the end of the deal. All rollouts of all B decisions step together as one batched core state;
   the rollout policy is a scripted bot (``advanced`` by default) stepped in numba; ``rollout="net"`` plays them with
   the network instead (one forward pass per ply for every live rollout of every decision), which costs about 40
   times as much per rollout step on this machine (the move features dominate), so at equal time it gets far fewer
   rollouts (docs/search.md has the measurements).
   **Critic leaves** (``leaf="critic"``, the default with two sides and a bot's rollouts): a sampled line stops
   after the candidate and ``depth`` (8) plies of the rollout bot (or of the network's most probable move, with
   ``rollout="net"`` and ``leaf="critic"`` given: docs/search.md has its cost), and the network's critic scores it
   (:meth:`agents.policy.CassinoPolicy.state_value`: the value of the seat to move, read from its observation and
   the full determinised state, which the critic was trained on; lines that end the deal sooner score exactly).
   With two sides (two players, or two partnerships: a partner to move is the searcher's side) that value, or its
   negative, is the searcher's. With more sides a seat's value (its side's points minus the mean of the others')
   says nothing exact of another side's, so the line goes on, one ply of the rollout policy at a time, until a
   seat of the searcher's side is to move (:func:`leaf_stops`; at most ``num_sides - 1`` plies more), and the
   critic is read for that seat. Reading it from a seat that is not to move (its observation, the state turned to
   it) is outside what it was trained on, and measurably biased (docs/search.md).
   A line costs about half a full rollout, and the critic knows the network's own play of the rest of the deal,
   which the scripted bot does not: in classic the critic leaves beat full rollouts of the ``advanced`` bot
   against both ``pimc`` and the network alone (docs/search.md). ``leaf="rollout"`` plays every line out.
4. **Successive halving** (``halving=True``): the first half of the budget is spread over the candidates, the
   second half over the best two of them on fresh samples; a move's value is the mean over all its samples.
5. **Blueprint correction** (SPARTA, Lerer et al. 2020): the network's own move is played unless another candidate's
   mean outcome beats it by more than ``margin`` points.

The outcome of a rollout is the searching side's deal points minus the mean of the other sides', plus or minus
``match_bonus`` when the deal ends the match (as ``pimc``). Budget: ``simulations`` rollouts per decision, at least
``min_samples`` samples per candidate. :data:`DEFAULT_SIMULATIONS` keeps the time per decision at or under
``pimc``'s default (measured side by side, docs/search.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from agents.base import MAX_SIMULATIONS, Agent, slice_obs
from agents.bots import STYLES
from cassino_env.determinize import determinize, moves_of, take
from cassino_env.obs import state_obs
from cassino_env.rules import RuleSet

#: Rollouts per decision of ``search:SPEC`` (the same as ``pimc``'s default: equal rollouts cost equal time).
DEFAULT_SIMULATIONS = 4000
#: Candidate moves searched per decision, by the network's prior.
DEFAULT_TOP_K = 4
#: Points by which another move must beat the network's own to be played instead.
DEFAULT_MARGIN = 0.0
#: Rollout policies: a scripted bot's style (:data:`agents.bots.STYLES`: a new style is a rollout policy here too), or
#: ``net`` (the network itself).
ROLLOUTS = (*STYLES, "net")
#: How a sampled line is scored: ``rollout`` plays it to the end of the deal, ``critic`` stops after ``depth``
#: plies of the rollout policy (more than two sides: at the searcher's side's next turn from there) and reads the
#: network's critic.
LEAVES = ("rollout", "critic")
#: Plies of the rollout policy before the critic reads a line (``leaf="critic"``; with more than two sides, at
#: least: the line goes on to the searcher's side's turn).
DEFAULT_DEPTH = 8


class SearchSpecError(ValueError):
    """A bad ``search:`` spec or argument; the message names it."""


class SearchAgent:
    """Determinised search guided by a trained network (see the module docstring), an :class:`agents.base.Agent`.

    Args:
        rules: the rules it plays.
        net: the trained network's agent (:class:`agents.ppo_agent.PPOAgent`, e.g. from ``pretrained:classic``).
        simulations: rollouts per decision (1 .. :data:`MAX_SIMULATIONS`).
        top_k: candidate moves searched, the network's most probable (>= 1).
        margin: points another move must gain over the network's move to replace it (>= 0).
        rollout: one of :data:`ROLLOUTS`.
        halving: spend the second half of the budget on the best two candidates.
        min_samples: at least this many samples per candidate.
        match_bonus: points added to (subtracted from) a rollout that ends the match won (lost).
        exact: play two-seat last rounds exactly.
        max_games: rollouts stepped together (larger batches are split).
        leaf: ``"rollout"`` (play every line to the end of the deal) or ``"critic"`` (stop after ``depth`` plies
            and read the network's critic; with more than two sides, at the first ply from there where the
            searcher's side is to move); None (the default): ``"critic"`` where the rules have two sides and the
            rollouts are a bot's, else ``"rollout"`` (with more sides critic leaves measured level with full
            rollouts at equal time, docs/search.md).
        depth: plies of the rollout policy (the bot, or with ``rollout="net"`` the network's most probable move)
            after the candidate before the critic reads the position (0 .. 64); None (the default):
            :data:`DEFAULT_DEPTH`. Only critic leaves read it: a depth given with ``leaf="rollout"`` (or with no
            ``leaf`` and ``rollout="net"``, which resolve to rollouts) is refused.
        value_scale: the reward scale the critic was trained at (``reward_scale``: its values are deal margins
            times it), so values are divided by it to get points; the critic must have been trained on the deal
            margin (``reward="points"``, ``objective="points"``, no ``shaping``, ``gamma=1``, the defaults of
            :class:`train.config.Args`), which is the case for ``pretrained:classic``. Lines of one decision all
            have the same length, so every candidate's lines end the deal (and earn ``match_bonus``) or none do.
        name: its name in tables.
        parallel: step the lines (the rules core and the rollout bot's choice) over numba's threads; None (the
            default): from the main thread where numba has more than one, never from another thread
            (:class:`agents.pimc.PIMCAgent`'s ``parallel``). The same values either way.

    Raises:
        SearchSpecError: a bad argument, or a network made for another count of seats or sides (its ``rules``).
    """

    def __init__(self, rules: RuleSet, net: Any, simulations: int = DEFAULT_SIMULATIONS, top_k: int = DEFAULT_TOP_K,
                 margin: float = DEFAULT_MARGIN, rollout: str = "advanced", halving: bool = False,
                 min_samples: int = 8, match_bonus: float = 10.0, exact: bool = True, max_games: int = 16384,
                 leaf: str | None = None, depth: int | None = None, value_scale: float = 0.1,
                 name: str | None = None, parallel: bool | None = None) -> None:
        from agents.bots import make_bot
        from agents.pimc import PIMCAgent, checked_parallel

        parallel = checked_parallel(parallel, SearchSpecError)
        if isinstance(simulations, bool) or not isinstance(simulations, int | np.integer) \
                or not 1 <= simulations <= MAX_SIMULATIONS:
            raise SearchSpecError(f"search budget: expected an integer 1..{MAX_SIMULATIONS} (rollouts per decision), "
                                  f"got {simulations!r:.40}")
        if isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1:
            raise SearchSpecError(f"top_k: expected an integer >= 1 (candidate moves), got {top_k!r:.40}")
        if not (isinstance(margin, int | float) and np.isfinite(margin) and margin >= 0):
            raise SearchSpecError(f"margin: expected a finite number >= 0 (points), got {margin!r:.40}")
        if rollout not in ROLLOUTS:
            raise SearchSpecError(f"rollout: expected one of {', '.join(ROLLOUTS)}, got {rollout!r:.40}")
        if not callable(getattr(getattr(net, "policy", None), "logits", None)):
            raise SearchSpecError("search needs a trained network's agent (checkpoint:PATH or pretrained:NAME)")
        own = getattr(net, "rules", None)
        if isinstance(own, RuleSet) and (own.num_players, own.num_sides) != (rules.num_players, rules.num_sides):
            raise SearchSpecError(f"net: a network of {own.num_players} seats in {own.num_sides} sides cannot search "
                                  f"rules of {rules.num_players} seats in {rules.num_sides} sides")
        if leaf is None:
            # with more than two sides critic leaves were level with full rollouts at equal time (docs/search.md)
            leaf = "critic" if rules.num_sides == 2 and rollout != "net" else "rollout"
        if leaf not in LEAVES:
            raise SearchSpecError(f"leaf: expected one of {', '.join(LEAVES)}, got {leaf!r:.40}")
        if depth is not None and leaf != "critic":
            raise SearchSpecError(f"depth={depth!r:.20}: only critic leaves stop after a depth; with leaf={leaf!r} "
                                  "every line is played to the end of the deal (pass leaf='critic' to cut lines)")
        if depth is None:
            depth = DEFAULT_DEPTH
        if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or not 0 <= depth <= 64:
            raise SearchSpecError(f"depth: expected an integer 0..64 (plies before the critic), got {depth!r:.40}")
        if not (isinstance(value_scale, int | float) and np.isfinite(value_scale) and value_scale > 0):
            raise SearchSpecError(f"value_scale: expected a finite number > 0, got {value_scale!r:.40}")
        self.rules = rules
        self.net = net
        self.simulations = int(simulations)
        self.top_k = int(top_k)
        self.margin = float(margin)
        self.rollout = rollout
        self.halving = bool(halving)
        self.min_samples = int(min_samples)
        self.match_bonus = float(match_bonus)
        self.exact = bool(exact) and rules.num_players == 2
        self.max_games = int(max_games)
        self.leaf, self.depth, self.value_scale = leaf, int(depth), float(value_scale)
        self.name = name or "search"
        self._bot = None if rollout == "net" else make_bot(rollout, rules)
        #: when a list, every searched chunk appends (candidates int64[R, m], mean outcomes float64[R, m]; -inf:
        #: not searched), candidates most probable first: for inspection and for tuning ``margin`` offline
        self._trace: list[tuple[np.ndarray, np.ndarray]] | None = None
        # pimc's batched rollout loop (its policy replaced when the network plays the rollouts)
        self._pimc = PIMCAgent(rules, simulations=1, rollout="advanced" if rollout == "net" else rollout,
                               match_bonus=match_bonus, max_games=max_games, parallel=parallel)

    # -- the network -------------------------------------------------------------------------------------------------
    def to(self, device: Any) -> SearchAgent:
        """Run the network (its move ranking, the critic leaves, ``rollout="net"``) on ``device`` (a name of
        :mod:`agents.device` or a ``torch.device``); the determinisations and the bots' rollouts stay on the CPU, and
        each forward pass moves its whole batch (every root, or every line's leaf) across once. Returns the agent.

        Raises:
            agents.device.DeviceError: a device name torch cannot see.
        """
        self.net.to(device)
        return self

    def _logits(self, obs: dict[str, Any]) -> np.ndarray:
        """float32[B, M]: the network's logits (-inf at illegal moves), M the obs's move-table width."""
        import torch

        from agents.policy import MoveBatch

        net = self.net
        if callable(getattr(net, "own_observation", None)):  # a network of other observation blocks encodes its own
            obs = net.own_observation(obs)
        feats = net.featurizer(obs) if net.featurizer is not None else None
        with torch.no_grad():
            lg = net.policy.logits(MoveBatch.from_obs(obs, feats)).cpu().numpy()  # the batch moves once each way
        out = np.full(np.asarray(obs["action_mask"]).shape, -np.inf, dtype=np.float32)
        out[:, :lg.shape[1]] = lg
        return out

    def _net_state_policy(self, state: Any) -> np.ndarray:
        """The network's move for the seat to move in every game of a core State (rollouts with ``rollout="net"``)."""
        return np.argmax(self._logits(state_obs(state)), axis=1).astype(np.int64)

    # -- Agent protocol ----------------------------------------------------------------------------------------------
    def act(self, obs: dict[str, Any], rng: np.random.Generator, logits: np.ndarray | None = None) -> np.ndarray:
        """int64[B]: the searched move per game.

        Args:
            obs: the vector-env observation dict of B games (with ``view``).
            rng: the caller's generator (the determinisations' and the rollouts' draws).
            logits: float32[B, M'] (M' at most the move table's width M): the network's logits for ``obs``
                (:meth:`agents.policy.CassinoPolicy.logits`, -inf at illegal moves) when the caller has them
                already, as the expert stage's games do; None: computed here. They rank the candidates.

        Raises:
            ValueError: ``obs`` has no ``view``, or ``logits`` is not of B rows and at most M columns, or has fewer
                columns than a game's last legal move needs, or NaN at a legal move.
        """
        mask = np.asarray(obs["action_mask"]) != 0
        B = len(mask)
        if B == 0:
            return np.zeros(0, dtype=np.int64)
        if "view" not in obs:
            raise ValueError(f"{self.name} reads obs['view']: create the environment with with_view=True")
        if logits is None:
            logits = self._logits(obs)
        else:
            given = np.asarray(logits, dtype=np.float32)
            if given.ndim != 2 or len(given) != B or given.shape[1] > mask.shape[1]:
                raise ValueError(f"logits: expected float32[{B}, at most {mask.shape[1]}] for the {B} games of obs, "
                                 f"got shape {given.shape}")
            if mask[:, given.shape[1]:].any():
                raise ValueError(f"logits: {given.shape[1]} columns do not reach every legal move of obs (the last "
                                 f"at column {int(np.flatnonzero(mask.any(axis=0)).max())})")
            logits = np.full(mask.shape, -np.inf, dtype=np.float32)
            logits[:, :given.shape[1]] = given
            logits[~mask] = -np.inf  # only legal moves are candidates, whatever the caller's illegal columns hold
            nan = np.isnan(logits).any(axis=1)
            if nan.any():
                raise ValueError(f"logits: NaN at a legal move of game {int(np.flatnonzero(nan)[0])}")
        out = np.argmax(logits, axis=1).astype(np.int64)
        n = mask.sum(axis=1).astype(np.int64)
        todo = n > 1
        if self.exact:
            from agents.endgame import play_endgame
            from cassino_env.endgame import solvable

            solv = solvable(self.rules, obs["view"]) & todo
            if solv.any():
                rows = np.flatnonzero(solv)
                out[rows] = play_endgame(self.rules, slice_obs(obs, rows), out[rows])
            todo &= ~solv
        rows = np.flatnonzero(todo)
        if rows.size == 0:
            return out
        m = np.minimum(n[rows], self.top_k)
        # candidates: the m most probable legal moves, most probable first (column 0 is the network's move)
        order = np.argsort(-logits[rows], axis=1, kind="stable")
        per = self.simulations if not self.halving else max(1, self.simulations // 2)
        ks = np.maximum(self.min_samples, np.ceil(per / m).astype(np.int64))
        start = 0
        while start < rows.size:  # chunks whose rollouts fit max_games
            stop, total = start + 1, ks[start] * m[start]
            while stop < rows.size and total + ks[stop] * m[stop] <= self.max_games:
                total += ks[stop] * m[stop]
                stop += 1
            sl = slice(start, stop)
            out[rows[sl]] = self._search(slice_obs(obs, rows[sl]), order[sl], m[sl], ks[sl], rng)
            start = stop
        return out

    # -- search ------------------------------------------------------------------------------------------------------
    def _search(self, obs: dict[str, Any], order: np.ndarray, m: np.ndarray, ks: np.ndarray,
                rng: np.random.Generator) -> np.ndarray:
        """The chosen listed move of each of R games, candidates ``order[r, :m[r]]``."""
        R = len(m)
        sums = np.zeros((R, int(m.max())))
        counts = np.zeros((R, int(m.max())))
        cand = [order[r, :m[r]] for r in range(R)]
        self._evaluate(obs, cand, ks, rng, sums, counts, np.arange(R))
        if self.halving:
            means = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)
            two = np.argsort(-means, axis=1, kind="stable")[:, :2]
            sub = [two[r, :min(2, int(m[r]))] for r in range(R)]
            ks2 = np.maximum(self.min_samples, np.ceil((self.simulations - self.simulations // 2)
                                                        / np.array([len(s) for s in sub])).astype(np.int64))
            self._evaluate(obs, [cand[r][sub[r]] for r in range(R)], ks2, rng, sums, counts, np.arange(R), sub)
        means = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)
        if self._trace is not None:
            self._trace.append((order[:, :means.shape[1]].copy(), means.copy()))
        best = np.argmax(means, axis=1)
        keep = means[np.arange(R), best] - means[:, 0] <= self.margin  # the network's move stands
        pick = np.where(keep, 0, best)
        return order[np.arange(R), pick]

    def _evaluate(self, obs: dict[str, Any], cand: list[np.ndarray], ks: np.ndarray, rng: np.random.Generator,
                  sums: np.ndarray, counts: np.ndarray, rows: np.ndarray, slots: list[np.ndarray] | None = None
                  ) -> None:
        """Add the rollout outcomes of every candidate ``cand[r]`` on ``ks[r]`` fresh samples to ``sums``/``counts``
        (columns ``slots[r]``, default 0..len-1)."""
        m = np.array([len(c) for c in cand], dtype=np.int64)
        det = determinize(self.rules, obs["view"], moves_of(obs), ks, rng)
        sample_start = np.concatenate([[0], np.cumsum(ks)[:-1]])
        idx = np.concatenate([np.repeat(sample_start[r] + np.arange(ks[r]), m[r]) for r in range(len(m))])
        first = np.concatenate([np.tile(cand[r], ks[r]) for r in range(len(m))]).astype(np.int64)
        slot = np.concatenate([np.tile(np.arange(m[r]) if slots is None else slots[r], ks[r])
                               for r in range(len(m))])
        row = np.repeat(np.arange(len(m)), ks * m)
        st = take(det, idx)
        me = np.asarray(obs["view"]["viewer"]).astype(np.int64)[row]
        if self.leaf == "critic":
            outcome = self._critic_leaf(st, first, me)
        elif self.rollout == "net":
            outcome = self._rollout_net(st, first, me)
        else:
            outcome = self._pimc.rollout(st, first, me, rng)
        np.add.at(sums, (rows[row], slot), outcome)
        np.add.at(counts, (rows[row], slot), 1.0)

    def _critic_leaf(self, st: Any, first: np.ndarray, me: np.ndarray) -> np.ndarray:
        """float64[G]: play ``first`` and ``depth`` plies of the rollout policy in every game, then score it by the
        network's critic: its value for the seat to move, in points (divided by ``value_scale``, the reward scale
        the critic was trained at), from the side of ``me``; a deal that ends on the way scores its exact margin
        (``match_bonus`` included, as a rollout).

        With two sides the value of the seat to move is read wherever the line stops (the other side's value is its
        negative). With more sides a seat's value (its side's points minus the mean of the others') does not give
        another side's, so a line goes on past ``depth``, one ply of the rollout policy at a time, until a seat of
        the side of ``me`` is to move (:func:`leaf_stops`: at most ``num_sides - 1`` more plies, as seats take
        turns in order), and the critic is read for that seat: what it was trained on, from the searcher's side.
        """
        import torch

        from agents.bots import ScriptedBot
        from agents.features import critic_state
        from agents.lines import play_plies
        from cassino_env import core

        S = self.rules.num_sides
        G = st.batch_size
        outcome = np.zeros(G, dtype=np.float64)
        live = np.arange(G)
        actions = first
        blocks = getattr(self.net, "blocks", None)
        crit_dim = self.net.policy.shape.critic_dim
        leaves: list[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]] = []  # games, obs, crit, movers
        ply = 0
        parallel = self._pimc.threaded()
        # a scripted bot plays plies 1..depth of every line in one kernel call (the same moves as ply by ply)
        plies_at_once = isinstance(self._bot, ScriptedBot)
        while True:  # ply 0 is the candidate, plies 1..depth the rollout policy's, then on to the stop
            res = core.step(st, actions, parallel=parallel)
            self._pimc.score_finished(res, live, me, outcome)
            keep = np.flatnonzero(st.current_player >= 0)
            if keep.size < len(live):
                st, live = take(st, keep), live[keep]
            if ply == 0 and plies_at_once and self.depth > 0 and live.size:
                ended, rows = play_plies(self._bot, st, self.depth, parallel=parallel)
                done = np.flatnonzero(ended > 0)
                if done.size:
                    self._pimc.score_finished(core.result_from_rows(rows[done], self.rules), live[done], me, outcome)
                    keep = np.flatnonzero(ended < 0)
                    st, live = take(st, keep), live[keep]
                ply = self.depth
            if ply >= self.depth and live.size:
                stop = leaf_stops(st.current_player, me[live], S)
                if stop.any():  # the critic reads these positions (one forward pass for all, below)
                    rows = np.flatnonzero(stop)
                    at = st if rows.size == len(live) else take(st, rows)
                    leaves.append((live[rows], state_obs(at, with_view=False, blocks=blocks)["observation"],
                                   critic_state(at) if crit_dim else None,
                                   np.asarray(at.current_player, dtype=np.int64)))
                    if rows.size < len(live):
                        rest = np.flatnonzero(~stop)
                        st, live = take(st, rest), live[rest]
                    else:
                        live = live[:0]
            if not live.size:
                break
            actions = self._net_state_policy(st) if self._bot is None else self._bot.act_state(st, parallel=parallel)
            ply += 1
        if not leaves:
            return outcome
        games = np.concatenate([lf[0] for lf in leaves])
        obs = torch.from_numpy(np.concatenate([lf[1] for lf in leaves]))
        crit = torch.from_numpy(np.concatenate([lf[2] for lf in leaves])) if crit_dim else None
        mover = np.concatenate([lf[3] for lf in leaves])
        with torch.no_grad():
            v = self.net.policy.state_value(obs, crit).cpu().numpy().astype(np.float64)
        mine = mover % S == me[games] % S
        outcome[games] = np.where(mine, v, -v) / self.value_scale  # -v: two sides only (leaf_stops)
        return outcome

    def _rollout_net(self, st: Any, first: np.ndarray, me: np.ndarray) -> np.ndarray:
        """As :meth:`agents.pimc.PIMCAgent.rollout`, every seat played by the network's most probable move."""

        class _Net:
            def act_state(_self, state: Any, parallel: bool = False) -> np.ndarray:  # noqa: N805, ARG002 - an adapter
                return self._net_state_policy(state)

        saved = self._pimc.policy
        self._pimc.policy = _Net()
        try:
            return self._pimc.rollout(st, first, me, np.random.default_rng(0))
        finally:
            self._pimc.policy = saved


def leaf_stops(current_player: np.ndarray, me: np.ndarray, num_sides: int) -> np.ndarray:
    """bool[G]: the lines of critic leaves that stop here (``depth`` plies played) and are read by the critic.

    Args:
        current_player: int[G], the seat to move in each line (a deal that goes on: >= 0).
        me: int[G], the searching seat of each line.
        num_sides: the rules' sides (:attr:`cassino_env.rules.RuleSet.num_sides`; seat s is on side s % num_sides).

    Returns:
        with two sides every line (the critic's value for the seat to move is either side's, up to the sign); with
        more, the lines where a seat of the side of ``me`` is to move, the only seats whose value is the searcher's.
    """
    cp = np.asarray(current_player, dtype=np.int64)
    if num_sides == 2:
        return np.ones(cp.shape, dtype=bool)
    return cp % num_sides == np.asarray(me, dtype=np.int64) % num_sides


def parse_search_arg(arg: str) -> tuple[str, int | None]:
    """Split the argument of ``search:SPEC[:BUDGET]`` into the network's spec and the budget (None: default).

    The budget is a trailing ``:N`` of ASCII digits. Raises :class:`SearchSpecError` for an empty SPEC.
    """
    text = arg.strip()
    head, sep, tail = text.rpartition(":")
    budget = None
    if sep and tail and tail.isascii() and tail.isdigit():
        # a budget longer than the cap's digits is out of range before int() reads it (Python refuses to read
        # integers of more than 4,300 digits, with a plain ValueError)
        budget = int(tail) if len(tail.lstrip("0")) <= len(str(MAX_SIMULATIONS)) else MAX_SIMULATIONS + 1
        text = head.strip()
        if not 1 <= budget <= MAX_SIMULATIONS:
            raise SearchSpecError(f"search:SPEC:N needs a budget 1..{MAX_SIMULATIONS} rollouts per decision, got "
                                  f"{tail[:20]!r}")
    elif sep and tail and head.partition(":")[0] in ("pretrained", "checkpoint", "policy") and tail.strip() == "":
        raise SearchSpecError(f"search:SPEC:N: empty budget in {arg!r:.60}")
    if not text:
        raise SearchSpecError("search needs a network: search:SPEC[:N] (e.g. search:pretrained:classic)")
    if text.partition(":")[0] not in ("pretrained", "checkpoint", "policy"):
        raise SearchSpecError(f"search:SPEC[:N]: SPEC is a trained network (pretrained:NAME, checkpoint:PATH or "
                              f"policy:SPEC), got {text[:60]!r}")
    return text, budget


def make_search_agent(rules: RuleSet, arg: str, make_net: Callable[[str, RuleSet], Agent], name: str | None = None,
                      **options: Any) -> SearchAgent:
    """The agent of spec ``search:ARG`` (``ARG`` = ``SPEC[:BUDGET]``); ``options`` go to :class:`SearchAgent`.

    ``make_net(SPEC, rules)`` builds the network it wraps: the agent table's :func:`agents.registry.make_agent`,
    which passes itself (the table builds the agents; this module never looks names up in it).
    """
    spec, budget = parse_search_arg(arg)
    net = make_net(spec, rules)
    if budget is not None:
        options["simulations"] = budget
    return SearchAgent(rules, net, name=name, **options)
