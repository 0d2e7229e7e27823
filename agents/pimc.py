"""PIMC: flat Monte Carlo over determinisations (perfect-information Monte Carlo over sampled hidden cards).

The ``pimc`` agent (``ismcts`` is an alias kept from its first name; it builds no tree, so it is not ISMCTS).

For each decision the agent samples K deals of the cards it has not seen, consistent with what its seat knows
(:func:`cassino_env.determinize.determinize`), and in every sample plays each legal move followed by a rollout to
the end of the deal, every seat playing a scripted policy (``advanced`` by default, :mod:`agents.bots`). All
``K x legal moves`` rollouts of all the games it is asked about run together as one batched core state, stepped by
:func:`cassino_env.core.step`. It plays the move with the best mean outcome over the samples (the first of ties).
Every move is evaluated on the same samples (common random numbers), so differences between moves are not
blurred by the luck of the deal.

The outcome of a rollout, for the searching seat's side, is its deal points minus the mean deal points of the other
sides (docs/rules.md 5), plus ``match_bonus`` points if the deal ends the match in its side's favour (minus if against).

Budget: ``simulations`` rollouts per decision, spread evenly over the legal moves (``K = ceil(simulations /
moves)``, at least ``min_samples``). A decision with one legal move is not searched. The default budget
(:data:`DEFAULT_SIMULATIONS`) keeps a decision under one second on the project's 2-core development machine, one
thread: measured over 100 decisions of a two-player classic deal, 0.21 s mean, 0.45 s at most (greedy rollouts
are about 40% cheaper and much weaker). Rollouts step every game of a batch together, so a batch of B decisions
costs far less than B single decisions.

This is "PIMC": it searches each sample as if the cards were known, so it can overrate moves whose value depends
on information it would not have (strategy fusion); the rollout policy sees only each seat's own knowledge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.base import MAX_SIMULATIONS, slice_obs
from agents.bots import RandomBot, make_bot
from cassino_env import core
from cassino_env.determinize import determinize, moves_of, take
from cassino_env.rules import RuleSet

#: Rollouts per decision of ``pimc`` (docs/evaluation.md reports the measured time per decision).
DEFAULT_SIMULATIONS = 4000


class PIMCAgent:
    """Flat Monte Carlo over determinisations as an :class:`agents.base.Agent` (see the module docstring).

    Args:
        rules: the rules it plays.
        simulations: rollouts per decision, spread over the legal moves.
        min_samples: at least this many sampled deals per decision.
        rollout: the rollout policy, a scripted bot name (``greedy``, ``beginner``, ...; ``random``).
        match_bonus: points added to (subtracted from) a rollout that ends the match won (lost).
        max_games: rollouts stepped together; larger batches are split (memory: about 6 kB per game).
        name: the agent's name in tables.
        parallel: step the rollouts (the rules core and the scripted bot's choice) over numba's threads; None (the
            default): when called from the main thread where numba has more than one (:func:`numba.get_num_threads`
            of the calling thread, read at each rollout: ``NUMBA_NUM_THREADS`` for the process, or
            :func:`numba.set_num_threads` in that thread), and never from another thread (``cassino serve`` plays
            several games' moves at once on worker threads; numba's ``workqueue`` layer aborts the process when two
            threads run parallel code together, and the others would oversubscribe the cores). Either way the same
            moves and outcomes (the games are independent).

    Raises:
        ValueError: ``simulations`` is outside 1..MAX_SIMULATIONS, or ``parallel`` is not None, True or False.
    """

    def __init__(self, rules: RuleSet, simulations: int = DEFAULT_SIMULATIONS, min_samples: int = 8,
                 rollout: str = "advanced", match_bonus: float = 10.0, max_games: int = 16384,
                 name: str | None = None, parallel: bool | None = None) -> None:
        if isinstance(simulations, bool) or not isinstance(simulations, int | np.integer) \
                or not 1 <= simulations <= MAX_SIMULATIONS:
            raise ValueError(f"simulations must be an integer 1..{MAX_SIMULATIONS} (agents.base.MAX_SIMULATIONS: "
                             f"rollouts per decision are stepped as one batch), got {simulations!r:.40}")
        self.rules = rules
        self.simulations = int(simulations)
        self.min_samples = int(min_samples)
        self.policy = make_bot(rollout, rules)
        self.match_bonus = float(match_bonus)
        self.max_games = int(max_games)
        self.parallel = checked_parallel(parallel)
        self.name = name or ("pimc" if simulations == DEFAULT_SIMULATIONS else f"pimc:{simulations}")

    # -- Agent protocol ------------------------------------------------------------------------------------------
    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        """int64[B]: the searched move per game."""
        mask = np.asarray(obs["action_mask"]) != 0
        B = len(mask)
        out = np.zeros(B, dtype=np.int64)
        if B == 0:
            return out
        if "view" not in obs:
            raise ValueError(f"{self.name} reads obs['view']: create the environment with with_view=True")
        n = mask.sum(axis=1).astype(np.int64)
        rows = np.flatnonzero(n > 1)
        out[n == 1] = np.argmax(mask[n == 1], axis=1)
        if rows.size == 0:
            return out
        ks = np.maximum(self.min_samples, np.ceil(self.simulations / n[rows]).astype(np.int64))
        games = ks * n[rows]
        start = 0
        while start < rows.size:  # chunks of rows whose rollouts fit max_games
            stop = start + 1
            total = games[start]
            while stop < rows.size and total + games[stop] <= self.max_games:
                total += games[stop]
                stop += 1
            chunk = rows[start:stop]
            out[chunk] = self._search(slice_obs(obs, chunk), ks[start:stop], n[chunk], rng)
            start = stop
        return out

    # -- search --------------------------------------------------------------------------------------------------
    def move_values(self, obs: dict[str, Any], rng: np.random.Generator) -> list[np.ndarray]:
        """Mean rollout outcome (points) of every legal move of every game, for inspection: a list of float64[n_b]."""
        mask = np.asarray(obs["action_mask"]) != 0
        n = mask.sum(axis=1).astype(np.int64)
        ks = np.maximum(self.min_samples, np.ceil(self.simulations / n).astype(np.int64))
        _, values = self._run(obs, ks, n, rng)
        return values

    def _search(self, obs: dict[str, Any], ks: np.ndarray, n: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        best, _ = self._run(obs, ks, n, rng)
        return best

    def _run(self, obs: dict[str, Any], ks: np.ndarray, n: np.ndarray, rng: np.random.Generator
             ) -> tuple[np.ndarray, list[np.ndarray]]:
        rules = self.rules
        view = obs["view"]
        det = determinize(rules, view, moves_of(obs), ks, rng)
        # game (row r, sample k, move i): a copy of sample (r, k) that plays move i first
        sample_start = np.concatenate([[0], np.cumsum(ks)[:-1]])
        idx, first, row_of, move_of = [], [], [], []
        for r in range(len(ks)):
            k, m = int(ks[r]), int(n[r])
            idx.append(np.repeat(sample_start[r] + np.arange(k), m))
            first.append(np.tile(np.arange(m), k))
            row_of.append(np.full(k * m, r))
            move_of.append(np.tile(np.arange(m), k))
        idx_a = np.concatenate(idx)
        st = take(det, idx_a)
        actions = np.concatenate(first).astype(np.int64)
        row_a = np.concatenate(row_of)
        move_a = np.concatenate(move_of)
        me = np.asarray(view["viewer"]).astype(np.int64)[row_a]
        outcome = self.rollout(st, actions, me, rng)
        best = np.zeros(len(ks), dtype=np.int64)
        values = []
        for r in range(len(ks)):
            sel = row_a == r
            sums = np.bincount(move_a[sel], weights=outcome[sel], minlength=int(n[r]))
            mean = sums / ks[r]
            values.append(mean)
            best[r] = int(np.argmax(mean))
        return best, values

    def score_finished(self, res: Any, live: np.ndarray, me: np.ndarray, outcome: np.ndarray) -> None:
        """Write into ``outcome`` (float64[G]) the result of every game whose deal a step just ended: the side of seat
        ``me[g]``'s deal points minus the other sides' mean, plus or minus ``match_bonus`` if the deal ends the match.

        Args:
            res: the step's result (:func:`cassino_env.core.step`), one row per stepped game.
            live: int64[R], the original game index of each stepped row.
            me: int64[G], the searching seat of every original game.
            outcome: float64[G], written at the finished games only.
        """
        S = self.rules.num_sides
        done = np.flatnonzero(res.deal_done)
        if done.size:
            g = live[done]
            mine = me[g] % S
            tot = res.deal_totals[done].astype(np.float64)
            my_pts = tot[np.arange(done.size), mine]
            others = (tot.sum(axis=1) - my_pts) / max(S - 1, 1)
            won = np.where(res.match_done[done], np.where(res.match_winner[done] == mine, 1.0, -1.0), 0.0)
            outcome[g] = my_pts - others + self.match_bonus * won

    def rollout(self, st: core.State, first: np.ndarray, me: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Play ``first`` then the rollout policy to the end of the deal in every game (public: the network-guided
        search of :mod:`agents.search` plays its rollouts through it).

        Args:
            st: G games (a :class:`cassino_env.core.State` with batch size G), each before its first move.
            first: int64[G], the first move (action id) of each game.
            me: int64[G], the seat whose side's outcome is returned.
            rng: used only by a ``random`` rollout policy.

        Returns:
            float64[G]: the side of seat ``me[g]``'s deal points minus the other sides' mean, plus or minus
            ``match_bonus`` if the deal ends the match (points)."""
        G = st.batch_size
        outcome = np.zeros(G, dtype=np.float64)
        live = np.arange(G)  # original game index of each game of st
        actions = first
        counters = rng.integers(0, 2**63, size=G, dtype=np.int64).astype(np.uint64)  # random rollouts only
        parallel = self.threaded()
        while True:
            res = core.step(st, actions, parallel=parallel)
            self.score_finished(res, live, me, outcome)
            alive = st.current_player >= 0
            if not alive.any():
                return outcome
            if alive.mean() < 0.5:  # drop finished games so the rollout steps only live ones
                keep = np.flatnonzero(alive)
                st = take(st, keep)
                live = live[keep]
                counters = counters[keep]
            if isinstance(self.policy, RandomBot):
                actions = core.random_actions(st, counters)  # advances the counters in place
            else:
                actions = self.policy.act_state(st, parallel=parallel)

    def threaded(self) -> bool:
        """Whether the rollouts step over numba's threads now (``parallel``; when None: on the main thread where numba
        has more than one)."""
        if self.parallel is not None:
            return self.parallel
        import threading

        import numba

        return threading.current_thread() is threading.main_thread() and numba.get_num_threads() > 1


def checked_parallel(parallel: object, error: type[ValueError] = ValueError) -> bool | None:
    """``parallel`` as None, True or False (numpy booleans accepted); anything else raises ``error`` naming it."""
    if parallel is None or isinstance(parallel, bool | np.bool_):
        return None if parallel is None else bool(parallel)
    raise error(f"parallel must be None, True or False, got {parallel!r:.40}")


#: The agent's first name, kept so code written against it runs (it is PIMC, not ISMCTS: it builds no tree).
ISMCTSAgent = PIMCAgent
