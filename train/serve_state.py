"""The web app's state (``cassino serve``, :mod:`train.serve`): the games being played and the record files opened.

:class:`Server` keeps them, each under a random id; :class:`LiveGame` is one game played in the browser (the person at
one seat, an agent at every other) and shapes its state as JSON for the page; :func:`game_options` and
:func:`check_opponent` read a ``POST /api/games`` body and refuse an agent the server does not offer;
:func:`parse_json` reads a request body. Every malformed request raises :class:`RequestError` (its status and
message); :mod:`train.serve` holds the Starlette app and routes, the ``Host`` check and the command line.

Limits (each a module constant, documented in docs/web.md):

* **Games kept**: at most :data:`MAX_GAMES`. A new game makes room by forgetting a finished game first (the one
  untouched longest), then a game nobody has touched for :data:`GAME_IDLE_SECONDS` (idle longest first); a game in
  play (touched more recently) is never dropped: when every slot holds one, ``POST /api/games`` is answered 503 with
  a message saying so.
* **Reads do not wait on a search**: each game publishes its state (and, once it is over, its record) after every
  change; ``GET /api/games/{id}`` answers that snapshot at once, even while the agent's move is being searched.
* **Hidden cards stay hidden**: while a game is being played its state carries no seed (the deal's seed gives every
  hand, :func:`train.records.deal_position`), its record (which holds the seed) is not served, and the agent's move
  probabilities are only shown for the move it played (the list of its moves would show its hand). When the game is
  over the seed and the record are served.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cassino_env.cards import card_text
from cassino_env.errors import CassinoError, check_seed, excerpt
from cassino_env.rules import RuleSet, make_rules
from train.errors import fields_once

#: Games kept in memory (a game against a network holds its own copy, some 8 MiB). Starting one more forgets a
#: finished game, else one idle for :data:`GAME_IDLE_SECONDS`; when every game is in play, it is refused (503).
MAX_GAMES = 64
#: A game nobody has read or moved in for this long (seconds) may be forgotten to make room for a new one.
GAME_IDLE_SECONDS = 10 * 60
#: Record files kept in memory for the viewer; opening one more forgets the oldest.
MAX_RECORD_FILES = 8
#: The most text (characters) of the record files kept for the viewer, all together: opening one more forgets the
#: oldest ones until it fits (the file just opened is always kept).
MAX_RECORD_TEXT_KEPT = 128 * 1024 * 1024
#: The most deals of one game the viewer replays (every position of every deal goes into one answer); a match to
#: 21 plays a few deals, a session of three matches a few dozen. ``cassino replay FILE`` checks any game.
MAX_VIEWER_DEALS = 1000
#: A game started without a seed gets one drawn below this (every seed ``check_seed`` takes): from 2**32 seeds, the
#: one that deals the cards a player sees could be found by trying each (minutes), and with it the hidden hands.
RANDOM_SEEDS = 2**63
#: What a game plays: one deal, or a match to the rules' target.
PLAYS = ("deal", "match")
#: The most simulations a ``pimc:N`` opponent may take per decision here (a larger one would hold the server for
#: minutes a move); the operator may allow a larger one by name (``cassino serve --allow-agent pimc:N``).
MAX_WEB_SIMULATIONS = 20_000
#: The most agent moves (``POST /api/games/{id}/step``: a search of up to :data:`MAX_WEB_SIMULATIONS` simulations, a
#: network's forward pass) computed at once; one more is answered 503 at once (it would hold one of the server's
#: threads for as long, and 45 of them kept even ``POST /api/games`` waiting two minutes).
MAX_MOVES_IN_FLIGHT = 8
#: The most record files (``POST /api/records``, each up to :data:`train.serve.MAX_RECORDS_BYTES`) received and
#: checked at once; one more is answered 503 (its body read and dropped, never kept). A file takes about three times
#: its size while it is read (its bytes, its text, its lines), so 30 uploads of 60 MB at once took the server to 6 GB.
MAX_UPLOADS = 2


class RequestError(ValueError):
    """A malformed request: answered with ``status`` and ``{"error": message}``."""

    def __init__(self, message: str, status: int = 400, *, retry_after: int | None = None,
                 close: bool = False) -> None:
        """``retry_after``: seconds for a ``Retry-After`` header (a 503 or 409 gets 1 unless told); ``close``: the
        answer closes the connection (a body refused before it was read: the rest of it is not waited for)."""
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after if retry_after is not None or status not in (409, 503) else 1
        self.close = close


# --- the game state as the page sees it -------------------------------------------------------------------------------


def seat_names(rules: RuleSet, seats: list[str], you: int | None) -> list[str]:
    """A label per seat: ``you``, or the seat's agent (``your partner`` added in partnerships)."""
    out = []
    for p, name in enumerate(seats):
        if p == you:
            out.append("you")
        elif you is not None and rules.num_sides < rules.num_players and p % rules.num_sides == you % rules.num_sides:
            out.append(f"{name} (your partner)")
        else:
            out.append(name)
    return out


def view(position: Mapping[str, Any], rules: RuleSet, shown: set[int] | None = None) -> dict[str, Any]:
    """What the page draws of a docs/interchange.md position: the hands of the seats in ``shown`` (all when None;
    the others as ``null`` with their card count), the table, the builds, per seat the cards and spades captured,
    sweeps and in-play points, the stock's size and the match totals."""
    hands = position["hands"]
    return {
        "hands": [h if shown is None or p in shown else None for p, h in enumerate(hands)],
        "hand_counts": [len(h) for h in hands],
        "loose": list(position["loose"]),
        "builds": [dict(b) for b in position["builds"]],
        "captured": [len(c) for c in position["captured"]],
        "spades": [sum(1 for c in pile if c.endswith("S")) for pile in position["captured"]],
        "sweeps": list(position["sweeps"]),
        "bonus_points": list(position["bonus_points"]),
        "stock": len(position["stock"]),
        "match_scores": list(position["match_scores"]),
        "dealer": position["dealer"],
        "to_move": position["to_move"],
        "last_capturer": position["last_capturer"],
        "in_play": rules.in_play_bonuses,
    }


def core_position(state: Any, rules_value: Any) -> dict[str, Any]:
    """Game 0 of a core state as a docs/interchange.md position (card texts; cards in card-id order)."""
    from cassino_env import core

    p = core.position(state, 0)

    def texts(ids: list[int]) -> list[str]:
        return [card_text(c) for c in sorted(ids)]

    return {
        "rules": rules_value, "num_players": len(p["hands"]), "to_move": p["to_move"], "dealer": p["dealer"],
        "hands": [texts(h) for h in p["hands"]], "loose": texts(p["loose"]),
        "builds": [{"cards": texts(c), "value": v, "owner": o} for c, v, o in p["builds"]],
        "captured": [texts(c) for c in p["captured"]], "sweeps": p["sweeps"], "bonus_points": p["in_play"],
        "stock": [card_text(c) for c in p["stock"]], "last_capturer": p["last_capturer"],
        "last_trail": None if p["last_trail"] is None else card_text(p["last_trail"]),
        "match_scores": p["match_scores"],
    }


def score_table(rules: RuleSet, tally: Mapping[str, Any], cards: list[int] | None = None,
                spades: list[int] | None = None, match_totals: list[int] | None = None) -> dict[str, Any]:
    """A deal's score for the page: ``{"items": [[item, [points per side]], ...], "totals", "cards", "spades",
    "match_totals"}``, from an oracle-style tally ``{"items": [{item: points} per side], "totals"}``."""
    names = list(tally["items"][0]) if tally["items"] else []
    return {"items": [[n, [int(side[n]) for side in tally["items"]]] for n in names],
            "totals": [int(t) for t in tally["totals"]], "cards": cards, "spades": spades,
            "match_totals": match_totals}


def move_probabilities(agent: Any, obs: Mapping[str, Any]) -> list[float] | None:
    """A network agent's probabilities (float, summing to 1) over the listed moves of game 0 of ``obs``; None
    for an agent without a policy network (a bot, the search bot)."""
    policy = getattr(agent, "policy", None)
    if policy is None or not hasattr(policy, "logits"):
        return None
    import torch

    from agents.policy import MoveBatch

    featurizer = getattr(agent, "featurizer", None)
    feats = featurizer(obs) if featurizer is not None else None
    with torch.no_grad():
        probs = torch.softmax(policy.logits(MoveBatch.from_obs(obs, feats)), dim=-1)[0].cpu()
    n = int(np.asarray(obs["action_mask"][0]).sum())
    return [float(x) for x in probs[:n]]


class LiveGame:
    """One game played in the browser: the person at ``seat``, ``agent`` (built from ``spec``) at every other seat.

    The game runs on the batched core with one game (``auto_reset`` off, so a finished deal stays on the table
    until :meth:`next_deal`), the agents act on the vector environment's observations (as ``cassino play``), and
    every move goes into the game's record (docs/records.md).
    """

    def __init__(self, game_id: str, rules: RuleSet, spec: str, seat: int, seed: int, play: str,
                 device: str | None = None) -> None:
        from agents.registry import make_agent
        from cassino_env import core
        from cassino_env.vector import CassinoVectorEnv
        from train.records import new_record, rules_field

        self.id, self.rules, self.spec, self.seat, self.seed, self.play = game_id, rules, spec, seat, seed, play
        try:
            self.agent = make_agent(spec, rules, device=device)  # device: the server's (cassino serve --device)
        except ValueError as exc:  # AgentSpecError, CheckpointError: a bad request, naming the field
            raise RequestError(f"opponent: {exc}") from None
        self.lock = threading.Lock()  # held by every change; reads answer the published snapshot instead
        self.searching = False  # the agent's move is being computed (under the lock)
        self.touched = time.monotonic()  # the last request for this game (Server.game)
        self.env = CassinoVectorEnv(1, rules, with_view=True)
        self.env.state = core.init(rules, np.array([seed], dtype=np.int64), max_moves=self.env.max_moves,
                                   prune=self.env.prune, auto_reset=False)
        self.obs = self.env.observe()
        self.rng = np.random.default_rng(seed)
        self.seats = ["human" if p == seat else spec for p in range(rules.num_players)]
        self.names = seat_names(rules, self.seats, seat)
        self.rules_value = rules_field(rules)
        self.record = new_record(rules, seed, self.seats, play, info={"source": "cassino serve"})
        self.moves: list[dict[str, Any]] = []  # this deal's moves: seat, text, move
        self.match, self.deal = 0, 0
        self.score: dict[str, Any] | None = None  # the finished deal's score, until the next deal
        self.over = False
        self.winner: int | None = None
        self.published: tuple[dict[str, Any], str | None] = ({}, None)
        self.publish()

    def publish(self) -> dict[str, Any]:
        """Make the game's state now (and its record text, once the game is over) what reads answer (one
        assignment: a reader sees the old pair or the new one, never half of each); returns the state."""
        state = self.state()
        record = json.dumps(self.record, separators=(",", ":")) if self.over else None
        self.published = (state, record)
        return state

    @property
    def snapshot(self) -> dict[str, Any]:
        """The state published after the last change (:meth:`publish`): read without the game's lock."""
        return self.published[0]

    def record_text(self) -> str:
        """The game's record as one line of JSON, once the game is over.

        Raises:
            RequestError: 409 while the game is being played: the record holds the seed, which gives every hand.
        """
        state, record = self.published
        if record is None:
            raise RequestError("record: the game is still being played; its record holds the deal's seed, from which "
                               f"every hidden hand follows, so it is served when the game is over (now at "
                               f"{state.get('status')})", 409, retry_after=0)
        return record

    @property
    def to_move(self) -> int | None:
        cur = int(self.env.state.current_player[0])
        return None if cur < 0 else cur

    def status(self) -> str:
        """``your_turn``, ``agent_turn``, ``deal_over`` (the score shown, another deal to come) or ``game_over``."""
        if self.over:
            return "game_over"
        if self.to_move is None:
            return "deal_over"
        return "your_turn" if self.to_move == self.seat else "agent_turn"

    def legal(self) -> list[dict[str, Any]]:
        """The listed moves now: index, text and docs/interchange.md move."""
        from cassino_env.actions import move_text
        from train.records import core_move

        o = self.obs
        n = int(np.asarray(o["action_mask"][0]).sum())
        return [{"index": i, "text": move_text(o["move_kind"][0, i], o["move_card"][0, i], o["move_value"][0, i],
                                                o["move_cards"][0, i]),
                 "move": core_move(o["move_kind"][0, i], o["move_card"][0, i], o["move_value"][0, i],
                                   o["move_cards"][0, i])} for i in range(n)]

    def state(self) -> dict[str, Any]:
        """The game as the person sees it (their own hand only), for the page; the seed (from which every hand
        follows) only once the game is over."""
        rules = self.rules
        status = self.status()
        pos = core_position(self.env.state, self.rules_value)
        values = []
        if rules.court_values == "numeric":
            values.append("J 11 · Q 12 · K 13")
        if rules.ace_high:
            values.append("A 1, or 14 when it captures")
        return {
            "id": self.id, "preset": rules.preset, "rules": self.rules_value, "num_players": rules.num_players,
            "sides": [list(s) for s in rules.sides], "seat": self.seat, "names": self.names, "opponent": self.spec,
            "play": self.play, "seed": self.seed if self.over else None,
            "seed_text": str(self.seed) if self.over else None, "target": rules.target,
            "values": " · ".join(values) or None,
            "match": self.match + 1, "deal": self.deal + 1, "status": status,
            "position": view(pos, rules, {self.seat}),
            "moves": self.legal() if status == "your_turn" else [],
            "log": list(self.moves), "score": self.score,
            "winner": self.winner, "network": getattr(self.agent, "policy", None) is not None,
        }

    def _play(self, index: int) -> dict[str, Any]:
        from cassino_env import core
        from cassino_env.actions import move_text
        from train.records import core_move

        o, seat = self.obs, self.to_move
        entry = {"seat": seat, "text": move_text(o["move_kind"][0, index], o["move_card"][0, index],
                                                 o["move_value"][0, index], o["move_cards"][0, index]),
                 "move": core_move(o["move_kind"][0, index], o["move_card"][0, index], o["move_value"][0, index],
                                   o["move_cards"][0, index])}
        self.moves.append(entry)
        res = core.step(self.env.state, np.array([index], dtype=np.int64))
        if res.deal_done[0]:
            self._end_deal(res)
        else:
            self.obs = self.env.observe()
        return entry

    def _end_deal(self, res: Any) -> None:
        from cassino_env.core import ITEMS, items_of

        rules = self.rules
        S = rules.num_sides
        items = [{item: int(res.deal_items[0, s, ITEMS.index(item)]) for item in items_of(rules)} for s in range(S)]
        tally = {"items": items, "totals": [int(x) for x in res.deal_totals[0]]}
        self.score = score_table(rules, tally, [int(x) for x in res.deal_cards[0]],
                                 [int(x) for x in res.deal_spades[0]], [int(x) for x in res.match_totals[0]])
        self.record["deals"].append({"match": self.match, "deal": self.deal, "moves": [m["move"] for m in self.moves],
                                     "points": tally["totals"]})
        if res.match_done[0]:
            self.winner = int(res.match_winner[0])
            self.record["match_winners"].append(self.winner)
            self.over = True
        elif self.play == "deal":
            self.over = True

    def move(self, index: Any) -> dict[str, Any]:
        """The person plays listed move ``index``.

        Raises:
            RequestError: not the person's turn, or ``index`` not a listed move.
        """
        if self.status() != "your_turn":
            raise RequestError(f"index: it is not your turn (the game is at {self.status()})")
        n = int(np.asarray(self.obs["action_mask"][0]).sum())
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise RequestError(f"index: expected a listed move 0..{n - 1}, got {json.dumps(index)[:40]}")
        self._play(index)
        return self.publish()

    def step(self, probabilities: bool = False) -> dict[str, Any]:
        """The agent to move plays one move; with ``probabilities`` the answer's ``last["probability"]`` is the
        network's probability of the move it played (None for an agent without a network). Its probabilities over
        its other moves are not given: those moves would show the cards of its hand.

        Raises:
            RequestError: it is the person's turn, or the deal or game is over.
        """
        if self.status() != "agent_turn":
            raise RequestError(f"step: no agent is to move (the game is at {self.status()})")
        probs = move_probabilities(self.agent, self.obs) if probabilities else None
        from agents.base import AgentMoveError, one_move

        self.searching = True
        try:
            action = one_move(self.agent.act(self.obs, self.rng), int(np.asarray(self.obs["action_mask"][0]).sum()),
                              self.spec)
        except AgentMoveError as exc:  # an agent the operator allowed returned 0.7, None, an array: the server's fault
            raise RequestError(f"opponent: {exc}", 500) from None
        finally:
            self.searching = False
        entry = self._play(action)
        out = dict(self.publish())
        out["last"] = {**entry, "probability": None if probs is None else probs[action]}
        return out

    def next_deal(self) -> dict[str, Any]:
        """Deal the match's next deal after a finished one.

        Raises:
            RequestError: the deal is not over, or the game is.
        """
        from cassino_env import core

        if self.status() != "deal_over":
            raise RequestError(f"next: the deal is not over (the game is at {self.status()})")
        core.advance(self.env.state)
        self.obs = self.env.observe()
        self.deal += 1
        self.moves, self.score = [], None
        return self.publish()

    def probabilities(self) -> dict[str, Any]:
        """The network agent's probabilities over your moves listed now: what it would play in your seat.

        Raises:
            RequestError: the agent has no network, or it is not your turn (on an agent's turn its moves would show
                the cards of its hand).
        """
        if self.to_move is None:
            raise RequestError("probabilities: nobody is to move")
        if self.to_move != self.seat:
            raise RequestError("probabilities: only on your turn (an agent's moves would show the cards in its "
                               "hand)")
        probs = move_probabilities(self.agent, self.obs)
        if probs is None:
            raise RequestError(f"probabilities: agent {self.spec!r} is not a network agent (only checkpoint:PATH "
                               "and pretrained:NAME agents have move probabilities)")
        return {"seat": self.to_move, "moves": self.legal(), "probabilities": probs}


# --- requests ---------------------------------------------------------------------------------------------------------


def field_name(name: str, limit: int = 80) -> str:
    """A field name for an error message: as it is, or an excerpt past ``limit`` characters."""
    return name if len(name) <= limit else excerpt(name, limit)


def parse_json(raw: bytes) -> Any:
    """A request body parsed as JSON (a field given twice refused).

    Raises:
        RequestError: naming the body: not UTF-8, not JSON, nested too deeply, a number too long to read, or a
            field given twice (naming it).
    """
    try:
        return json.loads(raw, object_pairs_hook=fields_once(RequestError))
    except RequestError:
        raise
    except RecursionError:
        raise RequestError("body: not valid JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, or an integer of over 4300 digits
        raise RequestError(f"body: not valid JSON: {excerpt(str(exc))}") from None


def check_opponent(spec: str, allowed: tuple[str, ...] = ()) -> str:
    """``spec`` if the web app may build it: a bot of the ladder, ``pimc``/``ismcts`` (``:N`` up to
    :data:`MAX_WEB_SIMULATIONS`), ``pretrained:NAME``, one of the specs the operator ``allowed`` at start-up, or
    ``endgame:SPEC`` / ``policy:SPEC`` of one of those. The spec is read by :func:`agents.registry.parse_spec` (budgets
    by :func:`agents.registry.parse_count`, ``search:``'s by :func:`agents.search.parse_search_arg`; nesting bounded,
    no recursion). Anything else (``checkpoint:PATH``, an import path ``MODULE:OBJECT``) would let a request read any
    file or import any module, so it is refused unless allowed.

    Raises:
        RequestError: naming the field ``opponent`` and what is offered (a malformed spec: what is wrong with it).
    """
    from agents.registry import AgentSpecError, UnknownAgentError, ladder, parse_spec, search_names

    spec = spec.strip()
    if spec in allowed:
        return spec
    try:
        chain = parse_spec(spec).chain()
    except UnknownAgentError:
        chain = []  # not offered (below)
    except AgentSpecError as exc:  # a bad budget, nesting too deep, a missing argument: what is wrong with it
        raise RequestError(f"opponent: {exc}") from None
    for node in chain:  # outermost first: endgame:/policy: of an offered spec is offered
        if node.spec in allowed:
            return spec
        if node.entry is not None and node.entry.takes == "spec":
            continue
        if node.budget is not None and node.budget > MAX_WEB_SIMULATIONS:
            raise RequestError(f"opponent: {node.name}:N here takes at most {MAX_WEB_SIMULATIONS} simulations, got "
                               f"{excerpt(node.arg)}")
        if node.name in (*ladder(), *search_names(), "pretrained"):
            return spec
        if node.name == "search":  # search over a shipped network, its budget capped as pimc's (agents.search)
            from agents.search import SearchSpecError, parse_search_arg

            try:
                inner, budget = parse_search_arg(node.arg)
            except SearchSpecError as exc:
                raise RequestError(f"opponent: {exc}") from None
            if budget is not None and budget > MAX_WEB_SIMULATIONS:
                raise RequestError(f"opponent: search:SPEC:N here takes at most {MAX_WEB_SIMULATIONS} rollouts, got "
                                   f"{budget}")
            if inner.partition(":")[0] == "pretrained":
                return spec
        break
    offered = [*ladder(), "pimc[:N]", "pretrained:NAME", *allowed, "endgame:SPEC or policy:SPEC of these"]
    raise RequestError(f"opponent: {excerpt(spec)} is not offered by this server; agents are {', '.join(offered)} "
                       "(the operator may allow more: cassino serve --allow-agent SPEC)")


_GAME_FIELDS = {"preset": str, "num_players": int, "opponent": str, "seat": int, "seed": int, "play": str}


def game_options(body: Mapping[str, Any], allowed: tuple[str, ...] = ()) -> tuple[RuleSet, str, int, int, str]:
    """``(rules, opponent spec, seat, seed, play)`` from a ``POST /api/games`` body; the opponent is one the web app
    offers (:func:`check_opponent`, ``allowed``: the specs the operator allowed besides).

    Raises:
        RequestError: naming the field: unknown, of the wrong type, or a bad value.
    """
    for k, v in body.items():
        if k not in _GAME_FIELDS:
            raise RequestError(f"{field_name(k)}: unknown field; fields are {', '.join(_GAME_FIELDS)}")
        want = _GAME_FIELDS[k]
        if v is not None and (not isinstance(v, want) or isinstance(v, bool)):
            raise RequestError(f"{k}: expected {'an integer' if want is int else 'a string'}, got "
                               f"{json.dumps(v)[:40]}")
    try:
        rules = make_rules("classic" if body.get("preset") is None else body["preset"], body.get("num_players"))
    except CassinoError as exc:
        raise RequestError(f"preset: {exc}") from None
    spec = check_opponent("advanced" if body.get("opponent") is None else body["opponent"], allowed)
    seat = body.get("seat") or 0
    if not 0 <= seat < rules.num_players:
        raise RequestError(f"seat: expected a seat 0..{rules.num_players - 1}, got {seat}")
    seed = body.get("seed")
    try:
        # a random one from all 2**63: below 2**32, trying every seed against the cards you see (a numba loop: minutes)
        # would find the deal's, and with it every hidden hand
        seed = secrets.randbelow(RANDOM_SEEDS) if seed is None else check_seed(seed)
    except CassinoError as exc:
        raise RequestError(str(exc)) from None
    play = "match" if body.get("play") is None else body["play"]
    if play not in PLAYS:
        raise RequestError(f"play: expected one of {', '.join(PLAYS)}, got {json.dumps(play)[:40]}")
    return rules, spec, seat, seed, play


class Server:
    """The app's state: the games being played and the record files opened, each under a random id."""

    def __init__(self, allow: Sequence[str] = (), *, served: tuple[str, int] | None = None,
                 max_moves_in_flight: int = MAX_MOVES_IN_FLIGHT, max_games: int = MAX_GAMES,
                 game_idle_seconds: float = GAME_IDLE_SECONDS, max_uploads: int = MAX_UPLOADS,
                 device: str | None = None) -> None:
        """``allow``: agent specs offered besides the built-in ones (:func:`check_opponent`), as the operator
        names them at start-up (``cassino serve --allow-agent checkpoint:runs/x.pt``). ``served``: the address and
        port the server listens on; requests whose ``Host`` header names another host are refused
        (:func:`host_allowed`: DNS rebinding); None accepts any (an app mounted elsewhere, tests).
        ``max_moves_in_flight``: agent moves computed at once (:data:`MAX_MOVES_IN_FLIGHT`); beyond it 503.
        ``max_games``, ``game_idle_seconds``: games kept, and how long untouched before one in play may be dropped
        (:data:`MAX_GAMES`, :data:`GAME_IDLE_SECONDS`). ``max_uploads``: record files received at once
        (:data:`MAX_UPLOADS`); beyond it 503. ``device``: where the trained agents' networks run
        (:func:`agents.registry.make_agent`; None: the CPU), checked here, before any request.

        Raises:
            agents.device.DeviceError: a device that is no device name or that torch cannot see (a ``ValueError``
                naming ``device``; it was a 400 naming the page's ``opponent`` on every game started).
        """
        from agents.device import check_device

        self.device = None if device is None else check_device(device)  # torch imported only for a GPU's name
        self.allowed = tuple(s.strip() for s in allow)
        self.served = served
        self.max_moves_in_flight = int(max_moves_in_flight)
        self.moves_in_flight = threading.BoundedSemaphore(self.max_moves_in_flight)
        self.max_games, self.game_idle_seconds = int(max_games), float(game_idle_seconds)
        self.max_uploads = int(max_uploads)
        self.uploads = threading.BoundedSemaphore(self.max_uploads)
        self.games: OrderedDict[str, LiveGame] = OrderedDict()
        self.records: OrderedDict[str, list[str]] = OrderedDict()  # each file as its lines of text
        self.record_sizes: dict[str, int] = {}  # characters of each file kept
        self.lock = threading.Lock()
        self.open_lock = threading.Lock()  # one record file parsed at a time: its parsed objects are ~8x its size
        self._ids = itertools.count(1)

    def new_id(self) -> str:
        return f"{next(self._ids)}-{secrets.token_hex(4)}"

    def start(self, body: Mapping[str, Any]) -> LiveGame:
        """A new game from a ``POST /api/games`` body, kept under its id.

        Raises:
            RequestError: a malformed body (400), or 503 when every slot holds a game in play (:meth:`_make_room`).
        """
        rules, spec, seat, seed, play = game_options(body, self.allowed)
        with self.lock:  # refused before the agent is built (a network loads in a quarter of a second)
            self._make_room()
        game = LiveGame(self.new_id(), rules, spec, seat, seed, play, device=self.device)
        with self.lock:  # and again: another start may have taken the room meanwhile
            self._make_room()
            self.games[game.id] = game
        return game

    def _make_room(self) -> None:
        """Room for one more game (under ``self.lock``): forget finished games first, then games untouched for
        ``game_idle_seconds``, each time the one untouched longest; never a game in play touched more recently.

        Raises:
            RequestError: 503 when every slot holds a game in play.
        """
        while len(self.games) >= self.max_games:
            now = time.monotonic()
            by_age = sorted(self.games.values(), key=lambda g: g.touched)
            victim = next((g for g in by_age if g.over and not g.lock.locked()), None)
            if victim is None:
                victim = next((g for g in by_age if now - g.touched > self.game_idle_seconds
                               and not g.lock.locked()), None)
            if victim is None:
                idle = self.game_idle_seconds
                shown = f"{idle / 60:g} minutes" if idle >= 60 else f"{idle:g} s"
                wait = max(1, int(idle - (now - by_age[0].touched)) + 1)
                raise RequestError(f"games: the server is playing its most games ({self.max_games}), each one in play "
                                   f"(moved or read in the last {shown}); a game is not dropped while it is played: "
                                   "finish one, or try again when one has been left for that long", 503,
                                   retry_after=min(wait, 60))
            del self.games[victim.id]

    def game(self, game_id: str) -> LiveGame:
        with self.lock:
            game = self.games.get(game_id)
        if game is None:
            raise RequestError(f"no game {excerpt(game_id)} (finished games, and games left for "
                               f"{self.game_idle_seconds / 60:g} minutes, are forgotten when room is needed; start "
                               "a new one)", 404)
        game.touched = time.monotonic()
        return game

    def open_records(self, text: str) -> tuple[str, list[dict[str, Any]]]:
        from train.records import RecordError, check_record, parse_lines, split_lines

        listed = []
        try:
            with self.open_lock:
                for n, rec in parse_lines(text):  # one game parsed at a time; the file is kept as text
                    rules = check_record(rec, n)
                    if len(rec["deals"]) > MAX_VIEWER_DEALS:
                        raise RequestError(f"game {n}: {len(rec['deals'])} deals; the viewer replays games of at "
                                           f"most {MAX_VIEWER_DEALS} (cassino replay FILE checks any)", 413)
                    listed.append({"game": n, "preset": rules.preset, "num_players": rules.num_players,
                                   "seats": rec["seats"], "play": rec["play"], "deals": len(rec["deals"]),
                                   "seed": rec["seed"]})
        except RecordError as exc:
            raise RequestError(str(exc)) from None
        rid = self.new_id()
        lines = split_lines(text)  # as parse_lines numbers them (at \n only: a raw U+2028 is no line break)
        with self.lock:
            self.records[rid] = lines
            self.record_sizes[rid] = len(text)
            while len(self.records) > MAX_RECORD_FILES or (
                    len(self.records) > 1 and sum(self.record_sizes.values()) > MAX_RECORD_TEXT_KEPT):
                old, _ = self.records.popitem(last=False)
                del self.record_sizes[old]
        return rid, listed

    def replayed(self, rid: str, n: int) -> dict[str, Any]:
        from train.records import RecordError, replay

        with self.lock:
            records = self.records.get(rid)
        if records is None:
            raise RequestError(f"no record file {excerpt(rid)} open (open it again)", 404)
        if not 1 <= n <= len(records):
            raise RequestError(f"game: expected 1..{len(records)}, got {n}", 404)
        num, rec = n, json.loads(records[n - 1])  # checked when the file was opened
        try:
            game = replay(rec, num, positions=True)
        except RecordError as exc:
            raise RequestError(str(exc)) from None
        rules = game.rules
        names = seat_names(rules, rec["seats"], None)
        deals = []
        for d in game.deals:
            deals.append({
                "match": d.match + 1, "deal": d.deal + 1,
                "frames": [view(p, rules) for p in d.positions],
                "moves": [{"seat": s, "text": _move_text(m), "move": m} for s, m in zip(d.movers, d.moves,
                                                                                      strict=True)],
                "score": score_table(rules, d.tally, match_totals=d.match_scores),
                "match_winner": d.match_winner,
            })
        return {"game": num, "preset": rules.preset, "rules": rec["rules"], "num_players": rules.num_players,
                "sides": [list(s) for s in rules.sides], "names": names, "seed": rec["seed"],
                "seed_text": str(rec["seed"]), "play": rec["play"],
                "target": rules.target, "deals": deals, "match_winners": rec.get("match_winners", [])}


def _move_text(move: Mapping[str, Any]) -> str:
    """A docs/interchange.md move as ``cassino play`` writes it (``capture 3C 5H with 8S``)."""
    if move["action"] == "trail":
        return f"trail {move['card']}"
    if move["action"] == "capture":
        return f"capture {' '.join(move['take'])} with {move['card']}" + (" as 14" if move.get("ace") == 14 else "")
    return f"build {move['value']} with {move['card']} on {' '.join(move['use'])}"
