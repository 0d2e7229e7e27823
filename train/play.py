"""Play Cassino in the terminal against any agent: ``cassino play --opponent advanced``.

The person plays one seat; the agent (a bot, ``pimc``, ``checkpoint:PATH`` or ``pretrained:NAME``, see
:mod:`agents.registry`) plays every other seat (in partnerships, 4 or 6 players, that includes the person's
partner). Before each of the person's turns the table, the builds with their values and owners, and the person's
hand are drawn, followed by the numbered legal moves. A move is chosen by its number or typed as text (the action
strings of :mod:`cassino_env.actions`)::

    trail 8S      capture 3C 5H with 8S      capture with 8S      build 9 with 2C on 7D      build 9 with 2C

Input that is not a legal move is answered with the reason (the rule it breaks, from the reference engine) and the
person is asked again. ``?`` lists the forms, ``q`` quits. At the end of each deal its score is shown item by item
(docs/rules.md 5: the items of the preset's scoring, e.g. napula and in-play points in Cicera), then the match totals.
Every preset plays: where courts are numeric or an ace may count 14 a ``values`` line says so, builds show their
declared value (up to 14), and in Cicera each seat's in-play points so far are shown.

>>> import io
>>> out = io.StringIO()
>>> code = play_session("greedy", "classic", seed=1, deals=1, inp=io.StringIO("1\\n" * 30), out=out)
>>> code, "Deal 1 is over" in out.getvalue()
(0, True)
"""

from __future__ import annotations

import sys
from typing import IO, Any

import numpy as np

from cassino_env.cards import NUM_CARDS, card_text
from cassino_env.render import pretty_card
from cassino_env.rules import PRESETS, RuleSet

#: The presets whose aces may capture as 14 (docs/rules.md 3 ``ace_high``), for :data:`HELP`.
_ACE_HIGH_PRESETS = ", ".join(name for name, (_, switches) in PRESETS.items() if switches["ace_high"])

HELP = f"""Choose a move by its number, or type it:
  trail 8S                  play 8S to the table
  capture 3C 5H with 8S     take 3C and 5H with 8S (list every table card taken)
  capture with 8S           take the most cards 8S can take
  build 9 with 2C on 7D     play 2C onto 7D, declaring 9 (list every table card used)
  build 9 with 2C           the build of 9 with 2C that uses the most table cards
  capture 5C 9D with AS as 14  an ace capturing as 14 (presets with ace high: {_ACE_HIGH_PRESETS})
  #17                       the move of raw id 17: ids count from #0, so move number 1 is #0 (the env's ids)
Cards: rank A 2-10 J Q K (or T) and suit C D H S (or ♣ ♦ ♥ ♠), any case. Other commands: ? help, q quit."""

class _Quit(Exception):
    """The person asked to stop, or the input ended."""


def _card(c: int, ascii_only: bool) -> str:
    return card_text(c) if ascii_only else pretty_card(c)


def _cards(mask: int, ascii_only: bool) -> list[str]:
    return [_card(c, ascii_only) for c in range(NUM_CARDS) if (int(mask) >> c) & 1]


def _boxes(mask: int, ascii_only: bool) -> str:
    cards = _cards(mask, ascii_only)
    return " ".join(f"[{c:>3}]" for c in cards) if cards else "(none)"


def _count(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless n is 1: "1 spade", "0 spades", "3 cards"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _seat_name(q: int, seat: int, opponent: str, rules: RuleSet) -> str:
    if q == seat:
        return "you"
    partner = rules.num_sides < rules.num_players and q % rules.num_sides == seat % rules.num_sides
    return f"seat {q} ({opponent}{', your partner' if partner else ''})"


def draw(state: Any, seat: int, opponent: str, ascii_only: bool = False) -> str:
    """The person's view of game 0 of a core state: scores, other seats, table, builds, the person's hand."""
    from cassino_env.render import values_note

    rules = state.rules
    P, S = rules.num_players, rules.num_sides
    stock = 52 - int(state.stock_pos[0])
    per_round = rules.hand_size * P
    round_no = (int(state.stock_pos[0]) - rules.table_cards) // per_round
    side_names = ["+".join("you" if q == seat else f"seat {q}" for q in range(s, P, S)) for s in range(S)]
    scores = ", ".join(f"{side_names[s]} {int(state.match_scores[0, s])}" for s in range(S))
    lines = [f"── deal {int(state.deal_index[0]) + 1}, round {round_no} of {rules.rounds_per_deal} · "
             f"{_count(stock, 'card')} left in the stock ──",
             f"  Match: {scores} (to {rules.target})"]
    note = values_note(rules)
    if note:
        lines.append(f"  values: {note}")

    def in_play(q: int) -> str:
        return f" · in-play {int(state.in_play[0, q])}" if rules.in_play_bonuses else ""

    for q in list(range(seat + 1, P)) + list(range(seat)):
        pile = int(state.captured[0, q])
        spades = sum(1 for c in range(39, 52) if pile >> c & 1)
        n = int(state.hand[0, q]).bit_count()
        lines.append(f"  {_seat_name(q, seat, opponent, rules)}: {_count(n, 'card')} in hand · "
                     f"captured {pile.bit_count()} ({_count(spades, 'spade')}) · sweeps {int(state.sweeps[0, q])}"
                     f"{in_play(q)}")
    lines.append(f"  table:  {_boxes(int(state.loose[0]), ascii_only)}")
    builds = []
    for k in range(state.build_cards.shape[1]):
        cards = int(state.build_cards[0, k])
        if cards:
            owner = int(state.build_owner[0, k])
            whose = "yours" if owner == seat else f"seat {owner}'s"
            builds.append(f"[build of {int(state.build_value[0, k])}: {' '.join(_cards(cards, ascii_only))} · "
                          f"{whose}]")
    lines.append(f"  builds: {'  '.join(builds) if builds else '(none)'}")
    pile = int(state.captured[0, seat])
    spades = sum(1 for c in range(39, 52) if pile >> c & 1)
    lines.append(f"  you:    captured {pile.bit_count()} ({_count(spades, 'spade')}) · "
                 f"sweeps {int(state.sweeps[0, seat])}{in_play(seat)}")
    lines.append(f"  hand:   {_boxes(int(state.hand[0, seat]), ascii_only)}")
    return "\n".join(lines)


def _move_text(obs: dict[str, Any], i: int) -> str:
    from cassino_env.actions import move_text

    cards = [c for c in range(NUM_CARDS) if (int(obs["move_cards"][0, i]) >> c) & 1]
    return move_text(int(obs["move_kind"][0, i]), int(obs["move_card"][0, i]), int(obs["move_value"][0, i]), cards)


def _why_illegal(state: Any, kind: int, card: int, value: int, cards: tuple[int, ...] | None) -> str:
    """The rule a move breaks, from the reference engine; or why a legal move is not offered."""
    from cassino_env import core
    from cassino_env.errors import IllegalMoveError
    from cassino_env.reference import Build, Game, Move

    pos = core.position(state, 0)
    rules = state.rules
    game = Game(rules=rules, hands=[set(h) for h in pos["hands"]], loose=set(pos["loose"]),
                builds=[Build(frozenset(c), v, o) for c, v, o in pos["builds"]],
                captured=[set(c) for c in pos["captured"]], sweeps=list(pos["sweeps"]),
                bonus_points=list(pos["in_play"]), stock=list(pos["stock"]),
                to_move=pos["to_move"], dealer=pos["dealer"], last_capturer=pos["last_capturer"],
                last_trail=pos["last_trail"], match_scores=list(pos["match_scores"]))
    if cards is None:  # "capture with 8S" / "build 9 with 2C" with nothing of that kind legal
        what = "capture" if kind == 1 else "build"
        if card not in game.hands[game.to_move]:
            return f"you do not hold {_card(card, True)}"
        return f"no legal {what} with {_card(card, True)}" + (f" declaring {value}" if kind == 2 else "")
    try:
        game.check(Move(kind, card, value if kind else 0, tuple(sorted(cards))))
    except IllegalMoveError as exc:
        return str(exc)
    return ("that capture is legal, but the same card can take more cards at once, and only the largest captures "
            "are offered (the engine drops dominated captures); type 'capture with CARD' to take the most")


def _ask(state: Any, obs: dict[str, Any], inp: IO[str], out: IO[str], seat: int, opponent: str,
         ascii_only: bool) -> int:
    """Draw the table, list the moves and read one legal move (its index) from ``inp``."""
    from cassino_env.actions import ActionTextError, find_move, parse_move_text

    n = int(np.asarray(obs["action_mask"][0]).sum())
    texts = [_move_text(obs, i) for i in range(n)]
    print(draw(state, seat, opponent, ascii_only), file=out)
    print("  your moves:", file=out)
    for i, t in enumerate(texts):
        print(f"  {i + 1:>3}) {t}", file=out)
    while True:
        print("your move (number or text, ? for help, q to quit): ", end="", file=out, flush=True)
        line = inp.readline()
        if not line:
            print("\n(end of input)", file=out)
            raise _Quit
        text = line.strip()
        if not inp.isatty():
            print(text, file=out)  # echo scripted input, so a transcript reads like a session
        if not text:
            continue
        if text.lower() in ("q", "quit", "exit"):
            raise _Quit
        if text in ("?", "h", "help"):
            print(HELP, file=out)
            continue
        if text.isdigit():
            k = int(text)
            if 1 <= k <= n:
                return k - 1
            print(f"  no move {k}: choose a number from 1 to {n}", file=out)
            continue
        try:
            parsed = parse_move_text(text)
        except ActionTextError as exc:
            print(f"  not understood: {exc}. Type ? for help.", file=out)
            continue
        if parsed.index is not None:
            if 0 <= parsed.index < n:
                return int(parsed.index)
            print(f"  no move #{parsed.index}: raw move ids run from #0 to #{n - 1}", file=out)
            continue
        i = find_move(parsed, obs["move_kind"][0], obs["move_card"][0], obs["move_value"][0], obs["move_cards"][0],
                      n)
        if i >= 0:
            return i
        print(f"  illegal: {_why_illegal(state, parsed.kind, parsed.card, parsed.value, parsed.cards)}", file=out)


def _deal_report(result: Any, b: int, rules: RuleSet, seat: int) -> str:
    """The score of a deal that ended, item by item: the items of the rules' scoring only (docs/rules.md 5)."""
    from cassino_env.core import ITEMS, items_of

    S, P = rules.num_sides, rules.num_players
    names = ["+".join("you" if q == seat else f"seat {q}" for q in range(s, P, S)) for s in range(S)]
    width = max(12, *(len(n) for n in names))
    lines = [f"  {'item':<14}" + "".join(f"{n:>{width}}" for n in names)]
    lines.append(f"  {'cards taken':<14}" + "".join(f"{int(result.deal_cards[b, s]):>{width}}" for s in range(S)))
    lines.append(f"  {'spades taken':<14}" + "".join(f"{int(result.deal_spades[b, s]):>{width}}" for s in range(S)))
    for item in items_of(rules):
        k = ITEMS.index(item)
        pts = [int(result.deal_items[b, s, k]) for s in range(S)]
        lines.append(f"  {item.replace('_', ' '):<14}" + "".join(f"{p:>{width}}" for p in pts))
    lines.append(f"  {'deal points':<14}" + "".join(f"{int(result.deal_totals[b, s]):>{width}}" for s in range(S)))
    lines.append(f"  {'match total':<14}" + "".join(f"{int(result.match_totals[b, s]):>{width}}" for s in range(S)))
    return "\n".join(lines)


def play_session(opponent: str, rules: RuleSet | str = "classic", *, num_players: int | None = None, seat: int = 0,
                 seed: int = 0, deals: int = 0, inp: IO[str] | None = None, out: IO[str] | None = None,
                 ascii_only: bool = False, device: str | None = None) -> int:
    """Play a match (or ``deals`` deals) against ``opponent`` in a terminal; returns the exit code (0).

    Args:
        opponent: an agent spec (:func:`agents.registry.make_agent`).
        rules: a RuleSet or preset name.
        num_players: seats, when ``rules`` is a preset name.
        seat: the person's seat (seat 0 moves first in the first deal).
        seed: the seed of the deals and of the agent's generator, an integer 0 <= seed < 2**63.
        deals: stop after this many deals (0: play the match to its end).
        inp, out: input and output streams (default stdin and stdout), e.g. ``io.StringIO`` for scripts.
        ascii_only: draw cards as ``10D`` instead of ``10♦``.
        device: where a trained opponent's network runs (:func:`agents.registry.make_agent`; None: the CPU).

    Raises:
        SeedError: a seed outside 0 <= seed < 2**63 (checked before anything is shown).
        agents.device.DeviceError: a device torch cannot see (before the agent is built).
        ValueError: ``deals`` below 0, a seat the rules do not have.
        agents.base.AgentMoveError: the agent returned a move that is not a listed move index.
    """
    from cassino_env.errors import check_seed

    seed = check_seed(seed)  # first: a bad seed costs no imports
    if isinstance(deals, bool) or not isinstance(deals, (int, np.integer)) or deals < 0:
        raise ValueError(f"deals: expected an integer >= 0 (0: play the match to its end), got {deals!r}")

    from agents.base import one_move
    from agents.registry import make_agent
    from cassino_env.vector import CassinoVectorEnv, resolve_rules
    from train.errors import spec_errors

    inp = sys.stdin if inp is None else inp
    out = sys.stdout if out is None else out
    rules = resolve_rules(rules, num_players)
    if not 0 <= seat < rules.num_players:
        raise ValueError(f"seat must be 0..{rules.num_players - 1}, got {seat}")
    try:
        agent = make_agent(opponent, rules, device=device)
    except spec_errors() as exc:  # named as the option it came from (an UnknownAgentError stays one)
        raise type(exc)(f"opponent: {exc}") from None
    env = CassinoVectorEnv(1, rules, seed=seed, episode="match", reward="win", with_view=True)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    print(f"Cassino ({rules.preset}, {rules.num_players} players, to {rules.target}): you are seat {seat}, "
          f"{agent.name} plays the other seats. Type ? for help.", file=out)
    played = 0
    try:
        while True:
            cur = int(obs["current_player"][0])
            if cur == seat:
                action = _ask(env.state, obs, inp, out, seat, agent.name, ascii_only)
                print(f"  you play: {_move_text(obs, action)}", file=out)
            else:
                action = one_move(agent.act(obs, rng), int(np.asarray(obs["action_mask"][0]).sum()), agent.name)
                print(f"  {_seat_name(cur, seat, agent.name, rules)} plays: {_move_text(obs, action)}", file=out)
            obs, _, _, _, info = env.step(np.array([action], dtype=np.int64))
            res = info["result"]
            if res.deal_done[0]:
                played += 1
                print(f"\nDeal {played} is over. Score:", file=out)
                print(_deal_report(res, 0, rules, seat), file=out)
                if res.match_done[0]:
                    w = int(res.match_winner[0])
                    won = w == seat % rules.num_sides
                    print(f"\nThe match is over: {'you win' if won else agent.name + ' wins'}.", file=out)
                    return 0
                if deals and played >= deals:
                    print(f"\nStopped after {played} deal{'s' if played > 1 else ''}.", file=out)
                    return 0
                print("", file=out)
    except _Quit:
        print("Goodbye.", file=out)
        return 0


def main(opponent: str = "advanced", preset: str = "classic", num_players: int | None = None, seat: int = 0,
         seed: int = 0, deals: int = 0, ascii: bool = False, device: str = "auto") -> int:
    """Play Cassino in the terminal against an agent: a bot ({bots}), a trained network or your own.

    Moves are chosen by number or typed as text, e.g. "capture 3C 5H with 8S", "trail 8S", "build 9 with 2C on 7D".
    An illegal move is answered with the rule it breaks. Each deal ends with its score.

    Args:
        opponent: agent spec (agents.registry; e.g. pretrained:classic): {agent_specs}.
        preset: rule preset of docs/rules.md section 6.
        num_players: seats (the agent plays every seat but yours; in partnerships, your partner too); None, the
            default: the preset's first allowed count (2, or 4 for cicera).
        seat: your seat; seat 0 moves first.
        seed: seed of the deals, 0 <= seed < 2**63.
        deals: stop after this many deals (0: play the whole match).
        ascii: draw cards as 10D rather than 10♦.
        device: where a trained opponent's network runs: auto (a GPU where torch sees one, else the CPU), cpu, cuda,
            cuda:N or mps.
    """
    from agents.device import check_device
    from train.errors import bad_input, named_rules

    with bad_input() as failed:  # AgentSpecError, CassinoError, CheckpointError, DeviceError: all ValueErrors
        device = check_device(device)  # before anything is shown
        named_rules(preset, num_players)  # an unknown preset or count, named as its option
        return play_session(opponent, preset, num_players=num_players, seat=seat, seed=seed, deals=deals,
                            ascii_only=ascii, device=device)
    return failed.code
