"""Rule sets: every switch of docs/rules.md section 3 as one frozen, validated dataclass, and the presets of section 6.

>>> r = make_rules("classic", num_players=4)
>>> r.partnerships, r.sides
(True, ((0, 2), (1, 3)))
>>> make_rules("classic", num_players=6)
Traceback (most recent call last):
...
cassino_env.errors.RulesError: preset 'classic' allows num_players 2, 3, 4, not 6 (docs/rules.md 6)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import RulesError, excerpt

_CHOICES: dict[str, tuple[Any, ...]] = {
    "num_players": (2, 3, 4, 6),
    "court_values": ("none", "numeric"),
    "court_pair_take": ("one", "all"),
    "capture_mode": ("groups", "one_group"),
    "builds": ("none", "standard", "reservation", "attach"),
    "owner_rule": ("no_trail", "resolve_next_turn"),
    "residue_to": ("last_capturer", "last_player"),
    "scoring": ("standard", "bga", "cicera"),
}

@dataclass(frozen=True)
class RuleSet:
    """One complete rule set: the switches of docs/rules.md section 3 (field names are the switch names).

    Build one with :func:`make_rules` (a preset plus overrides) rather than by hand. Construction validates every
    field and raises :class:`~cassino_env.errors.RulesError` naming the field for a bad value.

    Attributes:
        preset: name of the docs/rules.md section 6 preset this rule set started from.
        num_players: seats, 2, 3, 4 or 6.
        partnerships: sides of two opposite seats (4 players: 0+2 vs 1+3; 6 players: p and p+3).
        table_cards: cards dealt face up to the table at the start of a deal.
        hand_size: cards dealt to each player per round.
        court_values: ``none`` (J/Q/K pair only) or ``numeric`` (J 11, Q 12, K 13).
        court_pair_take: with ``court_values="none"``, a court takes ``one`` matching court or ``all`` of them.
        ace_high: a played ace may capture as 14.
        capture_mode: ``groups`` (any set of disjoint groups) or ``one_group``.
        builds: ``none``, ``standard`` (4.1), ``reservation`` (4.2) or ``attach`` (4.3).
        raise_own_build: the owner may raise their own single build.
        raise_with_table_cards: a raise may take loose table cards in with the hand card.
        owner_rule: ``no_trail`` or ``resolve_next_turn`` (4.4).
        sweep_points: points per sweep, >= 0.
        sweep_on_last_play: a sweep by the deal's last card counts.
        residue_to: ``last_capturer`` or ``last_player``.
        scoring: ``standard`` (5.1), ``bga`` (5.2) or ``cicera`` (5.3).
        in_play_bonuses: Cicera's in-play points (5.3).
        target: match target score, points.
    """

    preset: str = "classic"
    num_players: int = 2
    partnerships: bool = False
    table_cards: int = 4
    hand_size: int = 4
    court_values: str = "none"
    court_pair_take: str = "one"
    ace_high: bool = False
    capture_mode: str = "groups"
    builds: str = "standard"
    raise_own_build: bool = True
    raise_with_table_cards: bool = False
    owner_rule: str = "no_trail"
    sweep_points: int = 1
    sweep_on_last_play: bool = True
    residue_to: str = "last_capturer"
    scoring: str = "standard"
    in_play_bonuses: bool = False
    target: int = 21
    sides: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, choices in _CHOICES.items():
            if getattr(self, name) not in choices:
                raise RulesError(f"{name}={excerpt(getattr(self, name))} is not one of {list(choices)} "
                                 "(docs/rules.md 3)")
        for name in ("partnerships", "ace_high", "raise_own_build", "raise_with_table_cards", "sweep_on_last_play",
                     "in_play_bonuses"):
            if not isinstance(getattr(self, name), bool):
                raise RulesError(f"{name} must be true or false, got {excerpt(getattr(self, name))} (docs/rules.md 3)")
        for name, low in (("table_cards", 0), ("hand_size", 1), ("sweep_points", 0), ("target", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise RulesError(f"{name} must be an integer >= {low}, got {excerpt(v)} (docs/rules.md 3)")
            if v > 2**31 - 1:  # the batched core keeps points in machine integers: 10**30 overflowed there
                raise RulesError(f"{name} must be at most 2147483647, got {excerpt(v)} (docs/rules.md 3)")
        if self.partnerships and self.num_players not in (4, 6):
            raise RulesError(f"partnerships need 4 or 6 players, not num_players={self.num_players} (docs/rules.md 3)")
        per_round = self.hand_size * self.num_players
        if self.table_cards + per_round > 52 or self.deal_length % per_round:
            raise RulesError(
                f"table_cards={self.table_cards} and hand_size={self.hand_size} do not deal a 52-card pack out in "
                f"whole rounds to {self.num_players} players (docs/rules.md 2)")
        if self.court_values == "numeric" and self.court_pair_take != "one":
            raise RulesError("court_pair_take applies only with court_values='none' (docs/rules.md 3)")
        if self.in_play_bonuses and self.scoring != "cicera":
            raise RulesError("in_play_bonuses needs scoring='cicera' (docs/rules.md 5.3)")
        if self.partnerships:
            half = self.num_players // 2
            sides = tuple((p, p + half) for p in range(half))
        else:
            sides = tuple((p,) for p in range(self.num_players))
        object.__setattr__(self, "sides", sides)

    # -- derived facts -----------------------------------------------------------------------------------------------
    @property
    def num_sides(self) -> int:
        """Number of scoring sides (players, or partnerships)."""
        return len(self.sides)

    @property
    def deal_length(self) -> int:
        """Moves in one deal, ``52 - table_cards`` (48 in every preset): every card not dealt to the table is dealt
        to a hand and played, one card a move (docs/rules.md 2.1-2.3)."""
        return 52 - self.table_cards

    @property
    def rounds_per_deal(self) -> int:
        """Rounds in one deal: :attr:`deal_length` / (hand_size * num_players)."""
        return self.deal_length // (self.hand_size * self.num_players)

    @property
    def max_value(self) -> int:
        """Largest build value (docs/rules.md 4.1 rule 3): 10, 13 with numeric courts, 14 with ace_high."""
        return 14 if self.ace_high else 13 if self.court_values == "numeric" else 10

    def is_build_value(self, v: int) -> bool:
        """True when a build may be declared ``v`` (docs/rules.md 4.1 rule 3): 1..10; 11..13 only with numeric courts;
        14 only with ``ace_high``."""
        return 1 <= v <= 10 or (11 <= v <= 13 and self.court_values == "numeric") or (v == 14 and self.ace_high)

    def side_of(self, seat: int) -> int:
        """Side index of ``seat``."""
        return seat % self.num_sides

    def to_dict(self) -> dict[str, Any]:
        """The switches as a plain dict (JSON/YAML friendly), including ``preset``."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}


_BASE = dict(table_cards=4, hand_size=4, sweep_points=1, sweep_on_last_play=True, residue_to="last_capturer",
             in_play_bonuses=False)

#: docs/rules.md section 6: preset name -> (allowed player counts, switch values).
PRESETS: dict[str, tuple[tuple[int, ...], dict[str, Any]]] = {
    "classic": ((2, 3, 4), dict(_BASE, court_values="none", court_pair_take="one", ace_high=False,
                                capture_mode="groups", builds="standard", raise_own_build=True,
                                raise_with_table_cards=False, owner_rule="no_trail", scoring="standard", target=21)),
    "matsuda": ((2,), dict(_BASE, court_values="numeric", court_pair_take="one", ace_high=False,
                           capture_mode="groups", builds="reservation", raise_own_build=True,
                           raise_with_table_cards=False, owner_rule="resolve_next_turn", scoring="standard",
                           target=21)),
    "cicera": ((4,), dict(_BASE, hand_size=12, court_values="none", court_pair_take="one", ace_high=False,
                          capture_mode="one_group", builds="none", raise_own_build=False,
                          raise_with_table_cards=False, owner_rule="no_trail", scoring="cicera",
                          in_play_bonuses=True, target=51)),
    "bga": ((2, 3, 4, 6), dict(_BASE, court_values="numeric", court_pair_take="one", ace_high=True,
                               capture_mode="groups", builds="standard", raise_own_build=False,
                               raise_with_table_cards=False, owner_rule="resolve_next_turn", scoring="bga",
                               residue_to="last_player", target=21)),
    "stadium": ((2,), dict(_BASE, court_values="none", court_pair_take="all", ace_high=False,
                           capture_mode="groups", builds="attach", raise_own_build=False,
                           raise_with_table_cards=False, owner_rule="resolve_next_turn", scoring="standard",
                           target=21)),
    "royal": ((2, 3, 4), dict(_BASE, court_values="numeric", court_pair_take="one", ace_high=True,
                              capture_mode="groups", builds="standard", raise_own_build=True,
                              raise_with_table_cards=False, owner_rule="no_trail", scoring="standard", target=21)),
}


def make_rules(preset: str | RuleSet | Mapping[str, Any] = "classic", num_players: int | None = None,
               **overrides: Any) -> RuleSet:
    """Build a validated :class:`RuleSet` from a preset name and switch overrides.

    Args:
        preset: a docs/rules.md section 6 preset name, an existing RuleSet (returned, with overrides applied), or a
            mapping ``{"preset": NAME, SWITCH: VALUE, ...}`` as in docs/interchange.md's ``rules`` field.
        num_players: seats; defaults to the preset's first allowed count.
        **overrides: any switch of docs/rules.md section 3.

    Raises:
        RulesError: unknown preset or switch, a player count the preset does not list (or one that is not an
            integer: ``2.0`` and ``True`` are refused), or a bad switch value.
    """
    if num_players is not None and (isinstance(num_players, bool) or not hasattr(num_players, "__index__")):
        raise RulesError(f"num_players must be an integer, got {type(num_players).__name__} {excerpt(num_players)} "
                         "(docs/rules.md 6)")
    if num_players is not None:
        num_players = int(num_players)  # a numpy integer is a count too
    if isinstance(preset, RuleSet):
        base = preset.to_dict()
        name = base["preset"]
        if num_players is not None and num_players != preset.num_players:
            counts = PRESETS[name][0] if name in PRESETS else (2, 3, 4, 6)
            if num_players not in counts:
                raise RulesError(f"preset {name!r} allows num_players {', '.join(map(str, counts))}, not "
                                 f"{num_players} (docs/rules.md 6)")
            base["num_players"] = num_players
            base["partnerships"] = num_players in (4, 6)  # docs/rules.md 3: the default for the new count
        if "partnerships" in overrides and name == "cicera" and not overrides["partnerships"]:
            raise RulesError("preset 'cicera' is played in partnerships only (docs/rules.md 6)")
        base.update(overrides)
        return _build(base)
    if isinstance(preset, Mapping):
        spec = dict(preset)
        name = spec.pop("preset", None)
        if name is None:
            raise RulesError("an object must name its 'preset' (docs/interchange.md rules)")
        if "num_players" in spec:
            if num_players is not None and spec["num_players"] != num_players:
                raise RulesError(f"rules.num_players={spec['num_players']} disagrees with num_players={num_players}")
            num_players = spec.pop("num_players")
        return make_rules(name, num_players, **{**spec, **overrides})
    if not isinstance(preset, str) or preset not in PRESETS:
        raise RulesError(f"unknown preset {excerpt(preset)}; known presets: {', '.join(PRESETS)} (docs/rules.md 6)")
    counts, values = PRESETS[preset]
    n = counts[0] if num_players is None else num_players
    if n not in counts:
        raise RulesError(f"preset {preset!r} allows num_players {', '.join(map(str, counts))}, "
                         f"not {n} (docs/rules.md 6)")
    spec = dict(values, preset=preset, num_players=n, partnerships=n in (4, 6))
    if overrides.get("court_values") == "numeric" and "court_pair_take" not in overrides:
        spec["court_pair_take"] = "one"  # the switch applies only to valueless courts (docs/rules.md 3)
    if "partnerships" in overrides and preset == "cicera" and not overrides["partnerships"]:
        raise RulesError("preset 'cicera' is played in partnerships only (docs/rules.md 6)")
    spec.update(overrides)
    return _build(spec)


def _build(spec: dict[str, Any]) -> RuleSet:
    known = {f.name for f in dataclasses.fields(RuleSet) if f.init}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise RulesError(f"unknown rule switch {excerpt(unknown[0])}; switches are {sorted(known - {'preset'})} "
                         "(docs/rules.md 3)")
    return RuleSet(**spec)


def splits(values: list[int], v: int) -> bool:
    """True when the card ``values`` partition into groups each summing to ``v`` (a build's cards, docs/rules.md 1)."""
    if not values:
        return True
    if sum(values) % v:
        return False
    first, rest = values[0], values[1:]

    def fill(remaining: int, pool: list[int], start: int) -> bool:
        if remaining == 0:
            return splits(pool, v)
        for i in range(start, len(pool)):
            if pool[i] <= remaining and fill(remaining - pool[i], pool[:i] + pool[i + 1:], i):
                return True
        return False

    return fill(v - first, rest, 0) if first <= v else False
