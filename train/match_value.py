"""A match-aware training objective: the chance of winning the match, as a function of the match score.

Evaluation counts matches (docs/rules.md 2.6: the first side to ``target`` points at the end of a deal, the higher
total winning, another deal on a tie), while the default reward is the deal's point margin. A margin of +3 matters
little at 0-0 and decides everything at 19-18. :class:`MatchValue` turns a match score into the probability that the
side wins the match from there, ``W(mine, theirs)``, and the trainer's ``objective="match"`` pays each side, at the
end of every deal, the change of ``2 W - 1`` (in [-1, 1]): a deal that wins the match pays ``1 - (2 W_before - 1)``,
one that loses it ``-1 - (2 W_before - 1)``. Summed over a match these rewards are exactly ``+1`` for a win and
``-1`` for a loss, less the constant ``2 W(0, 0) - 1 = 0``: a potential-based reward (Ng et al. 1999) whose return is
the match result, so what is trained is what is evaluated.

``W`` assumes the deals of a match are independent draws from one distribution of (points of my side, points of the
other side), measured by :func:`deal_distribution` from games of the ``advanced`` bot against itself; it is exact
under that assumption (dynamic programming over the scores below ``target``) and ignores who deals. Two sides only.
"""

from __future__ import annotations

import numpy as np

from cassino_env import core
from cassino_env.rules import RuleSet


def deal_distribution(rules: RuleSet, games: int = 2048, deals: int = 4, seed: int = 0,
                      bot: str = "advanced") -> np.ndarray:
    """float64[K, K]: the frequency of each (points of side 0, points of side 1) of one deal, K = the largest total
    seen + 1, from ``games * deals`` deals of ``bot`` on every seat (about ``games * deals`` samples; symmetrised, so
    both sides have the same distribution).

    Raises:
        ValueError: the rules have other than two sides.
    """
    from agents.bots import make_bot

    if rules.num_sides != 2:
        raise ValueError(f"the match objective needs two sides, the rules have {rules.num_sides}")
    player = make_bot(bot, rules)
    st = core.init(rules, np.arange(seed, seed + games, dtype=np.int64))
    rows: list[np.ndarray] = []
    count = 0
    while count < games * deals:
        res = core.step(st, player.act_state(st))
        if res.deal_done.any():
            tot = res.deal_totals[res.deal_done].astype(np.int64)
            rows.append(tot)
            count += len(tot)
    tot = np.concatenate(rows)
    K = int(tot.max()) + 1
    hist = np.zeros((K, K))
    np.add.at(hist, (tot[:, 0], tot[:, 1]), 1.0)
    hist = hist + hist.T
    return hist / hist.sum()


class MatchValue:
    """``W[a, b]``: the chance that a side with ``a`` points wins the match against one with ``b`` (a, b below the
    target), under independent deals drawn from ``dist`` (:func:`deal_distribution`).

    Args:
        dist: float[K, K], the probability of each (my points, their points) of one deal; symmetric.
        target: the match target (``RuleSet.target``).
    """

    def __init__(self, dist: np.ndarray, target: int) -> None:
        dist = np.asarray(dist, dtype=np.float64)
        self.target = int(target)
        T = self.target
        xs, ys = np.nonzero(dist > 0)
        ps = dist[xs, ys]
        if np.any(xs + ys == 0):  # a deal that scores nothing would make the recursion cyclic
            raise ValueError("the deal distribution gives some probability to a 0-0 deal")
        W = np.zeros((T, T))
        for total in range(2 * T - 2, -1, -1):  # from the highest score sum down: later scores are known
            for a in range(max(0, total - T + 1), min(total, T - 1) + 1):
                b = total - a
                na, nb = a + xs, b + ys
                over = (na >= T) | (nb >= T)
                val = np.where(na > nb, 1.0, np.where(na < nb, 0.0, 0.5))  # a tie over the target: even chances
                inner = ~over
                val[inner] = W[na[inner], nb[inner]]
                W[a, b] = float(np.dot(ps, val))
        self.W = W

    @classmethod
    def of(cls, rules: RuleSet, games: int = 2048, deals: int = 4, seed: int = 0) -> MatchValue:
        """The table for ``rules`` from the ``advanced`` bot's deals (:func:`deal_distribution`)."""
        return cls(deal_distribution(rules, games, deals, seed), rules.target)

    def potential(self, scores: np.ndarray) -> np.ndarray:
        """float64[B, 2]: ``2 W - 1`` of each side for match scores ``scores`` int[B, 2] (both below the target)."""
        s = np.minimum(np.asarray(scores, dtype=np.int64), self.target - 1)
        w0 = self.W[s[:, 0], s[:, 1]]
        return np.stack([2.0 * w0 - 1.0, 1.0 - 2.0 * w0], axis=1)

    def rewards(self, before: np.ndarray, after: np.ndarray, match_done: np.ndarray,
                match_winner: np.ndarray) -> np.ndarray:
        """float64[B, 2]: each side's match-objective reward for deals that ended: the change of ``2 W - 1`` from
        the scores ``before`` the deal to those ``after`` it, or to +-1 where the deal ended the match (won by side
        ``match_winner``)."""
        pot_before = self.potential(before)
        pot_after = self.potential(after)
        done = np.asarray(match_done, dtype=bool)
        won = np.asarray(match_winner)[:, None] == np.arange(2)[None, :]
        pot_after = np.where(done[:, None], np.where(won, 1.0, -1.0), pot_after)
        return pot_after - pot_before
