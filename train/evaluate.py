"""Evaluate agents against each other in duplicate format: win rates with 95% intervals, point margins, ratings.

Every pair of agents plays the same seeded deals with the seats swapped, as DouZero evaluates (duplicate bridge's
idea: the luck of the cards cancels out). The unit of duplicate play is a **board**: one seed, played as one match
to the target (docs/rules.md 2.6) in every *seat arrangement* of the pair. Arrangements give each side (a seat, or a
partnership whose partners are the same agent) to agent A or B, every assignment in which both play: 2 with two
players or two partnerships (A-B, B-A), 6 with three players (ABB, BAB, BBA, BAA, ABA, AAB). Match ``m`` of a seed
always deals the same deck sequence, so a board's matches see the same cards in every arrangement, deal for deal.

``deals`` is a budget: boards 0, 1, 2, … (board ``i`` of seed ``s`` is core seed ``s * 2**32 + i``, the same for
every pair) are played in waves through :class:`cassino_env.vector.CassinoVectorEnv` until the pair has played at
least that many deals, counting all arrangements. Results are a pure function of the agents, the rules, ``deals``,
``seed``, ``batch_games`` and ``boards_per_task``.

**Chunks** (``boards_per_task = N``, ``--boards-per-task N``): instead of waves drawing from one generator per pair,
a pair plays its boards in fixed chunks of N (chunk c: boards ``c * N`` .. ``c * N + N - 1``, its own generator
``default_rng([seed, pair, c])``) and keeps chunks 0, 1, … up to the first at which its deals reach the budget.
What a chunk plays depends on nothing else, so with ``ray_address`` each chunk is a Ray task and the report is the
local chunked run's: one pair of slow search agents spreads over the whole cluster. Chunked records keep global
board numbers, so the OpenSkill order below is the same too.

Per pair (A, B):

* **match win rate** of A: matches won by a side that A plays, with a Wilson 95% interval.
* **deal win rate** of A: deals in which A's side scored most (a tie between A and B at the top counts half), with a
  Wilson 95% interval (the score interval also holds for the half-counted ties).
* **mean margin** of A: A's points minus B's points per deal (mean over A's sides minus mean over B's sides), with a
  95% interval from the spread of board totals (deals of one board are not independent).

**Sessions** (Trump Stadium's match format, docs/rules.md 6; :mod:`cassino_env.session`): with ``session_wins = N`` each
game of a board plays matches until a side has won N of them (N = 1, 2 or 3), and the report adds the **session
win rate** of A (sessions won by a side A plays, Wilson 95% interval); match and deal figures then count every match
of the sessions. Match ``m`` of a board deals the same cards in every arrangement, so sessions stay duplicate.
``N = 1`` (the default) is one match per game: the session figures equal the match figures.

The **presets**: every preset of docs/rules.md 6 at any player count it allows (``--preset``, ``--num-players``);
``ladder`` in the agent list stands for the bot ladder :data:`agents.registry.LADDER`. Seeds are 0 .. 2**31 - 1
(a board's core seed is ``seed * 2**32 + board``, an int64); others are rejected with an error that says so, never
wrapped (two seeds would silently share their boards).

Intervals treat matches (deals) as independent; duplicate pairs are negatively correlated, so they are a little
conservative. **Ratings**: a Bradley-Terry fit of all match results (maximum likelihood, ``scipy.optimize``) on the
Elo scale, mean 1500, with one virtual drawn match per pair so that a perfect score stays finite; and OpenSkill
(Plackett-Luce, the ``openskill`` library) updated match by match in a fixed round-robin order.

Command line: ``cassino eval --agents random,greedy,advanced --deals 2000`` or
``cassino eval --agents checkpoint:runs/x/final.pt,ladder --preset cicera --session-wins 2`` (see :func:`main`).

The parts, each in its own module and re-exported here: the arena that plays the boards (:mod:`train.arena`), the
statistics (:mod:`train.stats`) and the reports (:mod:`train.report`); this module puts them together
(:func:`evaluate`) and holds the command line (:func:`main`).
"""


from __future__ import annotations

import contextlib
import itertools
import json as json_module
import math
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent
from agents.registry import LADDER, expand_specs
from cassino_env.errors import excerpt
from cassino_env.rules import RuleSet
from cassino_env.session import check_session_wins
from train.arena import (
    FIRST_GUESS_DEALS_PER_MATCH,
    MAX_BOARDS,
    SEED_MAX,
    SEED_MIN,
    PairRecord,
    arrangements,
    board_seed,
    check_boards_per_task,
    check_seed,
    chunks_kept,
    merge_records,
    play_boards,
    play_chunk,
    play_pair,
    play_pair_in_chunks,
    seat_agents,
    warm_kernels,
)
from train.report import CSV_FIELDS, format_markdown, format_table, save_heatmap, to_csv
from train.stats import ELO_SCALE, Z95, bradley_terry_elo, openskill_ratings, ratio_interval, wilson_interval

__all__ = [
    "CSV_FIELDS", "ELO_SCALE", "FIRST_GUESS_DEALS_PER_MATCH", "LADDER", "MAX_BOARDS", "SEED_MAX", "SEED_MIN", "Z95",
    "PairRecord", "arrangements", "board_seed", "bradley_terry_elo", "check_boards_per_task", "check_seed",
    "chunks_kept", "evaluate", "expand_specs", "format_markdown", "format_table", "main", "merge_records",
    "openskill_ratings", "play_boards", "play_chunk", "play_pair", "play_pair_in_chunks", "ratio_interval",
    "save_heatmap", "seat_agents", "summarize_pair", "to_csv", "wilson_interval", "write_report",
]


# --- the whole evaluation: every pair in the arena, summarised --------------------------------------------------------


#: The most games :func:`evaluate` steps together (``batch_games``): about 4.9 GB of observations.
MAX_BATCH_GAMES = 1 << 16
#: The most deals :func:`evaluate` plays (``deals``): a bound a typo cannot pass (a 40-digit count ran forever).
MAX_DEALS = 10_000_000
#: The files ``cassino eval`` writes into its ``--out-dir``.
REPORT_FILES = ("eval.json", "eval.csv", "eval.md", "heatmap.png")


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


def _unique_names(names: Sequence[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        k, cand = 2, n
        while cand in out:
            cand = f"{n}#{k}"
            k += 1
        out.append(cand)
    return out


class _Timed:
    """An agent that times its own ``act`` calls: seconds and decisions (games asked about), for the report's
    seconds per decision. Every other attribute is the wrapped agent's."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.seconds = 0.0
        self.decisions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)

    def act(self, obs: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        t = time.perf_counter()
        out = self.agent.act(obs, rng)
        self.seconds += time.perf_counter() - t
        self.decisions += len(obs["action_mask"])
        return out


def evaluate(agent_specs: Sequence[str | Agent], rules: RuleSet | str = "classic", deals: int = 1000,
             seed: int = 0, *, num_players: int | None = None, batch_games: int = 1024, versus_first: bool = False,
             progress: bool = False, session_wins: int = 1, recorder: Any = None,
             ray_address: str | None = None, boards_per_task: int | None = None,
             device: str | None = None) -> dict[str, Any]:
    """Play every pair of agents in duplicate format and summarise (see the module docstring).

    Args:
        agent_specs: two or more agents: specs for :func:`agents.registry.make_agent` (``"greedy"``,
            ``"pimc:200"``, ``"checkpoint:runs/x/final.pt"``), ``"ladder"`` (:data:`agents.registry.LADDER`) or Agent
            objects (named by their ``name``).
        rules: a RuleSet or a preset name (any preset of docs/rules.md 6).
        deals: deal budget per pair (at least this many deals, all arrangements together).
        seed: the seed of the boards, :data:`SEED_MIN` .. :data:`SEED_MAX`; equal seeds give equal reports.
        num_players: seats, when ``rules`` is a preset name.
        batch_games: games stepped together (boards times arrangements per wave).
        versus_first: play only the pairs that include the first agent (a new agent against a ladder); the
            ratings still place every agent, through their results against the first.
        progress: show a tqdm progress bar of deals on stderr.
        session_wins: N of Trump Stadium's session format, 1, 2 or 3: each game plays matches until a side has won N
            (:mod:`cassino_env.session`); 1 is one match.
        recorder: a :class:`train.records.GameRecorder` that gets a record of every game played (seats named by
            their agent specs), or None.
        ray_address: play the pairs as Ray tasks, one task per pair (all its boards), or with ``boards_per_task``
            one task per chunk, on the Ray cluster at this address (``ray.init``'s: ``"local"`` starts one on this
            machine, ``"auto"`` joins the running one, ``"ray://HOST:10001"`` a remote one); None plays them here,
            one after the other. Each pair (each chunk) draws from its own generator, seeded by the seed and the
            pair's index (and the chunk's), so the report is the local run's, timings (``seconds``,
            ``deals_per_minute``, ``seconds_per_decision``: the agents' own time on the workers, summed over the
            tasks kept, each task's first-call warm-up included) aside. Needs the ``ray`` extra; not with
            ``recorder``.
        boards_per_task: None (the default) plays each pair's boards in adaptive waves from one generator per pair
            (:func:`train.arena.play_pair`). An integer N >= 1 plays them in fixed **chunks** of N boards instead:
            chunk c is boards ``c * N .. c * N + N - 1``, drawing from its own generator
            ``default_rng([seed, pair, c])`` (:func:`train.arena.play_chunk`), and the pair keeps chunks 0, 1, …
            up to the first at which its deals reach ``deals`` (:func:`train.arena.chunks_kept`: a pure function
            of the chunks' deal counts, never of timing). Here the chunks are played one after the other; with
            ``ray_address`` every chunk of every pair is a Ray task (extra chunks launched ahead are discarded),
            so one pair of search agents uses the whole cluster, and the report is this local chunked run's. A
            chunk is played whole: a pair plays at least N boards. Chunked and unchunked runs of one seed play
            the same boards but draw differently, so stochastic agents' results differ between them. Game
            records (``recorder``) are written by the local chunked run too.
        device: where the trained networks of ``agent_specs`` run here (:func:`agents.registry.make_agent`'s
            ``device``: ``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``; None: the CPU); the games and the bots
            stay on the CPU. Ray tasks build their agents on their own CPU. Agent objects are used as they are.

    Returns:
        ``{"rules", "num_players", "seed", "deals", "session_wins", "agents", "pairs": [...], "ratings": {name: Elo},
        "openskill": {name: {"mu", "sigma", "ordinal"}}, "win_matrix": [[...]], "seconds",
        "deals_per_minute", "seconds_per_decision": {name: wall seconds of its act per decision, or None}}``; each
        pair entry has ``a``, ``b``, ``matches``, ``match_win_rate_a``,
        ``match_ci_low``, ``match_ci_high``, ``deal_win_rate_a``, ``deal_ci_low``, ``deal_ci_high``,
        ``mean_margin_a`` (points per deal), ``margin_ci_low``, ``margin_ci_high``, ``deals``, ``boards``,
        ``sessions``, ``session_wins_a``, ``session_win_rate_a``, ``session_ci_low``, ``session_ci_high``. Ratings
        are fitted to the match results.

    Raises:
        agents.device.DeviceError: a device torch cannot see (before any agent is built).
        ValueError: fewer than two agents, a deal budget below 1, a seed out of range, ``batch_games`` not an
            integer 1 .. :data:`MAX_BATCH_GAMES`, ``boards_per_task`` not an integer 1 .. 2**32, or
            ``ray_address`` without Ray installed, with no cluster there or with a ``recorder``.
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
        raise ValueError(f"agents: evaluation needs at least two agents, got {len(agent_specs)}")
    if isinstance(deals, bool) or not isinstance(deals, (int, np.integer)) or not 1 <= deals <= MAX_DEALS:
        raise ValueError(f"deals: must be an integer from 1 to {MAX_DEALS:,}, got {excerpt(deals)}")
    if isinstance(batch_games, bool) or not isinstance(batch_games, (int, np.integer)) or not (
            1 <= batch_games <= MAX_BATCH_GAMES):
        raise ValueError(f"batch_games: expected games stepped together 1..{MAX_BATCH_GAMES:,} (the vector "
                         f"environment holds about 75 KB a game), got {excerpt(batch_games)}")
    boards_per_task = check_boards_per_task(boards_per_task)
    if device is not None:
        from agents.device import check_device

        device = check_device(device)
    agents = [_Timed(make_agent(s, rules, ladder_ok=True, device=device) if isinstance(s, str) else s)
              for s in agent_specs]
    names = _unique_names([s.strip() if isinstance(s, str) and not s.startswith("checkpoint:") else a.name
                           for s, a in zip(agent_specs, agents, strict=True)])
    pairs = ([(0, j) for j in range(1, len(agents))] if versus_first
             else list(itertools.combinations(range(len(agents)), 2)))
    if ray_address is not None and recorder is not None:
        raise ValueError("ray_address: game records are written by a local run only (no recorder with Ray)")
    bar = None
    if progress:
        from tqdm import tqdm

        # disable=None: no bar when stderr is not a terminal (a log file would fill with \r lines)
        bar = _PairBar(tqdm(total=deals * len(pairs), unit="deal", desc="eval", file=sys.stderr, dynamic_ncols=True,
                            disable=None), deals)
    if ray_address is None:
        warm_kernels(rules)  # the one-off numba compile is not the agents' speed
    t0 = time.perf_counter()
    entries, records = [], []
    wins = np.zeros((len(agents), len(agents)))
    on_ray = None
    if ray_address is not None:
        players = [s if isinstance(s, str) else a.agent for s, a in zip(agent_specs, agents, strict=True)]
        if boards_per_task is None:
            on_ray = _pairs_on_ray(ray_address, players, pairs, rules, deals, seed, batch_games, session_wins)
        else:
            on_ray = _chunks_on_ray(ray_address, players, pairs, rules, deals, seed, boards_per_task, batch_games,
                                    session_wins, progress=bar)
    for k, (i, j) in enumerate(pairs):
        if bar is not None:
            bar.next_pair(k, f"{names[i]} vs {names[j]}")
        if on_ray is not None:
            rec, (sec_a, dec_a, sec_b, dec_b) = on_ray[k]
            agents[i].seconds += sec_a
            agents[i].decisions += dec_a
            agents[j].seconds += sec_b
            agents[j].decisions += dec_b
            if bar is not None and boards_per_task is None:  # the chunks' deals were counted as they came in
                bar.update(sum(rec.deals))
        else:
            rng = np.random.default_rng([seed, k])
            if recorder is not None:
                recorder.agent_names = [s.strip() if isinstance(s, str) else agents[x].name
                                        for x, s in ((i, agent_specs[i]), (j, agent_specs[j]))]
            if boards_per_task is None:
                rec = play_pair(agents[i], agents[j], rules, deals, seed, rng, batch_games=batch_games, progress=bar,
                                session_wins=session_wins, recorder=recorder)
            else:
                rec = play_pair_in_chunks(agents[i], agents[j], rules, deals, seed, k, boards_per_task,
                                          batch_games=batch_games, progress=bar, session_wins=session_wins,
                                          recorder=recorder)
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
        # wall seconds an agent's act took per decision it was asked (on Ray: on the workers, summed over the
        # kept tasks; None: never asked)
        "seconds_per_decision": {n: (a.seconds / a.decisions if a.decisions else None)
                                 for n, a in zip(names, agents, strict=True)},
    }


def _one_cpu() -> None:
    """A Ray task holds one CPU: the search agents' lines stay on one numba thread there (their default, numba's
    thread count, is the machine's cores, which the other tasks hold)."""
    import numba

    numba.set_num_threads(1)


def _pair_task(player_a: str | Agent, player_b: str | Agent, rules: RuleSet, deals: int, seed: int, k: int,
               batch_games: int, session_wins: int) -> tuple[PairRecord, Timing]:
    """Pair ``k`` of :func:`evaluate`, as its local loop plays it (specs are made into agents where it runs), and
    its agents' timings (:data:`Timing`, wall seconds on the worker that played it)."""
    _one_cpu()
    from agents.registry import make_agent

    a, b = (_Timed(make_agent(p, rules) if isinstance(p, str) else p) for p in (player_a, player_b))
    rec = play_pair(a, b, rules, deals, seed, np.random.default_rng([seed, k]), batch_games=batch_games,
                    session_wins=session_wins)
    return rec, _timing(a, b)


@contextlib.contextmanager
def _ray_connected(address: str) -> Iterator[Any]:
    """The ``ray`` module, connected to the cluster at ``address`` for the ``with`` block (Ray is started here and
    shut down again unless the caller has started it).

    Raises:
        ValueError: naming ``ray_address`` (a :class:`train.config.ConfigError`), when Ray is not installed or there
            is no cluster at ``address`` (:func:`train.ray_cluster.connect_ray`).
    """
    from train.ray_cluster import connect_ray  # one connection rule for eval and train (a HOST:PORT checked at once)

    started = connect_ray(address)
    import ray

    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _pairs_on_ray(address: str, players: list[str | Agent], pairs: list[tuple[int, int]], rules: RuleSet, deals: int,
                  seed: int, batch_games: int, session_wins: int) -> list[tuple[PairRecord, Timing]]:
    """Every pair's record and timings, one Ray task per pair, in the order of ``pairs``."""
    with _ray_connected(address) as ray:
        task = ray.remote(_pair_task)
        return ray.get([task.remote(players[i], players[j], rules, deals, seed, k, batch_games, session_wins)
                        for k, (i, j) in enumerate(pairs)])


def _chunk_task(player_a: str | Agent, player_b: str | Agent, rules: RuleSet, seed: int, k: int, chunk: int,
                boards_per_task: int, batch_games: int, session_wins: int) -> tuple[PairRecord, Timing]:
    """Chunk ``chunk`` of pair ``k`` of :func:`evaluate`, as its local loop plays it (:func:`train.arena.play_chunk`;
    specs are made into agents where it runs), and its agents' timings (:data:`Timing`)."""
    _one_cpu()
    from agents.registry import make_agent

    a, b = (_Timed(make_agent(p, rules) if isinstance(p, str) else p) for p in (player_a, player_b))
    rec = play_chunk(a, b, rules, seed, k, chunk, boards_per_task, batch_games=batch_games,
                     session_wins=session_wins)
    return rec, _timing(a, b)


#: A task's timings of its two agents: (seconds of A, decisions of A, seconds of B, decisions of B).
Timing = tuple[float, int, float, int]


def _timing(a: _Timed, b: _Timed) -> Timing:
    return (a.seconds, a.decisions, b.seconds, b.decisions)


class _PairBar:
    """The tournament's tqdm bar, counting at most ``deals`` deals a pair: a pair plays whole matches, so it may play
    a few deals more than asked, and the bar's total (``deals`` times the pairs) is never overshot ("152 of 150")."""

    def __init__(self, bar: Any, deals: int) -> None:
        self.bar, self.deals, self.pair, self.counted = bar, deals, 0, {}

    def next_pair(self, k: int, label: str) -> None:
        self.pair = k
        self.bar.set_postfix_str(label)

    def update(self, n: int, pair: int | None = None) -> None:
        """``n`` more deals played by pair ``pair`` (default the pair being played)."""
        k = self.pair if pair is None else pair
        before = self.counted.get(k, 0)
        self.counted[k] = before + int(n)
        shown = min(self.counted[k], self.deals) - min(before, self.deals)
        if shown > 0:
            self.bar.update(shown)

    def close(self) -> None:
        self.bar.close()


def _chunks_on_ray(address: str, players: list[str | Agent], pairs: list[tuple[int, int]], rules: RuleSet,
                   deals: int, seed: int, boards_per_task: int, batch_games: int, session_wins: int,
                   progress: Any = None) -> list[tuple[PairRecord, Timing]]:
    """Every pair's record, one Ray task per chunk (:func:`_chunk_task`), in the order of ``pairs``: what
    :func:`train.arena.play_pair_in_chunks` returns for each pair, timings aside (a pair's ``seconds`` add up its
    kept chunks' times), with its agents' timings summed over the kept chunks (:data:`Timing`).

    Scheduling (it decides only how much is computed, never what is kept): at most as many tasks are in flight as
    the cluster has CPUs; a free slot goes to the first pair, in pair order, whose finished and running chunks are
    estimated to fall short of ``deals`` (running ones counted at the pair's mean deals per finished chunk, or at
    :data:`train.arena.FIRST_GUESS_DEALS_PER_MATCH` before any); once a pair's first chunks in order reach
    ``deals`` (:func:`train.arena.chunks_kept`), its later chunks are cancelled or discarded.
    """
    A = len(arrangements(rules))
    guess = boards_per_task * A * FIRST_GUESS_DEALS_PER_MATCH * (1.5 * session_wins - 0.5)  # deals of one chunk
    with _ray_connected(address) as ray:
        task = ray.remote(_chunk_task)
        shipped = [p if isinstance(p, str) else ray.put(p) for p in players]  # an Agent object travels once
        capacity = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n = len(pairs)
        finished: list[dict[int, PairRecord]] = [{} for _ in pairs]  # per pair: chunk -> its record
        got = [0] * n  # per pair: deals of its finished chunks
        kept: list[int | None] = [None] * n  # per pair: the chunks it keeps, once known
        prefix = [0] * n  # per pair: chunks 0 .. prefix - 1 are finished
        prefix_deals = [0] * n  # and their deals
        launched = [0] * n  # per pair: chunks 0 .. launched - 1 submitted
        flying: dict[Any, tuple[int, int]] = {}  # ObjectRef -> (pair, chunk)
        timings: list[dict[int, Timing]] = [{} for _ in pairs]  # per pair: chunk -> its agents' timings

        def wants_more(k: int) -> bool:
            if kept[k] is not None:
                return False
            done = len(finished[k])
            per_chunk = got[k] / done if done else guess
            return got[k] + (launched[k] - done) * per_chunk < deals

        while any(n is None for n in kept):
            while len(flying) < capacity:
                k = next((k for k in range(len(pairs)) if wants_more(k)), None)
                if k is None:
                    break
                i, j = pairs[k]
                ref = task.remote(shipped[i], shipped[j], rules, seed, k, launched[k], boards_per_task, batch_games,
                                  session_wins)
                flying[ref] = (k, launched[k])
                launched[k] += 1
            if not flying:  # cannot happen: a pair short of its deals with nothing running always wants more
                raise RuntimeError("evaluation on Ray: no chunk in flight for an unfinished pair")
            ready, _ = ray.wait(list(flying), num_returns=1)
            for ref in ready:
                k, c = flying.pop(ref)
                rec, timing = ray.get(ref)
                timings[k][c] = timing
                if kept[k] is not None:
                    continue
                finished[k][c] = rec
                got[k] += sum(rec.deals)
                new_deals = 0
                while kept[k] is None and prefix[k] in finished[k]:  # chunks_kept's rule, counted in order
                    new_deals += sum(finished[k][prefix[k]].deals)
                    prefix[k] += 1
                    if prefix_deals[k] + new_deals >= deals:
                        kept[k] = prefix[k]
                prefix_deals[k] += new_deals
                if progress is not None and new_deals:
                    progress.update(new_deals, pair=k)
                if kept[k] is not None:
                    for extra in [r for r, (kk, _) in flying.items() if kk == k]:
                        ray.cancel(extra)
                        del flying[extra]
        return [(merge_records([finished[k][c] for c in range(kept[k])]),
                 tuple(sum(timings[k][c][x] for c in range(kept[k])) for x in range(4)))  # type: ignore[misc]
                for k in range(n)]


# --- command line -----------------------------------------------------------------------------------------------------


def main(agents: str, deals: int = 1000, preset: str = "classic", num_players: int | None = None, seed: int = 0,
         session_wins: int = 1, target: int | None = None, out_dir: Path | None = None, batch_games: int = 1024,
         versus_first: bool = False, json: bool = False, no_progress: bool = False,
         save_games: Path | None = None, ray: str | None = None, boards_per_task: int | None = None,
         provenance: bool = False, device: str = "auto") -> int:
    """Play every pair of agents in duplicate format; print a table; write JSON, CSV and a heatmap PNG.

    Each pair plays the same seeded deals with seats swapped (every side arrangement), whole matches to the
    target (or sessions of matches), until it has played at least DEALS deals. It reports session, match and deal
    win rates with Wilson 95% intervals, the mean point margin per deal, and Bradley-Terry (Elo scale) and
    OpenSkill ratings.

    Args:
        agents: comma-separated agent specs (agents.registry; docs/bots.md): {agent_list_specs}. Your own bot
            MODULE:OBJECT is a class with act(obs, rng) taking the rules (mypkg.mybot:MyBot, see agents/base.py).
        deals: deal budget per pair (at least this many deals, seats swapped included).
        preset: rule preset of docs/rules.md section 6: {presets}.
        num_players: seats, one the preset allows (None, the default: the preset's first allowed count, 2 or 4 for
            cicera); 4 and 6 play partnerships, both partners the same agent (seats 0 and 2 one agent, 1 and 3 the
            other).
        seed: seed of the deals, 0..2147483647; the same seed gives the same results.
        session_wins: Trump Stadium's session: each game plays matches until a side has won this many (1, 2 or 3);
            the report adds session win rates. 1 is a single match.
        target: match target score (default the preset's: 21, cicera 51; matsuda allows 51).
        out_dir: folder for eval.json, eval.csv, eval.md and heatmap.png (default runs/eval__PRESET__SEED__TIME).
        batch_games: games stepped together.
        versus_first: play only the first agent against each of the others (not every pair).
        json: print one JSON object (with a pairs list and a ratings mapping) instead of the table.
        no_progress: hide the progress bar.
        save_games: also write every game played to this file, one JSON line per game (docs/records.md: the
            rules, the seed, the agent of each seat and every move; check it with cassino replay FILE).
        ray: play each pair of agents as a Ray task on the Ray cluster at this address: local (start one on this
            machine), auto (the running one) or ray://HOST:PORT; the results are those of the run without it (pip
            install -e ".[ray]"; not with save_games).
        boards_per_task: play each pair's boards in fixed chunks of this many boards, each chunk with its own
            generator, until the pair has DEALS deals; with ray every chunk is a Ray task, so even one pair of
            search agents (pimc) uses the whole cluster, and the results are those of the same command without
            ray. Results differ from a run without boards_per_task for agents that draw random numbers.
        provenance: first print where each trained agent came from (its checkpoint's record: stage, seed, the run's
            wall time, the code's commit, the command; agents/provenance.py).
        device: where the trained networks run: auto (a GPU where torch sees one, CUDA first, then MPS, else the
            CPU), cpu, cuda, cuda:N or mps; the games and bots stay on the CPU, and with ray every task plays on its
            own CPU. A device torch cannot see is an error before anything is played.
    """
    from agents.device import check_device
    from train.errors import agent_specs, bad_input, error, named_rules, spec_errors
    from train.records import GameRecorder, RecordWriter

    with bad_input() as failed:
        specs = agent_specs(agents)
        device = check_device(device)  # a device torch cannot see: one error line, before any work
    if failed.code:
        return failed.code
    if provenance:
        with bad_input() as failed:
            for spec in specs:
                line = provenance_line(spec)
                if line is not None:
                    print(f"{spec}: {line}", flush=True)
        if failed.code:
            return failed.code
    try:
        for folder in ([] if out_dir is None else [out_dir, *out_dir.parents]):  # checked before hours of play
            if folder.exists():
                if not folder.is_dir():
                    return error(f"out_dir {excerpt(str(out_dir))}: {excerpt(str(folder))} exists and is not a "
                                 "folder")
                break
    except OSError as exc:  # a name too long, no permission
        return error(f"out_dir {excerpt(str(out_dir))}: {exc.strerror or exc}")
    if save_games is not None and out_dir is not None:  # the report would overwrite the records
        clash = _clashing_output(save_games, out_dir)
        if clash is not None:
            return error(f"save_games {excerpt(str(save_games))} is the report's {clash} in out_dir "
                         f"{excerpt(str(out_dir))} (which holds {', '.join(REPORT_FILES)}); save the games elsewhere")
    with bad_input() as failed:  # AgentSpecError, CassinoError, CheckpointError, a bad seed: all ValueErrors
        rules = named_rules(preset, num_players, **({} if target is None else {"target": target}))
        with RecordWriter(save_games) if save_games is not None else contextlib.nullcontext() as writer:
            recorder = None if writer is None else GameRecorder(writer.write)
            try:
                report = evaluate(specs, rules, deals, seed, batch_games=batch_games, versus_first=versus_first,
                                  progress=not no_progress and not json, session_wins=session_wins,
                                  recorder=recorder, ray_address=ray, boards_per_task=boards_per_task,
                                  device=device)
            except spec_errors() as exc:  # named as the option it came from (an UnknownAgentError stays one)
                raise type(exc)(f"agents: {exc}") from None
    if failed.code:
        return failed.code
    if out_dir is None:
        out_dir = Path("runs") / f"eval__{report['rules']}-{report['num_players']}p__{seed}__{int(time.time())}"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. a file where a parent folder should be
        return error(f"out_dir {out_dir}: cannot create the folder: {exc.strerror or exc}")
    try:
        write_report(report, out_dir)
    except OSError as exc:  # a full disk, an output that is a folder or a socket
        return error(f"out_dir {excerpt(str(out_dir))}: cannot write the report: {exc.strerror or exc}")
    if json:
        print(json_module.dumps(report))
    else:
        print(format_table(report))
        print(f"\nwrote {out_dir}/eval.json, eval.csv, eval.md, heatmap.png")
        if save_games is not None:
            print(f"wrote {recorder.games} game records to {save_games} (check them: cassino replay {save_games})")
    return 0


def write_report(report: dict[str, Any], out_dir: Path) -> None:
    """Write the report's files (:data:`REPORT_FILES`: JSON, CSV, Markdown, heatmap PNG) into ``out_dir`` (made when
    missing), each atomically, a link kept a link, a device or FIFO written directly (agents.files).

    Raises:
        OSError: a folder that cannot be made, a full disk, an output that is a folder or a socket.
    """
    import json as json_module

    from agents.files import atomic_write_text

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "eval.json", json_module.dumps(report, indent=2) + "\n")
    atomic_write_text(out_dir / "eval.csv", to_csv(report))
    atomic_write_text(out_dir / "eval.md", format_markdown(report) + "\n")
    save_heatmap(report, out_dir / "heatmap.png")


def provenance_line(spec: str) -> str | None:
    """Where the trained network of an agent spec came from (:func:`agents.provenance.describe`), or None for an
    agent with no checkpoint (a scripted bot). The spec's innermost ``checkpoint:PATH`` or ``pretrained:NAME`` is read.

    >>> provenance_line("advanced") is None
    True

    Raises:
        agents.ppo_agent.CheckpointError: an unreadable checkpoint.
    """
    from agents.registry import PRETRAINED_DIR

    for marker in ("checkpoint:", "pretrained:"):
        head, found, rest = spec.rpartition(marker)
        if not found:
            continue
        path = Path(rest) if marker == "checkpoint:" else PRETRAINED_DIR / f"{rest.split(':')[0]}.pt"
        from agents.ppo_agent import read_checkpoint
        from agents.provenance import describe

        return describe(read_checkpoint(path).get("provenance"))
    return None


def _clashing_output(save_games: Path, out_dir: Path) -> str | None:
    """The report file of ``out_dir`` (:data:`REPORT_FILES`) that ``save_games`` names, or None: the same name after
    symbolic links are followed, or the same existing file (a hard link)."""
    import os

    try:
        mine = os.path.realpath(save_games)
        for name in REPORT_FILES:
            theirs = out_dir / name
            if os.path.realpath(theirs) == mine or (theirs.exists() and save_games.exists()
                                                     and os.path.samefile(theirs, save_games)):
                return name
    except OSError:  # a name that cannot be looked at: writing it will say why
        return None
    return None

