"""The games of expert iteration and their labels: :class:`LabelCollector` plays a batch of games and labels the
network's decisions by the search (or exactly, in a two-seat last round); :class:`LocalLabels` runs one here,
:class:`RayLabels` one per Ray actor (:class:`LabelWorker`)."""

from __future__ import annotations

import time
import typing
from typing import Any

import numpy as np

from agents.base import slice_obs
from cassino_env.rules import RuleSet, make_rules
from train import config
from train.config import ConfigError
from train.expert.labels import LABEL_ROWS, Labels, join_labels, pad_columns
from train.expert.options import ExitArgs
from train.proxy import exact_values
from train.ray_pool import WorkerPool
from train.rollout import SELF, env_state, make_bots, restore_env_state, rotate_learner_side, split_games, worker_seeds
from train.rollout import rng_state as _rng_state
from train.rollout import set_rng_state as _set_rng_state

if typing.TYPE_CHECKING:
    import torch

#: Seconds between the progress lines of a local run's labelling (an iteration of the default config takes minutes).
PROGRESS_SECONDS = 30.0
#: Points below the lowest searched candidate given to the legal moves ``search=search`` does not search.
UNSEARCHED_GAP = 1e-3


def searched_values(searcher: Any, obs: dict[str, Any], rng: np.random.Generator,
                    logits: np.ndarray | None = None) -> list[np.ndarray]:
    """Every legal move's value by a :class:`agents.search.SearchAgent` (``exact`` off), one float64 array per game of
    ``obs`` (each with more than one legal move; points for the side to move): the searched candidates' mean
    outcomes, the legal moves it did not search the lowest of those less :data:`UNSEARCHED_GAP` (no move is
    credited with a value it was not measured to have, and a tie of the candidates never makes an unsearched move
    a best one, for ``target: top`` and ``search_play``). ``logits``: the network's logits for ``obs`` when the
    caller has them (float32[N, M'], passed to :meth:`agents.search.SearchAgent.act`; None: the search computes
    them)."""
    mask = np.asarray(obs["action_mask"]) != 0
    searcher._trace = []
    try:
        searcher.act(obs, rng, logits=logits)
        trace = searcher._trace
    finally:
        searcher._trace = None
    order = np.concatenate([pad_columns(o, mask.shape[1], -1) for o, _ in trace])
    means = np.concatenate([pad_columns(m, mask.shape[1], -np.inf) for _, m in trace])
    if len(order) != len(mask):
        raise RuntimeError(f"the search traced {len(order)} decisions of {len(mask)}")
    out = []
    for r in range(len(mask)):
        n = int(mask[r].sum())
        done = np.isfinite(means[r])
        v = np.full(n, means[r][done].min() - UNSEARCHED_GAP)
        v[order[r][done]] = means[r][done]
        out.append(v)
    return out


class LabelCollector:
    """The games of one collector (the local run's, or one Ray worker's) and the labelling search.

    Args:
        args: the run's options.
        rules: its rules.
        num_envs: games of this collector.
        env_seed: the seed of its games.
        ctrl: int64[num_envs], each game's controller (``SELF`` or 2 + bot index,
            :func:`train.rollout.split_games`); None: the split of ``num_envs`` games.
    """

    def __init__(self, args: ExitArgs, rules: RuleSet, num_envs: int, env_seed: int,
                 ctrl: np.ndarray | None = None) -> None:
        from agents.features import MoveFeaturizer
        from agents.pimc import PIMCAgent
        from cassino_env.obs import obs_layout
        from cassino_env.vector import CassinoVectorEnv

        self.args, self.rules = args, rules
        self.B, self.P, self.S = num_envs, rules.num_players, rules.num_sides
        self.deal_len = rules.deal_length
        self.side_of_seat = np.arange(self.P) % self.S
        self.bot_names = list(args.bot_rates)
        self.bots = make_bots(self.bot_names, rules)
        self.env = CassinoVectorEnv(num_envs, rules, seed=env_seed, max_moves=args.max_moves, reward="points",
                                    episode="deal", with_view=True)
        self.obs, _ = self.env.reset()
        self.featurizer = MoveFeaturizer(rules)
        self.rounds_entry = obs_layout(self.P, self.S)["progress"][0] + 1  # rounds dealt / rounds per deal
        self.search = PIMCAgent(rules, simulations=args.simulations, min_samples=args.min_samples,
                                rollout=args.rollout, match_bonus=args.match_bonus)
        self.ctrl = split_games(num_envs, 0.0, args.bot_rates) if ctrl is None else np.asarray(ctrl, np.int64)
        self.games = np.arange(num_envs)
        # the exact last-round labels' solves and the search's lines on numba's threads when the run has more than
        # one (the same values); a Ray worker, one CPU each, runs them on its own thread
        self.solve_parallel = args.threads > 1

    def search_over(self, policy: Any) -> Any:
        """``search=search``'s labeller: :class:`agents.search.SearchAgent` over ``policy`` (its defaults: critic leaves
        with two sides, read in points through ``reward_scale``, the scale the critic is trained at), ``simulations``
        and ``top_k`` as given, the last round left to ``label_last_round``."""
        from agents.ppo_agent import PPOAgent
        from agents.search import SearchAgent

        a = self.args
        return SearchAgent(self.rules, PPOAgent(policy, rules=self.rules), simulations=a.simulations, top_k=a.top_k,
                           min_samples=a.min_samples, rollout=a.rollout, match_bonus=a.match_bonus, exact=False,
                           value_scale=a.reward_scale, parallel=self.solve_parallel)

    def env_state(self) -> dict[str, torch.Tensor]:
        """The games' state (``train.env_state`` of a checkpoint)."""
        return env_state(self.env)

    def load_env_state(self, saved: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`env_state`."""
        restore_env_state(self.env, saved)
        self.obs = self.env.observe()

    def round_of(self, obs: dict[str, Any]) -> np.ndarray:
        """int64[N]: the round of the deal each row of ``obs`` is in (1 to ``rules.rounds_per_deal``), read off the
        observation's ``progress`` block (rounds dealt / rounds per deal)."""
        rpd = self.rules.rounds_per_deal
        return np.rint(np.asarray(obs["observation"])[:, self.rounds_entry] * rpd).astype(np.int64)

    def collect(self, policy: Any, rng: np.random.Generator, deals_done: int, progress: float = 0.0) -> Labels:
        """Play ``deals_per_iteration`` deals in every game, label the network's decisions (:mod:`train.expert`);
        ``progress`` > 0: print a line at most every that many seconds (the move reached, labels so far, their
        rate). The network's forward passes, its play and the search's, run at ``args.precision``
        (:mod:`agents.precision`); the exact last-round values do not use it."""
        from agents.device import device_of
        from agents.precision import autocast

        with autocast(self.args.precision, device_of(policy)):
            return self._collect(policy, rng, deals_done, progress)

    def _collect(self, policy: Any, rng: np.random.Generator, deals_done: int, progress: float) -> Labels:
        import torch

        from agents.endgame import play_endgame
        from agents.features import critic_state
        from agents.policy import MoveBatch, sample_actions
        from cassino_env.endgame import solvable

        args, env, B, S = self.args, self.env, self.B, self.S
        is_self = self.ctrl == SELF
        use_crit = policy.shape.critic_dim > 0
        parts: list[dict[str, Any]] = []
        points: dict[str, list[np.ndarray]] = {}
        label_s = 0.0
        obs = self.obs
        policy.eval()
        searcher = self.search_over(policy) if args.search == "search" else None
        self.search.parallel = self.solve_parallel
        t_start = t_said = time.time()
        n_labels = 0
        for d in range(args.deals_per_iteration):
            learner_side = rotate_learner_side(self.games, deals_done + d, S)
            deal_return = np.zeros((B, self.P))
            rec_game: list[np.ndarray] = []
            rec_seat: list[np.ndarray] = []
            start = len(parts)
            for move in range(self.deal_len):
                cp = obs["current_player"].astype(np.int64)
                mine = np.flatnonzero(is_self | (self.side_of_seat[cp] == learner_side))
                actions = np.zeros(B, dtype=np.int64)
                sub = slice_obs(obs, mine)
                feats = self.featurizer(sub)
                with torch.no_grad():
                    logits = policy.logits(MoveBatch.from_obs(sub, feats))
                actions[mine] = sample_actions(logits, rng)
                probs = torch.softmax(logits, dim=-1).cpu().numpy()
                for c in np.unique(self.ctrl[~np.isin(self.games, mine)]):
                    rows_c = np.flatnonzero((self.ctrl == c) & ~np.isin(self.games, mine))
                    actions[rows_c] = self.bots[self.bot_names[c - 2]].act(slice_obs(obs, rows_c), rng)
                n_legal = (np.asarray(sub["action_mask"]) != 0).sum(axis=1)
                lab = n_legal > 1
                if args.label_from_round > 1:
                    lab &= self.round_of(sub) >= args.label_from_round
                exact = np.zeros_like(lab)
                if self.rules.num_players == 2:
                    exact = lab & solvable(self.rules, sub["view"])
                    lab &= ~exact
                    exact &= bool(args.label_last_round)
                if args.search == "none":
                    lab[:] = False
                li_s, li_e = np.flatnonzero(lab), np.flatnonzero(exact)
                t0 = time.time()
                if not li_s.size:
                    qs = []
                elif args.search == "search":
                    # the search ranks its candidates by the logits computed above (no second forward pass)
                    qs = searched_values(searcher, slice_obs(sub, li_s), rng, logits[li_s].float().cpu().numpy())
                else:
                    qs = [np.asarray(v, dtype=np.float64) for v in self.search.move_values(slice_obs(sub, li_s), rng)]
                if li_e.size:  # exact values of every move (train.proxy's labeller); a search given up is dropped
                    qe = exact_values(self.rules, slice_obs(sub, li_e), args.match_bonus, parallel=self.solve_parallel)
                    qe_rows = [qe[r, :n_legal[i]] for r, i in enumerate(li_e)]
                    keep = np.array([bool(np.isfinite(v).all()) for v in qe_rows])
                    li_e = li_e[keep]
                    qs += [v for v, k in zip(qe_rows, keep, strict=True) if k]
                label_s += time.time() - t0
                li = np.concatenate([li_s, li_e]).astype(np.int64)
                if li.size:
                    W = int(n_legal[li].max())
                    q = np.full((li.size, W), np.nan, dtype=np.float32)
                    for r, v in enumerate(qs):
                        q[r, :len(v)] = v
                    rows = mine[li]
                    if args.search_play > 0:
                        play = rng.random(li.size) < args.search_play
                        actions[rows[play]] = np.nanargmax(q[play], axis=1)
                    parts.append({
                        "obs": np.asarray(sub["observation"])[li].astype(np.float32),
                        "kind": np.asarray(sub["move_kind"])[li, :W].astype(np.int8),
                        "card": np.asarray(sub["move_card"])[li, :W].astype(np.int8),
                        "value": np.asarray(sub["move_value"])[li, :W].astype(np.int8),
                        "cards": np.asarray(sub["move_cards"])[li, :W].view(np.int64),
                        "mask": (np.asarray(sub["action_mask"])[li, :W] != 0),
                        "feat": feats[li, :W].astype(np.float32),
                        "crit": critic_state(env.state)[rows].astype(np.float32) if use_crit else None,
                        "q": q, "prior": pad_columns(probs[li], W, 0.0)[:, :W].astype(np.float32),
                    })
                    rec_game.append(rows)
                    rec_seat.append(cp[rows])
                    n_labels += li.size
                if progress > 0 and time.time() - t_said >= progress:
                    t_said = time.time()
                    print(f"  labelling: deal {d + 1}/{args.deals_per_iteration}, move {move + 1}/{self.deal_len}, "
                          f"{n_labels:,} labels ({n_labels / max(t_said - t_start, 1e-9):,.0f}/s)", flush=True)
                if not args.network_last_round:  # the network's exact last round
                    actions[mine] = play_endgame(self.rules, sub, actions[mine])
                obs, reward, terminated, _, _ = env.step(actions)
                deal_return += reward
            assert terminated.all(), "every game ends its deal after 52 - table_cards moves"
            for i, (g, s) in enumerate(zip(rec_game, rec_seat, strict=True)):
                parts[start + i]["ret"] = deal_return[g, s].astype(np.float32)
            for c in np.unique(self.ctrl[~is_self]):
                games_c = np.flatnonzero(self.ctrl == c)
                points.setdefault(self.bot_names[c - 2], []).append(deal_return[games_c, learner_side[games_c]])
        self.obs = obs
        labels = [Labels(**{k: p[k] for k in LABEL_ROWS}) for p in parts]
        if not labels:
            raise ConfigError(f"no decision was labelled in {B} games of {args.deals_per_iteration} deal(s): give "
                              "more games (num_envs) or deals (deals_per_iteration)", field="num_envs")
        out = join_labels(labels)
        out.points = {k: np.concatenate(v) for k, v in points.items()}
        out.label_s = label_s
        return out


class LabelWorker:
    """A Ray actor's body: a :class:`LabelCollector` over ``num_envs / num_workers`` games (worker ``index``'s
    share of the run's split), seeded by :func:`train.rollout.worker_seeds`; torch uses one thread."""

    def __init__(self, cfg: dict[str, Any], index: int, num_workers: int, network: dict[str, Any]) -> None:
        import torch

        from agents.policy import CassinoPolicy

        torch.set_num_threads(1)
        args = config.make_args(ExitArgs, cfg)
        rules = make_rules(args.preset, args.num_players)
        env_seed, self.rng = worker_seeds(args.seed, index)
        ctrl = split_games(args.num_envs, 0.0, args.bot_rates)[index::num_workers]
        self.collector = LabelCollector(args, rules, args.num_envs // num_workers, env_seed, ctrl=ctrl)
        self.collector.solve_parallel = False  # one CPU reserved per worker
        self.policy = CassinoPolicy.from_shape(network)
        self.lent_rng = np.random.default_rng(0)
        self.progress = PROGRESS_SECONDS if index == 0 else 0.0  # worker 0's lines reach the driver's console

    def ready(self) -> int:
        """The number of games (returns once the actor is up)."""
        return self.collector.B

    def collect(self, weights: dict[str, Any], deals_done: int, rng_state: str | None) -> tuple[Labels, str | None]:
        """One iteration's games and labels with these weights; worker 0 gets and returns the driver's generator."""
        self.policy.load_state_dict(weights)
        rng = self.rng
        if rng_state is not None:
            _set_rng_state(self.lent_rng, rng_state)
            rng = self.lent_rng
        labels = self.collector.collect(self.policy, rng, deals_done, progress=self.progress)
        return labels, None if rng_state is None else _rng_state(rng)

    def state(self) -> dict[str, Any]:
        """``env_state`` and, for a worker with its own generator, ``numpy_rng``."""
        out: dict[str, Any] = {"env_state": self.collector.env_state()}
        if self.rng is not None:
            out["numpy_rng"] = _rng_state(self.rng)
        return out

    def load(self, env_state: dict[str, Any], rng_state: str | None) -> None:
        """Restore :meth:`state`."""
        self.collector.load_env_state(env_state)
        if rng_state is not None:
            _set_rng_state(self.rng, rng_state)


class LocalLabels:
    """The local run's games: one :class:`LabelCollector`, drawing from the run's generator."""

    def __init__(self, args: ExitArgs, rules: RuleSet) -> None:
        self.collector = LabelCollector(args, rules, args.num_envs, worker_seeds(args.seed, 0)[0])

    def collect(self, policy: Any, rng: np.random.Generator, deals_done: int) -> Labels:
        return self.collector.collect(policy, rng, deals_done, progress=PROGRESS_SECONDS)

    def state(self) -> dict[str, Any]:
        return {"env_state": self.collector.env_state()}

    def load(self, tr: dict[str, Any]) -> None:
        self.collector.load_env_state(tr["env_state"])

    def release(self) -> None:
        """Nothing to release."""


class RayLabels:
    """``--ray``: ``num_workers`` :class:`LabelWorker` actors (one CPU each, reserved up front:
    :class:`train.ray_pool.WorkerPool`); their labels are joined in worker order."""

    def __init__(self, args: ExitArgs, net_shape: Any) -> None:
        self.pool = WorkerPool(LabelWorker, args.ray_address, args.num_workers,  # the workers label on their CPU
                               cfg={**config.args_to_dict(args), "device": "cpu"}, network=net_shape.to_dict())

    def collect(self, policy: Any, rng: np.random.Generator, deals_done: int) -> Labels:
        import ray

        from agents.device import to_cpu

        weights = ray.put(to_cpu(policy.state_dict()))
        parts = ray.get([a.collect.remote(weights, deals_done, _rng_state(rng) if i == 0 else None)
                         for i, a in enumerate(self.pool.actors)])
        _set_rng_state(rng, parts[0][1])
        return join_labels([p for p, _ in parts])

    def state(self) -> dict[str, Any]:
        """The checkpoint's fields of the games (:meth:`train.ray_pool.WorkerPool.state`)."""
        return self.pool.state()

    def load(self, tr: dict[str, Any]) -> None:
        """Send every worker its games from a checked checkpoint's ``train`` entry
        (:meth:`train.ray_pool.WorkerPool.load`)."""
        self.pool.load(tr)

    def release(self) -> None:
        """End the workers, and Ray when it was started here (:meth:`train.ray_pool.WorkerPool.release`)."""
        self.pool.release()
