"""Game records: one played game (a deal, a match or a session) per JSON line, replayable through the oracle.

The format is documented in docs/records.md. In short, a record is a JSON object::

    {"format": "cassino-game", "version": 1, "rules": "classic", "num_players": 2, "seed": 4294967296,
     "play": "match", "session_wins": 1, "seats": ["greedy", "random"],
     "deals": [{"match": 0, "deal": 0, "moves": [{"action": "trail", "card": "7H"}, ...], "points": [7, 4]}, ...],
     "match_winners": [0]}

``seed`` is the core seed of the game (:func:`cassino_env.core.deck_for`): deal ``k`` of match ``m`` is dealt from
``deck_for(seed, m, k)`` with dealer ``(P - 1 + k) % P`` and the match totals so far (:func:`deal_position`), so
the position before every move follows from the seed and the moves before it (docs/interchange.md's
``apply_move``). ``cassino eval --save-games FILE`` writes records (:class:`GameRecorder`, fed by
:func:`train.arena.play_games`); ``cassino serve`` writes one for every game played in the browser;
``cassino replay FILE`` checks them (:func:`replay`: every move legal, every deal's points and every match winner
as recorded) and prints a summary.

>>> from cassino_env.rules import make_rules
>>> rec = random_record(make_rules("classic"), seed=7, play="deal")
>>> game = replay(rec, positions=True)
>>> game.deals[0].tally["totals"] == rec["deals"][0]["points"], len(game.deals[0].positions) == len(game.moves) + 1
(True, True)
>>> bad = json_module.loads(json_module.dumps(rec))
>>> bad["deals"][0]["points"][0] += 1
>>> replay(bad, game=4)
Traceback (most recent call last):
...
train.records.RecordError: game 4, deal 1: points [...] differ from the recorded [...] (docs/rules.md 5)
"""

from __future__ import annotations

import json as json_module
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Any

import numpy as np
import tyro

from cassino_env.cards import NUM_CARDS
from cassino_env.errors import CassinoError, check_seed, excerpt, shown_name
from cassino_env.interchange import game_to_position, move_from_dict, move_to_dict
from cassino_env.reference import Game, Move, match_winner
from cassino_env.rules import RuleSet, make_rules
from cassino_env.session import Session, check_session_wins
from train.errors import fields_once

#: The ``format`` tag and ``version`` of the records this module writes and reads.
FORMAT = "cassino-game"
VERSION = 1
#: What a record plays: one deal, one match, or one session of matches (Trump Stadium's, docs/rules.md 6).
PLAYS = ("deal", "match", "session")
#: The most bytes one record (one line, in UTF-8) may take: a two-player classic match takes about 10 kB, a 3-win
#: session of long matches a few hundred; a line past it is refused before it is read whole (a 100 MB line took
#: 1.3 GB to parse).
MAX_LINE_BYTES = 4 << 20
_FIELDS = {"format", "version", "rules", "num_players", "seed", "play", "session_wins", "seats", "deals",
           "match_winners", "info"}
_DEAL_FIELDS = {"match", "deal", "moves", "points"}


class RecordError(ValueError):
    """A record that is malformed or does not replay: the message names the game (and the deal and move)."""


# --- writing ----------------------------------------------------------------------------------------------------------


def rules_field(rules: RuleSet) -> str | dict[str, Any]:
    """docs/interchange.md's ``rules`` field for ``rules``: the preset name, or ``{"preset": NAME, SWITCH: VALUE}``
    with the switches that differ from the preset at this player count.

    >>> rules_field(make_rules("classic", 3)), rules_field(make_rules("matsuda", target=51))
    ('classic', {'preset': 'matsuda', 'target': 51})
    """
    base = make_rules(rules.preset, rules.num_players).to_dict()
    diff = {k: v for k, v in rules.to_dict().items() if k not in ("preset", "num_players") and base.get(k) != v}
    return {"preset": rules.preset, **diff} if diff else rules.preset


def core_move(kind: int, card: int, value: int, cards: int | np.integer) -> dict[str, Any]:
    """The docs/interchange.md move dict of a core move-table entry (``cards`` a uint64 bitmask of table cards).

    >>> core_move(1, 47, 8, (1 << 2) | (1 << 17))
    {'action': 'capture', 'card': '9S', 'take': ['3C', '5D']}
    """
    mask = int(cards)
    ids = tuple(c for c in range(NUM_CARDS) if mask >> c & 1)
    return move_to_dict(Move(int(kind), int(card), int(value) if kind else 0, ids))


def new_record(rules: RuleSet, seed: int, seats: Sequence[str], play: str = "match", session_wins: int = 1,
               info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An empty record (no deal yet) of a game of ``rules`` from core seed ``seed``, ``seats[p]`` playing seat p."""
    rec: dict[str, Any] = {"format": FORMAT, "version": VERSION, "rules": rules_field(rules),
                           "num_players": rules.num_players, "seed": int(seed), "play": play,
                           "session_wins": int(session_wins), "seats": [str(s) for s in seats], "deals": [],
                           "match_winners": []}
    if info:
        rec["info"] = dict(info)
    return rec


class GameRecorder:
    """Records every game :func:`train.arena.play_games` plays and hands each finished record to ``sink``.

    ``play_games`` calls :meth:`begin` once, :meth:`before_step` before every step (with the actions about to be
    played) and :meth:`after_step` after it (with the step's result), both with the games still being played, and
    :meth:`end` when the batch is over.

    Attributes:
        agent_names: the name recorded for ``agents[k]`` (default each agent's ``name``), e.g. the agent specs.
        sink: called with each finished record (a dict), e.g. :meth:`RecordWriter.write`.
        games: records handed to ``sink`` so far.
    """

    def __init__(self, sink: Any, agent_names: Sequence[str] | None = None) -> None:
        self.sink = sink
        self.agent_names = None if agent_names is None else list(agent_names)
        self.games = 0
        self._records: list[dict[str, Any]] = []
        self._moves: list[list[dict[str, Any]]] = []

    def begin(self, agents: Sequence[Any], rules: RuleSet, seeds: np.ndarray, seat_agent: np.ndarray, until: str,
              session_wins: int) -> None:
        """A batch starts: game ``g`` from core seed ``seeds[g]``, seat ``p`` played by ``agents[seat_agent[g, p]]``,
        until its first deal (``until="deal"``) or its session is over."""
        names = self.agent_names or [str(getattr(a, "name", k)) for k, a in enumerate(agents)]
        play = "deal" if until == "deal" else ("match" if session_wins == 1 else "session")
        self._records = [new_record(rules, int(s), [names[int(k)] for k in row], play, session_wins)
                         for s, row in zip(np.asarray(seeds).tolist(), np.asarray(seat_agent), strict=True)]
        self._moves = [[] for _ in self._records]
        self._next = [(0, 0) for _ in self._records]  # (match, deal) of the deal being played

    def before_step(self, obs: Mapping[str, np.ndarray], actions: np.ndarray, active: np.ndarray) -> None:
        """Record the move index ``actions[g]`` of every game ``g`` with ``active[g]`` (from the observation's
        move table)."""
        for g in np.flatnonzero(active).tolist():
            a = int(actions[g])
            self._moves[g].append(core_move(obs["move_kind"][g, a], obs["move_card"][g, a], obs["move_value"][g, a],
                                            obs["move_cards"][g, a]))

    def after_step(self, result: Any, active: np.ndarray) -> None:
        """Close the deals (and matches) that the step ended in games still being played."""
        for g in np.flatnonzero(result.deal_done & active).tolist():
            m, k = self._next[g]
            rec = self._records[g]
            rec["deals"].append({"match": m, "deal": k, "moves": self._moves[g],
                                 "points": [int(x) for x in result.deal_totals[g]]})
            self._moves[g] = []
            if result.match_done[g]:
                rec["match_winners"].append(int(result.match_winner[g]))
                self._next[g] = (m + 1, 0)
            else:
                self._next[g] = (m, k + 1)

    def end(self) -> None:
        """The batch is over: hand every game's record to the sink, in game order."""
        for rec in self._records:
            self.sink(rec)
            self.games += 1
        self._records, self._moves = [], []


class RecordWriter:
    """Writes records to a JSON Lines file atomically: to ``PATH.tmp``, renamed to ``PATH`` when the ``with`` block
    ends without an error (and removed when it fails), so a failed run leaves no half-written file. A symbolic link
    stays a link (its target is written so), a character device or a FIFO (``/dev/null``, a named pipe) is written
    directly (:func:`agents.files.write_target`).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "games.jsonl"
    >>> with RecordWriter(path) as w:
    ...     w.write(random_record(make_rules("classic"), seed=1, play="deal"))
    >>> len(read_records(path))
    1
    """

    def __init__(self, path: str | Path) -> None:
        """Raises: RecordError: ``path`` is empty, names a folder or another file that cannot be written (a socket,
        a block device, a link that loops), or cannot be looked at (a name too long); checked before anything is
        played."""
        from agents.files import write_target

        self.path = Path(path)
        if not str(path) or not self.path.name or _is_dir(self.path):
            raise RecordError(f"save_games: {shown_name(path)} is a folder, not a file name; name a file "
                              "such as games.jsonl")
        try:
            self.target, self.atomic = write_target(self.path)
        except OSError as exc:
            raise RecordError(f"save_games: cannot write {shown_name(path)}: {exc.strerror or exc}") from None
        name = self.target.name
        self.tmp = self.target.with_name(f"{name}.tmp" if len(name) <= 250 else f".{name[:200]}.tmp")
        self._file: IO[str] | None = None

    def __enter__(self) -> RecordWriter:
        try:
            if self.atomic:
                self.target.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.tmp.open("w", encoding="utf-8")
            else:
                self._file = self.target.open("w", encoding="utf-8")
        except OSError as exc:
            raise RecordError(f"save_games: cannot write {shown_name(self.path)}: {exc.strerror or exc}") from None
        return self

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as one line.

        Raises:
            RecordError: the file cannot be written (a full disk); the ``with`` block then removes ``PATH.tmp``.
        """
        assert self._file is not None, "use RecordWriter in a with block"
        try:
            self._file.write(json_module.dumps(record, separators=(",", ":")) + "\n")
        except OSError as exc:
            raise RecordError(f"save_games: cannot write {shown_name(self.path)}: {exc.strerror or exc}") from None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._file is not None
        try:
            self._file.close()  # the last flush: a full disk may say so only now
            if exc is None and self.atomic:
                os.replace(self.tmp, self.target)
        except OSError as err:  # a full disk, or PATH became a folder: no PATH.tmp left behind
            if self.atomic:
                self.tmp.unlink(missing_ok=True)
            if exc is None:
                raise RecordError(f"save_games: cannot write {shown_name(self.path)}: {err.strerror or err}") \
                    from None
        if exc is not None and self.atomic:
            self.tmp.unlink(missing_ok=True)



def _is_dir(path: Path) -> bool:
    """``path`` is a folder (a name that cannot be looked at is not: writing it says why)."""
    try:
        return path.is_dir()
    except OSError:
        return False


# --- replaying --------------------------------------------------------------------------------------------------------


def deal_position(rules: RuleSet, seed: int, match: int, deal: int, match_scores: Sequence[int] | None = None,
                  rules_value: Any = None) -> dict[str, Any]:
    """The docs/interchange.md position at the start of deal ``deal`` of match ``match`` of a game seeded ``seed``:
    as the core deals it (``deck_for(seed, match, deal)``: ``table_cards`` to the table, then ``hand_size`` cards to
    each seat from the dealer's left, the rest the stock), dealer ``(P - 1 + deal) % P`` (docs/rules.md 2.5)."""
    return game_to_position(_new_deal(rules, seed, match, deal, match_scores), rules_value)


def _new_deal(rules: RuleSet, seed: int, match: int, deal: int, match_scores: Sequence[int] | None) -> Game:
    from cassino_env.core import deck_for  # lazily: the batched core's kernels compile on first use

    dealer = (rules.num_players - 1 + deal) % rules.num_players
    return Game.new_deal(rules, deck_for(seed, match, deal), dealer, match_scores)


@dataclass
class ReplayedDeal:
    """One deal of a replayed record.

    Attributes:
        match, deal: its match and deal numbers (from 0).
        moves: the moves, docs/interchange.md dicts (canonical: lists sorted by card id).
        tally: the oracle's ``score_deal`` of the finished deal (``sides``, ``items``, ``totals`` in points).
        match_scores: per side, the match totals after the deal (points; 0 again in the next match).
        match_winner: the side that won the match with this deal, or None.
        positions: with ``positions=True``: the position before each move and the finished deal's position
            (len(moves) + 1 docs/interchange.md position dicts); else empty.
        movers: the seat that played each move.
    """

    match: int
    deal: int
    moves: list[dict[str, Any]]
    tally: dict[str, Any]
    match_scores: list[int]
    match_winner: int | None
    positions: list[dict[str, Any]] = field(default_factory=list)
    movers: list[int] = field(default_factory=list)


@dataclass
class ReplayedGame:
    """A record that replayed cleanly: its rules, seats and deals (:class:`ReplayedDeal`)."""

    record: dict[str, Any]
    rules: RuleSet
    deals: list[ReplayedDeal]

    @property
    def moves(self) -> list[dict[str, Any]]:
        """Every move of the game, deal after deal."""
        return [m for d in self.deals for m in d.moves]


def _where(game: int | None, deal: int | None = None, move: int | None = None) -> str:
    parts = [f"game {game}" if game is not None else "record"]
    if deal is not None:
        parts.append(f"deal {deal}")
    if move is not None:
        parts.append(f"move {move}")
    return ", ".join(parts)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _move_excerpt(move: Any, limit: int = 200) -> str:
    """A move as JSON for an error message, cut in the middle past ``limit`` characters (a 5 MB move was quoted
    whole)."""
    try:
        text = json_module.dumps(move)
    except (TypeError, ValueError, RecursionError):
        return excerpt(move)
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return f"{text[:half]}...{text[-half:]} ({len(text)} characters)"


def check_record(record: Any, game: int | None = None) -> RuleSet:
    """Check a record's fields (not its moves); returns its RuleSet.

    Raises:
        RecordError: naming the game and the field.
    """
    where = _where(game)
    if not isinstance(record, Mapping):
        raise RecordError(f"{where}: a record is a JSON object, not {type(record).__name__}")
    unknown = sorted(set(record) - _FIELDS)
    if unknown:
        name = unknown[0] if len(unknown[0]) <= 80 and unknown[0].isprintable() else excerpt(unknown[0])
        raise RecordError(f"{where}: {name}: unknown field; fields are {', '.join(sorted(_FIELDS))}")
    missing = sorted({"format", "version", "rules", "num_players", "seed", "play", "seats", "deals"} - set(record))
    if missing:
        raise RecordError(f"{where}: {missing[0]}: required field is missing")
    if record["format"] != FORMAT:
        raise RecordError(f"{where}: format: expected {FORMAT!r}, got {excerpt(record['format'])}")
    if not _is_int(record["version"]) or record["version"] != VERSION:  # true and 1.0 equal 1 but are not it
        raise RecordError(f"{where}: version: this code reads version {VERSION}, got {excerpt(record['version'])}")
    n = record["num_players"]
    if not _is_int(n):
        raise RecordError(f"{where}: num_players: expected an integer, got {excerpt(n)}")
    try:
        rules = make_rules(record["rules"], num_players=int(n))
    except (CassinoError, TypeError) as exc:
        raise RecordError(f"{where}: rules: {exc}") from None
    try:
        check_seed(record["seed"], "seed")
    except CassinoError as exc:
        raise RecordError(f"{where}: {exc}") from None
    if record["play"] not in PLAYS:
        raise RecordError(f"{where}: play: expected one of {', '.join(PLAYS)}, got {excerpt(record['play'])}")
    try:
        check_session_wins(record.get("session_wins", 1))
    except CassinoError as exc:
        raise RecordError(f"{where}: session_wins: {exc}") from None
    if record["play"] != "session" and record.get("session_wins", 1) != 1:
        raise RecordError(f"{where}: session_wins: only a session record plays more than one match win")
    seats = record["seats"]
    if not isinstance(seats, list) or len(seats) != rules.num_players or not all(isinstance(s, str) for s in seats):
        raise RecordError(f"{where}: seats: expected {rules.num_players} agent names (strings), got {excerpt(seats)}")
    deals = record["deals"]
    if not isinstance(deals, list) or not deals:
        raise RecordError(f"{where}: deals: expected a non-empty list of deals, got {excerpt(deals)}")
    winners = record.get("match_winners", [])
    if not isinstance(winners, list) or not all(_is_int(w) for w in winners):
        raise RecordError(f"{where}: match_winners: expected a list of sides, got {excerpt(winners)}")
    if "info" in record and not isinstance(record["info"], Mapping):
        raise RecordError(f"{where}: info: expected a JSON object, got {excerpt(record['info'])}")
    return rules


def replay(record: Mapping[str, Any], game: int | None = None, positions: bool = False) -> ReplayedGame:
    """Replay a record through the oracle's engine: check every field, every move's legality, every deal's points
    and every match winner against the record, and that the game ends where its ``play`` says.

    Args:
        record: one record (a parsed JSON line).
        game: the record's number in its file (from 1), for error messages.
        positions: keep the position before every move (docs/interchange.md dicts) in each deal's ``positions``.

    Raises:
        RecordError: naming the game, the deal (from 1) and the move (from 1) and what is wrong: a malformed
            field or move, an illegal move (the rule it breaks), points or a winner that differ from the record.
    """
    rules = check_record(record, game)
    seed, S = int(record["seed"]), rules.num_sides
    play, wins = record["play"], int(record.get("session_wins", 1))
    session = Session(wins, S)
    m, k, scores = 0, 0, [0] * S
    out: list[ReplayedDeal] = []
    winners: list[int] = []
    deals = record["deals"]
    for d, deal in enumerate(deals, start=1):
        where = _where(game, d)
        if not isinstance(deal, Mapping) or set(deal) != _DEAL_FIELDS:
            raise RecordError(f"{where}: a deal is an object with exactly {', '.join(sorted(_DEAL_FIELDS))}")
        for name in ("match", "deal"):
            if not _is_int(deal[name]):
                raise RecordError(f"{where}: {name}: expected an integer, got {excerpt(deal[name])}")
        points = deal["points"]
        if not isinstance(points, list) or len(points) != S or not all(_is_int(x) for x in points):
            raise RecordError(f"{where}: points: expected {S} integers (one per side), got {excerpt(points)}")
        if (deal["match"], deal["deal"]) != (m, k):
            raise RecordError(f"{where}: match {excerpt(deal['match'])}, deal {excerpt(deal['deal'])} recorded, but "
                              f"the game is at match {m}, deal {k} (numbered from 0)")
        if session.done or (play == "deal" and d > 1) or (play == "match" and winners):
            raise RecordError(f"{where}: the {play} was over before this deal")
        moves = deal["moves"]
        if not isinstance(moves, list):
            raise RecordError(f"{where}: moves: expected a list of moves, got {excerpt(moves)}")
        g = _new_deal(rules, seed, m, k, scores)
        kept: list[dict[str, Any]] = []
        seen: list[dict[str, Any]] = []
        movers: list[int] = []
        for i, mv in enumerate(moves, start=1):
            here = _where(game, d, i)
            if g.is_deal_over():
                raise RecordError(f"{here}: the deal is over after {i - 1} moves, but the record goes on")
            if positions:
                seen.append(game_to_position(g, record["rules"]))
            try:
                move = move_from_dict(g, mv)
                movers.append(int(g.to_move))
                g.apply(move)
            except CassinoError as exc:  # MoveFormatError (a field) or IllegalMoveError (the rule)
                raise RecordError(f"{here} ({_move_excerpt(mv)}): {exc}") from None
            kept.append(move_to_dict(move))
        if not g.is_deal_over():
            raise RecordError(f"{where}: the record ends after {len(moves)} moves, but the deal is not over "
                              f"(seat {g.to_move} is to move)")
        if positions:
            seen.append(game_to_position(g, record["rules"]))
        tally = g.score_deal()
        if points != tally["totals"]:
            raise RecordError(f"{where}: points {tally['totals']} differ from the recorded {excerpt(points)} "
                              "(docs/rules.md 5)")
        scores = [a + b for a, b in zip(scores, tally["totals"], strict=True)]
        w = match_winner(scores, rules.target)
        out.append(ReplayedDeal(m, k, kept, tally, list(scores), w, seen, movers))
        if w is None:
            k += 1
        else:  # docs/rules.md 2.6: a new match starts from dealer P-1 with totals 0
            winners.append(w)
            session.add(w)
            m, k, scores = m + 1, 0, [0] * S
    where = _where(game)
    recorded = list(record.get("match_winners", []))
    if recorded != winners:
        raise RecordError(f"{where}: match_winners: the deals give {winners}, the record says {recorded}")
    if play == "match" and not winners:
        raise RecordError(f"{where}: play is 'match' but the match is not over after {len(deals)} deals")
    if play == "session" and not session.done:
        raise RecordError(f"{where}: play is 'session' but the session (first to {wins} match wins) is not over")
    return ReplayedGame(dict(record), rules, out)


def iter_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(game number from 1, parsed JSON) for each line of a JSON Lines file; every line must hold one record.

    The file is read one line at a time (standard input too, for ``-``), each line at most :data:`MAX_LINE_BYTES`:
    memory stays bounded by the longest line, whatever the file's size.

    Raises:
        RecordError: an unreadable file, or a line that is empty, too long, not UTF-8 or not JSON, holds a field
            twice or a lone surrogate (naming the game and line; :func:`parse_line`).
    """
    path = Path(path)
    stdin = str(path) == "-"
    if stdin and getattr(sys.stdin, "buffer", None) is None:  # a text-only stand-in (a test's StringIO)
        yield from parse_lines(sys.stdin.read())
        return
    try:
        f = sys.stdin.buffer if stdin else path.open("rb")
    except OSError as exc:
        raise RecordError(f"{shown_name(path)}: {exc.strerror or exc}") from None
    n = 0
    try:
        while True:
            try:
                raw = f.readline(MAX_LINE_BYTES + 2)  # the line, its \r\n, and one byte more: "too long"
            except OSError as exc:  # a folder, a device that fails
                raise RecordError(f"{shown_name(path)}: {exc.strerror or exc}") from None
            if not raw:
                break
            n += 1
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            elif len(raw) > MAX_LINE_BYTES:  # cut by the limit, not by a line break
                raise RecordError(f"game {n} (line {n}): the line is longer than {MAX_LINE_BYTES:,} bytes, the most "
                                  "a record may take; refused before it is read whole")
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RecordError(f"game {n} (line {n}): not UTF-8 text ({exc.reason} at byte {exc.start})") from None
            yield n, parse_line(n, line)
    finally:
        if not stdin:
            f.close()
    if not n:
        raise RecordError("no records: the file is empty")


def split_lines(text: str) -> list[str]:
    """The lines of JSON Lines ``text``: split at ``\\n`` only (a ``\\r`` before it dropped), not at the other line
    breaks ``str.splitlines`` knows (U+2028, U+0085, form feed...), which JSON strings may hold raw; a final newline
    ends the last line.

    >>> split_lines('{"a": "x\u2028y"}\\r\\n{}\\n')
    ['{"a": "x\u2028y"}', '{}']
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class _Duplicate(ValueError):
    """A JSON object's key given twice (raised inside ``json.loads`` by :func:`train.errors.fields_once`, the one
    duplicate-field hook of the position reader and the web app; reported by :func:`parse_line`)."""


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) in parsed JSON that holds a lone surrogate (not Unicode text), or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def parse_line(n: int, line: str) -> Any:
    """The JSON of line ``n`` of a records file (game ``n``): one value, checked as text before it is a record.

    Raises:
        RecordError: naming the game (its line): an empty line, one longer than :data:`MAX_LINE_BYTES` (in UTF-8),
            not JSON (nested too deeply or a number too long to read included), an object with a field given twice
            (as the web app refuses one: JSON leaves which one counts open), or a string with a lone surrogate
            (``"\\ud800"``: valid JSON, but not Unicode text that can be printed or written back).
    """
    where = f"game {n} (line {n})"
    if len(line) > MAX_LINE_BYTES // 4 and len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise RecordError(f"{where}: the line is longer than {MAX_LINE_BYTES:,} bytes, the most a record may take")
    if not line.strip():
        raise RecordError(f"{where}: empty line; every line holds one record")
    try:
        rec = json_module.loads(line, object_pairs_hook=fields_once(_Duplicate))
    except _Duplicate as exc:  # "'KEY': the field is given twice", as the web app and cassino moves say it
        raise RecordError(f"{where}: {exc} (a record names each field once)") from None
    except RecursionError:
        raise RecordError(f"{where}: not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of over 4300 digits
        raise RecordError(f"{where}: not valid JSON: {str(exc)[:200]}") from None
    if not line.isascii() or "\\u" in line:  # only an escape or raw text can hold a surrogate
        bad = _lone_surrogate(rec)
        if bad is not None:
            raise RecordError(f"{where}: the string {excerpt(bad)} holds a lone surrogate (an unpaired \\ud800-"
                              "\\udfff): not Unicode text")
    return rec


def parse_lines(text: str) -> Iterator[tuple[int, Any]]:
    """(game number from 1, parsed JSON) for each line of JSON Lines ``text`` (:func:`split_lines`).

    Raises:
        RecordError: an empty text, or a line :func:`parse_line` refuses, naming the game (its line).
    """
    lines = split_lines(text)
    if not lines:
        raise RecordError("no records: the file is empty")
    for n, line in enumerate(lines, start=1):
        yield n, parse_line(n, line)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a JSON Lines file, checked field by field (not replayed).

    Raises:
        RecordError: naming the game for an unreadable file or a malformed line or record.
    """
    out = []
    for n, rec in iter_records(path):
        check_record(rec, n)
        out.append(rec)
    return out


# --- summary and the command line -------------------------------------------------------------------------------------


def _label(rules: RuleSet) -> str:
    f = rules_field(rules)
    name = f if isinstance(f, str) else ", ".join([f["preset"], *(f"{k}={v}" for k, v in f.items() if k != "preset")])
    return f"{name}, {rules.num_players} players"


def summarize(games: Sequence[ReplayedGame]) -> dict[str, Any]:
    """Totals of replayed games: per rule set, games, deals, moves and matches, and per agent (a seat name) the
    games it played, the deals, its side's mean points per deal and the matches it won."""
    groups: dict[str, dict[str, Any]] = {}
    for g in games:
        grp = groups.setdefault(_label(g.rules), {"rules": _label(g.rules), "games": 0, "deals": 0, "moves": 0,
                                                  "matches": 0, "agents": {}})
        grp["games"] += 1
        grp["deals"] += len(g.deals)
        grp["moves"] += len(g.moves)
        grp["matches"] += sum(d.match_winner is not None for d in g.deals)
        sides = g.rules.sides
        for name in dict.fromkeys(g.record["seats"]):
            mine = [s for s, side in enumerate(sides) if any(g.record["seats"][p] == name for p in side)]
            a = grp["agents"].setdefault(name, {"games": 0, "deals": 0, "points": 0.0, "matches": 0, "match_wins": 0})
            a["games"] += 1
            a["deals"] += len(g.deals)
            a["points"] += sum(sum(d.tally["totals"][s] for s in mine) / len(mine) for d in g.deals)
            for d in g.deals:
                if d.match_winner is not None:
                    a["matches"] += 1
                    a["match_wins"] += d.match_winner in mine
    for grp in groups.values():
        for a in grp["agents"].values():
            a["mean_points"] = a.pop("points") / a["deals"] if a["deals"] else 0.0
    return {"games": len(games), "deals": sum(len(g.deals) for g in games),
            "moves": sum(len(g.moves) for g in games), "groups": list(groups.values())}


def _shown(text: str, limit: int = 60) -> str:
    """A seat or file name for the terminal: as it is when printable, else quoted with its control characters,
    escape sequences, line breaks and lone surrogates escaped (``repr``); cut in the middle past ``limit``."""
    return shown_name(text, limit)


def format_summary(name: str, summary: Mapping[str, Any]) -> str:
    """The summary as text (the ``cassino replay`` output); file and seat names shown escaped when they are not
    printable (an escape sequence, a CR or LF, a lone surrogate), so none reaches the terminal raw."""
    lines = [f"{_shown(name, 200)}: {summary['games']} games, {summary['deals']} deals, {summary['moves']} moves: "
             "all valid (every move legal, every deal's points and every match winner as recorded)"]
    for grp in summary["groups"]:
        lines.append("")
        lines.append(f"{grp['rules']}: {grp['games']} games, {grp['deals']} deals, {grp['moves']} moves, "
                     f"{grp['matches']} matches finished")
        shown = {n: _shown(n) for n in grp["agents"]}
        width = max(5, *(len(n) for n in shown.values()))
        lines.append(f"  {'agent':<{width}}  {'games':>6}  {'deals':>6}  {'points/deal':>11}  {'matches won':>11}")
        for n, a in grp["agents"].items():
            won = f"{a['match_wins']}/{a['matches']}"
            lines.append(f"  {shown[n]:<{width}}  {a['games']:>6}  {a['deals']:>6}  {a['mean_points']:>11.2f}  "
                         f"{won:>11}")
    return "\n".join(lines)


def replay_file(path: str | Path) -> list[ReplayedGame]:
    """Replay every record of a file (:func:`replay`); the first bad one raises.

    Raises:
        RecordError: naming the game (its line), the deal and the move.
    """
    return [replay(rec, n) for n, rec in iter_records(path)]


def main(file: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="FILE")], json: bool = False) -> int:
    """Check a game-record file and summarise it: every move legal, every deal's points and match winner as recorded.

    A record is one JSON line (docs/records.md), as cassino eval --save-games and cassino serve write them. The
    first bad record stops the check with an error naming the game (its line), the deal and the move.

    Args:
        file: the JSON Lines file; - reads standard input.
        json: print the summary as one JSON object.
    """
    from train.errors import bad_input

    with bad_input() as failed:
        games = replay_file(file)
    if failed.code:
        return failed.code
    summary = summarize(games)
    try:
        print(json_module.dumps(summary) if json else format_summary(str(file), summary), flush=True)
    except BrokenPipeError:  # `cassino replay FILE | head`: stop quietly, as `cassino moves` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


# --- test helper ------------------------------------------------------------------------------------------------------


def random_record(rules: RuleSet, seed: int, play: str = "deal", rng_seed: int = 0) -> dict[str, Any]:
    """A record of random legal play (the oracle's exact move lists), for tests and examples: one deal, or one
    match with ``play="match"``."""
    import random

    pick = random.Random(rng_seed)
    rec = new_record(rules, seed, ["random"] * rules.num_players, play)
    m = k = 0
    scores = [0] * rules.num_sides
    while True:
        g = _new_deal(rules, seed, m, k, scores)
        moves = []
        while not g.is_deal_over():
            move = pick.choice(g.legal_moves())
            moves.append(move_to_dict(move))
            g.apply(move)
        totals = g.score_deal()["totals"]
        rec["deals"].append({"match": m, "deal": k, "moves": moves, "points": totals})
        scores = [a + b for a, b in zip(scores, totals, strict=True)]
        w = match_winner(scores, rules.target)
        if w is not None:
            rec["match_winners"].append(w)
        if play == "deal" or w is not None:
            return rec
        k += 1
