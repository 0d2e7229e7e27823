"""Evaluate agents against each other in duplicate format: win rates with 95% intervals, point margins, ratings.

Every pair of agents plays the same seeded deals with the seats swapped, as DouZero evaluates (duplicate bridge's
idea: the luck of the cards cancels out). The unit of duplicate play is a **board**: one seed, played as one match
to the target (RULES.md 2.6) in every *seat arrangement* of the pair. Arrangements give each side (a seat, or a
partnership whose partners are the same agent) to agent A or B, every assignment in which both play: 2 with two
players or two partnerships (A-B, B-A), 6 with three players (ABB, BAB, BBA, BAA, ABA, AAB). Match ``m`` of a seed
always deals the same deck sequence, so a board's matches see the same cards in every arrangement, deal for deal.

``deals`` is a budget: boards 0, 1, 2, … (board ``i`` of seed ``s`` is core seed ``s * 2**32 + i``, the same for
every pair) are played in waves through :class:`cassino_env.vector.CassinoVectorEnv` until the pair has played at
least that many deals, counting all arrangements. Results are a pure function of the agents, the rules, ``deals``,
``seed`` and ``batch_games``.

Per pair (A, B):

* **match win rate** of A: matches won by a side that A plays, with a Wilson 95% interval.
* **deal win rate** of A: deals in which A's side scored most (a tie between A and B at the top counts half), with a
  Wilson 95% interval (the score interval also holds for the half-counted ties).
* **mean margin** of A: A's points minus B's points per deal (mean over A's sides minus mean over B's sides), with a
  95% interval from the spread of board totals (deals of one board are not independent).

**Sessions** (seed 004's match format, RULES.md 6; :mod:`cassino_env.session`): with ``session_wins = N`` each
game of a board plays matches until a side has won N of them (N = 1, 2 or 3), and the report adds the **session
win rate** of A (sessions won by a side A plays, Wilson 95% interval); match and deal figures then count every match
of the sessions. Match ``m`` of a board deals the same cards in every arrangement, so sessions stay duplicate.
``N = 1`` (the default) is one match per game: the session figures equal the match figures.

The **presets**: every preset of RULES.md 6 at any player count it allows (``--preset``, ``--num-players``);
``ladder`` in the agent list stands for the bot ladder :data:`agents.registry.LADDER`. Seeds are 0 .. 2**31 - 1
(a board's core seed is ``seed * 2**32 + board``, an int64); others are rejected with an error that says so, never
wrapped (two seeds would silently share their boards).

Intervals treat matches (deals) as independent; duplicate pairs are negatively correlated, so they are a little
conservative. **Ratings**: a Bradley-Terry fit of all match results (maximum likelihood, ``scipy.optimize``) on the
Elo scale, mean 1500, with one virtual drawn match per pair so that a perfect score stays finite; and OpenSkill
(Plackett-Luce, the ``openskill`` library) updated match by match in a fixed round-robin order.

Command line: ``cassino eval --agents random,greedy,advanced --deals 2000`` or
``cassino eval --agents checkpoint:runs/x/final.pt,ladder --preset cicera --session-wins 2`` (see :func:`main`).
"""

from __future__ import annotations

import csv
import io
import itertools
import json as json_module
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, slice_obs
from agents.registry import expand_specs
from cassino_env.rules import RuleSet
from cassino_env.session import SessionBatch, check_session_wins

Z95 = 1.959963984540054  # two-sided 95% normal quantile, scipy.stats.norm.ppf(0.975)
#: Deals a board is guessed to take (all arrangements together, per arrangement) before any has been played.
FIRST_GUESS_DEALS_PER_MATCH = 4.5
#: Elo points per natural log-odds unit: P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400)).
ELO_SCALE = 400.0 / math.log(10.0)
#: Evaluation seeds: a board's core seed ``seed * 2**32 + board`` must fit an int64, and the seed also seeds numpy
#: generators, which take non-negative integers.
SEED_MIN, SEED_MAX = 0, 2**31 - 1
#: Boards per seed: board indices fill the low 32 bits of the core seed.
MAX_BOARDS = 2**32


# --- statistics ---------------------------------------------------------------------------------------------------


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; ``successes`` may be fractional (half-counted ties).

    >>> [round(x, 4) for x in wilson_interval(7, 10)]
    [0.3968, 0.8922]
    """
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def ratio_interval(totals: np.ndarray, counts: np.ndarray, z: float = Z95) -> tuple[float, float, float]:
    """Mean ``sum(totals) / sum(counts)`` with a 95% interval treating the (total, count) clusters as the
    independent units (the usual cluster-robust ratio estimator).

    >>> [round(x, 3) for x in ratio_interval(np.array([2.0, 4.0]), np.array([1.0, 1.0]))]
    [3.0, 1.04, 4.96]
    """
    totals = np.asarray(totals, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    n, d = len(totals), counts.sum()
    if n == 0 or d <= 0:
        return (0.0, 0.0, 0.0)
    mean = float(totals.sum() / d)
    if n < 2:
        return (mean, -math.inf, math.inf)
    resid = totals - mean * counts
    se = math.sqrt(float((resid ** 2).sum()) * n / (n - 1)) / float(d)
    return (mean, mean - z * se, mean + z * se)


def bradley_terry_elo(wins: np.ndarray, virtual_draws: float = 0.5, mean: float = 1500.0) -> np.ndarray:
    """Bradley-Terry ratings on the Elo scale from a win matrix (``wins[i, j]``: matches i won against j).

    Maximum likelihood by ``scipy.optimize.minimize``; ``virtual_draws`` half-wins are added each way to every
    pair that played, so that an agent that won every match gets a finite rating. Ratings average ``mean``.

    >>> r = bradley_terry_elo(np.array([[0, 3], [1, 0]]), virtual_draws=0)
    >>> round(float(r[0] - r[1]), 2)  # 400 log10(3)
    190.85
    """
    from scipy.optimize import minimize

    w = np.asarray(wins, dtype=np.float64).copy()
    n = w.shape[0]
    played = (w + w.T) > 0
    w = w + virtual_draws * played
    if n < 2:
        return np.full(n, mean)

    def nll(x: np.ndarray) -> tuple[float, np.ndarray]:
        r = np.concatenate([[0.0], x])
        d = r[:, None] - r[None, :]
        # -sum w_ij log sigmoid(r_i - r_j)
        loss = float((w * np.logaddexp(0.0, -d)).sum())
        g_mat = w * (1.0 / (1.0 + np.exp(d)))  # d(-log sig(d))/dd = -sigmoid(-d)
        grad = -g_mat.sum(axis=1) + g_mat.sum(axis=0)
        return loss, grad[1:]

    res = minimize(nll, np.zeros(n - 1), jac=True, method="L-BFGS-B")
    r = np.concatenate([[0.0], res.x]) * ELO_SCALE
    return r - r.mean() + mean


def openskill_ratings(names: Sequence[str], results: Sequence[tuple[int, int]]) -> dict[str, dict[str, float]]:
    """OpenSkill Plackett-Luce ratings from ``(winner, loser)`` agent indices, applied in the given order.

    Returns ``{name: {"mu", "sigma", "ordinal"}}`` (ordinal = mu - 3 sigma).
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating(name=n) for n in names]
    for win, lose in results:
        [[a], [b]] = model.rate([[ratings[win]], [ratings[lose]]])
        ratings[win], ratings[lose] = a, b
    return {n: {"mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal()} for n, r in zip(names, ratings, strict=True)}


# --- playing a pair -----------------------------------------------------------------------------------------------


def arrangements(rules: RuleSet) -> list[tuple[int, ...]]:
    """Seat arrangements of a pair: per side, 0 for agent A or 1 for agent B; every assignment using both.

    >>> from cassino_env.rules import make_rules
    >>> arrangements(make_rules("classic", 2)), len(arrangements(make_rules("classic", 3)))
    ([(0, 1), (1, 0)], 6)
    >>> arrangements(make_rules("classic", 4))  # partnerships 0+2 and 1+3
    [(0, 1), (1, 0)]
    """
    S = rules.num_sides
    return [a for a in itertools.product((0, 1), repeat=S) if 0 < sum(a) < S]


def seat_agents(rules: RuleSet) -> np.ndarray:
    """int64[arrangements, P]: the agent (0 A, 1 B) in each seat, per arrangement; a side's seats share an agent.

    >>> from cassino_env.rules import make_rules
    >>> seat_agents(make_rules("cicera", 4)).tolist()  # partners 0+2 and 1+3 are the same agent
    [[0, 1, 0, 1], [1, 0, 1, 0]]
    """
    arr = np.array(arrangements(rules), dtype=np.int64)
    return arr[:, np.arange(rules.num_players) % rules.num_sides]


def check_seed(seed: int) -> int:
    """``seed`` as an int if it is a valid evaluation seed (:data:`SEED_MIN` .. :data:`SEED_MAX`).

    >>> check_seed(2**31)
    Traceback (most recent call last):
    ...
    ValueError: seed 2147483648 is out of range: evaluation seeds are 0..2147483647 (...)
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if not SEED_MIN <= int(seed) <= SEED_MAX:
        raise ValueError(f"seed {seed} is out of range: evaluation seeds are {SEED_MIN}..{SEED_MAX} (board b of seed "
                         "s is the core seed s * 2**32 + b, an int64)")
    return int(seed)


def board_seed(seed: int, board: int) -> int:
    """Core seed of board ``board`` of an evaluation seeded ``seed`` (the same for every pair).

    >>> board_seed(1, 5), board_seed(2**31 - 1, 2**32 - 1) == 2**63 - 1
    (4294967301, True)

    Raises:
        ValueError: a seed out of :func:`check_seed`'s range or a board outside ``0 .. 2**32 - 1``.
    """
    if not 0 <= int(board) < MAX_BOARDS:
        raise ValueError(f"board {board} is out of range 0..{MAX_BOARDS - 1} (a board fills the low 32 bits of its "
                         "core seed)")
    return (check_seed(seed) << 32) + int(board)


@dataclass
class PairRecord:
    """Raw results of one pair, one entry per board (all its arrangements)."""

    match_wins_a: list[int] = field(default_factory=list)  # matches A won on the board
    matches: list[int] = field(default_factory=list)  # matches played on the board (= arrangements)
    deals: list[int] = field(default_factory=list)  # deals played on the board
    deal_wins_a: list[float] = field(default_factory=list)  # deals A won (ties at the top split)
    margin_a: list[float] = field(default_factory=list)  # sum over deals of A's points minus B's
    results: list[tuple[int, int, int]] = field(default_factory=list)  # per match, in order: (board, arrangement,
    # winner 0 A / 1 B)
    sessions: list[int] = field(default_factory=list)  # sessions played on the board (= arrangements)
    session_wins_a: list[int] = field(default_factory=list)  # sessions A won on the board
    seconds: float = 0.0


def _check_actions(actions: np.ndarray, obs: dict[str, Any], rows: np.ndarray, name: str) -> None:
    a = np.asarray(actions)
    if a.shape != rows.shape:
        raise RuntimeError(f"agent {name!r} returned {a.shape} actions for {rows.size} games")
    mask = obs["action_mask"][rows]
    ok = (a >= 0) & (a < mask.shape[1])
    ok[ok] = mask[np.flatnonzero(ok), a[ok]] != 0
    if not ok.all():
        g = int(rows[np.flatnonzero(~ok)[0]])
        raise RuntimeError(f"agent {name!r} played an illegal move index in game {g}")


def play_boards(agent_a: Agent, agent_b: Agent, rules: RuleSet, seed: int, first_board: int, num_boards: int,
                rng: np.random.Generator, record: PairRecord, progress: Any = None, check_legal: bool = True,
                session_wins: int = 1) -> int:
    """Play boards ``first_board .. first_board + num_boards - 1`` of a pair in every arrangement, in one batch,
    and append them to ``record``; returns the deals played.

    Each game plays one session from its board's seed: matches 0, 1, … until a side has won ``session_wins`` of
    them (one match when it is 1); a finished game steps on with greedy moves (its results are no longer counted;
    greedy keeps the table small, where always trailing would grow it until move generation slows down) until the
    batch is done. ``progress``: an object with ``update(deals)`` (a tqdm bar), or None.
    """
    from agents.bots import make_bot
    from cassino_env import core
    from cassino_env.vector import CassinoVectorEnv

    filler = make_bot("greedy", rules)

    arr = arrangements(rules)
    A, S = len(arr), rules.num_sides
    G = num_boards * A
    seeds = np.repeat([board_seed(seed, first_board + i) for i in range(num_boards)], A).astype(np.int64)
    side_agent = np.tile(np.array(arr, dtype=np.int64), (num_boards, 1))  # [G, S]: 0 = A, 1 = B
    seat_agent = np.tile(seat_agents(rules), (num_boards, 1))  # [G, P]
    env = CassinoVectorEnv(G, rules, episode="match", reward="win", with_view=True)
    # Boards repeat their seed across arrangements: start every game from its own seed (reset seeds them seed + b).
    env.state = core.init(rules, seeds, max_moves=env.max_moves, prune=env.prune)
    obs = env.observe()
    active = np.ones(G, dtype=bool)
    n_deals = np.zeros(G, dtype=np.int64)
    deal_wins = np.zeros(G, dtype=np.float64)
    margin = np.zeros(G, dtype=np.float64)
    match_wins_a = np.zeros(G, dtype=np.int64)
    matches = np.zeros(G, dtype=np.int64)
    results: list[list[int]] = [[] for _ in range(G)]  # per game: the winning agent (0 A / 1 B) of each match
    sessions = SessionBatch(G, S, session_wins)
    is_a = side_agent == 0  # [G, S]
    n_a = is_a.sum(axis=1)
    n_b = S - n_a
    agents = (agent_a, agent_b)
    gidx = np.arange(G)
    while active.any():
        who = seat_agent[gidx, np.maximum(obs["current_player"].astype(np.int64), 0)]
        actions = np.zeros(G, dtype=np.int64)
        for k, agent in enumerate(agents):
            rows = np.flatnonzero(active & (who == k))
            if rows.size:
                act = np.asarray(agent.act(slice_obs(obs, rows), rng), dtype=np.int64)
                if check_legal:
                    _check_actions(act, obs, rows, getattr(agent, "name", str(k)))
                actions[rows] = act
        idle = np.flatnonzero(~active)
        if idle.size:
            actions[idle] = filler.act(slice_obs(obs, idle), rng)
        obs, _, _, _, info = env.step(actions)
        res = info["result"]
        done = res.deal_done & active
        if done.any():
            tot = res.deal_totals[done].astype(np.float64)  # [d, S]
            ia = is_a[done]
            a_pts = np.where(ia, tot, 0.0).sum(axis=1) / n_a[done]
            b_pts = np.where(~ia, tot, 0.0).sum(axis=1) / n_b[done]
            top = tot == tot.max(axis=1, keepdims=True)
            deal_wins[done] += (top & ia).sum(axis=1) / top.sum(axis=1)
            margin[done] += a_pts - b_pts
            n_deals[done] += 1
            if progress is not None:
                progress.update(int(done.sum()))
        ended = res.match_done & active
        if ended.any():
            rows = np.flatnonzero(ended)
            side = res.match_winner[rows].astype(np.int64)
            agent_won = side_agent[rows, side]
            match_wins_a[rows] += agent_won == 0
            matches[rows] += 1
            for g, w in zip(rows.tolist(), agent_won.tolist(), strict=True):
                results[g].append(w)
            sessions.record(rows, side)
            active[rows[sessions.done[rows]]] = False
    session_winner = side_agent[gidx, sessions.winner]  # 0 A / 1 B
    for i in range(num_boards):
        sl = slice(i * A, (i + 1) * A)
        record.match_wins_a.append(int(match_wins_a[sl].sum()))
        record.matches.append(int(matches[sl].sum()))
        record.deals.append(int(n_deals[sl].sum()))
        record.deal_wins_a.append(float(deal_wins[sl].sum()))
        record.margin_a.append(float(margin[sl].sum()))
        record.sessions.append(A)
        record.session_wins_a.append(int((session_winner[sl] == 0).sum()))
        for a in range(A):
            record.results.extend((first_board + i, a, w) for w in results[i * A + a])
    return int(n_deals.sum())


def play_pair(agent_a: Agent, agent_b: Agent, rules: RuleSet, deals: int, seed: int, rng: np.random.Generator,
              batch_games: int = 1024, progress: Any = None, session_wins: int = 1) -> PairRecord:
    """Play boards in waves until the pair has played at least ``deals`` deals (see the module docstring)."""
    A = len(arrangements(rules))
    record = PairRecord()
    t0 = time.perf_counter()
    played, boards = 0, 0
    max_boards = max(1, batch_games // A)
    # a first guess of the matches per session: between N (a whitewash) and max_matches(N)
    first_guess = FIRST_GUESS_DEALS_PER_MATCH * (1.5 * session_wins - 0.5)
    while played < deals:
        per_board = played / boards if boards else A * first_guess
        nb = int(min(max(math.ceil((deals - played) / per_board), 1), max_boards))
        board_seed(seed, boards + nb - 1)  # the whole wave's boards are in range (raises a clear error if not)
        played += play_boards(agent_a, agent_b, rules, seed, boards, nb, rng, record, progress=progress,
                              session_wins=session_wins)
        boards += nb
    record.seconds = time.perf_counter() - t0
    return record


def summarize_pair(name_a: str, name_b: str, rec: PairRecord) -> dict[str, Any]:
    """The per-pair entry of the report (see the module docstring)."""
    matches = int(sum(rec.matches))
    wins = int(sum(rec.match_wins_a))
    deals = int(sum(rec.deals))
    dwins = float(sum(rec.deal_wins_a))
    sessions = int(sum(rec.sessions))
    swins = int(sum(rec.session_wins_a))
    s_lo, s_hi = wilson_interval(swins, sessions)
    m_lo, m_hi = wilson_interval(wins, matches)
    d_lo, d_hi = wilson_interval(dwins, deals)
    mean, g_lo, g_hi = ratio_interval(np.array(rec.margin_a), np.array(rec.deals))
    return {
        "a": name_a, "b": name_b, "boards": len(rec.matches), "matches": matches, "match_wins_a": wins,
        "match_win_rate_a": wins / matches if matches else 0.0, "match_ci_low": m_lo, "match_ci_high": m_hi,
        "deals": deals, "deal_wins_a": dwins, "deal_win_rate_a": dwins / deals if deals else 0.0,
        "deal_ci_low": d_lo, "deal_ci_high": d_hi, "mean_margin_a": mean,
        "margin_ci_low": g_lo if math.isfinite(g_lo) else None,  # None: one board, no spread to measure
        "margin_ci_high": g_hi if math.isfinite(g_hi) else None, "seconds": rec.seconds,
        "deals_per_minute": 60.0 * deals / rec.seconds if rec.seconds > 0 else 0.0,
        "sessions": sessions, "session_wins_a": swins, "session_win_rate_a": swins / sessions if sessions else 0.0,
        "session_ci_low": s_lo, "session_ci_high": s_hi,
    }


# --- the whole evaluation -----------------------------------------------------------------------------------------


def _unique_names(names: Sequence[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        k, cand = 2, n
        while cand in out:
            cand = f"{n}#{k}"
            k += 1
        out.append(cand)
    return out


def evaluate(agent_specs: Sequence[str | Agent], rules: RuleSet | str = "classic", deals: int = 1000,
             seed: int = 0, *, num_players: int | None = None, batch_games: int = 1024, versus_first: bool = False,
             progress: bool = False, session_wins: int = 1) -> dict[str, Any]:
    """Play every pair of agents in duplicate format and summarise (see the module docstring).

    Args:
        agent_specs: two or more agents: specs for :func:`agents.registry.make_agent` (``"greedy"``,
            ``"pimc:200"``, ``"checkpoint:runs/x/final.pt"``), ``"ladder"`` (:data:`agents.registry.LADDER`) or Agent
            objects (named by their ``name``).
        rules: a RuleSet or a preset name (any preset of RULES.md 6).
        deals: deal budget per pair (at least this many deals, all arrangements together).
        seed: the seed of the boards, :data:`SEED_MIN` .. :data:`SEED_MAX`; equal seeds give equal reports.
        num_players: seats, when ``rules`` is a preset name.
        batch_games: games stepped together (boards times arrangements per wave).
        versus_first: play only the pairs that include the first agent (a new agent against a ladder); the
            ratings still place every agent, through their results against the first.
        progress: show a tqdm progress bar of deals on stderr.
        session_wins: N of seed 004's session format, 1, 2 or 3: each game plays matches until a side has won N
            (:mod:`cassino_env.session`); 1 is one match.

    Returns:
        ``{"rules", "num_players", "seed", "deals", "session_wins", "agents", "pairs": [...], "ratings": {name: Elo},
        "openskill": {name: {"mu", "sigma", "ordinal"}}, "win_matrix": [[...]], "seconds",
        "deals_per_minute"}``; each pair entry has ``a``, ``b``, ``matches``, ``match_win_rate_a``,
        ``match_ci_low``, ``match_ci_high``, ``deal_win_rate_a``, ``deal_ci_low``, ``deal_ci_high``,
        ``mean_margin_a`` (points per deal), ``margin_ci_low``, ``margin_ci_high``, ``deals``, ``boards``,
        ``sessions``, ``session_wins_a``, ``session_win_rate_a``, ``session_ci_low``, ``session_ci_high``. Ratings
        are fitted to the match results.

    Raises:
        ValueError: fewer than two agents, a deal budget below 1 or a seed out of range.
        agents.registry.AgentSpecError: an unknown agent spec.
        cassino_env.errors.CassinoError: an unknown preset, a player count it does not allow, a bad session length.
    """
    from agents.registry import make_agent
    from cassino_env.vector import resolve_rules

    rules = resolve_rules(rules, num_players)
    seed = check_seed(seed)
    session_wins = check_session_wins(session_wins)
    agent_specs = expand_specs(agent_specs)
    if len(agent_specs) < 2:
        raise ValueError("evaluation needs at least two agents")
    if deals < 1:
        raise ValueError(f"deals must be at least 1, got {deals}")
    agents = [make_agent(s, rules) if isinstance(s, str) else s for s in agent_specs]
    names = _unique_names([s.strip() if isinstance(s, str) and not s.startswith("checkpoint:") else a.name
                           for s, a in zip(agent_specs, agents, strict=True)])
    pairs = ([(0, j) for j in range(1, len(agents))] if versus_first
             else list(itertools.combinations(range(len(agents)), 2)))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=deals * len(pairs), unit="deal", desc="eval", file=sys.stderr, dynamic_ncols=True)
    t0 = time.perf_counter()
    entries, records = [], []
    wins = np.zeros((len(agents), len(agents)))
    for k, (i, j) in enumerate(pairs):
        if bar is not None:
            bar.set_postfix_str(f"{names[i]} vs {names[j]}")
        rng = np.random.default_rng([seed, k])
        rec = play_pair(agents[i], agents[j], rules, deals, seed, rng, batch_games=batch_games, progress=bar,
                        session_wins=session_wins)
        records.append(rec)
        entry = summarize_pair(names[i], names[j], rec)
        entries.append(entry)
        wins[i, j] += entry["match_wins_a"]
        wins[j, i] += entry["matches"] - entry["match_wins_a"]
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - t0
    elo = bradley_terry_elo(wins)
    # OpenSkill: matches in a fixed round-robin order: board by board, pair by pair, arrangement by arrangement.
    order = []
    for k, rec in enumerate(records):
        i, j = pairs[k]
        for n, (board, _arr_i, w) in enumerate(rec.results):
            order.append((board, k, n, (i, j) if w == 0 else (j, i)))
    order.sort(key=lambda x: x[:3])
    skill = openskill_ratings(names, [x[3] for x in order])
    matrix = [[None if i == j else (wins[i, j] / (wins[i, j] + wins[j, i]) if wins[i, j] + wins[j, i] else None)
               for j in range(len(agents))] for i in range(len(agents))]
    total_deals = sum(e["deals"] for e in entries)
    return {
        "rules": rules.preset, "num_players": rules.num_players, "seed": seed, "deals": deals,
        "session_wins": session_wins, "target": rules.target, "agents": names, "pairs": entries,
        "ratings": {n: float(r) for n, r in zip(names, elo, strict=True)},
        "openskill": skill, "win_matrix": matrix, "seconds": seconds,
        "deals_per_minute": 60.0 * total_deals / seconds if seconds > 0 else 0.0,
    }


# --- reports ------------------------------------------------------------------------------------------------------


def _margin(e: dict[str, Any], fmt: str = "{:+.2f}", sep: str = ", ") -> str:
    lo, hi = e["margin_ci_low"], e["margin_ci_high"]
    ci = "n/a" if lo is None or hi is None else fmt.format(lo) + sep + fmt.format(hi)
    return f"{fmt.format(e['mean_margin_a'])} [{ci}]"


def _format(report: dict[str, Any]) -> str:
    """The format line: matches to the target, sessions when N > 1."""
    n = report.get("session_wins", 1)
    target = f" to {report['target']}" if "target" in report else ""
    return f"matches{target}" + (f", sessions of first to {n} match wins" if n > 1 else "")


def format_table(report: dict[str, Any]) -> str:
    """The report as plain-text tables (pairs, then ratings), for the terminal; with sessions (``session_wins``
    above 1) the pair table gains the session columns."""
    sessions = report.get("session_wins", 1) > 1
    lines = [f"{report['rules']} ({report['num_players']} players), {_format(report)}, seed {report['seed']}, "
             f"at least {report['deals']} deals per pair, {report['seconds']:.1f} s "
             f"({report['deals_per_minute']:,.0f} deals/min)", ""]
    wa = max(8, *(len(e["a"]) for e in report["pairs"]))
    wb = max(8, *(len(e["b"]) for e in report["pairs"]))
    s_head = f"{'sessions':>8}  {'session win A [95% CI]':<23}  " if sessions else ""
    head = (f"{'A':<{wa}}  {'B':<{wb}}  {s_head}{'matches':>7}  {'match win A [95% CI]':<23}  {'deals':>6}  "
            f"{'deal win A [95% CI]':<23}  margin A per deal [95% CI]")
    lines += [head, "-" * len(head)]
    for e in report["pairs"]:
        match = f"{e['match_win_rate_a']:6.1%} [{e['match_ci_low']:.1%}, {e['match_ci_high']:.1%}]"
        deal = f"{e['deal_win_rate_a']:6.1%} [{e['deal_ci_low']:.1%}, {e['deal_ci_high']:.1%}]"
        sess = ""
        if sessions:
            sess = f"{e['session_win_rate_a']:6.1%} [{e['session_ci_low']:.1%}, {e['session_ci_high']:.1%}]"
            sess = f"{e['sessions']:>8}  {sess:<23}  "
        lines.append(f"{e['a']:<{wa}}  {e['b']:<{wb}}  {sess}{e['matches']:>7}  {match:<23}  {e['deals']:>6}  "
                     f"{deal:<23}  {_margin(e)}")
    wn = max(8, *(len(n) for n in report["agents"]))
    lines += ["", f"{'agent':<{wn}}  {'Elo (BT)':>8}  {'OpenSkill mu':>12}  {'sigma':>5}", "-" * (wn + 33)]
    for n in sorted(report["agents"], key=lambda n: -report["ratings"][n]):
        sk = report["openskill"][n]
        lines.append(f"{n:<{wn}}  {report['ratings'][n]:>8.0f}  {sk['mu']:>12.2f}  {sk['sigma']:>5.2f}")
    return "\n".join(lines)


def format_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables (README-ready)."""
    sessions = report.get("session_wins", 1) > 1
    lines = [f"{report['rules']}, {report['num_players']} players, {_format(report)}, seed {report['seed']}, at "
             f"least {report['deals']} deals per pair (duplicate: seats swapped on the same deals).", "",
             "| A | B | " + ("sessions | session win A (95% CI) | " if sessions else "")
             + "matches | match win A (95% CI) | deals | deal win A (95% CI) | margin A per deal (95% CI) |",
             "|---|---|" + ("---:|---|" if sessions else "") + "---:|---|---:|---|---|"]
    for e in report["pairs"]:
        sess = (f"{e['sessions']} | {e['session_win_rate_a']:.1%} ({e['session_ci_low']:.1%}–"
                f"{e['session_ci_high']:.1%}) | ") if sessions else ""
        lines.append(f"| {e['a']} | {e['b']} | {sess}{e['matches']} | {e['match_win_rate_a']:.1%} "
                     f"({e['match_ci_low']:.1%}–{e['match_ci_high']:.1%}) | {e['deals']} | "
                     f"{e['deal_win_rate_a']:.1%} ({e['deal_ci_low']:.1%}–{e['deal_ci_high']:.1%}) | "
                     f"{_margin(e, sep=' to ').replace('[', '(').replace(']', ')')} |")
    lines += ["", "| agent | Elo (Bradley–Terry) | OpenSkill μ ± σ |", "|---|---:|---|"]
    for n in sorted(report["agents"], key=lambda n: -report["ratings"][n]):
        sk = report["openskill"][n]
        lines.append(f"| {n} | {report['ratings'][n]:.0f} | {sk['mu']:.2f} ± {sk['sigma']:.2f} |")
    return "\n".join(lines)


CSV_FIELDS = ("a", "b", "boards", "matches", "match_wins_a", "match_win_rate_a", "match_ci_low", "match_ci_high",
              "deals", "deal_wins_a", "deal_win_rate_a", "deal_ci_low", "deal_ci_high", "mean_margin_a",
              "margin_ci_low", "margin_ci_high", "sessions", "session_wins_a", "session_win_rate_a", "session_ci_low",
              "session_ci_high", "seconds", "deals_per_minute")


def to_csv(report: dict[str, Any]) -> str:
    """One CSV row per pair (columns :data:`CSV_FIELDS`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for e in report["pairs"]:
        w.writerow(e)
    return buf.getvalue()


def save_heatmap(report: dict[str, Any], path: Path) -> None:
    """A PNG heatmap of the match win matrix: row agent's match win rate against the column agent."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = report["agents"]
    n = len(names)
    m = np.array([[np.nan if x is None else x for x in row] for row in report["win_matrix"]], dtype=np.float64)
    fig, ax = plt.subplots(figsize=(1.2 * n + 2.5, 1.0 * n + 1.8))
    im = ax.imshow(m, vmin=0.0, vmax=1.0, cmap="RdBu")
    ax.set_xticks(range(n), names, rotation=35, ha="right")
    ax.set_yticks(range(n), names)
    for i in range(n):
        for j in range(n):
            if not np.isnan(m[i, j]):
                ax.text(j, i, f"{m[i, j]:.0%}", ha="center", va="center",
                        color="white" if abs(m[i, j] - 0.5) > 0.3 else "black", fontsize=9)
    ax.set_title(f"match win rate, row vs column ({report['rules']}, {report['num_players']} players)")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(agents: str, deals: int = 1000, preset: str = "classic", num_players: int | None = None, seed: int = 0,
         session_wins: int = 1, target: int | None = None, out_dir: Path | None = None, batch_games: int = 1024,
         versus_first: bool = False, json: bool = False, no_progress: bool = False) -> int:
    """Play every pair of agents in duplicate format; print a table; write JSON, CSV and a heatmap PNG.

    Each pair plays the same seeded deals with seats swapped (every side arrangement), whole matches to the
    target (or sessions of matches), until it has played at least DEALS deals. It reports session, match and deal
    win rates with Wilson 95% intervals, the mean point margin per deal, and Bradley-Terry (Elo scale) and
    OpenSkill ratings.

    Args:
        agents: comma-separated agent specs: a scripted bot (random, greedy, ... advanced), pimc, pimc:N (N
            simulations per move; ismcts and ismcts:N are aliases), checkpoint:PATH; ladder stands for every
            scripted bot, weakest first.
        deals: deal budget per pair (at least this many deals, seats swapped included).
        preset: rule preset of RULES.md section 6: classic, matsuda, cicera, bga, stadium or royal.
        num_players: seats, one the preset allows (default its first: 2, or 4 for cicera); 4 and 6 play
            partnerships, both partners the same agent (seats 0 and 2 one agent, 1 and 3 the other).
        seed: seed of the deals, 0..2147483647; the same seed gives the same results.
        session_wins: seed 004's session: each game plays matches until a side has won this many (1, 2 or 3);
            the report adds session win rates. 1 is a single match.
        target: match target score (default the preset's: 21, cicera 51; matsuda allows 51).
        out_dir: folder for eval.json, eval.csv, eval.md and heatmap.png (default runs/eval__PRESET__SEED__TIME).
        batch_games: games stepped together.
        versus_first: play only the first agent against each of the others (not every pair).
        json: print one JSON object (with a pairs list and a ratings mapping) instead of the table.
        no_progress: hide the progress bar.
    """
    from cassino_env.rules import make_rules
    from train.cli import bad_input

    specs = [s.strip() for s in agents.split(",") if s.strip()]
    with bad_input() as failed:  # AgentSpecError, CassinoError, CheckpointError, a bad seed: all ValueErrors
        rules = make_rules(preset, num_players, **({} if target is None else {"target": target}))
        report = evaluate(specs, rules, deals, seed, batch_games=batch_games, versus_first=versus_first,
                          progress=not no_progress and not json, session_wins=session_wins)
    if failed.code:
        return failed.code
    if out_dir is None:
        out_dir = Path("runs") / f"eval__{report['rules']}-{report['num_players']}p__{seed}__{int(time.time())}"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "eval.json").write_text(json_module.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out_dir / "eval.csv").write_text(to_csv(report), encoding="utf-8")
    (out_dir / "eval.md").write_text(format_markdown(report) + "\n", encoding="utf-8")
    save_heatmap(report, out_dir / "heatmap.png")
    if json:
        print(json_module.dumps(report))
    else:
        print(format_table(report))
        print(f"\nwrote {out_dir}/eval.json, eval.csv, eval.md, heatmap.png")
    return 0
