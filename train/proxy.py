"""The development proxy: a frozen set of labelled positions, and the regret of any agent on it.

A proxy set is a few thousand decisions (positions where the seat to move has more than one legal move) taken from
real games of a preset: self-play of the shipped network and games between it, the scripted ladder and each other
(:data:`DEFAULT_SOURCES`). Each position is labelled once with the value of **every** legal move, in points of deal
margin for the side to move (docs/rules.md 5; plus or minus ``match_bonus`` when the deal ends the match), by a
strong search:

* the exact last round (:func:`cassino_env.endgame.solve_state`, every move played then solved) where the seat to
  move knows every card (two seats, empty stock, :func:`cassino_env.endgame.solvable`);
* elsewhere :class:`agents.pimc.PIMCAgent` at a large budget (default :data:`LABEL_SIMULATIONS` rollouts per
  decision, every move on the same sampled deals).

``scripts/make_proxy.py`` builds it with a fixed seed and writes it outside the repository
(:func:`default_path`, ``~/.cache/cassino-rl/proxy/``); nothing in the product or the tests needs it.
:func:`score` then measures an agent on it in one batched call per chunk of positions:

* **regret per decision**: ``max_i value[i] - value[chosen]`` (points, >= 0), averaged over the positions;
* **top-1 agreement**: the share of positions where the agent's move is a best labelled move (ties count).

Both are proxies: the labels are a search's estimates (``pimc`` rollouts play the ``advanced`` bot, so ``pimc``
itself is measured by a relative of its own labels and looks better here than it is). Final claims are always
``cassino eval``.

Usage::

    python scripts/make_proxy.py                          # classic, 2 players: ~2,400 positions, ~20 min
    cassino proxy --agents random,greedy,advanced,pretrained:classic
    cassino proxy --agents pimc,search:pretrained:classic --limit 400   # search agents: their time x positions
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import slice_obs
from cassino_env.errors import shown_name
from cassino_env.rules import RuleSet, make_rules

#: Format tag and version of a proxy file.
FORMAT = "cassino-proxy"
FORMAT_VERSION = 1
#: Rollouts per decision of the labelling search (``pimc`` plays 4,000 by default; 6,000 keep the labelling of
#: 2,400 positions near 20 minutes on one loaded core, about 0.5 s a position).
LABEL_SIMULATIONS = 6000
#: Points added to (taken from) a labelled outcome that ends the match won (lost), as ``pimc``'s default.
LABEL_MATCH_BONUS = 10.0
#: Games played by the labelling search at once (memory: about 6 kB a game).
LABEL_GAMES = 65536
#: Where the games come from: (seat-0 agent spec, seat-1 agent spec, share of the positions). The arena plays every
#: pair in both seatings. ``NET`` stands for the preset's shipped network (``pretrained:<preset>`` with the exact
#: last round, or, for a player count without a shipped network, the ``advanced`` bot).
DEFAULT_SOURCES: tuple[tuple[str, str, float], ...] = (
    ("NET", "NET", 0.35),
    ("NET", "advanced", 0.25),
    ("NET", "intermediate", 0.1),
    ("advanced", "intermediate", 0.1),
    ("advanced", "advanced", 0.1),
    ("greedy", "beginner", 0.1),
)

#: The observation arrays a proxy file stores (with the values, exact flags and sources).
OBS_KEYS = ("observation", "action_mask", "current_player", "move_kind", "move_card", "move_value", "move_cards")


class ProxyError(ValueError):
    """A proxy file that cannot be used, or a bad argument: the message names the file or the field."""


def default_path(preset: str = "classic", num_players: int | None = None) -> Path:
    """``$CASSINO_PROXY_DIR/<preset>-<P>p.npz`` (default folder ``~/.cache/cassino-rl/proxy``)."""
    rules = make_rules(preset, num_players)
    root = Path(os.environ.get("CASSINO_PROXY_DIR", Path.home() / ".cache" / "cassino-rl" / "proxy"))
    return root / f"{rules.preset}-{rules.num_players}p.npz"


def _is_file(path: Path) -> bool:
    """Whether a proxy file is there; False too where the name cannot be looked up (too long, no permission)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _build_command(preset: str, num_players: int) -> str:
    """The command that builds the default proxy set of a preset and seat count."""
    return f"python scripts/make_proxy.py --preset {preset} --num-players {num_players}"


def find_default(rules: RuleSet) -> tuple[Proxy | None, str]:
    """The proxy set of ``rules``' preset and seats at :func:`default_path`, if one is built there and holds positions
    of these rules; else None. Never raises for a missing or bad file: a trainer scores the proxy when one exists and
    goes on without it otherwise (a set is built per preset and seat count, by hand: ``scripts/make_proxy.py``).

    Returns:
        ``(proxy or None, line)``: the line says what was found, or why no set is used and how to build one.
    """
    path = default_path(rules.preset, rules.num_players)
    what = f"{rules.preset} at {rules.num_players} seats"
    if not _is_file(path):
        return None, (f"no proxy set for {what} ({shown_name(path)} is not built): eval/proxy_regret is not logged "
                      f"(build one with: {_build_command(rules.preset, rules.num_players)})")
    try:
        proxy = load(path)
    except ProxyError as exc:
        return None, f"the proxy set for {what} is not used: {exc}"
    if proxy.rules != rules:
        return None, (f"the proxy set {shown_name(path)} is not used: it holds positions of {proxy.rules.preset} with "
                      f"{proxy.rules.num_players} players, not of {what}")
    return proxy, f"proxy set {shown_name(path)}: {len(proxy):,} positions of {what}"


@dataclass
class Proxy:
    """A labelled position set.

    Attributes:
        rules: the rules of its games.
        obs: the vector-env observation dict of the N positions (``view`` included), N rows each.
        values: float64[N, M], every listed move's value (points for the side to move); NaN past the listed moves.
        exact: bool[N], labelled by the exact last-round search (else by ``pimc``).
        source: int64[N], the index into ``sources`` of the games it comes from.
        sources: the ``"A vs B"`` names of the game sources.
        meta: how it was made (seed, budget, ...).
    """

    rules: RuleSet
    obs: dict[str, Any]
    values: np.ndarray
    exact: np.ndarray
    source: np.ndarray
    sources: list[str]
    meta: dict[str, Any]

    def __len__(self) -> int:
        return len(self.values)

    def head(self, n: int | None) -> Proxy:
        """The first ``n`` positions (positions are stored in a random order, so these are a uniform subset)."""
        if n is None or n >= len(self):
            return self
        rows = np.arange(n)
        return Proxy(self.rules, slice_obs(self.obs, rows), self.values[rows], self.exact[rows], self.source[rows],
                     self.sources, self.meta)


# --- building ----------------------------------------------------------------------------------------------------


class _Sampler:
    """A :func:`train.arena.play_games` recorder keeping every decision with a choice (a copy of its observation)."""

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []

    def begin(self, *args: Any) -> None:  # noqa: D102 - recorder protocol
        pass

    def before_step(self, obs: dict[str, Any], actions: np.ndarray, active: np.ndarray) -> None:  # noqa: ARG002
        rows = np.flatnonzero(active & ((np.asarray(obs["action_mask"]) != 0).sum(axis=1) > 1))
        if rows.size:
            self.parts.append(slice_obs(obs, rows))

    def after_step(self, result: Any, active: np.ndarray) -> None:  # noqa: D102
        pass

    def end(self) -> None:  # noqa: D102
        pass


def concat_obs(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One observation dict from several (rows concatenated; the move table padded to the widest)."""
    width = max(p["action_mask"].shape[1] for p in parts)
    out: dict[str, Any] = {}
    for k in parts[0]:
        if isinstance(parts[0][k], dict):  # the view: no move-table columns
            out[k] = {kk: np.concatenate([p[k][kk] for p in parts]) for kk in parts[0][k]}
            continue
        arrs = []
        for p in parts:
            a = p[k]
            if k.startswith("move_") or k == "action_mask":
                pad = width - a.shape[1]
                if pad:
                    fill = -1 if k in ("move_kind", "move_card") else 0
                    a = np.concatenate([a, np.full((a.shape[0], pad), fill, dtype=a.dtype)], axis=1)
            arrs.append(a)
        out[k] = np.concatenate(arrs)
    return out


def collect_positions(rules: RuleSet, positions: int, seed: int,
                      sources: tuple[tuple[str, str, float], ...] = DEFAULT_SOURCES,
                      deals_per_source: int = 64) -> tuple[dict[str, Any], np.ndarray, list[str]]:
    """Play the games of ``sources`` (one deal each, both seatings) and draw ``positions`` decisions from them.

    Returns:
        ``(obs, source int64[N], source names)``, the positions in a random order (seeded by ``seed``).
    """
    from agents.registry import make_agent, pretrained_names
    from train.arena import play_games

    net = f"pretrained:{rules.preset}" if rules.num_players == 2 and rules.preset in pretrained_names() else None
    if net is None:
        cand = f"pretrained:{rules.preset}-{rules.num_players}p"
        net = cand if cand.partition(":")[2] in pretrained_names() else "advanced"
    rng = np.random.default_rng(seed)
    share = np.array([s[2] for s in sources], dtype=np.float64)
    want = np.floor(positions * share / share.sum()).astype(np.int64)
    want[0] += positions - int(want.sum())
    picked, names, src = [], [], []
    P = rules.num_players
    for i, (a, b, _) in enumerate(sources):
        a, b = (net if a == "NET" else a), (net if b == "NET" else b)
        names.append(f"{a} vs {b}")
        agents = [make_agent(a, rules), make_agent(b, rules)]
        sampler = _Sampler()
        G = deals_per_source
        seats = np.array([[(p + g) % 2 for p in range(P)] for g in range(G)], dtype=np.int64)
        seeds = rng.integers(0, 2**62, size=G)
        while True:
            play_games(agents, rules, seeds, seats, rng, until="deal", recorder=sampler)
            have = sum(len(p["action_mask"]) for p in sampler.parts)
            if have >= 3 * want[i] or not want[i]:
                break
            seeds = rng.integers(0, 2**62, size=G)
        pool = concat_obs(sampler.parts)
        n = len(pool["action_mask"])
        rows = np.sort(rng.choice(n, size=min(int(want[i]), n), replace=False))
        picked.append(slice_obs(pool, rows))
        src.append(np.full(rows.size, i, dtype=np.int64))
    obs = concat_obs(picked)
    source = np.concatenate(src)
    order = rng.permutation(len(source))
    return slice_obs(obs, order), source[order], names


def exact_values(rules: RuleSet, obs: dict[str, Any], match_bonus: float = LABEL_MATCH_BONUS,
                 parallel: bool = False) -> np.ndarray:
    """float64[B, M]: every listed move's exact value in two-seat last rounds (:func:`cassino_env.endgame.solvable`
    must hold for every row): the move is played, then the rest of the deal solved; NaN past the listed moves and
    where the search gives up. ``parallel``: the solves spread over numba's threads (the same values).
    """
    from cassino_env import core
    from cassino_env.determinize import determinize, moves_of, take
    from cassino_env.endgame import solve_state

    mask = np.asarray(obs["action_mask"]) != 0
    B, M = mask.shape
    out = np.full((B, M), np.nan)
    if B == 0:
        return out
    n = mask.sum(axis=1).astype(np.int64)
    det = determinize(rules, obs["view"], moves_of(obs), np.ones(B, dtype=np.int64), np.random.default_rng(0))
    row = np.repeat(np.arange(B), n)
    move = np.concatenate([np.arange(k) for k in n])
    st = take(det, row)
    me = np.asarray(obs["view"]["viewer"]).astype(np.int64)[row]
    res = core.step(st, move)
    val = np.full(len(row), np.nan)
    done = np.asarray(res.deal_done)
    if done.any():
        d = np.flatnonzero(done)
        tot = res.deal_totals[d].astype(np.float64)
        mine = me[d] % rules.num_sides
        my_pts = tot[np.arange(d.size), mine]
        won = np.where(res.match_done[d], np.where(res.match_winner[d] == mine, 1.0, -1.0), 0.0)
        val[d] = my_pts - tot[np.arange(d.size), 1 - mine] + match_bonus * won
    live = np.flatnonzero(~done)
    if live.size:
        _, v, _ = solve_state(st, rows=live, match_bonus=match_bonus, parallel=parallel)
        val[live] = -v  # the opponent's minimax value, for the other side
    out[row, move] = val
    return out


def label_positions(rules: RuleSet, obs: dict[str, Any], simulations: int = LABEL_SIMULATIONS, seed: int = 0,
                    match_bonus: float = LABEL_MATCH_BONUS, progress: bool = True,
                    checkpoint: Any = None, every_s: float = 120.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every listed move's value at every position, in the stored order: ``(values float64[N, M], exact bool[N],
    labelled bool[N])`` (module docstring). ``checkpoint(values, exact, labelled)``, when given, is called every
    ``every_s`` seconds with the labels so far (a prefix of the positions, so a partial set is a uniform subset).
    """
    from agents.pimc import PIMCAgent
    from cassino_env.endgame import solvable

    mask = np.asarray(obs["action_mask"]) != 0
    N, M = mask.shape
    values = np.full((N, M), np.nan)
    exact = np.zeros(N, dtype=bool)
    labelled = np.zeros(N, dtype=bool)
    solv = solvable(rules, obs["view"]) if rules.num_players == 2 else np.zeros(N, dtype=bool)
    pimc = PIMCAgent(rules, simulations=simulations, match_bonus=match_bonus)
    rng = np.random.default_rng(seed)
    chunk = max(1, LABEL_GAMES // simulations)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=N, desc="labelling", unit="pos", mininterval=10.0)
    last = time.time()
    for s in range(0, N, chunk):
        r = np.arange(s, min(N, s + chunk))
        ex = r[solv[r]]
        if ex.size:
            v = exact_values(rules, slice_obs(obs, ex), match_bonus)
            ok = ~np.isnan(np.where(mask[ex], v, 0.0)).any(axis=1)  # a search given up: pimc labels it
            values[ex[ok]] = v[ok]
            exact[ex[ok]] = True
        rest = r[~exact[r]]
        if rest.size:
            for i, v in zip(rest.tolist(), pimc.move_values(slice_obs(obs, rest), rng), strict=True):
                values[i, :len(v)] = v
        labelled[r] = True
        if bar is not None:
            bar.update(r.size)
        if checkpoint is not None and time.time() - last > every_s:
            checkpoint(values, exact, labelled)
            last = time.time()
    if bar is not None:
        bar.close()
    return values, exact, labelled


def build(preset: str = "classic", num_players: int | None = None, positions: int = 2400, seed: int = 20231,
          simulations: int = LABEL_SIMULATIONS, path: str | Path | None = None, progress: bool = True,
          deals_per_source: int = 64) -> Path:
    """Collect, label and write a proxy set (atomically, rewritten every two minutes while the labelling runs, the
    positions labelled so far); returns the path written."""
    from agents.ppo_agent import atomic_write

    if positions < 1:
        raise ProxyError(f"positions must be >= 1, got {positions}")
    if simulations < 1:
        raise ProxyError(f"simulations must be >= 1, got {simulations}")
    rules = make_rules(preset, num_players)
    out = Path(path) if path is not None else default_path(rules.preset, rules.num_players)
    t0 = time.time()
    obs, source, names = collect_positions(rules, positions, seed, deals_per_source=deals_per_source)
    t1 = time.time()

    def save(values: np.ndarray, exact: np.ndarray, labelled: np.ndarray) -> Path:
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "preset": rules.preset,
                "num_players": rules.num_players, "rules": repr(rules.to_dict()), "seed": seed,
                "simulations": simulations, "match_bonus": LABEL_MATCH_BONUS, "collect_s": round(t1 - t0, 1),
                "label_s": round(time.time() - t1, 1), "sources": names, "complete": bool(labelled.all()),
                "collected": int(len(labelled))}
        rows = np.flatnonzero(labelled)
        sub = slice_obs(obs, rows)
        arrays: dict[str, np.ndarray] = {k: sub[k] for k in OBS_KEYS}
        arrays.update({f"view.{k}": v for k, v in sub["view"].items()})
        arrays.update(values=values[rows], exact=exact[rows], source=source[rows], meta=np.array(repr(meta)))
        return atomic_write(out, lambda f: np.savez_compressed(f, **arrays))

    values, exact, labelled = label_positions(rules, obs, simulations, seed, progress=progress, checkpoint=save)
    return save(values, exact, labelled)


#: The most bytes the arrays of a proxy file may unpack to (the shipped 2,400-position set unpacks to about 30 MB):
#: checked from the arrays' headers before any array is read.
MAX_UNPACKED_BYTES = 2 << 30
_META_BYTES = 1 << 20  # the metadata string's most bytes (the shipped file's: under 4 kB)
_META_KEYS = {"preset": str, "num_players": int, "rules": str, "sources": list, "simulations": int}


def _bad(path: Path, message: str) -> ProxyError:
    return ProxyError(f"{shown_name(path)}: {message}")


def _header(zf: Any, name: str, path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype of member ``name`` (an ``.npy``), read from its header alone."""
    from numpy.lib import format as npformat

    with zf.open(f"{name}.npy") as f:
        version = npformat.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = npformat.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = npformat.read_array_header_2_0(f)
        else:
            raise _bad(path, f"array {name!r}: npy format version {version} is not read")
    return tuple(int(n) for n in shape), np.dtype(dtype)


def _read_meta(zf: Any, path: Path) -> dict[str, Any]:
    import ast

    shape, dtype = _header(zf, "meta", path)
    if shape != () or dtype.kind != "U" or dtype.itemsize > 4 * _META_BYTES:
        raise _bad(path, f"array 'meta' must be one string of at most {_META_BYTES:,} characters, got {dtype} "
                         f"of shape {shape}")
    with zf.open("meta.npy") as f:
        text = str(np.lib.format.read_array(f, allow_pickle=False))
    try:
        meta = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise _bad(path, f"not a {FORMAT} file of version {FORMAT_VERSION} (its 'meta' says otherwise)")
    for key, kind in _META_KEYS.items():
        value = meta.get(key, None)
        if key not in meta or not isinstance(value, kind) or isinstance(value, bool):
            raise _bad(path, f"meta.{key}: missing or not {'an' if kind is int else 'a'} {kind.__name__} "
                             f"({'absent' if key not in meta else type(value).__name__})")
    if not all(isinstance(s, str) for s in meta["sources"]):
        raise _bad(path, "meta.sources: every source must be a string")
    return meta


def load(path: str | Path) -> Proxy:
    """Read a proxy file written by :func:`build`.

    Only the arrays a proxy holds are read (``meta``, ``values``, ``exact``, ``source``, the observation keys and
    ``view.*``; others are let be, unread), and each is checked from its header before any is unpacked: the dtype
    and shape of the rules its metadata names (``values`` float64[N, M], ``exact`` bool[N], ``source`` int64[N], the
    vector env's observation keys with N rows and M move slots), N >= 1, at most :data:`MAX_UNPACKED_BYTES` in all.
    Then the values: the rules' parameters equal ``meta["rules"]``, observations inside their space, at least one
    listed move a row, a finite value for every listed move, ``source`` an index into ``meta["sources"]``, each
    position one the rules can reach with the move table they give there (:func:`_check_positions`).

    Raises:
        ProxyError: a missing, unreadable, truncated or empty file, one of another kind or version, or any check
            above failed (the message names the file and the array or metadata field).
    """
    import zipfile
    import zlib

    from cassino_env import core
    from cassino_env.errors import CassinoError
    from cassino_env.vector import observation_spaces

    path = Path(path)
    if not _is_file(path):
        shown = shown_name(path)  # one line: quoted when unprintable, cut past 200 characters
        raise ProxyError(f"{shown}: no proxy file (build one with: python scripts/make_proxy.py --path "
                         f"{path if shown == str(path) else 'PATH'})")
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise _bad(path, f"not a readable proxy file (an .npz archive; empty or truncated?): {exc}") from None
    try:
        with zf:
            names = {n.removesuffix(".npy") for n in zf.namelist() if n.endswith(".npy")}
            if "meta" not in names:
                raise _bad(path, "not a readable proxy file: no 'meta' array")
            meta = _read_meta(zf, path)
            try:
                rules = make_rules(meta["preset"], meta["num_players"])
            except (CassinoError, ValueError, TypeError) as exc:
                raise _bad(path, f"meta.preset / meta.num_players: {exc}") from None
            if meta["rules"] != repr(rules.to_dict()):
                raise _bad(path, f"meta.rules: not the rules of preset {rules.preset!r} with {rules.num_players} "
                                 "players (the file was made under other rules, or edited)")
            want = ["values", "exact", "source", *OBS_KEYS]
            missing = [k for k in want if k not in names]
            if missing:
                raise _bad(path, f"missing array(s) {', '.join(missing)}")
            heads = {k: _header(zf, k, path) for k in want}
            mshape = heads["action_mask"][0]
            if len(mshape) != 2 or not 1 <= mshape[1] <= 32767:
                raise _bad(path, f"array 'action_mask': shape {mshape}, not (N, M) with 1 <= M <= 32767")
            N, M = mshape
            slots = core.init(rules, np.zeros(1, dtype=np.int64), max_moves=1).build_cards.shape[1]
            space = observation_spaces(rules, M, slots, with_view=True)
            boxes: dict[str, Any] = {k: space[k] for k in OBS_KEYS}
            boxes.update({f"view.{k}": v for k, v in space["view"].spaces.items()})
            for k in boxes:
                if k not in heads:
                    if k not in names:
                        raise _bad(path, f"missing array {k!r}")
                    heads[k] = _header(zf, k, path)
            expect = {k: ((N, *b.shape), b.dtype) for k, b in boxes.items()}
            expect.update(values=((N, M), np.dtype(np.float64)), exact=((N,), np.dtype(bool)),
                          source=((N,), np.dtype(np.int64)))
            for k, (shape, dtype) in expect.items():
                if heads[k] != (shape, dtype):
                    raise _bad(path, f"array {k!r}: {heads[k][1]} of shape {heads[k][0]}, expected {dtype} of "
                                     f"shape {shape} ({rules.preset}, {rules.num_players} players, N = {N} "
                                     f"positions, M = {M} move slots)")
            if N < 1:
                raise _bad(path, "holds no positions (N = 0): nothing to score")
            total = sum(int(np.prod(s)) * d.itemsize for s, d in expect.values())
            if total > MAX_UNPACKED_BYTES:
                raise _bad(path, f"its arrays unpack to {total:,} bytes, over the {MAX_UNPACKED_BYTES:,} allowed "
                                 f"({N:,} positions); refused before any is read")
            data = {}
            for k in expect:
                with zf.open(f"{k}.npy") as f:
                    data[k] = np.lib.format.read_array(f, allow_pickle=False)
    except ProxyError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError, RuntimeError,
            NotImplementedError) as exc:  # RuntimeError: an encrypted member; NotImplementedError: an odd method
        raise _bad(path, f"not a readable proxy file (truncated or damaged?): {type(exc).__name__}: {exc}") from None
    for k, box in boxes.items():
        a = data[k]
        if (k == "observation" and not np.isfinite(a).all()) or (a < box.low).any() or (a > box.high).any():
            raise _bad(path, f"array {k!r}: values outside the observation space ({box.low.min()} .. "
                             f"{box.high.max()}{', finite' if k == 'observation' else ''})")
    mask = data["action_mask"] != 0
    if not mask.any(axis=1).all():
        raise _bad(path, f"array 'action_mask': position {int(np.flatnonzero(~mask.any(axis=1))[0])} has no "
                         "listed move")
    if not np.isfinite(data["values"][mask]).all():
        row = int(np.flatnonzero(~np.isfinite(np.where(mask, data["values"], 0.0)).all(axis=1))[0])
        raise _bad(path, f"array 'values': a listed move of position {row} has no finite value (NaN or inf)")
    if ((data["source"] < 0) | (data["source"] >= len(meta["sources"]))).any():
        raise _bad(path, f"array 'source': an entry outside 0..{len(meta['sources']) - 1} (meta.sources)")
    obs: dict[str, Any] = {k: data[k] for k in OBS_KEYS}
    obs["view"] = {k.partition(".")[2]: v for k, v in data.items() if k.startswith("view.")}
    _check_positions(rules, obs, mask, path)
    return Proxy(rules, obs, data["values"], data["exact"], data["source"], list(meta["sources"]), meta)


def _check_positions(rules: RuleSet, obs: dict[str, Any], mask: np.ndarray, path: Path) -> None:
    """Each position's view is one the engine can deal (:func:`cassino_env.determinize.determinize`), its seat to
    move is the view's, and its move table is exactly the one the engine lists there: a table inside the space but
    of other moves (a card the seat does not hold, a kind of -1) crashed the agents with a traceback or worse.

    Raises:
        ProxyError: naming the file, the array and the first position at fault.
    """
    from cassino_env import core
    from cassino_env.determinize import determinize, moves_of

    view = obs["view"]
    bad = np.flatnonzero(np.asarray(obs["current_player"], dtype=np.int64) != view["viewer"].astype(np.int64))
    if bad.size:
        raise _bad(path, f"array 'current_player': position {int(bad[0])} is not the view's seat to move")
    for r in range(len(mask)):  # one at a time, so the message names the position
        one = {k: v[r:r + 1] for k, v in view.items()}
        try:
            st = determinize(rules, one, moves_of({k: obs[k][r:r + 1] for k in OBS_KEYS}), 1,
                             np.random.default_rng(0))
        except (ValueError, IndexError) as exc:
            raise _bad(path, f"array 'view.*': position {r} is not a position of {rules.preset}: {exc}") from None
        core.refresh_moves(st)
        listed = core.legal_mask(st)[0]
        same = np.array_equal(listed, mask[r]) and all(
            np.array_equal(np.where(listed, getattr(st, k)[0], 0), np.where(mask[r], obs[k][r], 0))
            for k in ("move_kind", "move_card", "move_value", "move_cards"))
        if not same:
            raise _bad(path, f"arrays 'move_*' / 'action_mask': position {r} lists other moves than the rules "
                             "give its seat to move (a damaged or edited file)")


# --- scoring -----------------------------------------------------------------------------------------------------


def score(agent: Any, proxy: Proxy, seed: int = 0, chunk: int = 512) -> dict[str, Any]:
    """Regret per decision and top-1 agreement of ``agent`` (an :class:`agents.base.Agent`) on ``proxy``.

    Returns:
        ``agent`` (name), ``positions``, ``regret`` (mean points per decision) with ``regret_se`` (its standard
        error), ``top1`` (share), ``regret_exact`` / ``regret_search`` (the last-round positions and the others),
        ``seconds_per_decision``.
    """
    rng = np.random.default_rng(seed)
    N = len(proxy)
    chosen = np.zeros(N, dtype=np.int64)
    t0 = time.perf_counter()
    for s in range(0, N, chunk):
        rows = np.arange(s, min(N, s + chunk))
        chosen[rows] = np.asarray(agent.act(slice_obs(proxy.obs, rows), rng), dtype=np.int64)
    dt = time.perf_counter() - t0
    mask = np.asarray(proxy.obs["action_mask"]) != 0
    if ((chosen < 0) | (chosen >= mask.shape[1])).any() or not mask[np.arange(N), np.clip(chosen, 0, None)].all():
        raise ProxyError(f"agent {getattr(agent, 'name', agent)!r} returned a move that is not listed")
    v = np.where(mask, proxy.values, -np.inf)
    best = v.max(axis=1)
    got = proxy.values[np.arange(N), chosen]
    regret = best - got
    top1 = got >= best - 1e-9
    ex = proxy.exact

    def mean(x: np.ndarray) -> float:
        return float(x.mean()) if x.size else math.nan

    return {"agent": getattr(agent, "name", str(agent)), "positions": int(N), "regret": mean(regret),
            "regret_se": float(regret.std(ddof=1) / math.sqrt(N)) if N > 1 else math.nan, "top1": mean(top1),
            "regret_exact": mean(regret[ex]), "regret_search": mean(regret[~ex]),
            "seconds_per_decision": dt / max(N, 1)}


def _cell(value: float, width: int) -> str:
    """A regret in the table: three decimals, or ``-`` where the set has no position of that kind (NaN)."""
    return f"{'-':>{width}}" if np.isnan(value) else f"{value:>{width}.3f}"


def main(agents: str, path: str | None = None, preset: str = "classic", num_players: int | None = None,
         limit: int | None = None, seed: int = 0, json: bool = False, device: str = "auto") -> int:
    """Score agents on the development proxy set: regret per decision (points) and top-1 agreement.

    Args:
        agents: comma-separated agent specs (as cassino eval takes them), e.g. greedy,advanced,pretrained:classic.
        path: the proxy file (default ~/.cache/cassino-rl/proxy/PRESET-Np.npz, N the seats, built by python
            scripts/make_proxy.py).
        preset: rule preset of the default path; with --path, a preset other than the default must be the file's.
        num_players: seats of the default path (None, the default: the preset's first allowed count, 2 or 4 for
            cicera); with --path, when given, the file's.
        limit: score on the first N positions only (a uniform subset; search agents cost their time per move
            times the positions).
        seed: the agents' random generator.
        json: print one JSON object per agent instead of the table.
        device: where the trained agents' networks run: auto (a GPU where torch sees one, else the CPU), cpu, cuda,
            cuda:N or mps; the positions, bots and searches' rollouts stay on the CPU.
    """
    import json as _json

    from agents.device import check_device
    from agents.registry import make_agent
    from train.errors import agent_specs, bad_input, named_rules, spec_errors

    with bad_input() as failed:
        device = check_device(device)  # a device torch cannot see: one error line, before any file is read
        if limit is not None and limit < 1:
            raise ProxyError(f"--limit must be >= 1, got {limit}")
        if path is not None and not path.strip():  # Path("") is ".", a folder: say what is wrong instead
            raise ProxyError("path: the file name is empty; name a proxy file, or leave --path out for the "
                             "preset's default file")
        want = None
        if path is None:
            want = named_rules(preset, num_players)  # the default file's rules: an unknown preset or count named
            build_it = _build_command(want.preset, want.num_players)
            path = default_path(preset, num_players)
            if not _is_file(path):
                raise ProxyError(f"{shown_name(path)}: no proxy file for {want.preset} at {want.num_players} seats "
                                 f"(build one with: {build_it})")
        specs = agent_specs(agents)
        if not specs:
            raise ProxyError("--agents: give at least one agent spec")
        proxy = load(path).head(limit)
        if want is not None and (proxy.rules.preset, proxy.rules.num_players) != (want.preset, want.num_players):
            # a file at the default name built for other rules: scoring it would report another game's figures
            raise ProxyError(f"{shown_name(path)} holds positions of {proxy.rules.preset} with "
                             f"{proxy.rules.num_players} players, not of {want.preset} with {want.num_players}: "
                             f"rebuild it with {build_it}")
        if want is None and ((preset != "classic" and preset != proxy.rules.preset)
                                 or (num_players is not None and num_players != proxy.rules.num_players)):
            # the file's own rules score it; options that say otherwise are a mistake, not a request to rescore
            raise ProxyError(f"preset / num_players: {shown_name(path)} holds positions of {proxy.rules.preset} "
                             f"with {proxy.rules.num_players} players, not of {preset} with "
                             f"{num_players if num_players is not None else 'its default'} players; leave the "
                             "options out to score it under its own rules")
        try:
            built = [make_agent(s, proxy.rules, device=device) for s in specs]
        except spec_errors() as exc:  # named as the option it came from (an UnknownAgentError stays one)
            raise type(exc)(f"agents: {exc}") from None
    if failed.code:
        return failed.code
    rows = []
    if not json:
        print(f"{len(proxy)} positions of {proxy.rules.preset} ({proxy.rules.num_players} players), labelled by "
              f"pimc:{proxy.meta['simulations']} and the exact last round ({int(proxy.exact.sum())} positions)")
        print(f"{'agent':<34} {'regret/decision':>16} {'top-1':>7} {'last round':>11} {'other':>7} {'s/decision':>11}")
    for a in built:
        r = score(a, proxy, seed)
        rows.append(r)
        if json:
            print(_json.dumps(r))
        else:
            print(f"{r['agent']:<34} {r['regret']:>9.3f} ± {1.96 * r['regret_se']:.3f} {r['top1']:>7.1%} "
                  f"{_cell(r['regret_exact'], 11)} {_cell(r['regret_search'], 7)} {r['seconds_per_decision']:>11.4f}")
    return 0
