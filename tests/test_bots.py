"""Bots and search (agents.bots, agents.pimc, agents.registry): only legal moves, over thousands of games and whole
matches of every preset at every seat and player count; the documented choices in small positions (classic, and the
values and scoring of the other presets: aces high, numeric courts, Cicera's points); greedy beats random in every
preset; agent specs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS, SWEEP, sweep_count

from agents.base import act_one, slice_obs
from agents.bots import FEATURES, STYLES, RuleTables, make_bot
from agents.pimc import ISMCTSAgent, PIMCAgent
from agents.registry import LADDER, AgentSpecError, expand_specs, make_agent
from cassino_env import core
from cassino_env.cards import card_id, card_text
from cassino_env.obs import public_view
from cassino_env.rules import PRESETS, make_rules
from cassino_env.vector import CassinoVectorEnv

BOTS = LADDER


def obs_of(state: core.State) -> dict:
    """A vector-env-style observation of game(s) of a core state, for the seat to move."""
    return {"action_mask": core.legal_mask(state).astype(np.int8), "current_player": state.current_player.copy(),
            "move_kind": state.move_kind.copy(), "move_card": state.move_card.copy(),
            "move_value": state.move_value.copy(), "move_cards": state.move_cards.copy(),
            "view": public_view(state)}


def ids(*texts: str) -> list[int]:
    return [card_id(t) for t in texts]


def position_of(preset: str, hands: list[list[int]], loose: list[int]) -> core.State:
    """A two-player position of ``preset`` for seat 0 whose other cards all lie in the stock."""
    used = {c for h in hands for c in h} | set(loose)
    return core.from_position(make_rules(preset), hands=hands, loose=loose, stock=[c for c in range(52)
                                                                                      if c not in used])


def position(hands: list[list[int]], loose: list[int], builds: tuple = (), last_round: bool = False) -> core.State:
    """A classic position for seat 0 whose other cards all lie in the stock, or (``last_round``) in seat 1's
    captured pile with the stock empty, so that every card is accounted for."""
    used = {c for h in hands for c in h} | set(loose) | {c for b in builds for c in b[0]}
    rest = [c for c in range(52) if c not in used]
    if last_round:
        return core.from_position(make_rules("classic"), hands=hands, loose=loose, builds=list(builds),
                                  captured=[[], rest], last_capturer=1)
    return core.from_position(make_rules("classic"), hands=hands, loose=loose, builds=list(builds), stock=rest)


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("share", SWEEP)
def test_bots_play_only_legal_moves_in_thousands_of_games(num_players: int, share: float) -> None:
    # Seat q of game b is played by bot (b + q) % 5, so every bot plays every seat against every other bot.
    B, steps = sweep_count(768, share), 170  # about three deals a game: over 2,000 deals per player count (full)
    env = CassinoVectorEnv(B, "classic", num_players=num_players, seed=num_players)
    rules = env.rules
    bots = [make_bot(n, rules) for n in BOTS]
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    deals = 0
    for _ in range(steps):
        who = (np.arange(B) + obs["current_player"].astype(np.int64)) % len(bots)
        actions = np.zeros(B, dtype=np.int64)
        for k, bot in enumerate(bots):
            rows = np.flatnonzero(who == k)
            if rows.size:
                a = bot.act(slice_obs(obs, rows), rng)
                assert a.dtype == np.int64
                assert a.shape == rows.shape
                assert (obs["action_mask"][rows, a] == 1).all(), bot.name
                actions[rows] = a
        obs, _, _, _, info = env.step(actions)  # the core also rejects any index that is not a listed move
        deals += int(info["result"].deal_done.sum())
    assert deals >= 2.6 * B


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_every_bot_plays_whole_matches_of_every_preset(preset: str, num_players: int) -> None:
    # Seat q of game b is played by bot (b + q) % 5; games run until each has finished a match (auto-reset).
    B = 40
    env = CassinoVectorEnv(B, preset, num_players=num_players, seed=7, episode="match", reward="win")
    bots = [make_bot(n, env.rules) for n in BOTS]
    obs, _ = env.reset()
    rng = np.random.default_rng(1)
    finished = np.zeros(B, dtype=bool)
    for _ in range(3000):
        who = (np.arange(B) + obs["current_player"].astype(np.int64)) % len(bots)
        actions = np.zeros(B, dtype=np.int64)
        for k, bot in enumerate(bots):
            rows = np.flatnonzero(who == k)
            if rows.size:
                actions[rows] = a = bot.act(slice_obs(obs, rows), rng)
                assert (obs["action_mask"][rows, a] == 1).all(), bot.name
        obs, _, terminated, _, _ = env.step(actions)
        finished |= terminated
        if finished.all():
            break
    assert finished.all()


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_pimc_plays_only_legal_moves(preset: str, num_players: int) -> None:
    env = CassinoVectorEnv(4, preset, num_players=num_players, seed=10 + num_players)
    agent = PIMCAgent(env.rules, simulations=16, min_samples=2)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    deals = 0
    for _ in range(52 - env.rules.table_cards):
        a = agent.act(obs, rng)
        assert (obs["action_mask"][np.arange(4), a] == 1).all()
        obs, _, _, _, info = env.step(a)
        deals += int(info["result"].deal_done.sum())
    assert deals == 4


def test_greedy_takes_the_most_valuable_capture_and_breaks_ties_by_table_order() -> None:
    # docs/rules.md 7 case 1. Table AH 2D 3C 5D 6H 8C, hand 8S: {8, 6+2, 5+3} (6 cards with the 8S) or {8, 5+2+A}
    # (5 cards, an ace: 1 point). Greedy values the point of the ace above one more card.
    rules = make_rules("classic")
    st = core.from_position(rules, hands=[ids("8S"), ids("2C")], loose=ids("AH", "2D", "3C", "5D", "6H", "8C"))
    greedy = make_bot("greedy", rules)
    i = act_one(greedy, {k: (v[0] if not isinstance(v, dict) else {kk: vv[0] for kk, vv in v.items()})
                         for k, v in obs_of(st).items()}, np.random.default_rng(0))
    kind, card, _, cards = core.move_list(st, 0)[i]
    assert (kind, card) == (core.CAPTURE, card_id("8S"))
    assert set(cards) == set(ids("AH", "2D", "5D", "8C"))
    # No capture possible: every move scores 0 and the first listed move (trail of the lowest card id) is played.
    st = core.from_position(rules, hands=[ids("3C", "KS"), ids("2C")], loose=ids("9H"))
    assert int(greedy.act(obs_of(st), np.random.default_rng(0))[0]) == 0


def test_beginner_avoids_leaving_a_sweep() -> None:
    # Table: a lone 5H. Hand 2C KS. Trailing 2C leaves 5+2 (any unseen 7 sweeps it); trailing KS leaves a table no
    # single card can sweep (a king only pairs with a king). Greedy trails the first card (2C), beginner the KS.
    rules = make_rules("classic")
    st = position([ids("2C", "KS"), ids("4D", "9D", "JD", "QD")], ids("5H"))
    obs = obs_of(st)
    moves = core.move_list(st, 0)
    g = moves[int(make_bot("greedy", rules).act(obs, np.random.default_rng(0))[0])]
    b = moves[int(make_bot("beginner", rules).act(obs, np.random.default_rng(0))[0])]
    assert g[:2] == (core.TRAIL, card_id("2C"))
    assert b[:2] == (core.TRAIL, card_id("KS"))
    scores, feats = make_bot("advanced", rules).features(obs)
    sweep_risk = feats[0, :, FEATURES.index("sweep_risk")]
    i_2c = moves.index((core.TRAIL, card_id("2C"), 0, ()))
    assert 0 < sweep_risk[i_2c] < 1  # a 7 among the 4 opponent cards: likely, not certain
    assert np.isneginf(scores[0, len(moves):]).all()


def test_advanced_builds_what_it_can_collect_and_completes_its_builds() -> None:
    # Table 4H KS. Hand 5C 9C 9D: building 9 with 5C on 4H (then capturing it with a 9) beats trailing.
    rules = make_rules("classic")
    st = position([ids("5C", "9C", "9D"), ids("AD", "2D", "3D")], ids("4H", "KS"))
    moves = core.move_list(st, 0)
    for name in ("intermediate", "advanced"):
        m = moves[int(make_bot(name, rules).act(obs_of(st), np.random.default_rng(0))[0])]
        assert (m[0], m[2]) == (core.BUILD, 9), name
    # It owns the build and holds two 9s: with no 9 among the unseen cards it adds the 9C to the build (a multiple
    # build of 9, collected next turn with the 9D); in the last round, where it knows the opponent holds the 9S, it
    # takes its build at once.
    adv = make_bot("advanced", rules)
    builds = ((ids("4H", "5C"), 9, 0),)
    st = position([ids("9C", "9D"), ids("AD", "2D")], ids("KS"), builds=builds, last_round=True)
    m = core.move_list(st, 0)[int(adv.act(obs_of(st), np.random.default_rng(0))[0])]
    assert (m[0], m[2]) == (core.BUILD, 9)
    st = position([ids("9C", "9D"), ids("9S", "2D")], ids("KS"), builds=builds, last_round=True)
    m = core.move_list(st, 0)[int(adv.act(obs_of(st), np.random.default_rng(0))[0])]
    assert m[0] == core.CAPTURE
    assert set(ids("4H", "5C")) <= set(m[3])


def test_random_is_uniform_over_legal_moves() -> None:
    mask = np.zeros((2000, 10), dtype=np.int8)
    mask[:, [1, 4, 7]] = 1
    a = make_bot("random", make_rules("classic")).act({"action_mask": mask}, np.random.default_rng(0))
    counts = np.bincount(a, minlength=10)
    assert set(np.flatnonzero(counts)) == {1, 4, 7}
    assert np.abs(counts[[1, 4, 7]] - 2000 / 3).max() < 100


def test_pimc_takes_an_obvious_sweep_and_is_reproducible() -> None:
    # Table 10D: the 10S sweeps it (big casino, a sweep); trailing or building gives it away.
    rules = make_rules("classic")
    st = position([ids("10S", "3C"), ids("4H", "6H")], ids("10D"))
    agent = PIMCAgent(rules, simulations=60)
    a1 = agent.act(obs_of(st), np.random.default_rng(4))
    a2 = agent.act(obs_of(st), np.random.default_rng(4))
    assert a1.tolist() == a2.tolist()
    assert core.move_list(st, 0)[int(a1[0])][:2] == (core.CAPTURE, card_id("10S"))
    values = agent.move_values(obs_of(st), np.random.default_rng(0))[0]
    assert values.argmax() == int(a1[0])


def test_rule_tables_read_every_preset() -> None:
    # Bots read the rules through RuleTables only: courts with no value pair by rank, numeric courts have values,
    # an ace high also captures 14; the point cards are the scoring's (docs/rules.md 5).
    for preset, (counts, _) in PRESETS.items():
        t = RuleTables.of(make_rules(preset, counts[0]))
        assert t.cap_bits.shape == (52,)
    royal = RuleTables.of(make_rules("royal"))
    classic = RuleTables.of(make_rules("classic"))
    ks, ace = card_id("KS"), card_id("AS")
    assert royal.cap_bits[ks] == 1 << 13
    assert royal.cap_bits[ace] == (1 << 1) | (1 << 14)
    assert classic.cap_bits[ks] != 1 << 13
    assert classic.cap_bits[ace] == 1 << 1
    assert set(STYLES) == {"greedy", "beginner", "intermediate", "advanced"}

    def points(t: RuleTables) -> dict[str, float]:
        return {card_text(int(c)): float(v) for c, v in zip(t.point_cards, t.point_values, strict=True)}

    for preset in ("classic", "bga", "royal", "matsuda", "stadium"):
        assert points(RuleTables.of(make_rules(preset))) == {"AC": 1, "AD": 1, "AH": 1, "AS": 1, "10D": 2, "2S": 1}
    cicera = RuleTables.of(make_rules("cicera"))
    pts = points(cicera)
    assert pts["10D"] == 1  # big casino is 1 in cicera, not 2
    assert pts["JH"] == 1
    assert "AC" not in pts and "AD" not in pts and "AH" not in pts  # aces score nothing (AS: napula only)
    assert pts["2S"] == 2  # little casino, and the napula's second card
    assert pts["AS"] == pts["3S"] == 1
    assert cicera.w_cards == pytest.approx(2 / 27)  # most cards is 2 points in cicera, 3 elsewhere
    assert classic.w_cards == pytest.approx(3 / 27)
    assert cicera.cfg[9] == 1 and classic.cfg[9] == 0  # in-play bonuses


def _one(obs: dict) -> dict:
    return {k: (v[0] if not isinstance(v, dict) else {kk: vv[0] for kk, vv in v.items()}) for k, v in obs.items()}


def test_greedy_takes_cicera_in_play_points() -> None:
    # docs/rules.md 5.3 / 7 case 12: taking, by pairing, the card the previous player just trailed is a point. Table 7C
    # and 7D (7D just trailed), hand 7S: one group only, so the 7 takes one of them; 7C comes first in the table's
    # order, but the 7D pays the in-play point.
    rules = make_rules("cicera")
    st = core.from_position(rules, hands=[ids("7S"), ids("2C"), ids("3C"), ids("4C")], loose=ids("7C", "7D"),
                            to_move=0, last_trail=card_id("7D"))
    moves = core.move_list(st, 0)
    greedy = make_bot("greedy", rules)
    m = moves[act_one(greedy, _one(obs_of(st)), np.random.default_rng(0))]
    assert (m[0], m[3]) == (core.CAPTURE, (card_id("7D"),))
    _, feats = greedy.features(obs_of(st))
    bonus = feats[0, :len(moves), FEATURES.index("bonus")]
    assert [float(bonus[moves.index(x)]) for x in moves if x[0] == core.CAPTURE] == [0.0, 1.0]
    # one suit throughout and three or more table cards: 2 points (6H takes AH 2H 3H, and sweeps)
    st = core.from_position(rules, hands=[ids("6H"), ids("2C"), ids("3C"), ids("4C")], loose=ids("AH", "2H", "3H"),
                            to_move=0)
    moves = core.move_list(st, 0)
    _, feats = greedy.features(obs_of(st))
    i = next(i for i, x in enumerate(moves) if x[0] == core.CAPTURE)
    assert feats[0, i, FEATURES.index("bonus")] == 2.0  # same suit, three cards
    assert feats[0, i, FEATURES.index("sweep")] == 1.0
    classic = make_bot("greedy", make_rules("classic"))
    st = core.from_position(make_rules("classic"), hands=[ids("6H"), ids("2C")], loose=ids("AH", "2H", "3H"),
                            to_move=0)
    _, feats = classic.features(obs_of(st))
    assert not feats[0, :, FEATURES.index("bonus")].any()  # no in-play points outside cicera


def test_aces_high_and_numeric_courts_in_the_bots_values() -> None:
    # royal: trailing the 4C next to a loose 10H leaves 10+4 = 14, which an unseen ace sweeps (as 14); in classic
    # nothing captures 14. The ace's capture as 14 is valued with the ace's point.
    adv = {p: make_bot("advanced", make_rules(p)) for p in ("royal", "classic")}
    for preset, bot in adv.items():
        st = position_of(preset, [ids("4C", "9S"), ids("2D", "3D", "5D", "6D")], ids("10H"))
        moves = core.move_list(st, 0)
        _, feats = bot.features(obs_of(st))
        risk = feats[0, moves.index((core.TRAIL, card_id("4C"), 0, ())), FEATURES.index("sweep_risk")]
        assert (risk > 0) == (preset == "royal"), preset
    rules = make_rules("royal")
    st = position_of("royal", [ids("AS", "3D"), ids("2D", "5D", "6D", "7D")], ids("10H", "4C", "KD"))
    moves = core.move_list(st, 0)
    greedy = make_bot("greedy", rules)
    m = moves[int(greedy.act(obs_of(st), np.random.default_rng(0))[0])]
    assert m == (core.CAPTURE, card_id("AS"), 14, tuple(sorted(ids("10H", "4C"))))
    _, feats = greedy.features(obs_of(st))
    tables = RuleTables.of(rules)
    i = moves.index(m)
    want = 3 * tables.w_cards + tables.w_spades + 1.0  # AS 10H 4C: three cards, a spade, the ace's point
    assert feats[0, i, FEATURES.index("gain")] == pytest.approx(want)
    # numeric courts: a Q (12) takes 3+3+6 (docs/rules.md 7 case 13), and greedy values it
    st = position_of("matsuda", [ids("QS"), ids("2D", "5D", "7D", "8D")], ids("3H", "3C", "6D", "10D"))
    m = core.move_list(st, 0)[int(make_bot("greedy", make_rules("matsuda")).act(obs_of(st),
                                                                               np.random.default_rng(0))[0])]
    assert m[:3] == (core.CAPTURE, card_id("QS"), 12)


def test_registry_specs() -> None:
    rules = make_rules("classic")
    for spec in (*BOTS, "pimc", "pimc:50", "ismcts", "ismcts:50"):
        assert make_agent(spec, rules).name == spec
    assert make_agent("pimc:50", rules).simulations == 50
    # ismcts is pimc's first name: the same agent
    assert ISMCTSAgent is PIMCAgent
    assert type(make_agent("ismcts:50", rules)) is PIMCAgent
    assert make_agent("ismcts:50", rules).simulations == 50
    assert make_agent("ismcts", rules).simulations == make_agent("pimc", rules).simulations
    for bad in ("nobody", "ismcts:x", "ismcts:0", "pimc:x", "pimc:0", "greedy:3", "checkpoint:", "ladder"):
        with pytest.raises(AgentSpecError):
            make_agent(bad, rules)
    for bad in (5, None, b"greedy"):  # were AttributeError / TypeError from str methods
        with pytest.raises(AgentSpecError, match=r"^an agent spec is a string such as 'greedy'"):
            make_agent(bad, rules)  # type: ignore[arg-type]
    with pytest.raises(AgentSpecError) as info:  # the message quotes a short excerpt, not 5000 digits
        make_agent("pimc:-" + "9" * 5000, rules)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_greedy_beats_random_in_every_preset(preset: str, num_players: int) -> None:
    # Duplicate deals (train/evaluate.py): the same boards with the seats swapped. Measured at 400 deals a pair
    # (seed 0): greedy wins 95-100% of matches and 82-99% of deals in every preset and player count.
    from train.evaluate import evaluate

    pair = evaluate(["greedy", "random"], preset, deals=300, seed=0, num_players=num_players)["pairs"][0]
    assert pair["deals"] >= 300
    assert pair["margin_ci_low"] > 0  # points per deal, 95% interval above zero
    assert pair["deal_win_rate_a"] > 0.7
    assert pair["match_ci_low"] > 0.5


def test_the_ladder_is_one_list() -> None:
    """``LADDER`` is the registry's ranked bots, weakest first (the scripted bots today), and ``ladder`` in an agent
    list expands to it in place."""
    from agents.registry import ENTRIES

    ranked = sorted((e for e in ENTRIES.values() if e.rank is not None), key=lambda e: e.rank)
    assert LADDER == tuple(e.name for e in ranked) == ("random", "greedy", "beginner", "intermediate", "advanced")
    rules = make_rules("classic")
    assert [make_agent(n, rules).name for n in LADDER] == list(LADDER)
    assert expand_specs(["pimc:8", " ladder ", "greedy"]) == ["pimc:8", *LADDER, "greedy"]
    assert expand_specs([]) == []


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("cicera", 4), ("royal", 3)])
def test_bot_scores_split_over_threads_are_the_serial_ones(preset, players):
    """``score_moves(parallel=True)`` (chunks of games over numba's threads) gives the serial kernel's best moves,
    scores and features, bit for bit, on hundreds of positions of a game in progress."""
    from agents.bots import score_moves, state_inputs

    rules = make_rules(preset, players)
    st = core.init(rules, np.arange(300, dtype=np.int64))
    core.rollout(st, 5, np.arange(300, dtype=np.uint64))  # random moves: positions of all kinds
    tables = RuleTables.of(rules)
    for name in ("advanced", "intermediate"):
        serial = score_moves(tables, STYLES[name], state_inputs(st), with_features=True)
        threaded = score_moves(tables, STYLES[name], state_inputs(st), with_features=True, parallel=True)
        for a, b in zip(serial, threaded, strict=True):
            np.testing.assert_array_equal(a, b)
        assert (make_bot(name, rules).act_state(st, parallel=True) == serial[0]).all()


def test_pimc_rollouts_over_threads_choose_as_serial_ones():
    """A PIMC agent stepping its rollouts over numba's threads plays the moves of one that steps them serially."""
    env = CassinoVectorEnv(num_envs=8, seed=4, with_view=True)
    obs, _ = env.reset()
    moves = [PIMCAgent(env.rules, simulations=64, parallel=p).act(obs, np.random.default_rng(3)) for p in (False, True)]
    np.testing.assert_array_equal(*moves)


def test_pimc_threads_by_default_only_on_the_main_thread():
    """parallel=None: numba's threads from the main thread where numba has several, never from a worker thread
    (cassino serve plays moves on worker threads; numba's workqueue layer aborts on two parallel regions at once)."""
    import threading

    import numba

    agent = PIMCAgent(make_rules("classic"))
    assert agent.threaded() == (numba.get_num_threads() > 1)
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(agent.threaded()))
    worker.start()
    worker.join()
    assert seen == [False]
    assert PIMCAgent(make_rules("classic"), parallel=True).threaded() is True


@pytest.mark.parametrize("parallel", ["no", 2, [0], 0.0])
def test_pimc_and_search_refuse_a_parallel_that_is_not_a_bool(parallel):
    from agents.search import SearchAgent, SearchSpecError

    rules = make_rules("classic")
    with pytest.raises(ValueError, match="parallel must be None, True or False"):
        PIMCAgent(rules, parallel=parallel)
    with pytest.raises(SearchSpecError, match="parallel must be None, True or False"):
        SearchAgent(rules, make_agent("pretrained:classic", rules), parallel=parallel)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_point_values_by_set_bits_are_the_loop_over_point_cards(preset):
    """The scoring kernel sums a card set's points over its set bits (agents.bots._value_bits); bit for bit the sum
    over the listed point cards (_value) for random sets and weights, since RuleTables lists them in id order."""
    from agents.bots import _value, _value_bits

    tables = RuleTables.of(make_rules(preset))
    pcards, pvals = tables.point_cards, tables.point_values
    assert list(pcards) == sorted(pcards)
    ptv = np.zeros(64)
    ptv[pcards] = pvals
    pmask = np.uint64(np.bitwise_or.reduce(np.uint64(1) << pcards.astype(np.uint64)))
    rng = np.random.default_rng(7)
    for _ in range(2000):
        mask = np.uint64(int(rng.integers(0, 1 << 52)) & int(rng.integers(0, 1 << 52)))
        cw, sw = rng.random() * 0.3, rng.random() * 0.2
        assert _value_bits(mask, cw, sw, pmask, ptv) == _value(mask, cw, sw, pcards, pvals)


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 3), ("cicera", 4), ("bga", 6)])
def test_state_inputs_are_the_seat_to_moves_knowledge(preset, players):
    """``state_inputs`` (what the bots read inside a search's lines) gives, for the seat to move of every game, its
    hand, every seat's hand size, and the cards it has not seen (not in its hand, on the table, in a build or in a
    captured pile), games whose deal is over included; checked against the same sets computed card by card."""
    from agents.bots import state_inputs

    rules = make_rules(preset, players)
    B = 64
    st = core.init(rules, np.arange(B), auto_reset=False)
    for ply in range(60):
        cur, hand, sizes, unseen = state_inputs(st)[:4]
        assert cur.dtype == np.int64 and hand.dtype == np.uint64 and sizes.dtype == np.int64
        assert unseen.dtype == np.uint64 and sizes.shape == (B, players)
        for b in range(0, B, 7):
            seat = max(int(st.current_player[b]), 0)
            assert cur[b] == int(st.current_player[b]) and hand[b] == st.hand[b, seat]
            assert sizes[b].tolist() == [bin(int(h)).count("1") for h in st.hand[b]]
            seen = int(st.hand[b, seat]) | int(st.loose[b])
            for x in list(st.build_cards[b]) + list(st.captured[b]):
                seen |= int(x)
            assert int(unseen[b]) == ((1 << 52) - 1) & ~seen
        core.step(st, core.random_actions(st, np.arange(B, dtype=np.uint64) + np.uint64(ply)))
    assert (st.current_player < 0).any()


@pytest.mark.parametrize(("preset", "players", "parallel", "plies"), [("classic", 2, False, 9), ("classic", 2, True, 9),
                                                                      ("classic", 2, True, 4), ("royal", 2, True, 9),
                                                                      ("bga", 4, False, 9)])
def test_play_plies_is_act_state_then_step_ply_after_ply(preset, players, parallel, plies):
    """``agents.lines.play_plies`` (the search's lines in one kernel call) leaves every game where ``act_state`` then
    ``core.step`` ply after ply leave it, field for field, and reports each deal that ends at its ply with that
    step's result row; the classic and the general move generators, one thread and numba's threads."""
    from agents.bots import ScriptedBot
    from agents.lines import play_plies

    rules = make_rules(preset, players)
    bot = ScriptedBot("advanced", rules)
    B = 300
    st = core.init(rules, np.arange(B) + 11, auto_reset=False)
    for ply in range(rules.deal_length - 6):  # 6 moves before the end of the deal: 9 plies end it, 4 do not
        core.step(st, core.random_actions(st, np.arange(B, dtype=np.uint64) + np.uint64(ply)))
    fast = st.take(np.arange(B))
    ended, rows = play_plies(bot, fast, plies, parallel=parallel)
    want_ended = np.full(B, -1)
    for ply in range(1, plies + 1):
        live = st.current_player >= 0
        res = core.step(st, bot.act_state(st))
        done = live & res.deal_done
        want_ended[done] = ply
        for name in ("actor", "deal_done", "match_done", "match_winner", "deal_points", "deal_totals", "deal_items",
                     "deal_cards", "deal_spades", "match_totals"):
            got = getattr(core.result_from_rows(rows[done], rules), name)
            np.testing.assert_array_equal(got, getattr(res, name)[done])
    np.testing.assert_array_equal(ended, want_ended)
    assert (ended == 6).all() if plies >= 6 else (ended == -1).all()
    assert not rows[ended < 0].any()
    for a, b in zip(core.kernel_args(fast), core.kernel_args(st), strict=True):
        np.testing.assert_array_equal(a, b)
    for bad in (-1, 2**64, 2.0, True):
        with pytest.raises(ValueError, match="plies"):
            play_plies(bot, fast, bad)
    with pytest.raises(ValueError, match="auto_reset"):
        play_plies(bot, core.init(rules, [1]), 2)
