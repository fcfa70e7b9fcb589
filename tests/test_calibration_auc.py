"""AUC (DeLong) against exact references and a seeded coverage check; see nbs/34_calibration."""
import math

import numpy as np
from scipy.stats import norm

from proposal_nb.analysis.calibration import auc_delong, wilson_ci


def test_auc_equals_pair_count_with_ties():
    rng = np.random.default_rng(7)
    s = rng.integers(0, 5, 60).astype(float)              # heavy ties
    y = (rng.random(60) < 0.5).astype(int)
    X, Y = s[y == 1], s[y == 0]
    exact = ((X[:, None] > Y[None]).sum() + 0.5 * (X[:, None] == Y[None]).sum()) / (len(X) * len(Y))
    assert abs(auc_delong(s, y).auc - exact) < 1e-12


def test_auc_is_rank_invariant_and_flips():
    rng = np.random.default_rng(8)
    s, y = rng.random(50), (rng.random(50) < 0.3).astype(int)
    a = auc_delong(s, y).auc
    assert abs(auc_delong(np.exp(3 * s), y).auc - a) < 1e-12   # any increasing transform
    assert abs(auc_delong(-s, y).auc - (1 - a)) < 1e-12


def test_delong_interval_coverage_binormal():
    # Binormal scores: pass ~ N(d, 1), fail ~ N(0, 1) gives AUC = Phi(d / sqrt 2). d = 1 (AUC 0.760), 60 passes and
    # 90 fails per replication, seeds 0-399. Nominal 95%: expect ~380 of 400 (binomial SE ~4.4); require 365-395.
    d, true = 1.0, norm.cdf(1.0 / math.sqrt(2))
    hits = 0
    for seed in range(400):
        rng = np.random.default_rng(seed)
        s = np.concatenate([rng.normal(d, 1, 60), rng.normal(0, 1, 90)])
        y = np.r_[np.ones(60, int), np.zeros(90, int)]
        r = auc_delong(s, y)
        hits += r.lo <= true <= r.hi
    assert 365 <= hits <= 395, hits


def test_wilson_coverage_small_n():
    # Exact coverage of the 95% Wilson interval for n = 30 at p = 0.3, summed over the binomial distribution
    # (no simulation): Wilson's coverage there is known to stay within a few points of 95%; require 0.92-0.98.
    from scipy.stats import binom
    n, p = 30, 0.3
    k = np.arange(n + 1)
    lo, hi = wilson_ci(k, np.full(n + 1, n))
    cover = binom.pmf(k, n, p)[(lo <= p) & (p <= hi)].sum()
    assert 0.92 <= cover <= 0.98, cover
