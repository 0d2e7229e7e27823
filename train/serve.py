"""``cassino serve``: a local web app to play Cassino against any agent and to step through game records.

Run ``cassino serve`` (``--host 127.0.0.1 --port 8000`` by default: only this machine can connect) and open the
printed address. Two pages in one:

* **Play**: a deal or a whole match against an agent (:mod:`agents.registry`: a bot, ``pimc[:N]`` up to
  :data:`MAX_WEB_SIMULATIONS`, ``pretrained:NAME``, and any spec the operator allows at start-up with
  ``--allow-agent SPEC``, such as ``checkpoint:PATH``, each also as ``endgame:SPEC`` and ``policy:SPEC``: a request
  never names a file or module to load) in any
  preset and player count. The agent plays every other seat
  (your partner too, in partnerships). The page shows the table, the builds with their values and owners, your
  hand and the legal moves to click (the environment's list, as ``cassino play`` offers it); the agents' moves
  come one at a time; each deal ends with its score item by item (docs/rules.md 5). For a network agent the page
  shows, on request, its move probabilities: for the move it is about to play, or as a hint on your turn.
  Every game is kept as a game record (docs/records.md) to download.
* **Replay**: open a game-record file (``cassino eval --save-games``, or a record downloaded from Play) and step
  through any of its games move by move, every hand face up, each deal's tally at its end.

The server is Starlette (run by uvicorn); the page is plain HTML, CSS and JavaScript served from ``train/web/``
(no build step). The JSON API the page uses, every answer a JSON object:

==========================================  ===========================================================================
request                                     answer
==========================================  ===========================================================================
``GET /api/options``                        presets with their player counts, agent specs, the default game
``POST /api/games``                         start a game: ``{"preset", "num_players", "opponent", "seat", "seed",
                                            "play": "deal" | "match"}`` (all optional; no seed: a random one
                                            below 2**32); its state (201)
``GET /api/games/{id}``                     the game's state, as the player at ``seat`` sees it
``POST /api/games/{id}/move``               ``{"index": i}``: play your legal move ``i``
``POST /api/games/{id}/step``               ``{"probabilities": bool}``: the agent to move plays one move
``POST /api/games/{id}/next``               deal the match's next deal after a deal's score was shown
``GET /api/games/{id}/probabilities``       the network agent's probabilities over the legal moves now
``GET /api/games/{id}/record``              the game's record (docs/records.md), as a one-line JSON Lines file
``POST /api/records``                       a JSON Lines body: its games listed (fields checked)
``GET /api/records/{id}/{game}``            game ``game`` (from 1) replayed: every position, move and tally
==========================================  ===========================================================================

A malformed request (not JSON, an unknown or mistyped field, a move that is not listed, a step when it is your turn, an
unknown agent spec or preset, an agent the server does not offer) is answered with status 400 and ``{"error": message}``
naming the field; an unknown game with 404, a body over the size limit (or a record of more than
:data:`MAX_VIEWER_DEALS` deals) with 413, a request that another site's page
sends (its ``Origin`` is not this server) with 403, and one whose ``Host`` header names another host than the address
served (DNS rebinding: another site's name that resolves to this machine, :func:`host_allowed`) with 403 too. A step
beyond :data:`MAX_MOVES_IN_FLIGHT` agent moves being computed is answered 503 at once (``Retry-After: 1``), and an
agent (one the operator allowed) that returns something other than a listed move index with 500, naming it.
"""

from __future__ import annotations

import itertools
import json
import secrets
import socket
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cassino_env.cards import card_text
from cassino_env.errors import CassinoError, check_seed, excerpt
from cassino_env.rules import PRESETS, RuleSet, make_rules

#: The folder of the page's static files (package data).
WEB_DIR = Path(__file__).resolve().parent / "web"
#: Games kept in memory; starting one more forgets the oldest.
MAX_GAMES = 64
#: Record files kept in memory for the viewer; opening one more forgets the oldest.
MAX_RECORD_FILES = 8
#: Largest request body accepted: a JSON request, and a game-record file for the viewer (bytes).
MAX_JSON_BYTES = 64 * 1024
MAX_RECORDS_BYTES = 64 * 1024 * 1024
#: The most deals of one game the viewer replays (every position of every deal goes into one answer); a match to
#: 21 plays a few deals, a session of three matches a few dozen. ``cassino replay FILE`` checks any game.
MAX_VIEWER_DEALS = 1000
#: What a game plays: one deal, or a match to the rules' target.
PLAYS = ("deal", "match")
#: The most simulations a ``pimc:N`` opponent may take per decision here (a larger one would hold the server for
#: minutes a move); the operator may allow a larger one by name (``cassino serve --allow-agent pimc:N``).
MAX_WEB_SIMULATIONS = 20_000
#: The most agent moves (``POST /api/games/{id}/step``: a search of up to :data:`MAX_WEB_SIMULATIONS` simulations, a
#: network's forward pass) computed at once; one more is answered 503 at once (it would hold one of the server's
#: threads for as long, and 45 of them kept even ``POST /api/games`` waiting two minutes).
MAX_MOVES_IN_FLIGHT = 8
#: Host names that always name this machine's loopback addresses.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class RequestError(ValueError):
    """A malformed request: answered with ``status`` and ``{"error": message}``."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


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
        probs = torch.softmax(policy.logits(MoveBatch.from_obs(obs, feats)), dim=-1)[0]
    n = int(np.asarray(obs["action_mask"][0]).sum())
    return [float(x) for x in probs[:n]]


class LiveGame:
    """One game played in the browser: the person at ``seat``, ``agent`` (built from ``spec``) at every other seat.

    The game runs on the batched core with one game (``auto_reset`` off, so a finished deal stays on the table
    until :meth:`next_deal`), the agents act on the vector environment's observations (as ``cassino play``), and
    every move goes into the game's record (docs/records.md).
    """

    def __init__(self, game_id: str, rules: RuleSet, spec: str, seat: int, seed: int, play: str) -> None:
        from agents.registry import make_agent
        from cassino_env import core
        from cassino_env.vector import CassinoVectorEnv
        from train.records import new_record, rules_field

        self.id, self.rules, self.spec, self.seat, self.seed, self.play = game_id, rules, spec, seat, seed, play
        try:
            self.agent = make_agent(spec, rules)
        except ValueError as exc:  # AgentSpecError, CheckpointError: a bad request, naming the field
            raise RequestError(f"opponent: {exc}") from None
        self.lock = threading.Lock()
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
        """The game as the person sees it (their own hand only), for the page."""
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
            "play": self.play, "seed": self.seed, "seed_text": str(self.seed), "target": rules.target,
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
        return self.state()

    def step(self, probabilities: bool = False) -> dict[str, Any]:
        """The agent to move plays one move; with ``probabilities`` the answer's ``last`` holds the network's
        probabilities over the moves it chose from (``moves``).

        Raises:
            RequestError: it is the person's turn, or the deal or game is over.
        """
        if self.status() != "agent_turn":
            raise RequestError(f"step: no agent is to move (the game is at {self.status()})")
        probs = options = None
        if probabilities:
            probs = move_probabilities(self.agent, self.obs)
            options = self.legal() if probs is not None else None
        from agents.base import AgentMoveError, one_move

        try:
            action = one_move(self.agent.act(self.obs, self.rng), int(np.asarray(self.obs["action_mask"][0]).sum()),
                              self.spec)
        except AgentMoveError as exc:  # an agent the operator allowed returned 0.7, None, an array: the server's fault
            raise RequestError(f"opponent: {exc}", 500) from None
        entry = self._play(action)
        out = self.state()
        out["last"] = {**entry, "probabilities": probs, "options": options, "chosen": action}
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
        return self.state()

    def probabilities(self) -> dict[str, Any]:
        """The network agent's probabilities over the moves listed now (on your turn: what it would play for you).

        Raises:
            RequestError: the agent has no network, or nobody is to move.
        """
        if self.to_move is None:
            raise RequestError("probabilities: nobody is to move")
        probs = move_probabilities(self.agent, self.obs)
        if probs is None:
            raise RequestError(f"probabilities: agent {self.spec!r} is not a network agent (only checkpoint:PATH "
                               "and pretrained:NAME agents have move probabilities)")
        return {"seat": self.to_move, "moves": self.legal(), "probabilities": probs}


# --- requests ---------------------------------------------------------------------------------------------------------


def _field(name: str, limit: int = 80) -> str:
    """A field name for an error message: as it is, or an excerpt past ``limit`` characters."""
    return name if len(name) <= limit else excerpt(name, limit)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise RequestError(f"{excerpt(k)}: the field is given twice")
        out[k] = v
    return out


def parse_json(raw: bytes) -> Any:
    """A request body parsed as JSON (a field given twice refused).

    Raises:
        RequestError: naming the body: not UTF-8, not JSON, nested too deeply, a number too long to read, or a
            field given twice (naming it).
    """
    try:
        return json.loads(raw, object_pairs_hook=_no_duplicates)
    except RequestError:
        raise
    except RecursionError:
        raise RequestError("body: not valid JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, or an integer of over 4300 digits
        raise RequestError(f"body: not valid JSON: {excerpt(str(exc))}") from None


def check_opponent(spec: str, allowed: tuple[str, ...] = ()) -> str:
    """``spec`` if the web app may build it: a bot of the ladder, ``pimc``/``ismcts`` (``:N`` up to
    :data:`MAX_WEB_SIMULATIONS`), ``pretrained:NAME``, one of the specs the operator ``allowed`` at start-up, or
    ``endgame:SPEC`` / ``policy:SPEC`` of one of those. The spec is read by :func:`agents.registry.parse_spec` (the
    one strict parser of budgets; nesting bounded, no recursion). Anything else (``checkpoint:PATH``, an import path
    ``MODULE:OBJECT``) would let a request read any file or import any module, so it is refused unless allowed.

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
            raise RequestError(f"{_field(k)}: unknown field; fields are {', '.join(_GAME_FIELDS)}")
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
        seed = secrets.randbelow(2**32) if seed is None else check_seed(seed)  # a random one short to retype
    except CassinoError as exc:
        raise RequestError(str(exc)) from None
    play = "match" if body.get("play") is None else body["play"]
    if play not in PLAYS:
        raise RequestError(f"play: expected one of {', '.join(PLAYS)}, got {json.dumps(play)[:40]}")
    return rules, spec, seat, seed, play


class Server:
    """The app's state: the games being played and the record files opened, each under a random id."""

    def __init__(self, allow: Sequence[str] = (), *, served: tuple[str, int] | None = None,
                 max_moves_in_flight: int = MAX_MOVES_IN_FLIGHT) -> None:
        """``allow``: agent specs offered besides the built-in ones (:func:`check_opponent`), as the operator
        names them at start-up (``cassino serve --allow-agent checkpoint:runs/x.pt``). ``served``: the address and
        port the server listens on; requests whose ``Host`` header names another host are refused
        (:func:`host_allowed`: DNS rebinding); None accepts any (an app mounted elsewhere, tests).
        ``max_moves_in_flight``: agent moves computed at once (:data:`MAX_MOVES_IN_FLIGHT`); beyond it 503."""
        self.allowed = tuple(s.strip() for s in allow)
        self.served = served
        self.max_moves_in_flight = int(max_moves_in_flight)
        self.moves_in_flight = threading.BoundedSemaphore(self.max_moves_in_flight)
        self.games: OrderedDict[str, LiveGame] = OrderedDict()
        self.records: OrderedDict[str, list[str]] = OrderedDict()  # each file as its lines of text
        self.lock = threading.Lock()
        self.open_lock = threading.Lock()  # one record file parsed at a time: its parsed objects are ~8x its size
        self._ids = itertools.count(1)

    def new_id(self) -> str:
        return f"{next(self._ids)}-{secrets.token_hex(4)}"

    def start(self, body: Mapping[str, Any]) -> LiveGame:
        rules, spec, seat, seed, play = game_options(body, self.allowed)
        game = LiveGame(self.new_id(), rules, spec, seat, seed, play)
        with self.lock:
            self.games[game.id] = game
            while len(self.games) > MAX_GAMES:
                self.games.popitem(last=False)
        return game

    def game(self, game_id: str) -> LiveGame:
        with self.lock:
            game = self.games.get(game_id)
        if game is None:
            raise RequestError(f"no game {excerpt(game_id)} (games are kept while the server runs; start a new "
                               "one)", 404)
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
            while len(self.records) > MAX_RECORD_FILES:
                self.records.popitem(last=False)
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


def split_host(header: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of a ``Host`` header (``localhost:8000``, ``[::1]:8000``, ``127.0.0.1``); None when it is
    malformed. The host is lower-cased, an IPv6 literal without its brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        host, sep, rest = header[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text = header.partition(":")
        port_text = port_text if sep else None
    if not host or (port_text is not None and not (port_text.isascii() and port_text.isdigit()
                                                    and len(port_text) <= 5)):
        return None
    return host, None if port_text is None else int(port_text)


def host_allowed(header: str | None, served: tuple[str, int]) -> bool:
    """Whether a request's ``Host`` header names the address the server listens on (``served``: host, port), so a
    page of another site cannot reach it through a name of its own that resolves here (DNS rebinding): the port must
    be the served one (80 when the header names none) and the host the served address; on a loopback address also
    ``localhost``, ``127.0.0.1`` and ``::1``; on every interface (``0.0.0.0``, ``::``) any IP address, ``localhost``
    and this machine's host name."""
    import ipaddress

    parsed = split_host(header or "")
    if parsed is None:
        return False
    host, port = parsed
    listen, listen_port = served[0].strip().lower().strip("[]"), served[1]
    if (80 if port is None else port) != listen_port:
        return False
    if host == listen:
        return True
    wildcard = listen in ("0.0.0.0", "::")
    loopback = listen in LOOPBACK_NAMES or _is_loopback(listen)
    if (loopback or wildcard) and host in LOOPBACK_NAMES:
        return True
    if wildcard:
        try:
            ipaddress.ip_address(host)
            return True
        except ValueError:
            return host in {socket.gethostname().lower(), socket.getfqdn().lower()}
    return False


def _is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- the app ----------------------------------------------------------------------------------------------------------


def create_app(server: Server | None = None) -> Any:
    """The Starlette app (the page, its static files and the JSON API of the module docstring)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    state = server or Server()

    async def body_of(request: Request, limit: int = MAX_JSON_BYTES) -> bytes:
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != request.headers.get("host"):
            # a page of another site posting to this local server (the browser says so): refused
            raise RequestError(f"origin: requests from {excerpt(origin)} are refused; use the page this server "
                               "serves", 403)
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > limit:
            raise RequestError(f"body: larger than {limit} bytes", 413)
        chunks, total = [], 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise RequestError(f"body: larger than {limit} bytes", 413)
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_body(request: Request) -> dict[str, Any]:
        raw = await body_of(request)
        if not raw.strip():
            return {}
        body = parse_json(raw)
        if not isinstance(body, dict):
            raise RequestError(f"body: expected a JSON object, got {type(body).__name__}")
        return body

    def only(body: Mapping[str, Any], *fields: str) -> None:
        for k in body:
            if k not in fields:
                raise RequestError(f"{_field(k)}: unknown field; fields are {', '.join(fields) or 'none'}")

    async def locked(game: LiveGame, fn: Any, *args: Any) -> Any:
        def run() -> Any:
            with game.lock:
                return fn(*args)

        return await run_in_threadpool(run)

    async def index(request: Request) -> Response:
        return FileResponse(WEB_DIR / "index.html")

    async def options(request: Request) -> Response:
        from agents.registry import LADDER, SEARCH_NAMES, pretrained_names

        return JSONResponse({
            "presets": {name: list(counts) for name, (counts, _) in PRESETS.items()},
            "agents": [*LADDER, *SEARCH_NAMES[:1], *(f"pretrained:{n}" for n in pretrained_names()),
                       *(s for s in state.allowed if not s.startswith("pretrained:"))],
            "pretrained": list(pretrained_names()),
            "defaults": {"preset": "classic", "num_players": 2, "opponent": "pretrained:classic", "seat": 0,
                         "play": "deal"},
        })

    async def new_game(request: Request) -> Response:
        body = await json_body(request)
        game = await run_in_threadpool(state.start, body)
        return JSONResponse(await locked(game, game.state), status_code=201)

    async def get_game(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        return JSONResponse(await locked(game, game.state))

    async def move(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        body = await json_body(request)
        only(body, "index")
        if "index" not in body:
            raise RequestError("index: required field is missing")
        return JSONResponse(await locked(game, game.move, body["index"]))

    async def step(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        body = await json_body(request)
        only(body, "probabilities")
        probs = body.get("probabilities", False)
        if not isinstance(probs, bool):
            raise RequestError(f"probabilities: expected true or false, got {json.dumps(probs)[:40]}")
        if not state.moves_in_flight.acquire(blocking=False):  # answered at once, not queued behind the searches
            raise RequestError(f"step: the server is busy computing {state.max_moves_in_flight} agent moves; try "
                               "again in a moment", 503)
        try:
            return JSONResponse(await locked(game, game.step, probs))
        finally:
            state.moves_in_flight.release()

    async def next_deal(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        only(await json_body(request))
        return JSONResponse(await locked(game, game.next_deal))

    async def probabilities(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        return JSONResponse(await locked(game, game.probabilities))

    async def record(request: Request) -> Response:
        game = state.game(request.path_params["gid"])
        rec = await locked(game, lambda: json.dumps(game.record, separators=(",", ":")))
        return Response(rec + "\n", media_type="application/jsonl",
                        headers={"Content-Disposition": f'attachment; filename="cassino-{game.id}.jsonl"'})

    async def open_records(request: Request) -> Response:
        raw = await body_of(request, MAX_RECORDS_BYTES)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestError(f"body: not UTF-8 text: {exc}") from None
        rid, listed = await run_in_threadpool(state.open_records, text)
        return JSONResponse({"id": rid, "games": listed}, status_code=201)

    async def replayed(request: Request) -> Response:
        text = request.path_params["n"]
        if not (text.isascii() and text.isdigit() and len(text) <= 9):  # 5000 digits were a 500 (int() refused)
            raise RequestError(f"game: expected a game number from 1, got {excerpt(text)}", 404)
        n = int(text)
        return JSONResponse(await run_in_threadpool(state.replayed, request.path_params["rid"], n))

    async def request_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestError)
        return JSONResponse({"error": str(exc)}, status_code=exc.status,
                            headers={"Retry-After": "1"} if exc.status == 503 else None)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
        return Response(exc.detail, status_code=exc.status_code, media_type="text/plain")

    routes = [
        Route("/", index),
        Route("/api/options", options),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{gid}", get_game),
        Route("/api/games/{gid}/move", move, methods=["POST"]),
        Route("/api/games/{gid}/step", step, methods=["POST"]),
        Route("/api/games/{gid}/next", next_deal, methods=["POST"]),
        Route("/api/games/{gid}/probabilities", probabilities),
        Route("/api/games/{gid}/record", record),
        Route("/api/records", open_records, methods=["POST"]),
        Route("/api/records/{rid}/{n}", replayed),
        Mount("/static", StaticFiles(directory=WEB_DIR), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={RequestError: request_error, HTTPException: http_error})
    if state.served is None:
        return app
    served = state.served

    async def checked_host(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
            if not host_allowed(header, served):  # DNS rebinding: another site's name for this address
                shown = f"[{served[0]}]" if ":" in served[0] else served[0]
                answer = JSONResponse({"error": f"host: requests for {excerpt(header)} are refused; this server "
                                                f"answers as {shown}:{served[1]}"}, status_code=403)
                await answer(scope, receive, send)
                return
        await app(scope, receive, send)

    return checked_host


def free_port(host: str, port: int = 0) -> int:
    """``port`` if it is free on ``host`` now, or with ``port=0`` a free port the system picks.

    Raises:
        OSError: the address cannot be bound (in use, or not an address of this machine).
    """
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, port))
        return int(s.getsockname()[1])


def main(host: str = "127.0.0.1", port: int = 8000, allow_agent: tuple[str, ...] = ()) -> int:
    """Serve the web app: play any agent in the browser, and step through game-record files.

    Open the printed address in a browser. Play a deal or a match against a bot, pimc, pretrained:NAME or an agent
    allowed with --allow-agent (checkpoint:PATH, your own MODULE:OBJECT) in any preset; open a file written by
    cassino eval --save-games to watch its games move by move. Ctrl+C stops the server.

    Args:
        host: the address to listen on; the default 127.0.0.1 lets only this machine connect.
        port: the TCP port (0: any free port).
        allow_agent: agent specs the page may ask for besides the bots ({bots}; pimc:N up to 20000) and
            pretrained:NAME (checkpoint:PATH, MODULE:OBJECT, a larger pimc:N), each exactly as it will be asked for;
            the page can name no other file or module. Agent specs: {agent_specs}.
    """
    from cassino_env.errors import shown_name
    from train.errors import error

    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        return error(f"cassino serve needs the web extra: pip install 'cassino-rl[web]' ({exc})")
    if not 0 <= port <= 65535:
        return error(f"port: expected 0..65535, got {port}")
    if not host.strip():  # "" listened on every interface and printed http://:8799/
        return error("host: expected an address to listen on (127.0.0.1: this machine only; 0.0.0.0: every "
                     "interface), got an empty one")
    host = host.strip()
    if not host.isprintable():  # a line break would split the error line and the address printed
        return error(f"host: expected an address to listen on, got {shown_name(host)}")
    if any(not spec.strip() for spec in allow_agent):
        return error("allow-agent: expected agent specs, got an empty one")
    from agents.registry import AgentSpecError, check_spec

    for spec in allow_agent:  # the registry's check (names, budgets, nesting), before the server starts
        try:
            check_spec(spec)
        except AgentSpecError as exc:
            return error(f"allow-agent: {exc}")
    try:
        port = free_port(host, port)
    except OSError as exc:
        return error(f"host: cannot listen on {shown_name(host)} port {port}: {exc.strerror or exc}")
    shown = f"[{host}]" if ":" in host else host
    print(f"Cassino is served at http://{shown}:{port}/  (Ctrl+C stops it)", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {host}: other machines can reach the server", file=sys.stderr)
    config = uvicorn.Config(create_app(Server(allow_agent, served=(host, port))), host=host, port=port,
                            log_level="warning")
    uvicorn.Server(config).run()
    return 0
