"""The network-guided search agent (agents/search.py), its spec, and the development proxy (train/proxy.py)."""

from __future__ import annotations

import numpy as np
import pytest

from agents.registry import AgentSpecError, make_agent
from cassino_env.rules import make_rules
from cassino_env.vector import CassinoVectorEnv

RULES = make_rules("classic")


def _positions(n_steps: int = 6, games: int = 6) -> dict:
    return _positions_of(RULES, games, n_steps, seed=123)


def test_search_spec_plays_legal_moves_and_is_named():
    agent = make_agent("search:pretrained:classic:64", RULES)
    assert agent.name == "search:pretrained:classic:64" and agent.simulations == 64
    obs = _positions()
    moves = agent.act(obs, np.random.default_rng(1))
    mask = np.asarray(obs["action_mask"]) != 0
    assert moves.shape == (len(mask),) and mask[np.arange(len(mask)), moves].all()


def test_search_default_budget_matches_pimc():
    from agents.pimc import DEFAULT_SIMULATIONS as PIMC
    from agents.search import DEFAULT_SIMULATIONS

    assert make_agent("search:pretrained:classic", RULES).simulations == DEFAULT_SIMULATIONS <= PIMC


@pytest.mark.parametrize("spec", ["search", "search:", "search:greedy", "search:pretrained:classic:0",
                                  "search:pretrained:classic:100001", "search:pretrained:nosuch",
                                  "search:pimc:64"])
def test_bad_search_specs_are_one_clear_error(spec):
    with pytest.raises(AgentSpecError, match="search|pretrained"):
        make_agent(spec, RULES)


def test_top1_with_huge_margin_is_the_network_alone_outside_the_last_round():
    from agents.search import SearchAgent

    net = make_agent("policy:pretrained:classic", RULES)
    agent = SearchAgent(RULES, net, simulations=16, top_k=3, margin=1e9, exact=False, leaf="rollout")
    obs = _positions()
    assert (agent.act(obs, np.random.default_rng(0)) == net.act(obs, np.random.default_rng(0))).all()


def test_exact_values_agree_with_the_solver():
    from agents.base import slice_obs
    from cassino_env.endgame import solvable, solve
    from train.proxy import exact_values

    env = CassinoVectorEnv(8, RULES, seed=5, with_view=True)
    obs, _ = env.reset()
    bot = make_agent("advanced", RULES)
    rows = np.zeros(0, dtype=np.int64)
    for _ in range(60):  # play until some games reach their last round
        rows = np.flatnonzero(solvable(RULES, obs["view"]))
        if rows.size >= 2:
            break
        obs, *_ = env.step(bot.act(obs, np.random.default_rng(0)))
    assert rows.size
    sub = slice_obs(obs, rows)
    vals = exact_values(RULES, sub, match_bonus=10.0)
    _, best, _ = solve(RULES, sub, match_bonus=10.0)
    mask = np.asarray(sub["action_mask"]) != 0
    assert np.allclose(np.where(mask, vals, -np.inf).max(axis=1), best)
    assert np.isnan(vals[~mask]).all()
    # on numba's threads (the expert stage's labels with threads > 1): the same values, bit for bit
    assert np.array_equal(exact_values(RULES, sub, match_bonus=10.0, parallel=True), vals, equal_nan=True)


def test_tiny_proxy_builds_loads_and_scores(tmp_path):
    from train.proxy import ProxyError, build, load, score

    path = build("classic", None, positions=20, seed=3, simulations=32, path=tmp_path / "p.npz", progress=False,
                 deals_per_source=2)
    proxy = load(path)
    assert len(proxy) == 20 and proxy.meta["complete"]
    mask = np.asarray(proxy.obs["action_mask"]) != 0
    assert (mask.sum(axis=1) > 1).all() and np.isfinite(proxy.values[mask]).all()
    for spec in ("random", "advanced"):
        r = score(make_agent(spec, proxy.rules), proxy)
        assert r["positions"] == 20 and r["regret"] >= 0 and 0 <= r["top1"] <= 1
    oracle = type("Oracle", (), {"name": "oracle", "act": lambda self, obs, rng: np.nanargmax(
        np.where(np.asarray(obs["action_mask"]) != 0, proxy.values, -np.inf), axis=1)})()
    assert score(oracle, proxy, chunk=10**6)["regret"] == 0.0
    assert len(proxy.head(5)) == 5
    with pytest.raises(ProxyError, match="no proxy file"):
        load(tmp_path / "missing.npz")


def test_eval_reports_seconds_per_decision():
    from train.evaluate import evaluate

    rep = evaluate(["greedy", "random"], RULES, deals=2, seed=1)
    spd = rep["seconds_per_decision"]
    assert set(spd) == {"greedy", "random"} and all(v is not None and v >= 0 for v in spd.values())


def test_network_rollouts_and_halving_play_legal_moves():
    from agents.search import SearchAgent

    net = make_agent("pretrained:classic", RULES)
    obs = _positions(games=3)
    mask = np.asarray(obs["action_mask"]) != 0
    for agent in (SearchAgent(RULES, net, simulations=8, min_samples=2, rollout="net"),
                  SearchAgent(RULES, net, simulations=32, top_k=5, halving=True)):
        moves = agent.act(obs, np.random.default_rng(2))
        assert mask[np.arange(len(mask)), moves].all()


@pytest.mark.parametrize("kw", [{"simulations": 0}, {"top_k": 0}, {"margin": -1.0}, {"rollout": "nobody"},
                                {"simulations": True}])
def test_bad_search_arguments(kw):
    from agents.search import SearchAgent, SearchSpecError

    with pytest.raises(SearchSpecError):
        SearchAgent(RULES, make_agent("pretrained:classic", RULES), **kw)


@pytest.mark.parametrize("kw", [{"leaf": "nobody"}, {"leaf": "critic", "depth": -1}, {"depth": 65},
                                {"depth": 1.5}, {"value_scale": 0.0}, {"value_scale": float("nan")}])
def test_bad_critic_leaf_arguments(kw):
    from agents.search import SearchAgent, SearchSpecError

    with pytest.raises(SearchSpecError):
        SearchAgent(RULES, make_agent("pretrained:classic", RULES), **kw)


@pytest.mark.parametrize("kw", [{"rollout": "net", "depth": 2}, {"leaf": "rollout", "depth": 8}])
def test_a_depth_without_critic_leaves_is_refused(kw):
    """Only critic leaves cut a line: a depth that would be ignored (lines played to the end) is an error naming
    the leaf, not silently a full rollout."""
    from agents.search import SearchAgent, SearchSpecError

    with pytest.raises(SearchSpecError, match="depth=.*leaf='rollout'.*leaf='critic'"):
        SearchAgent(RULES, make_agent("pretrained:classic", RULES), **kw)


def test_a_network_of_other_seats_is_refused():
    from agents.search import SearchAgent, SearchSpecError

    with pytest.raises(SearchSpecError, match="net: a network of 2 seats in 2 sides .* 3 seats in 3 sides"):
        SearchAgent(make_rules("classic", 3), make_agent("pretrained:classic", RULES))


def _tiny_net(rules, seed: int = 0):
    """A small untrained network with a full-state critic for ``rules`` (no shipped network has more than two
    sides)."""
    import torch

    from agents.features import NUM_MOVE_FEATURES, critic_state_size
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import PPOAgent
    from cassino_env.obs import obs_size

    torch.manual_seed(seed)
    policy = CassinoPolicy(obs_dim=obs_size(rules.num_players, rules.num_sides), hidden=16, embed=8,
                           move_features=NUM_MOVE_FEATURES, critic="separate",
                           critic_dim=critic_state_size(rules.num_players))
    return PPOAgent(policy, rules=rules)


def _positions_of(rules, games: int, n_steps: int, seed: int = 11) -> dict:
    env = CassinoVectorEnv(games, rules, seed=seed, with_view=True)
    obs, _ = env.reset()
    bot = make_agent("advanced", rules)
    for _ in range(n_steps):
        obs, *_ = env.step(bot.act(obs, np.random.default_rng(0)))
    return obs


def test_leaf_stops_where_a_seat_of_my_side_is_to_move():
    from agents.search import leaf_stops

    cp = np.array([0, 1, 2, 3, 4, 5])
    # two sides (two players or two partnerships): every line stops, the critic's value is either side's
    assert leaf_stops(cp, np.full(6, 1), 2).all()
    # three seats alone: only where the searching seat itself is to move
    assert (leaf_stops(np.array([0, 1, 2]), np.array([1, 1, 1]), 3) == [False, True, False]).all()
    # six seats in three partnerships (seat p partners p + 3): the searcher's partner to move is a stop too
    assert (leaf_stops(cp, np.full(6, 4), 3) == [False, True, False, False, True, False]).all()


def test_critic_leaves_at_three_sides_play_legal_moves_deterministically():
    """More than two sides: critic leaves (asked for: the default there is rollouts) play legal moves and repeat
    for a seed."""
    from agents.search import SearchAgent

    rules = make_rules("classic", 3)
    net = _tiny_net(rules)
    obs = _positions_of(rules, games=4, n_steps=7)
    mask = np.asarray(obs["action_mask"]) != 0
    agent = SearchAgent(rules, net, simulations=48, min_samples=2, leaf="critic")
    moves = agent.act(obs, np.random.default_rng(5))
    assert mask[np.arange(len(mask)), moves].all()
    again = SearchAgent(rules, net, simulations=48, min_samples=2, leaf="critic")
    assert (again.act(obs, np.random.default_rng(5)) == moves).all()


def test_critic_leaf_at_three_sides_stops_when_the_searcher_is_to_move():
    """Three seats alone: after the candidate and ``depth`` plies a line goes on until the searching seat is to move
    and reads the critic for it (its own value, with no sign): depths 0, 1 and 2 all stop after the candidate and two
    plies of the bot; depth 3 goes on to the searcher's next turn after that."""
    import torch

    from agents.bots import make_bot
    from agents.features import critic_state
    from agents.gym_env import state_obs
    from agents.search import SearchAgent
    from cassino_env import core
    from cassino_env.determinize import determinize, moves_of, take

    rules = make_rules("classic", 3)
    net = _tiny_net(rules, seed=1)
    obs = _positions_of(rules, games=3, n_steps=4)
    det = determinize(rules, obs["view"], moves_of(obs), np.array([2, 2, 2]), np.random.default_rng(0))
    first = np.zeros(6, dtype=np.int64)
    me = np.repeat(np.asarray(obs["view"]["viewer"]).astype(np.int64), 2)
    got = {d: SearchAgent(rules, net, leaf="critic", depth=d, value_scale=0.1)._critic_leaf(
        take(det, np.arange(6)), first, me) for d in (0, 1, 2, 3)}
    bot = make_bot("advanced", rules)

    def critic_after(plies: int) -> np.ndarray:
        st = take(det, np.arange(6))
        core.step(st, first)
        for _ in range(plies):
            core.step(st, bot.act_state(st))
        assert (st.current_player == me).all()
        with torch.no_grad():
            return net.policy.state_value(torch.from_numpy(state_obs(st, with_view=False)["observation"]),
                                          torch.from_numpy(critic_state(st))).numpy() / 0.1

    np.testing.assert_allclose(got[0], critic_after(2), rtol=1e-5)
    np.testing.assert_array_equal(got[1], got[0])
    np.testing.assert_array_equal(got[2], got[0])
    np.testing.assert_allclose(got[3], critic_after(5), rtol=1e-5)


@pytest.mark.parametrize(("depth", "partner"), [(0, False), (1, True)])
def test_critic_leaf_with_partnerships_counts_the_partner_as_my_side(depth, partner):
    """Four seats in two partnerships (seats 0+2 against 1+3): a line that stops with the searcher's partner to move
    scores the critic's value as it is; with an opponent to move, its negative."""
    import torch

    from agents.features import critic_state
    from agents.gym_env import state_obs
    from agents.search import SearchAgent
    from cassino_env import core
    from cassino_env.determinize import determinize, moves_of, take

    rules = make_rules("classic", 4)
    net = make_agent("pretrained:classic-4p", rules)
    obs = _positions_of(rules, games=3, n_steps=5)
    det = determinize(rules, obs["view"], moves_of(obs), np.array([2, 2, 2]), np.random.default_rng(0))
    first = np.zeros(6, dtype=np.int64)
    me = np.repeat(np.asarray(obs["view"]["viewer"]).astype(np.int64), 2)
    agent = SearchAgent(rules, net, leaf="critic", depth=depth, value_scale=0.1)
    got = agent._critic_leaf(take(det, np.arange(6)), first, me)
    st = take(det, np.arange(6))
    core.step(st, first)
    for _ in range(depth):
        core.step(st, agent._bot.act_state(st))
    assert ((st.current_player == (me + 2) % 4) if partner else (st.current_player == (me + 1) % 4)).all()
    with torch.no_grad():
        v = net.policy.state_value(torch.from_numpy(state_obs(st, with_view=False)["observation"]),
                                   torch.from_numpy(critic_state(st))).numpy()
    np.testing.assert_allclose(got, (v if partner else -v) / 0.1, rtol=1e-5)


def test_critic_leaf_scores_the_position_after_the_move_by_the_critic():
    """depth 0: a line's outcome is the critic's value for the seat to move after the candidate, from the searching
    seat's side (the opponent moves next in two-player classic, so minus its value), in points."""
    import torch

    from agents.features import critic_state
    from agents.gym_env import state_obs
    from agents.search import SearchAgent
    from cassino_env import core
    from cassino_env.determinize import determinize, moves_of, take

    net = make_agent("pretrained:classic", RULES)
    agent = SearchAgent(RULES, net, leaf="critic", depth=0, value_scale=0.1)
    obs = _positions(games=3)
    det = determinize(RULES, obs["view"], moves_of(obs), np.array([2, 2, 2]), np.random.default_rng(0))
    first = np.zeros(6, dtype=np.int64)
    me = np.repeat(np.asarray(obs["view"]["viewer"]).astype(np.int64), 2)
    got = agent._critic_leaf(take(det, np.arange(6)), first, me)
    st = take(det, np.arange(6))
    core.step(st, first)
    with torch.no_grad():
        v = net.policy.state_value(torch.from_numpy(state_obs(st, with_view=False)["observation"]),
                                   torch.from_numpy(critic_state(st))).numpy()
    assert (st.current_player != me).all()
    np.testing.assert_allclose(got, -v / 0.1, rtol=1e-5)


def test_critic_leaf_search_plays_legal_moves_and_finished_deals_score_exactly():
    from agents.search import SearchAgent
    from cassino_env.determinize import determinize, moves_of, take

    net = make_agent("pretrained:classic", RULES)
    obs = _positions(games=4)
    mask = np.asarray(obs["action_mask"]) != 0
    for depth in (0, 3, 64):
        agent = SearchAgent(RULES, net, simulations=32, min_samples=2, leaf="critic", depth=depth)
        moves = agent.act(obs, np.random.default_rng(3))
        assert mask[np.arange(len(mask)), moves].all()
    # depth 64 reaches the end of every deal: the critic is never read, the outcome is the rollout's
    det = determinize(RULES, obs["view"], moves_of(obs), np.array([3] * 4), np.random.default_rng(4))
    first = np.zeros(12, dtype=np.int64)
    me = np.repeat(np.asarray(obs["view"]["viewer"]).astype(np.int64), 3)
    deep = SearchAgent(RULES, net, leaf="critic", depth=64)
    rolled = SearchAgent(RULES, net)._pimc.rollout(take(det, np.arange(12)), first, me, np.random.default_rng(0))
    np.testing.assert_allclose(deep._critic_leaf(take(det, np.arange(12)), first, me), rolled)


def test_critic_leaves_with_plies_of_the_network():
    """rollout="net" with critic leaves: the network's own move for each of the depth plies, then the critic."""
    from agents.search import SearchAgent
    from cassino_env import core
    from cassino_env.determinize import determinize, moves_of, take

    net = make_agent("pretrained:classic", RULES)
    obs = _positions(games=4)
    mask = np.asarray(obs["action_mask"]) != 0
    agent = SearchAgent(RULES, net, simulations=16, min_samples=2, rollout="net", leaf="critic", depth=2)
    moves = agent.act(obs, np.random.default_rng(3))
    assert mask[np.arange(len(mask)), moves].all()
    det = determinize(RULES, obs["view"], moves_of(obs), np.array([3] * 4), np.random.default_rng(4))
    first = np.zeros(12, dtype=np.int64)
    me = np.repeat(np.asarray(obs["view"]["viewer"]).astype(np.int64), 3)
    # to the end of the deal it is the network's full rollout
    deep = SearchAgent(RULES, net, rollout="net", leaf="critic", depth=64)
    np.testing.assert_allclose(deep._critic_leaf(take(det, np.arange(12)), first, me),
                               deep._rollout_net(take(det, np.arange(12)), first, me))
    # one ply: the candidate, the network's reply, then the critic for the searching seat, to move again
    import torch

    from agents.features import critic_state
    from agents.gym_env import state_obs

    one = SearchAgent(RULES, net, rollout="net", leaf="critic", depth=1, value_scale=0.1)
    got = one._critic_leaf(take(det, np.arange(12)), first, me)
    st = take(det, np.arange(12))
    core.step(st, first)
    core.step(st, one._net_state_policy(st))
    with torch.no_grad():
        v = net.policy.state_value(torch.from_numpy(state_obs(st, with_view=False)["observation"]),
                                   torch.from_numpy(critic_state(st))).numpy()
    assert (st.current_player == me).all()
    np.testing.assert_allclose(got, v / 0.1, rtol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"leaf": "critic", "depth": 2}, {"rollout": "net", "leaf": "critic", "depth": 1},
                                {"rollout": "net", "simulations": 8}])
def test_search_over_a_network_of_other_observation_blocks(kw):
    """The search encodes the network's own observation (its blocks) from the view, as the network's agent does."""
    import torch

    from agents.features import NUM_MOVE_FEATURES
    from agents.policy import CassinoPolicy
    from agents.ppo_agent import PPOAgent
    from agents.search import SearchAgent
    from cassino_env.obs import DEFAULT_BLOCKS, obs_size

    blocks = tuple(b for b in DEFAULT_BLOCKS if b != "most_decided")
    obs = _positions(games=3)
    torch.manual_seed(0)
    net = CassinoPolicy(obs_dim=obs_size(2, 2, blocks), hidden=16, embed=8, move_features=NUM_MOVE_FEATURES)
    agent = SearchAgent(RULES, PPOAgent(net, rules=RULES, blocks=blocks), **{"simulations": 16, "min_samples": 2,
                                                                            **kw})
    moves = agent.act(obs, np.random.default_rng(0))
    mask = np.asarray(obs["action_mask"]) != 0
    assert mask[np.arange(len(mask)), moves].all()


def test_the_default_leaf_is_the_critic_with_two_sides_and_rollouts_otherwise():
    from agents.search import DEFAULT_DEPTH, SearchAgent

    agent = make_agent("search:pretrained:classic", RULES)
    assert (agent.leaf, agent.depth) == ("critic", DEFAULT_DEPTH)
    assert SearchAgent(RULES, make_agent("pretrained:classic", RULES), rollout="net").leaf == "rollout"
    three = make_rules("classic", 3)
    assert SearchAgent(three, _tiny_net(three)).leaf == "rollout"
    assert SearchAgent(make_rules("classic", 4), make_agent("pretrained:classic-4p", make_rules("classic", 4))
                       ).leaf == "critic"


def test_a_huge_search_budget_is_one_search_spec_error() -> None:
    """A breaker's find: 5,000 digits of budget raised Python's plain ValueError (integer string too long)."""
    from agents.search import SearchSpecError, parse_search_arg

    with pytest.raises(SearchSpecError, match="budget 1..") as caught:
        parse_search_arg("pretrained:classic:" + "9" * 5000)
    assert len(str(caught.value)) < 200
    assert parse_search_arg("pretrained:classic:0007") == ("pretrained:classic", 7)


@pytest.mark.parametrize("leaf", ["critic", "rollout"])
def test_search_lines_over_threads_are_the_serial_ones(leaf):
    """The search stepping its lines over numba's threads (``parallel=True``) measures every candidate as the serial
    one does: the same traced means, so the same moves and labels."""
    from agents.search import SearchAgent

    net = make_agent("pretrained:classic", RULES)
    obs = _positions(n_steps=4, games=12)
    traces = []
    for parallel in (False, True):
        agent = SearchAgent(RULES, net, simulations=96, leaf=leaf, exact=False, parallel=parallel)
        agent._trace = []
        moves = agent.act(obs, np.random.default_rng(2))
        traces.append((moves, agent._trace))
    np.testing.assert_array_equal(traces[0][0], traces[1][0])
    for (o1, m1), (o2, m2) in zip(traces[0][1], traces[1][1], strict=True):
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(m1, m2)


def test_given_logits_search_as_its_own():
    """``act(..., logits=)`` (the expert stage's games pass the logits they already have) ranks the candidates by
    those: given the network's own logits, narrower than the move table, it searches and plays exactly as without;
    logits of the wrong shape are one ValueError naming the argument."""
    import torch

    from agents.features import MoveFeaturizer
    from agents.policy import MoveBatch
    from agents.search import SearchAgent

    net = make_agent("pretrained:classic", RULES)
    obs = _positions(n_steps=5, games=10)
    with torch.no_grad():
        lg = net.policy.logits(MoveBatch.from_obs(obs, MoveFeaturizer(RULES)(obs))).numpy()
    width = int((np.asarray(obs["action_mask"]) != 0).sum(axis=1).max())
    assert lg.shape[1] >= width
    traces = []
    for given in (None, lg[:, :width]):
        agent = SearchAgent(RULES, net, simulations=64, exact=False)
        agent._trace = []
        traces.append((agent.act(obs, np.random.default_rng(4), logits=given), agent._trace))
    np.testing.assert_array_equal(traces[0][0], traces[1][0])
    for (o1, m1), (o2, m2) in zip(traces[0][1], traces[1][1], strict=True):
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(m1, m2)
    # finite scores at illegal moves are not candidates: the same search
    agent = SearchAgent(RULES, net, simulations=64, exact=False)
    agent._trace = []
    noisy = np.where(np.isfinite(lg), lg, 99.0)
    np.testing.assert_array_equal(agent.act(obs, np.random.default_rng(4), logits=noisy), traces[0][0])
    for bad in (np.where(np.isfinite(lg), np.nan, lg), lg[:, :width - 1], lg[:-1], lg[:, :, None],
                np.zeros((len(lg), np.shape(obs["action_mask"])[1] + 1), np.float32)):
        with pytest.raises(ValueError, match="logits"):
            agent.act(obs, np.random.default_rng(4), logits=bad)


@pytest.mark.parametrize(("players", "parallel"), [(2, True), (2, False), (3, True)])
def test_critic_leaves_play_the_bots_plies_as_ply_by_ply(players, parallel):
    """The critic leaves' lines played by ``agents.lines.play_plies`` (a scripted bot's ``depth`` plies in one kernel
    call) measure every candidate as the ply-by-ply loop does (the bot hidden behind an adapter that has only
    ``act_state``): roots early in the deal and 5 moves from its end, so that some lines end on the way, in the same
    chunks as lines that go on; three seats, where lines go on past the depth until the searcher's seat moves."""
    from agents.search import SearchAgent
    from train.proxy import concat_obs

    rules = make_rules("classic", players)
    net = _tiny_net(rules) if players != 2 else make_agent("pretrained:classic", rules)
    obs = concat_obs([_positions_of(rules, 6, 3), _positions_of(rules, 6, rules.deal_length - 5, seed=12)])

    class PlyByPly:  # the same bot, without play_plies' type
        def __init__(self, bot):
            self.bot = bot

        def act_state(self, state, parallel=False):
            return self.bot.act_state(state, parallel=parallel)

    traces = []
    for fused in (True, False):
        agent = SearchAgent(rules, net, simulations=120, exact=False, leaf="critic", depth=8, parallel=parallel)
        if not fused:
            agent._bot = PlyByPly(agent._bot)
        agent._trace = []
        traces.append((agent.act(obs, np.random.default_rng(9)), agent._trace))
    np.testing.assert_array_equal(traces[0][0], traces[1][0])
    for (o1, m1), (o2, m2) in zip(traces[0][1], traces[1][1], strict=True):
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(m1, m2)
