"""The JSON rules oracle of docs/interchange.md: positions and moves as plain dicts, answered by the reference engine.

>>> pos = {"rules": "classic", "to_move": 0, "hands": [["8S"], ["2C"]], "loose": ["5H", "3C", "6D", "2H"]}
>>> for m in legal_moves(pos):
...     print(m)
{'action': 'trail', 'card': '8S'}
{'action': 'capture', 'card': '8S', 'take': ['3C', '6D', '2H', '5H']}
{'action': 'capture', 'card': '8S', 'take': ['3C', '5H']}
{'action': 'capture', 'card': '8S', 'take': ['6D', '2H']}
>>> apply_move(pos, {"action": "capture", "card": "8S", "take": ["5H", "3C", "6D", "2H"]})["sweeps"]
[1, 0]

Positions are validated field by field; a malformed one raises :class:`~cassino_env.errors.PositionError` (a
``ValueError``) naming the field, a malformed move :class:`~cassino_env.errors.MoveFormatError`, and a forbidden
move :class:`~cassino_env.errors.IllegalMoveError` naming the rule; messages quote at most a short excerpt of a bad
value. Cards are card texts ("10D"); card ids are the engine's internal form and are refused here. Inputs are never
modified. The oracle is exact: it never prunes or caps the move list; listing takes time in proportion to the moves
listed, ``legal_moves(position, limit=N)`` refuses more than N (:class:`~cassino_env.errors.MoveLimitError`) and
:func:`iter_legal_moves` yields them one at a time. A move is checked directly, in milliseconds on any table.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .cards import BUILD, CAPTURE, KIND_NAMES, NUM_CARDS, TRAIL, card_id, card_text, cards_text, is_court, rank
from .errors import CardError, IllegalMoveError, MoveFormatError, MoveLimitError, PositionError, RulesError, excerpt
from .reference import Build, Game, Move, match_winner, splits_into
from .rules import RuleSet, make_rules

__all__ = ["legal_moves", "iter_legal_moves", "apply_move", "score_deal", "position_to_game", "game_to_position",
           "move_from_dict", "move_to_dict", "COUNT_LIMITS", "check_core_position"]

#: The largest value of each per-seat (per-side) count of a position: a deal of 52 cards has at most 52 captures,
#: each sweeping once; in-play points and match scores are capped far above any real game. Shared with the AEC env's
#: explicit positions (its core stores them as int16).
COUNT_LIMITS = {"sweeps": NUM_CARDS, "bonus_points": 9999, "match_scores": 9999}
_TEXT_LIMIT = 40  # longest text accepted in a rules object (a preset or switch name or value)

_FIELDS = ("rules", "num_players", "to_move", "dealer", "hands", "loose", "builds", "captured", "sweeps",
           "bonus_points", "stock", "last_capturer", "last_trail", "match_scores")
_MOVE_FIELDS = {"trail": {"action", "card"}, "capture": {"action", "card", "take", "ace"},
                "build": {"action", "card", "value", "use", "ace"}}


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _seat(x: Any, n: int, name: str, nullable: bool = False) -> int | None:
    if x is None and nullable:
        return None
    if not _is_int(x) or not 0 <= x < n:
        raise PositionError(f"{name}: expected a seat 0..{n - 1}{' or null' if nullable else ''}, got {excerpt(x)}")
    return x


def _card(x: Any, name: str, error: type[ValueError] = PositionError) -> int:
    """The card id of card text ``x`` (docs/interchange.md: cards are texts such as "10D"; ids are not accepted)."""
    if not isinstance(x, str):
        raise error(f"{name}: expected a card text such as '10D' or 'AS' (docs/interchange.md), got "
                    f"{type(x).__name__} {excerpt(x)}")
    if not x.isascii() and any(not ch.isascii() and ch not in "♣♦♥♠" for ch in x):
        # str.upper() turns the long s "ſ" into "S": only ASCII and the suit symbols are a card's letters
        raise error(f"{name}: {excerpt(x)} is not a card: a character that is neither ASCII nor a suit symbol; "
                    "expected rank A 2-10 J Q K (or T) and suit C D H S (docs/rules.md 1)")
    if x != x.strip() or x.strip().upper()[:-1] == "1":
        # card_id reads spaces around a card and rank 1 as an ace, leniently, for a person typing at the terminal;
        # a position's card texts are exact (docs/interchange.md): " 8S " and "1S" are refused, not guessed.
        why = "spaces around a card text" if x != x.strip() else "1 is not a rank: an ace is A"
        raise error(f"{name}: {excerpt(x)} is not a card: {why}; expected rank A 2-10 J Q K (or T) and suit "
                    "C D H S, nothing else (docs/rules.md 1)")
    try:
        return card_id(x) if len(x) <= _TEXT_LIMIT else card_id("")
    except CardError:
        raise error(f"{name}: {excerpt(x)} is not a card: expected rank A 2-10 J Q K (or T) and suit C D H S "
                    "(docs/rules.md 1)") from None


def _card_list(x: Any, name: str, seen: dict[int, str], error: type[ValueError] = PositionError) -> list[int]:
    """Card ids of the list of card texts ``x``; a card already in ``seen`` (card id -> list name) is an error."""
    if not isinstance(x, list):
        raise error(f"{name}: expected a list of card texts, got {type(x).__name__} {excerpt(x)}")
    out = []
    for i, text in enumerate(x):
        c = _card(text, f"{name}[{i}]", error)
        if c in seen:
            raise error(f"{name}[{i}]: card {card_text(c)} appears twice (also in {seen[c]})")
        seen[c] = name
        out.append(c)
    return out


def _int_list(x: Any, n: int, name: str) -> list[int]:
    if x is None:
        return [0] * n
    top = COUNT_LIMITS[name]
    if not isinstance(x, list) or len(x) != n or not all(_is_int(v) and 0 <= v <= top for v in x):
        raise PositionError(f"{name}: expected a list of {n} integers 0..{top}, got {excerpt(x)}")
    return list(x)


def _rules_field(x: Any, n: int) -> RuleSet:
    """The rule set of the ``rules`` field: a preset name or a flat object of switches (docs/interchange.md)."""
    def scalar(v: Any) -> bool:
        return (v is None or isinstance(v, bool) or (_is_int(v) and abs(v) < 2**31)
                or (isinstance(v, str) and len(v) <= _TEXT_LIMIT))

    if isinstance(x, Mapping):
        for k, v in x.items():
            if not isinstance(k, str) or len(k) > _TEXT_LIMIT:
                raise PositionError(f"rules: {excerpt(k)} is not a switch name (docs/rules.md 3)")
            if not scalar(v):
                raise PositionError(f"rules.{k}: expected a switch value (text, an integer, true or false), got "
                                    f"{type(v).__name__} {excerpt(v)}")
        if "num_players" in x and not _is_int(x["num_players"]):
            raise PositionError(f"rules.num_players: expected an integer, got {excerpt(x['num_players'])}")
        if not isinstance(x.get("preset"), str):
            raise PositionError(f"rules.preset: expected a preset name, got {excerpt(x.get('preset'))}")
    elif not isinstance(x, str) or len(x) > _TEXT_LIMIT:
        raise PositionError(f"rules: expected a preset name or an object of switches, got {type(x).__name__} "
                            f"{excerpt(x)}")
    try:
        return make_rules(dict(x) if isinstance(x, Mapping) else x, num_players=n)
    except RulesError as e:
        raise PositionError(f"rules: {e}") from None


def position_to_game(position: Mapping[str, Any]) -> Game:
    """Validate a docs/interchange.md position and build the reference :class:`~cassino_env.reference.Game`.

    Raises:
        PositionError: naming the field for any malformed or contradictory field, or an unknown field.
    """
    if not isinstance(position, Mapping):
        raise PositionError(f"position: expected a JSON object, got {type(position).__name__}")
    unknown = [k for k in position if k not in _FIELDS]
    if unknown:
        raise PositionError(f"{excerpt(unknown[0])}: unknown field; fields are {', '.join(_FIELDS)}")
    for req in ("rules", "hands", "to_move"):
        if req not in position:
            raise PositionError(f"{req}: required field is missing")
    hands_in = position["hands"]
    if not isinstance(hands_in, list) or not hands_in:
        raise PositionError(f"hands: expected a list with one hand per seat, got {excerpt(hands_in)}")
    n = len(hands_in)
    if "num_players" in position:
        given = position["num_players"]
        if not _is_int(given):
            raise PositionError(f"num_players: expected an integer, got {type(given).__name__} {excerpt(given)}")
        if given != n:
            raise PositionError(f"num_players: {excerpt(given)} disagrees with the {n} hands given")
    rules = _rules_field(position["rules"], n)
    seen: dict[int, str] = {}
    hands = [set(_card_list(h, f"hands[{i}]", seen)) for i, h in enumerate(hands_in)]
    for i, h in enumerate(hands):
        if len(h) > rules.hand_size:
            raise PositionError(f"hands[{i}]: {len(h)} cards, more than the {rules.hand_size} a hand is dealt under "
                                f"these rules (docs/rules.md 2.3)")
    loose = set(_card_list(position.get("loose", []), "loose", seen))
    builds = _builds(position.get("builds", []), rules, n, seen)
    captured_in = position.get("captured", [[] for _ in range(n)])
    if not isinstance(captured_in, list) or len(captured_in) != n:
        raise PositionError(f"captured: expected a list of {n} card lists (one per seat), got {excerpt(captured_in)}")
    captured = [set(_card_list(c, f"captured[{i}]", seen)) for i, c in enumerate(captured_in)]
    stock = _card_list(position.get("stock", []), "stock", seen)
    to_move = _seat(position["to_move"], n, "to_move", nullable=True)
    over = not stock and not any(hands)
    if to_move is None and not over:
        raise PositionError("to_move: null only when the deal is over (every hand and the stock empty)")
    if to_move is not None and over:
        raise PositionError(f"to_move: seat {to_move} is to move, but every hand and the stock are empty: the deal "
                            "is over, so to_move must be null (docs/interchange.md)")
    if to_move is not None and not hands[to_move] and not over:
        raise PositionError(f"to_move: seat {to_move} holds no cards")
    if not any(hands) and stock:
        raise PositionError("stock: every hand is empty but the stock is not; deal the next round first")
    default_dealer = (to_move - 1) % n if to_move is not None else n - 1
    dealer = _seat(position.get("dealer", default_dealer), n, "dealer")
    last_trail = position.get("last_trail")
    if last_trail is not None:
        last_trail = _card(last_trail, "last_trail")
        if last_trail not in loose:
            raise PositionError(f"last_trail: {card_text(last_trail)} is not a loose table card")
    match_scores = _int_list(position.get("match_scores"), rules.num_sides, "match_scores")
    won = match_winner(match_scores, rules.target)
    if won is not None:
        raise PositionError(f"match_scores: side {won} has {match_scores[won]}, at or past the target "
                            f"{rules.target} and ahead of every other side: the match ended before this deal "
                            "(docs/rules.md 2.6); a tie at the top past the target plays on")
    game = Game(rules=rules, hands=hands, loose=loose, builds=builds, captured=captured,
                sweeps=_int_list(position.get("sweeps"), n, "sweeps"),
                bonus_points=_int_list(position.get("bonus_points"), n, "bonus_points"),
                stock=stock, to_move=None if over else to_move, dealer=dealer,
                last_capturer=_seat(position.get("last_capturer"), n, "last_capturer", nullable=True),
                last_trail=last_trail,
                match_scores=match_scores)
    return game


def _builds(builds_in: Any, rules: RuleSet, n: int, seen: dict[int, str]) -> list[Build]:
    if not isinstance(builds_in, list):
        raise PositionError(f"builds: expected a list of build objects, got {excerpt(builds_in)}")
    if builds_in and rules.builds == "none":
        raise PositionError(f"builds: preset {rules.preset!r} has no builds (docs/rules.md 3 builds=none)")
    out = []
    for i, b in enumerate(builds_in):
        name = f"builds[{i}]"
        if not isinstance(b, Mapping) or set(b) != {"cards", "value", "owner"}:
            raise PositionError(f"{name}: expected an object with exactly 'cards', 'value' and 'owner', got "
                                f"{excerpt(b)}")
        cards = _card_list(b["cards"], f"{name}.cards", seen)
        value, owner = b["value"], _seat(b["owner"], n, f"{name}.owner")
        if not _is_int(value) or not rules.is_build_value(value):
            raise PositionError(f"{name}.value: {excerpt(value)} is not a build value of these rules: 1..10, 11..13 "
                                "with numeric courts, 14 with ace_high (docs/rules.md 4.1 rule 3)")
        if len(cards) < 2:
            raise PositionError(f"{name}.cards: a build holds at least two cards (docs/rules.md 1 build)")
        if rules.court_values == "none" and any(is_court(c) for c in cards):
            raise PositionError(f"{name}.cards: courts have no value and never join builds (docs/rules.md 3)")
        if not splits_into((rank(c) for c in cards), value):
            raise PositionError(f"{name}: cards {' '.join(cards_text(cards))} do not split into groups of value "
                                f"{value} (docs/rules.md 1 build)")
        out.append(Build(frozenset(cards), value, owner))
    values = [b.value for b in out]
    if rules.builds in ("standard", "reservation") and len(set(values)) != len(values):
        raise PositionError("builds: two builds share a value; equal builds merge (docs/rules.md 4.1 rule 6)")
    owners = [b.owner for b in out]
    if rules.builds == "reservation" and len(set(owners)) != len(owners):
        raise PositionError("builds: a seat owns two reservations; under reservation a player owns at most one "
                            "(docs/rules.md 4.4)")
    return out


def game_to_position(game: Game, rules_field: Any = None) -> dict[str, Any]:
    """The docs/interchange.md position of ``game``; ``rules_field`` is echoed as ``rules`` (default: the preset
    name)."""
    return {
        "rules": copy.deepcopy(rules_field) if rules_field is not None else game.rules.preset,
        "num_players": game.rules.num_players,
        "to_move": game.to_move,
        "dealer": game.dealer,
        "hands": [cards_text(h) for h in game.hands],
        "loose": cards_text(game.loose),
        "builds": [{"cards": cards_text(b.cards), "value": b.value, "owner": b.owner} for b in game.builds],
        "captured": [cards_text(c) for c in game.captured],
        "sweeps": list(game.sweeps),
        "bonus_points": list(game.bonus_points),
        "stock": [card_text(c) for c in game.stock],
        "last_capturer": game.last_capturer,
        "last_trail": None if game.last_trail is None else card_text(game.last_trail),
        "match_scores": list(game.match_scores),
    }


def move_to_dict(m: Move) -> dict[str, Any]:
    """The docs/interchange.md dict of move ``m`` (lists sorted by card id)."""
    d: dict[str, Any] = {"action": KIND_NAMES[m.kind], "card": card_text(m.card)}
    if m.kind == CAPTURE:
        d["take"] = [card_text(c) for c in m.cards]
        if m.value == 14:
            d["ace"] = 14
    elif m.kind == BUILD:
        d["value"] = m.value
        d["use"] = [card_text(c) for c in m.cards]
    return d


def move_from_dict(game: Game, move: Mapping[str, Any]) -> Move:
    """Parse a docs/interchange.md move dict for ``game`` (lists in any order).

    Raises:
        MoveFormatError: naming the field for a malformed move.
        IllegalMoveError: for ``"ace": 14`` where docs/rules.md 3 ``ace_high`` is off or the card is no ace.
    """
    if not isinstance(move, Mapping):
        raise MoveFormatError(f"move: expected a JSON object, got {type(move).__name__}")
    action = move.get("action")
    if not isinstance(action, str) or action not in _MOVE_FIELDS:
        raise MoveFormatError(f"action: expected 'trail', 'capture' or 'build', got {excerpt(action)}")
    extra = [k for k in move if k not in _MOVE_FIELDS[action]]
    if extra:
        raise MoveFormatError(f"{excerpt(extra[0])}: not a field of a {action} move")
    card = _card(move.get("card"), "card", MoveFormatError)
    if action == "trail":
        return Move(TRAIL, card)
    key = "take" if action == "capture" else "use"
    if key not in move:
        raise MoveFormatError(f"{key}: a {action} move needs the list of table cards it {key}s")
    cards = _card_list(move[key], key, {}, MoveFormatError)
    ace = move.get("ace", 1)
    if not _is_int(ace) or ace not in (1, 14):
        raise MoveFormatError(f"ace: expected 1 or 14, got {excerpt(ace)}")
    if action == "capture":
        if ace == 14:
            if rank(card) != 1 or not game.rules.ace_high:
                raise IllegalMoveError("only a played ace under ace_high may count 14 (docs/rules.md 3 ace_high)")
            value = 14
        else:
            value = game.value(card) if game.value(card) is not None else rank(card)
        return Move(CAPTURE, card, value, tuple(sorted(cards)))
    if ace == 14:
        raise IllegalMoveError("in a build an ace always counts 1 (docs/rules.md 3 ace_high)")
    value = move.get("value")
    if not _is_int(value) or not 0 <= value <= 99:
        raise MoveFormatError(f"value: a build move declares an integer value (1..14), got {excerpt(value)}")
    return Move(BUILD, card, value, tuple(sorted(cards)))


def legal_moves(position: Mapping[str, Any], limit: int | None = None) -> list[dict[str, Any]]:
    """Every distinct legal move in ``position``, canonical order (docs/interchange.md), exact; [] when the deal is
    over.

    Args:
        position: a docs/interchange.md position.
        limit: the most moves the caller accepts (None: no bound). Listing takes time in proportion to the moves
            listed, so ``limit`` bounds the time too: a freak table can allow a million moves.

    Raises:
        PositionError: for a malformed position (the message names the field).
        MoveLimitError: the position has more than ``limit`` legal moves, or ``limit`` is not an integer >= 0.
    """
    if limit is not None and (not _is_int(limit) or limit < 0):
        raise MoveLimitError(f"limit: expected an integer >= 0 or None, got {excerpt(limit)}")
    out = []
    for m in iter_legal_moves(position):
        if limit is not None and len(out) == limit:
            raise MoveLimitError(f"the position has more than limit={limit} legal moves (docs/interchange.md Size)")
        out.append(m)
    return out


def iter_legal_moves(position: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The moves of :func:`legal_moves`, one at a time, in canonical order: the first k cost time in proportion to k.

    The position is checked at once (before the first move is asked for).

    Raises:
        PositionError: for a malformed position (the message names the field).
    """
    game = position_to_game(position)
    return (move_to_dict(m) for m in game.iter_legal_moves())


def apply_move(position: Mapping[str, Any], move: Mapping[str, Any]) -> dict[str, Any]:
    """The position after ``move``; deals the next round or ends the deal as docs/rules.md 2 says. Input unchanged.

    Raises:
        PositionError: malformed position. MoveFormatError: malformed move.
        IllegalMoveError: the move is forbidden; the message names the rule.
    """
    game = position_to_game(position)
    game.apply(move_from_dict(game, move))
    return game_to_position(game, position["rules"])


def score_deal(position: Mapping[str, Any]) -> dict[str, Any]:
    """Score a finished deal (docs/rules.md 5): ``{"sides": [[seats]...], "items": [{item: points}...], "totals":
    [...]}``.

    Raises:
        PositionError: malformed position, or a deal that is not over (cards in a hand or the stock).
    """
    game = position_to_game(position)
    if not game.is_deal_over():
        raise PositionError("hands: score_deal needs a finished deal (every hand and the stock empty)")
    return game.score_deal()


#: The fields of a core position (the keyword arguments of ``cassino_env.core.from_position``: card ids, not texts).
CORE_POSITION_FIELDS = ("hands", "loose", "builds", "to_move", "dealer", "stock", "captured", "sweeps",
                        "last_capturer", "match_scores", "last_trail", "in_play")


def check_core_position(position: Any, rules: RuleSet) -> dict[str, Any]:
    """Check a core position (card ids 0..51; e.g. ``cassino_env.core.position`` output) as :func:`position_to_game`
    checks a JSON one, and return it as plain keyword arguments for ``cassino_env.core.from_position``.

    Fields are :data:`CORE_POSITION_FIELDS`; ``hands`` and ``to_move`` are required; ``in_play`` is the JSON
    format's ``bonus_points``; per-seat counts lie within :data:`COUNT_LIMITS`. The core checks what depends on the
    rules (duplicate cards, seats in range, builds that split, docs/rules.md 4.1).

    Raises:
        PositionError: naming the field, for anything else: an unknown or missing field, a field of the wrong type or
            length, a card that is not an id, a bool as a seat, a seat to move with no cards, a count out of range, a
            hand larger than the rules deal, match scores of a match already won.
    """
    if not isinstance(position, Mapping):
        raise PositionError(f"position: expected a dict of core.from_position arguments, got {type(position).__name__}")
    unknown = [k for k in position if k not in CORE_POSITION_FIELDS]
    if unknown:
        raise PositionError(f"{excerpt(unknown[0])}: unknown field; fields are {', '.join(CORE_POSITION_FIELDS)}")
    for req in ("hands", "to_move"):
        if req not in position:
            raise PositionError(f"{req}: required field is missing")
    n, sides = rules.num_players, rules.num_sides

    def integer(x: Any) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))

    def seq(x: Any, name: str, length: int | None = None) -> list[Any]:
        if isinstance(x, np.ndarray) and x.ndim == 1:
            x = x.tolist()
        if not isinstance(x, (list, tuple)) or (length is not None and len(x) != length):
            what = f"a list of {length}" if length is not None else "a list"
            raise PositionError(f"{name}: expected {what}, got {type(x).__name__} {excerpt(x)}")
        return list(x)

    def ids(x: Any, name: str) -> list[int]:
        out = seq(x, name)
        for i, c in enumerate(out):
            if not integer(c) or not 0 <= int(c) < NUM_CARDS:
                raise PositionError(f"{name}[{i}]: expected a card id 0..51, got {excerpt(c)}")
        return [int(c) for c in out]

    def seat(x: Any, name: str, nullable: bool) -> int | None:
        if x is None and nullable:
            return None
        if not integer(x) or not 0 <= int(x) < n:
            raise PositionError(f"{name}: expected a seat 0..{n - 1}{' or None' if nullable else ''}, got {excerpt(x)}")
        return int(x)

    def counts(x: Any, name: str, length: int, top: int) -> list[int]:
        out = seq(x, name, length)
        if not all(integer(v) and 0 <= int(v) <= top for v in out):
            raise PositionError(f"{name}: expected a list of {length} integers 0..{top}, got {excerpt(x)}")
        return [int(v) for v in out]

    kw: dict[str, Any] = {"hands": [ids(h, f"hands[{i}]") for i, h in enumerate(seq(position["hands"], "hands", n))],
                          "to_move": seat(position["to_move"], "to_move", False)}
    if not kw["hands"][kw["to_move"]]:
        raise PositionError(f"to_move: seat {kw['to_move']} holds no cards")
    for i, h in enumerate(kw["hands"]):  # as position_to_game checks a JSON position
        if len(h) > rules.hand_size:
            raise PositionError(f"hands[{i}]: {len(h)} cards, more than the {rules.hand_size} a hand is dealt under "
                                f"these rules (docs/rules.md 2.3)")
    for name in ("loose", "stock"):
        if name in position:
            kw[name] = ids(position[name], name)
    if position.get("captured") is not None:
        kw["captured"] = [ids(c, f"captured[{i}]") for i, c in enumerate(seq(position["captured"], "captured", n))]
    if "builds" in position:
        kw["builds"] = []
        for i, b in enumerate(seq(position["builds"], "builds")):
            cards, value, owner = seq(b, f"builds[{i}]", 3)
            if not integer(value):
                raise PositionError(f"builds[{i}].value: expected an integer, got {excerpt(value)}")
            owner = seat(owner, f"builds[{i}].owner", False)
            kw["builds"].append((ids(cards, f"builds[{i}].cards"), int(value), owner))
    for name in ("dealer", "last_capturer"):
        if name in position:
            kw[name] = seat(position[name], name, True)
    for name, length, top in (("sweeps", n, COUNT_LIMITS["sweeps"]), ("in_play", n, COUNT_LIMITS["bonus_points"]),
                              ("match_scores", sides, COUNT_LIMITS["match_scores"])):
        if position.get(name) is not None:
            kw[name] = counts(position[name], name, length, top)
    if "match_scores" in kw and (won := match_winner(kw["match_scores"], rules.target)) is not None:
        raise PositionError(f"match_scores: side {won} has {kw['match_scores'][won]}, at or past the target "
                            f"{rules.target} and ahead of every other side: the match ended before this deal "
                            "(docs/rules.md 2.6); a tie at the top past the target plays on")
    if position.get("last_trail") is not None:
        c = position["last_trail"]
        if not integer(c) or not 0 <= int(c) < NUM_CARDS:
            raise PositionError(f"last_trail: expected a card id 0..51 or None, got {excerpt(c)}")
        kw["last_trail"] = int(c)
    return kw
