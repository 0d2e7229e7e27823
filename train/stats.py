"""Statistics of head-to-head results: Wilson intervals of win rates, cluster-robust intervals of mean margins, and
ratings (Bradley-Terry on the Elo scale, OpenSkill).

Pure functions of counts and totals; :mod:`train.evaluate` applies them to the records of :mod:`train.arena`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z95 = 1.959963984540054  # two-sided 95% normal quantile, scipy.stats.norm.ppf(0.975)
#: Elo points per natural log-odds unit: P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400)).
ELO_SCALE = 400.0 / math.log(10.0)


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; ``successes`` may be fractional (half-counted ties).

    >>> [round(x, 4) for x in wilson_interval(7, 10)]
    [0.3968, 0.8922]

    The interval always holds the observed rate: at 0 or 1 rounding could leave it a hair outside.

    >>> wilson_interval(48, 48)[1] >= 1.0 and wilson_interval(0, 24)[0] <= 0.0
    True
    """
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return (max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p)))


def ratio_interval(totals: np.ndarray, counts: np.ndarray, z: float = Z95) -> tuple[float, float, float]:
    """Mean ``sum(totals) / sum(counts)`` with a 95% interval treating the (total, count) clusters as the
    independent units (the usual cluster-robust ratio estimator).

    >>> [round(x, 3) for x in ratio_interval(np.array([2.0, 4.0]), np.array([1.0, 1.0]))]
    [3.0, 1.04, 4.96]
    """
    totals = np.asarray(totals, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    n, d = len(totals), counts.sum()
    if n == 0 or d <= 0:
        return (0.0, 0.0, 0.0)
    mean = float(totals.sum() / d)
    if n < 2:
        return (mean, -math.inf, math.inf)
    resid = totals - mean * counts
    se = math.sqrt(float((resid ** 2).sum()) * n / (n - 1)) / float(d)
    return (mean, mean - z * se, mean + z * se)


def bradley_terry_elo(wins: np.ndarray, virtual_draws: float = 0.5, mean: float = 1500.0) -> np.ndarray:
    """Bradley-Terry ratings on the Elo scale from a win matrix (``wins[i, j]``: matches i won against j).

    Maximum likelihood by ``scipy.optimize.minimize``; ``virtual_draws`` half-wins are added each way to every
    pair that played, so that an agent that won every match gets a finite rating. Ratings average ``mean``.

    >>> r = bradley_terry_elo(np.array([[0, 3], [1, 0]]), virtual_draws=0)
    >>> round(float(r[0] - r[1]), 2)  # 400 log10(3)
    190.85
    """
    from scipy.optimize import minimize

    w = np.asarray(wins, dtype=np.float64).copy()
    n = w.shape[0]
    played = (w + w.T) > 0
    w = w + virtual_draws * played
    if n < 2:
        return np.full(n, mean)

    def nll(x: np.ndarray) -> tuple[float, np.ndarray]:
        r = np.concatenate([[0.0], x])
        d = r[:, None] - r[None, :]
        # -sum w_ij log sigmoid(r_i - r_j)
        loss = float((w * np.logaddexp(0.0, -d)).sum())
        g_mat = w * (1.0 / (1.0 + np.exp(d)))  # d(-log sig(d))/dd = -sigmoid(-d)
        grad = -g_mat.sum(axis=1) + g_mat.sum(axis=0)
        return loss, grad[1:]

    res = minimize(nll, np.zeros(n - 1), jac=True, method="L-BFGS-B")
    r = np.concatenate([[0.0], res.x]) * ELO_SCALE
    return r - r.mean() + mean


def openskill_ratings(names: Sequence[str], results: Sequence[tuple[int, int]]) -> dict[str, dict[str, float]]:
    """OpenSkill Plackett-Luce ratings from ``(winner, loser)`` agent indices, applied in the given order.

    Returns ``{name: {"mu", "sigma", "ordinal"}}`` (ordinal = mu - 3 sigma).
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating(name=n) for n in names]
    for win, lose in results:
        [[a], [b]] = model.rate([[ratings[win]], [ratings[lose]]])
        ratings[win], ratings[lose] = a, b
    return {n: {"mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal()} for n, r in zip(names, ratings, strict=True)}
