"""The contract checker (cassino_env.testing.check_rules) on every preset and player count of docs/rules.md 6 and on
switch mixes no preset has; and that it does catch a broken contract."""

from __future__ import annotations

import pytest
from conftest import PRESET_IDS, PRESET_PLAYERS

from cassino_env import core
from cassino_env.rules import make_rules
from cassino_env.testing import ContractError, check_core, check_rules


@pytest.mark.parametrize(("preset", "num_players"), PRESET_PLAYERS, ids=PRESET_IDS)
def test_every_preset_keeps_the_contract(preset, num_players):
    summary = check_rules(preset, num_players=num_players, games=8, steps=120, episodes=2, seed=num_players)
    assert summary["core_deals"] > 0 and summary["vector_deals"] > 0  # the per-deal checks ran
    assert summary["aec_steps"] >= 4 * (52 - make_rules(preset, num_players=num_players).table_cards) - 4


@pytest.mark.parametrize("rules", [
    {"preset": "classic", "builds": "attach", "owner_rule": "resolve_next_turn", "raise_own_build": False},
    {"preset": "royal", "capture_mode": "one_group", "residue_to": "last_player"},
    {"preset": "matsuda", "scoring": "bga", "court_values": "none"},
], ids=["classic-attach", "royal-one-group", "matsuda-bga-scoring"])
def test_switch_mixes_keep_the_contract(rules):
    check_rules(rules, games=4, steps=60, episodes=1)


def test_the_checker_catches_a_lost_card(monkeypatch):
    real_step = core.step

    def leaky_step(state, actions, **kwargs):
        result = real_step(state, actions, **kwargs)
        state.hand[0, :] = 0  # game 0 drops every hand: cards vanish
        return result

    monkeypatch.setattr(core, "step", leaky_step)
    with pytest.raises(ContractError, match=r"classic-2p core, step 0, game 0: the 52 cards are not each in"):
        check_core(make_rules("classic"), games=2, steps=3)
    assert issubclass(ContractError, AssertionError)
