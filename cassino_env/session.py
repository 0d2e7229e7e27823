"""Match formats above the match: Trump Stadium's *session*, won by the first side to win N matches (N = 1, 2 or 3).

docs/rules.md 6: Trump Stadium counts a match to 21 as one "match" and offers sessions won by the first side to win
1, 2 or 3 matches. A match (deals until a side reaches ``rules.target``, 21 or 51, another deal while the top totals
tie; docs/rules.md 2.6) is played by the core; the first player alternates between deals because the dealer moves one
seat per deal (a match's first dealer is seat P-1). This module only folds the winners of whole matches, in the
order they were played, into a session result. It knows nothing of cards, so it serves every preset and player count: a
side is a seat, or a partnership (``rules.num_sides`` sides).

Decisions where docs/rules.md is silent: a session has no draws (a match always has a winner, so the first side to N
wins always exists, after at most ``num_sides * (N - 1) + 1`` matches); every side's match count starts at 0 and
nothing carries over from one session to the next; a match reported after the session is decided is an error, not
silently ignored.

One session, match by match:

>>> s = Session(wins_needed=2)
>>> s.add(1), s.add(0), s.done
(None, None, False)
>>> s.add(1), s.done, s.wins
(1, True, (1, 2))

Folding a list of match winners:

>>> session_result([0, 1, 1], wins_needed=2)
SessionResult(winner=1, wins=(1, 2), matches=3)
>>> session_result([0], wins_needed=2).winner is None  # undecided: more matches needed
True

Many sessions at once (one per game, as the evaluation steps games in batches):

>>> b = SessionBatch(num_games=3, num_sides=2, wins_needed=1)
>>> b.record(np.array([0, 2]), np.array([1, 0])).tolist()  # games 0 and 2 end a match
[True, True]
>>> b.winner.tolist(), b.done.tolist()
([1, -1, 0], [True, False, True])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .errors import CassinoError, excerpt

#: Session lengths Trump Stadium offers: the first side to win 1, 2 or 3 matches.
SESSION_WINS = (1, 2, 3)


class SessionError(CassinoError):
    """A bad session length, side index or a match reported after the session was decided."""


def check_session_wins(wins_needed: int) -> int:
    """``wins_needed`` if it is one of :data:`SESSION_WINS`.

    >>> check_session_wins(4)
    Traceback (most recent call last):
    ...
    cassino_env.session.SessionError: a session is won by the first side to win 1, 2 or 3 matches (...), not 4
    """
    if isinstance(wins_needed, bool) or not isinstance(wins_needed, (int, np.integer)) \
            or int(wins_needed) not in SESSION_WINS:
        raise SessionError(f"a session is won by the first side to win {', '.join(map(str, SESSION_WINS[:-1]))} or "
                           f"{SESSION_WINS[-1]} matches (Trump Stadium's sessions, docs/rules.md 6), "
                           f"not {excerpt(wins_needed)}")
    return int(wins_needed)


def max_matches(wins_needed: int, num_sides: int = 2) -> int:
    """The longest possible session: every side one win short, then one more match.

    >>> max_matches(3), max_matches(2, num_sides=3)
    (5, 4)
    """
    return num_sides * (check_session_wins(wins_needed) - 1) + 1


@dataclass(frozen=True)
class SessionResult:
    """A session's state after some matches.

    Attributes:
        winner: the side that won ``wins_needed`` matches first, or None while undecided.
        wins: matches won per side.
        matches: matches played in the session.
    """

    winner: int | None
    wins: tuple[int, ...]
    matches: int


class Session:
    """One session of ``wins_needed`` match wins between ``num_sides`` sides; feed it match winners in order.

    Raises:
        SessionError: a bad ``wins_needed`` or ``num_sides``.
    """

    def __init__(self, wins_needed: int, num_sides: int = 2) -> None:
        self.wins_needed = check_session_wins(wins_needed)
        if isinstance(num_sides, bool) or not isinstance(num_sides, (int, np.integer)) or num_sides < 2:
            raise SessionError(f"a session needs at least 2 sides, got {num_sides!r}")
        self.num_sides = int(num_sides)
        self._wins = [0] * self.num_sides
        self.winner: int | None = None
        self.matches = 0

    @property
    def done(self) -> bool:
        """A side has won the session."""
        return self.winner is not None

    @property
    def wins(self) -> tuple[int, ...]:
        """Matches won per side so far."""
        return tuple(self._wins)

    def add(self, match_winner: int) -> int | None:
        """Record a match won by side ``match_winner``; return the session's winner (None while undecided).

        Raises:
            SessionError: a side outside ``0 .. num_sides - 1``, or the session is already decided.
        """
        if self.done:
            raise SessionError(f"the session was decided after match {self.matches} (side {self.winner} won "
                               f"{self.wins_needed}); start a new session")
        if isinstance(match_winner, bool) or not isinstance(match_winner, (int, np.integer)) \
                or not 0 <= match_winner < self.num_sides:
            raise SessionError(f"match winner must be a side 0..{self.num_sides - 1}, got {excerpt(match_winner)}")
        side = int(match_winner)
        self._wins[side] += 1
        self.matches += 1
        if self._wins[side] >= self.wins_needed:
            self.winner = side
        return self.winner

    def result(self) -> SessionResult:
        """The session so far."""
        return SessionResult(self.winner, self.wins, self.matches)


def session_result(match_winners: Iterable[int], wins_needed: int, num_sides: int = 2) -> SessionResult:
    """Fold match winners (side indices, in the order the matches were played) into a session result.

    Raises:
        SessionError: a bad ``wins_needed``, a side out of range, or a match after the deciding one.
    """
    session = Session(wins_needed, num_sides)
    for w in match_winners:
        session.add(w)
    return session.result()


class SessionBatch:
    """One session per game for ``num_games`` games (arrays, for batched play; same rules as :class:`Session`).

    Attributes:
        wins: int64[G, S] — matches won per game and side.
        matches: int64[G] — matches recorded per game.
        winner: int64[G] — the session's winning side, -1 while undecided.
    """

    def __init__(self, num_games: int, num_sides: int, wins_needed: int) -> None:
        self.wins_needed = check_session_wins(wins_needed)
        if num_sides < 2:
            raise SessionError(f"a session needs at least 2 sides, got {num_sides!r}")
        self.wins = np.zeros((num_games, num_sides), dtype=np.int64)
        self.matches = np.zeros(num_games, dtype=np.int64)
        self.winner = np.full(num_games, -1, dtype=np.int64)

    @property
    def done(self) -> np.ndarray:
        """bool[G]: the game's session is decided."""
        return self.winner >= 0

    def record(self, games: np.ndarray, match_winners: np.ndarray) -> np.ndarray:
        """Games ``games`` (distinct indices) each ended a match won by side ``match_winners``; returns
        bool[len(games)]: the match decided that game's session.

        Raises:
            SessionError: a side out of range, or a game whose session was already decided.
        """
        games = np.asarray(games, dtype=np.int64)
        w = np.asarray(match_winners, dtype=np.int64)
        if games.shape != w.shape:
            raise SessionError(f"{games.size} games but {w.size} match winners")
        if ((w < 0) | (w >= self.wins.shape[1])).any():
            raise SessionError(f"match winners must be sides 0..{self.wins.shape[1] - 1}, got {w.tolist()}")
        if self.done[games].any():
            g = int(games[self.done[games]][0])
            raise SessionError(f"game {g}: its session was already decided")
        self.wins[games, w] += 1
        self.matches[games] += 1
        decided = self.wins[games, w] >= self.wins_needed
        self.winner[games[decided]] = w[decided]
        return decided
