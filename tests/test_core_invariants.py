"""Invariants of the batched core over thousands of random deals of every preset (docs/rules.md 2, 5).

Every finished deal's tally (``StepResult.deal_items``, ``deal_cards``, ``deal_spades``) is checked against what
docs/rules.md 5 fixes whatever the play: all 52 cards end in the piles; the casinos, J♥ and aces are scored once; most
cards
and most spades go to the unique leader (standard, cicera) or are shared by tied leaders (bga); napula is 0 or a run
of 3 to 13, for one side at most; and every card stays in exactly one place at every step.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS

from cassino_env import core
from cassino_env.rules import make_rules

ITEM = {name: k for k, name in enumerate(core.ITEMS)}


def _check_tally(rules, res, b: int) -> None:
    items = res.deal_items[b].astype(np.int64)  # [S, ITEMS]
    cards = res.deal_cards[b].astype(np.int64)
    spades = res.deal_spades[b].astype(np.int64)
    assert cards.sum() == 52 and spades.sum() == 13, "every card ends in a pile (docs/rules.md 2.4: someone captured)"
    col = items.sum(axis=0)
    cicera = rules.scoring == "cicera"
    assert col[ITEM["big_casino"]] == (1 if cicera else 2)
    assert col[ITEM["little_casino"]] == 1
    assert col[ITEM["aces"]] == (0 if cicera else 4)
    assert col[ITEM["jack_of_hearts"]] == (1 if cicera else 0)
    for name, counts, unique, tied in (("cards", cards, 2 if cicera else 3, 2), ("spades", spades, 1, 1)):
        leaders = counts == counts.max()
        want = np.where(leaders, unique if leaders.sum() == 1 else (tied if rules.scoring == "bga" else 0), 0)
        assert items[:, ITEM[name]].tolist() == want.tolist(), (name, counts)
    napula = items[:, ITEM["napula"]]
    assert ((napula == 0) | ((napula >= 3) & (napula <= 13))).all() and (napula > 0).sum() <= 1
    if not cicera:
        assert (napula == 0).all() and (items[:, ITEM["in_play"]] == 0).all()
    assert (items[:, ITEM["sweeps"]] >= 0).all() and (items[:, ITEM["in_play"]] >= 0).all()
    assert res.deal_totals[b].tolist() == items.sum(axis=1).tolist()


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_random_deals_keep_the_invariants(preset, num_players):
    rules = make_rules(preset, num_players=num_players)
    B = 256
    st = core.init(rules, np.arange(B) + 7_000 * num_players + len(preset))
    rng = np.random.default_rng(num_players + 10 * len(preset))
    deals = 0
    steps = 0
    while deals < 1000:
        full = np.bitwise_or.reduce(np.concatenate(
            [st.hand, st.loose[:, None], st.build_cards, st.captured], axis=1), axis=1)
        held = np.bitwise_count(np.concatenate([st.hand, st.loose[:, None], st.build_cards, st.captured], axis=1))
        stock = 52 - st.stock_pos.astype(np.int64)
        assert (held.sum(axis=1) + stock == 52).all(), "each card in exactly one place (docs/rules.md 2)"
        assert (np.bitwise_count(full) + stock == 52).all()
        assert (st.num_moves > 0).all()
        res = core.step(st, rng.integers(st.num_moves.astype(np.int64)))
        steps += 1
        for b in np.flatnonzero(res.deal_done):
            _check_tally(rules, res, int(b))
            deals += 1
        assert steps < 100_000
