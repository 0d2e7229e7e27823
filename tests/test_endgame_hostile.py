"""The exact last round under hostile but realistic use: bad solver arguments (``match_bonus``, ``rows``), rule sets
whose last round is too big to search, nested ``endgame:``/``policy:`` specs, and the web app's agent checks."""

from __future__ import annotations

import time

import numpy as np
import pytest

from cassino_env import endgame
from cassino_env.determinize import determinize, moves_of
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv

RULES = make_rules("classic")


def last_round(rules=RULES, games: int = 4, seed: int = 3, crowded: bool = False) -> tuple[CassinoVectorEnv, dict]:
    """An env whose games all stand at their last round's first move (in step): the greedy bot's play, or with
    ``crowded`` the first listed move every time (mostly trails: dozens of loose cards)."""
    from agents.registry import make_agent

    env = CassinoVectorEnv(games, rules, seed=seed)
    obs, _ = env.reset()
    bot, rng = make_agent("greedy", rules), np.random.default_rng(seed)
    while not (obs["view"]["stock_size"] == 0).all():
        obs, *_ = env.step(np.zeros(games, dtype=np.int64) if crowded else bot.act(obs, rng))
    return env, obs


def test_match_bonus_is_a_finite_number_at_least_zero() -> None:
    env, obs = last_round()
    for bad in (float("nan"), -1.0, float("inf"), -float("inf"), True, "1000", None):
        with pytest.raises(ValueError, match="match_bonus"):
            endgame.solve(RULES, obs, match_bonus=bad)
        with pytest.raises(ValueError, match="match_bonus"):
            endgame.solve_state(env.state, match_bonus=bad)
    # 0: the deal margin alone; a numpy number is a number
    _, margin, _ = endgame.solve(RULES, obs, match_bonus=0)
    _, same, _ = endgame.solve(RULES, obs, match_bonus=np.float32(0.0))
    assert (margin == same).all() and (np.abs(margin) < 30).all()
    _, value, _ = endgame.solve(RULES, obs, match_bonus=np.int64(1000))
    assert (value == endgame.solve(RULES, obs)[1]).all()


def test_rows_are_integer_game_indices() -> None:
    env, obs = last_round()
    mask = endgame.solvable(RULES, obs["view"])  # a mask is not a list of rows (True would be game 1)
    with pytest.raises(ValueError, match="rows"):
        endgame.solve_state(env.state, rows=mask)
    for bad in ([4], [-1], [0.0], [[0, 1]]):
        with pytest.raises(ValueError, match="rows"):
            endgame.solve_state(env.state, rows=np.array(bad))
    best, _, _ = endgame.solve_state(env.state, rows=np.array([3, 1], dtype=np.int32))
    every, _, _ = endgame.solve_state(env.state)
    assert best.tolist() == every[[3, 1]].tolist()
    assert endgame.solve_state(env.state, rows=[])[0].shape == (0,)


def test_a_last_round_too_big_to_search_is_not_solvable() -> None:
    """Rule sets of larger hands (an API user's own, e.g. hand_size=8: 16 cards in the last round, seconds to
    minutes per move) are not searched: the agent's own move stands; hand_size 6 (12 cards) still is."""
    from agents.endgame import EndgameAgent
    from agents.registry import make_agent

    for hand_size, searched in ((8, False), (24, False), (6, True)):
        rules = make_rules("classic", hand_size=hand_size)
        env, obs = last_round(rules, games=2)
        assert (obs["view"]["stock_size"] == 0).all()
        assert endgame.solvable(rules, obs["view"]).tolist() == [searched, searched]
        if searched:
            continue
        with pytest.raises(ValueError, match="game 0 is not a two-seat last round.*12 cards"):
            endgame.solve(rules, obs)
        base = make_agent("advanced", rules)
        rng = np.random.default_rng(0)
        t = time.perf_counter()
        moves = EndgameAgent(base, rules).act(obs, rng)
        assert time.perf_counter() - t < 5.0
        assert moves.tolist() == base.act(obs, np.random.default_rng(0)).tolist()
    assert endgame.MAX_SEARCH_CARDS == 12


def test_solve_state_refuses_a_state_too_big_to_search() -> None:
    rules = make_rules("classic", hand_size=8)
    _, obs = last_round(rules, games=1)
    st = determinize(rules, obs["view"], moves_of(obs), 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="16 cards in the hands.*12"):
        endgame.solve_state(st)


class Counting:
    """Counts the solver calls of agents.endgame."""

    def __init__(self, monkeypatch) -> None:
        import agents.endgame

        self.calls = 0
        real = agents.endgame.solve

        def solve(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(agents.endgame, "solve", solve)


@pytest.mark.parametrize("spec", ["endgame:endgame:advanced", "endgame:pretrained:classic",
                                  "endgame:endgame:pretrained:classic"])
def test_a_nested_endgame_spec_solves_each_position_once(spec: str, monkeypatch) -> None:
    pytest.importorskip("torch")
    from agents.registry import make_agent

    count = Counting(monkeypatch)
    _, obs = last_round()
    agent = make_agent(spec, RULES)
    assert agent.name == spec
    moves = agent.act(obs, np.random.default_rng(0))
    assert count.calls == 1
    plain = spec.replace("endgame:", "")
    reference = make_agent(plain if plain.startswith("pretrained:") else f"endgame:{plain}", RULES)
    assert moves.tolist() == reference.act(obs, np.random.default_rng(0)).tolist()


def test_the_web_app_offers_the_exact_last_round_of_what_it_offers() -> None:
    pytest.importorskip("starlette")
    from train.serve import RequestError, check_opponent

    for spec in ("endgame:advanced", "endgame:pimc:50", "policy:pretrained:classic", "endgame:policy:pretrained:bga",
                 " endgame:greedy "):
        assert check_opponent(spec) == spec.strip()
    for spec in ("endgame:checkpoint:/etc/passwd", "policy:checkpoint:x.pt", "endgame:os:system",
                 "endgame:pimc:999999", "endgame:endgame:mypkg:Bot"):
        with pytest.raises(RequestError, match="opponent"):
            check_opponent(spec)
    assert check_opponent("endgame:checkpoint:x.pt", allowed=("checkpoint:x.pt",)) == "endgame:checkpoint:x.pt"


def test_the_trainer_and_the_exploit_probe_take_endgame_and_policy_specs(tmp_path) -> None:
    pytest.importorskip("torch")
    from train.config import ConfigError
    from train.exploit import probe_args
    from train.ppo_selfplay import Args

    args = Args(bot_rates={"endgame:advanced": 0.25}, eval_opponents=["policy:pretrained:classic", "ladder"],
                final_eval_opponents=["endgame:greedy"])
    assert args.bot_rates == {"endgame:advanced": 0.25}
    probed = probe_args("endgame:advanced", 0.05, "classic", None, 1, tmp_path / "run", 1, None)
    assert probed.bot_rates == {"endgame:advanced": 1.0}
    probe_args("policy:pretrained:classic", 0.05, "classic", None, 1, tmp_path / "run", 1, None)
    with pytest.raises(ConfigError, match="eval_opponents: unknown agent 'nosuch'.*endgame:SPEC"):
        Args(eval_opponents=["nosuch"])  # "nosuch:x" is an import path now: the registry checks its form only


# Classic only: on the general generator (bga, royal, ...) stepping the core through such tables takes minutes
# (the output-sensitive listing of crowded tables), whatever the search's budget.
@pytest.mark.parametrize("preset", ["classic"])
def test_a_crowded_table_is_searched_within_the_budget(preset: str) -> None:
    """Players who only trail leave dozens of loose cards and millions of last-round positions (minutes a move):
    the search stops at max_nodes, the move tried first stands and its value is NaN; an agent stays quick."""
    from agents.endgame import EndgameAgent
    from agents.registry import make_agent

    rules = make_rules(preset)
    env, obs = last_round(rules, games=8, seed=4, crowded=True)
    assert (np.bitwise_count(obs["view"]["loose"].astype(np.uint64)) > 20).all()
    first = obs["action_mask"].sum(axis=1) - 1  # the last listed move
    best, value, nodes = endgame.solve(rules, obs, first=first, max_nodes=2_000)
    given_up = np.isnan(value)
    assert given_up.any() and (nodes <= 2_000).all()
    assert (best[given_up] == first[given_up]).all() and (nodes[given_up] == 2_000).all()
    base = make_agent("greedy", rules)
    t = time.perf_counter()
    moves = EndgameAgent(base, rules).act(obs, np.random.default_rng(0))
    assert time.perf_counter() - t < 8 * 2.0
    assert (obs["action_mask"][np.arange(8), moves] == 1).all()
    for bad in (0, -5, 1.5, True, "10"):
        with pytest.raises(ValueError, match="max_nodes"):
            endgame.solve(rules, obs, max_nodes=bad)
    easy = positions_with_few_cards(rules)  # no budget: the search finishes, as within the default one
    assert (endgame.solve(rules, easy, max_nodes=None)[1] == endgame.solve(rules, easy)[1]).all()


def positions_with_few_cards(rules) -> dict:
    """Last-round observations of a game the greedy bot plays (a table of ordinary size), 3 cards in the hands."""
    from agents.registry import make_agent

    env = CassinoVectorEnv(4, rules, seed=8)
    obs, _ = env.reset()
    bot, rng = make_agent("greedy", rules), np.random.default_rng(8)
    while not ((obs["view"]["stock_size"] == 0) & (obs["view"]["hand_sizes"].sum(axis=1) == 3)).all():
        obs, *_ = env.step(bot.act(obs, rng))
    return obs
