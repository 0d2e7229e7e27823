"""The arena: agents play batches of games through :class:`cassino_env.vector.CassinoVectorEnv`, and duplicate play
built on it, for both :mod:`train.evaluate` (``cassino eval``) and the evaluations during training.

* :func:`play_games` is the one game loop: given a seed and a seat-to-agent table per game, it steps every game
  until its session (or only its first deal) is over and logs each finished deal and match.
* **Duplicate boards** (:func:`play_boards`, :func:`play_pair`): a board is one seed played as one session of
  matches in every *seat arrangement* of a pair (:func:`arrangements`), so both agents see the same cards from
  every seat; :mod:`train.evaluate` summarises the :class:`PairRecord`. :func:`play_chunk` and
  :func:`play_pair_in_chunks` play them in fixed chunks of boards with a generator per chunk, the unit of a Ray task
  (``cassino eval --boards-per-task``).
* **Duplicate deals** (:func:`evaluate_deals`): the quick check the trainer logs as ``eval/winrate_vs_<bot>``, each
  seeded deal played once from every side. :func:`pair_deals` seats a pair on seeded deals as a board seats it
  (every arrangement), the recipe's gate between two networks at any number of seats.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from agents.base import Agent, slice_obs
from cassino_env.rules import RuleSet
from cassino_env.session import SessionBatch

#: Deals a board is guessed to take (all arrangements together, per arrangement) before any has been played.
FIRST_GUESS_DEALS_PER_MATCH = 4.5
#: Evaluation seeds: a board's core seed ``seed * 2**32 + board`` must fit an int64, and the seed also seeds numpy
#: generators, which take non-negative integers.
SEED_MIN, SEED_MAX = 0, 2**31 - 1
#: Boards per seed: board indices fill the low 32 bits of the core seed.
MAX_BOARDS = 2**32


# --- seats and seeds --------------------------------------------------------------------------------------------------


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


# --- the game loop ----------------------------------------------------------------------------------------------------


@dataclass
class GameLog:
    """What a batch of games played by :func:`play_games` produced, in the order it happened (G games, S sides)."""

    deal_game: np.ndarray  # int64[n]: the game of each finished deal
    deal_totals: np.ndarray  # float64[n, S]: each side's points in that deal
    match_game: np.ndarray  # int64[m]: the game of each finished match
    match_winner: np.ndarray  # int64[m]: the side that won it
    session_winner: np.ndarray  # int64[G]: the side that won each game's session (-1: undecided, with until="deal")


def _integer_moves(actions: Any, rows: np.ndarray, name: str) -> np.ndarray:
    """int64[n]: an agent's moves, checked by :func:`agents.base.integer_moves` (integers only: a float, a string,
    a bool or None is refused, not rounded or parsed into some move).

    Raises:
        agents.base.AgentMoveError: naming the agent, the game and the value.
    """
    from agents.base import integer_moves

    return integer_moves(actions, name, rows)


def _check_actions(actions: np.ndarray, obs: dict[str, Any], rows: np.ndarray, name: str) -> None:
    from agents.base import AgentMoveError

    a = np.asarray(actions)
    if a.shape != rows.shape:
        raise AgentMoveError(f"agent {name!r} returned {a.shape} actions for {rows.size} games")
    mask = obs["action_mask"][rows]
    ok = (a >= 0) & (a < mask.shape[1])
    ok[ok] = mask[np.flatnonzero(ok), a[ok]] != 0
    if not ok.all():
        g = int(rows[np.flatnonzero(~ok)[0]])
        raise AgentMoveError(f"agent {name!r} played an illegal move index in game {g}")


def play_games(agents: Sequence[Agent], rules: RuleSet, seeds: np.ndarray, seat_agent: np.ndarray,
               rng: np.random.Generator, *, until: Literal["session", "deal"] = "session", session_wins: int = 1,
               max_moves: int | None = None, check_legal: bool = True, progress: Any = None,
               recorder: Any = None) -> GameLog:
    """Play one game per seed, seat ``p`` of game ``g`` played by ``agents[seat_agent[g, p]]``, all in one batch.

    Game ``g`` starts a fresh match from core seed ``seeds[g]`` (equal seeds deal equal cards) and plays until
    ``until``: its first deal is over, or its session is (matches 0, 1, … until a side has won ``session_wins`` of
    them; one match when it is 1). A finished game steps on with greedy moves until the batch is done (nothing of
    it is logged; greedy keeps the table small, where always trailing would grow it until move generation slows
    down). Each step the agents act in order, each on its games in game order, drawing from ``rng``.

    Args:
        max_moves: width of the move table (default the vector env's).
        check_legal: raise :class:`agents.base.AgentMoveError` (a ``RuntimeError`` and a ``ValueError``) when an
            agent returns a wrong number of moves or an illegal one.
        progress: an object with ``update(deals)`` (a tqdm bar), told each step's finished deals; or None.
        recorder: a :class:`train.records.GameRecorder` that records every game's moves and deals, or None.
    """
    from agents.bots import make_bot
    from cassino_env import core
    from cassino_env.vector import CassinoVectorEnv

    G = len(seeds)
    env = CassinoVectorEnv(G, rules, episode="match", reward="win", with_view=True,
                           **({} if max_moves is None else {"max_moves": max_moves}))
    # Seeds may repeat (a board in every arrangement): start every game from its own seed, not reset's seed + b.
    env.state = core.init(env.rules, np.asarray(seeds, dtype=np.int64), max_moves=env.max_moves, prune=env.prune)
    obs = env.observe()
    sessions = SessionBatch(G, rules.num_sides, session_wins)
    active = np.ones(G, dtype=bool)
    gidx = np.arange(G)
    filler = None
    deal_game, deal_totals, match_game, match_winner = [], [], [], []
    if recorder is not None:
        recorder.begin(agents, rules, seeds, seat_agent, until, session_wins)
    while active.any():
        who = seat_agent[gidx, np.maximum(obs["current_player"].astype(np.int64), 0)]
        actions = np.zeros(G, dtype=np.int64)
        for k, agent in enumerate(agents):
            rows = np.flatnonzero(active & (who == k))
            if rows.size:
                act = _integer_moves(agent.act(slice_obs(obs, rows), rng), rows, getattr(agent, "name", str(k)))
                if check_legal:
                    _check_actions(act, obs, rows, getattr(agent, "name", str(k)))
                actions[rows] = act
        idle = np.flatnonzero(~active)
        if idle.size:
            if filler is None:
                filler = make_bot("greedy", rules)
            actions[idle] = filler.act(slice_obs(obs, idle), rng)
        if recorder is not None:
            recorder.before_step(obs, actions, active)
        obs, _, _, _, info = env.step(actions)
        res = info["result"]
        if recorder is not None:
            recorder.after_step(res, active)
        done = np.flatnonzero(res.deal_done & active)
        if done.size:
            deal_game.append(done)
            deal_totals.append(res.deal_totals[done].astype(np.float64))
            if progress is not None:
                progress.update(int(done.size))
        if until == "deal":
            active[done] = False
            continue
        ended = np.flatnonzero(res.match_done & active)
        if ended.size:
            side = res.match_winner[ended].astype(np.int64)
            match_game.append(ended)
            match_winner.append(side)
            sessions.record(ended, side)
            active[ended[sessions.done[ended]]] = False

    if recorder is not None:
        recorder.end()

    def cat(parts: list[np.ndarray], shape: tuple[int, ...], dtype: type) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(shape, dtype=dtype)

    S = rules.num_sides
    return GameLog(deal_game=cat(deal_game, (0,), np.int64), deal_totals=cat(deal_totals, (0, S), np.float64),
                   match_game=cat(match_game, (0,), np.int64), match_winner=cat(match_winner, (0,), np.int64),
                   session_winner=sessions.winner.copy())


def warm_kernels(rules: RuleSet) -> None:
    """Compile the kernels of the rules core, the environment and the exact last round for ``rules`` before
    anything is timed: two games of one deal between ``endgame:greedy`` bots (numba compiles a kernel on its first
    call and caches it on disk, so the first run on a machine would otherwise count the compile, tens of seconds
    each, in its deals per minute and its agents' seconds per decision). Draws from its own generator; touches no
    agent's state. An agent's own kernels (a search's) still compile on its first call."""
    from agents.bots import make_bot
    from agents.endgame import EndgameAgent

    bot = EndgameAgent(make_bot("greedy", rules), rules)
    play_games([bot], rules, np.array([0, 1], dtype=np.int64), np.zeros((2, rules.num_players), dtype=np.int64),
               np.random.default_rng(0), until="deal")


# --- duplicate boards: whole matches (or sessions) in every seat arrangement of a pair --------------------------------


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


def play_boards(agent_a: Agent, agent_b: Agent, rules: RuleSet, seed: int, first_board: int, num_boards: int,
                rng: np.random.Generator, record: PairRecord, progress: Any = None, check_legal: bool = True,
                session_wins: int = 1, recorder: Any = None) -> int:
    """Play boards ``first_board .. first_board + num_boards - 1`` of a pair in every arrangement, in one batch
    (:func:`play_games`: each game one session from its board's seed), and append them to ``record``; returns the
    deals played. ``progress``: an object with ``update(deals)`` (a tqdm bar), or None; ``recorder``: a
    :class:`train.records.GameRecorder` for every game, or None.
    """
    arr = arrangements(rules)
    A, S = len(arr), rules.num_sides
    G = num_boards * A
    seeds = np.repeat([board_seed(seed, first_board + i) for i in range(num_boards)], A).astype(np.int64)
    side_agent = np.tile(np.array(arr, dtype=np.int64), (num_boards, 1))  # [G, S]: 0 = A, 1 = B
    seat_agent = np.tile(seat_agents(rules), (num_boards, 1))  # [G, P]
    log = play_games((agent_a, agent_b), rules, seeds, seat_agent, rng, session_wins=session_wins,
                     check_legal=check_legal, progress=progress, recorder=recorder)

    # deals: A's and B's mean points per side, and A's share of the top score (a tie at the top is split)
    g, tot = log.deal_game, log.deal_totals
    is_a = side_agent == 0  # [G, S]
    n_a = is_a.sum(axis=1)
    n_b = S - n_a
    ia = is_a[g]
    a_pts = np.where(ia, tot, 0.0).sum(axis=1) / n_a[g]
    b_pts = np.where(~ia, tot, 0.0).sum(axis=1) / n_b[g]
    top = tot == tot.max(axis=1, keepdims=True)
    n_deals = np.bincount(g, minlength=G)
    deal_wins = np.bincount(g, weights=(top & ia).sum(axis=1) / top.sum(axis=1), minlength=G)
    margin = np.bincount(g, weights=a_pts - b_pts, minlength=G)
    # matches and sessions: the winning agent (0 A / 1 B)
    match_won = side_agent[log.match_game, log.match_winner]
    match_wins_a = np.bincount(log.match_game, weights=match_won == 0, minlength=G)
    matches = np.bincount(log.match_game, minlength=G)
    results: list[list[int]] = [[] for _ in range(G)]  # per game: the winning agent of each match, in order
    for game, w in zip(log.match_game.tolist(), match_won.tolist(), strict=True):
        results[game].append(w)
    session_winner = side_agent[np.arange(G), log.session_winner]

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
              batch_games: int = 1024, progress: Any = None, session_wins: int = 1, recorder: Any = None) -> PairRecord:
    """Play boards in waves until the pair has played at least ``deals`` deals (see :mod:`train.evaluate`);
    ``recorder`` (a :class:`train.records.GameRecorder`, or None) records every game."""
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
                              session_wins=session_wins, recorder=recorder)
        boards += nb
    record.seconds = time.perf_counter() - t0
    return record


# --- duplicate boards in fixed chunks: the unit of a Ray task (cassino eval --boards-per-task) -----------------------


def check_boards_per_task(boards_per_task: int | None) -> int | None:
    """``boards_per_task`` as an int (or None, no chunks) if it is an integer ``1 .. MAX_BOARDS``.

    >>> check_boards_per_task(0)
    Traceback (most recent call last):
    ...
    ValueError: boards_per_task must be an integer of at least 1 (boards in one chunk of a pair), got 0

    Raises:
        ValueError: naming ``boards_per_task``, for a bool, a non-integer, or a value outside ``1 .. 2**32``.
    """
    if boards_per_task is None:
        return None
    if isinstance(boards_per_task, bool) or not isinstance(boards_per_task, (int, np.integer)):
        raise ValueError(f"boards_per_task must be an integer, got {boards_per_task!r}")
    if int(boards_per_task) < 1:
        raise ValueError("boards_per_task must be an integer of at least 1 (boards in one chunk of a pair), "
                         f"got {boards_per_task}")
    if int(boards_per_task) > MAX_BOARDS:
        raise ValueError(f"boards_per_task {boards_per_task} is more than the {MAX_BOARDS} boards of a seed")
    return int(boards_per_task)


def chunk_rng(seed: int, pair: int, chunk: int) -> np.random.Generator:
    """The generator of chunk ``chunk`` of pair ``pair`` (numpy's ``default_rng([seed, pair, chunk])``)."""
    return np.random.default_rng([seed, pair, chunk])


def play_chunk(agent_a: Agent, agent_b: Agent, rules: RuleSet, seed: int, pair: int, chunk: int,
               boards_per_task: int, batch_games: int = 1024, progress: Any = None, session_wins: int = 1,
               recorder: Any = None) -> PairRecord:
    """Chunk ``chunk`` of pair ``pair``: boards ``chunk * N .. chunk * N + N - 1`` (N = ``boards_per_task``) in
    every arrangement, drawing only from :func:`chunk_rng` ``(seed, pair, chunk)``, in batches of at most
    ``batch_games // arrangements`` boards (at least one), one after the other.

    A chunk's record is a pure function of its arguments (timings aside), wherever it is played, and its
    ``results`` carry the global board numbers. ``seconds`` is the time it took.

    Raises:
        ValueError: a board of the chunk beyond the seed's :data:`MAX_BOARDS` boards.
    """
    A = len(arrangements(rules))
    first, last = chunk * boards_per_task, (chunk + 1) * boards_per_task - 1
    board_seed(seed, last)  # every board of the chunk is in range (a clear error, before any play)
    rng = chunk_rng(seed, pair, chunk)
    record = PairRecord()
    t0 = time.perf_counter()
    step = max(1, batch_games // A)
    for start in range(first, last + 1, step):
        play_boards(agent_a, agent_b, rules, seed, start, min(step, last + 1 - start), rng, record,
                    progress=progress, session_wins=session_wins, recorder=recorder)
    record.seconds = time.perf_counter() - t0
    return record


def chunks_kept(chunk_deals: Sequence[int], deals: int) -> int | None:
    """How many chunks a pair keeps: the fewest first chunks whose deals add up to at least ``deals``, given the
    deal counts of its first chunks in order; None when these do not reach ``deals`` yet (play more).

    >>> chunks_kept([40, 38, 41], 70), chunks_kept([40], 70)
    (2, None)
    """
    total = 0
    for c, n in enumerate(chunk_deals):
        total += n
        if total >= deals:
            return c + 1
    return None


def merge_records(chunks: Sequence[PairRecord]) -> PairRecord:
    """One pair's record from its chunks' records, in chunk order (``seconds`` added up)."""
    out = PairRecord()
    per_board = [f.name for f in dataclasses.fields(PairRecord) if f.name != "seconds"]  # the list fields
    for rec in chunks:
        for name in per_board:
            getattr(out, name).extend(getattr(rec, name))
        out.seconds += rec.seconds
    return out


def play_pair_in_chunks(agent_a: Agent, agent_b: Agent, rules: RuleSet, deals: int, seed: int, pair: int,
                        boards_per_task: int, batch_games: int = 1024, progress: Any = None, session_wins: int = 1,
                        recorder: Any = None) -> PairRecord:
    """Play chunks 0, 1, 2, … of pair ``pair`` (:func:`play_chunk`) one after the other, and stop after the first
    at which the pair's deals reach ``deals`` (:func:`chunks_kept`); the merged record (:func:`merge_records`)."""
    t0 = time.perf_counter()
    played: list[PairRecord] = []
    total = 0
    while total < deals:  # chunks_kept's rule, counted as the chunks come
        played.append(play_chunk(agent_a, agent_b, rules, seed, pair, len(played), boards_per_task,
                                 batch_games=batch_games, progress=progress, session_wins=session_wins,
                                 recorder=recorder))
        total += sum(played[-1].deals)
    record = merge_records(played)
    record.seconds = time.perf_counter() - t0
    return record


# --- duplicate deals: the evaluation during training ------------------------------------------------------------------


def evaluate_deals(agent: Agent, opponent: Agent, rules: RuleSet, deals: int, seed: int,
                   max_moves: int = 64) -> dict[str, float]:
    """Play ``deals`` duplicate deals: each deal (a fresh match's first deal, seeded) is played once per side with
    ``agent`` in every seat of that side (both partners of a partnership: seats 0 and 2, or 1 and 3, with four
    players) and ``opponent`` in every other seat. A game is won when the agent's side scores more deal points than
    every other side; a tie counts half.

    Returns:
        ``{"winrate": share of games won, "points": mean deal margin of the agent's side (points),
        "points_se": the standard error of ``points`` over the deals (each deal's margin the mean of its games: the
        duplicate pairs are not independent), "games": games played}``.
    """
    P, S = rules.num_players, rules.num_sides
    seeds = np.repeat(seed + np.arange(deals, dtype=np.int64), S)
    my_side = np.tile(np.arange(S), deals)  # the agent's side in each game
    seat_agent = (np.arange(P)[None, :] % S != my_side[:, None]).astype(np.int64)  # 0 the agent, 1 the opponent
    log = play_games((agent, opponent), rules, seeds, seat_agent, np.random.default_rng([seed, 7]), until="deal",
                     max_moves=max_moves)
    games = np.arange(len(my_side))
    assert np.array_equal(np.sort(log.deal_game), games), "every game ends its deal after 52 - table_cards moves"
    totals = np.empty((len(games), S), dtype=np.float64)  # [G, S]
    totals[log.deal_game] = log.deal_totals
    mine_pts = totals[games, my_side]
    others = totals.copy()
    others[games, my_side] = -np.inf
    best_other = others.max(axis=1)
    won = np.where(mine_pts > best_other, 1.0, np.where(mine_pts == best_other, 0.5, 0.0))
    rest_mean = (totals.sum(axis=1) - mine_pts) / max(S - 1, 1)
    per_deal = (mine_pts - rest_mean).reshape(deals, S).mean(axis=1)  # games are seeded S to a deal, in order
    se = float(per_deal.std(ddof=1) / math.sqrt(deals)) if deals > 1 else float("nan")
    return {"winrate": float(won.mean()), "points": float((mine_pts - rest_mean).mean()), "points_se": se,
            "games": float(len(my_side))}


def pair_deals(agent_a: Agent, agent_b: Agent, rules: RuleSet, deals: int, seed: int,
               max_moves: int = 64) -> dict[str, Any]:
    """Play ``deals`` duplicate deals of a pair seated as ``cassino eval`` seats it (docs/evaluation.md): each deal
    (a fresh match's first deal, seeded ``seed + d``) once in every seat arrangement of the pair
    (:func:`arrangements`: 2 with two sides, partnerships included; 6 with three sides, ABB BAB BBA BAA ABA AAB, the
    partners of a partnership one agent), so both agents hold every seat, alone and in the majority, on the same
    cards. A game's margin is the mean deal points of A's sides minus the mean of B's sides; a deal's margin is the
    mean over its arrangements.

    The score is antisymmetric: ``pair_deals(b, a)`` plays the same games (each arrangement's complement), so its
    margin is minus ``pair_deals(a, b)``'s wherever the agents play the same moves in the same positions (argmax
    networks, the scripted bots other than ``random``); and two such agents that play alike tie exactly, deal by
    deal. With two sides the games, their order and the generator are :func:`evaluate_deals`'s, and so are
    ``winrate``, ``points`` and ``points_se``.

    Args:
        deals: seeded deals (>= 1). seed: the first deal's core seed (int64; deals ``seed .. seed + deals - 1``).
        max_moves: width of the move table.

    Returns:
        ``{"winrate": A's share of the games' top score (a tie at the top split by the sides in it), "points": A's
        mean margin a deal (points), "points_se": its standard error over the deals (NaN with one deal),
        "per_deal": float64[deals], each deal's margin, "games": games played (deals x arrangements)}``.

    Raises:
        ValueError: ``deals`` < 1. agents.base.AgentMoveError: an agent's illegal move.
    """
    if isinstance(deals, bool) or int(deals) < 1:
        raise ValueError(f"deals must be an integer of at least 1, got {deals!r}")
    arr = np.array(arrangements(rules), dtype=np.int64)  # [A, S]: 0 agent A, 1 agent B on each side
    A, S = arr.shape
    seeds = np.repeat(seed + np.arange(deals, dtype=np.int64), A)
    side_agent = np.tile(arr, (deals, 1))  # [G, S]
    seat_agent = np.tile(seat_agents(rules), (deals, 1))  # [G, P]
    log = play_games((agent_a, agent_b), rules, seeds, seat_agent, np.random.default_rng([seed, 7]), until="deal",
                     max_moves=max_moves)
    G = len(seeds)
    assert np.array_equal(np.sort(log.deal_game), np.arange(G)), "every game ends its deal"
    totals = np.empty((G, S), dtype=np.float64)
    totals[log.deal_game] = log.deal_totals
    is_a = side_agent == 0
    a_pts = np.where(is_a, totals, 0.0).sum(axis=1) / is_a.sum(axis=1)
    b_pts = np.where(is_a, 0.0, totals).sum(axis=1) / (~is_a).sum(axis=1)
    margin = a_pts - b_pts  # [G]
    top = totals == totals.max(axis=1, keepdims=True)
    won = (top & is_a).sum(axis=1) / top.sum(axis=1)
    per_deal = margin.reshape(deals, A).mean(axis=1)
    se = float(per_deal.std(ddof=1) / math.sqrt(deals)) if deals > 1 else float("nan")
    return {"winrate": float(won.mean()), "points": float(margin.mean()), "points_se": se, "per_deal": per_deal,
            "games": float(G)}
