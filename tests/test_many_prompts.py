"""Regression tests for issue 22 (the normaliser on many prompts).

The notebooks 11_normalizer and 18_many_prompts test the kernels and the benchmark; these pin the two bugs the
issue found, at the level a training loop sees them (the estimator registry), so a change of default or of the fold
clip that brings them back fails here by name."""
import math

import pytest
import torch

from proposal_nb.estimators import normalizer as nz, registry
from proposal_nb.estimators.iguana import IguanaConfig


def _hard_prompt_ratio(cfg, Z=0.005, P=64, steps=500, seed=0):
    "Median Ẑ/Z at 32,000 samples (500 steps of 8 prompts x 8 draws, prior as proposal) over the 8 hardest of P prompts."
    Zs = torch.logspace(math.log10(Z), math.log10(0.6), P, dtype=torch.float64)
    g = torch.Generator().manual_seed(seed)
    est = registry.make("iguana", IguanaConfig(), cfg)
    st = est.init(P)
    for _ in range(steps):
        x = torch.randperm(P, generator=g)[:8]
        u = (torch.rand(8, 8, generator=g, dtype=torch.float64) < Zs[x, None]).double()
        logq = torch.zeros(8, 8, dtype=torch.float64, requires_grad=True)       # q = p: log p − log q = 0, u = r
        st, _, info = est.step(st, registry.Visit(x, logq, torch.zeros(8, 8, dtype=torch.float64), u.log()))
        assert not info.skipped.any() or cfg.kind == "mean"
    return (nz.estimate(st, cfg, torch.arange(8)).log_zhat.exp() / Zs[:8]).median().item()


def test_fixed_shrinkage_inflates_hard_prompts_fitted_prior_does_not():
    "Issue 22: n0 = 100 held Ẑ/Z near 2.4 on Z ≤ 0.02 at 32k samples; the fitted prior with its fold floor must stay in [0.8, 1.25]."
    assert _hard_prompt_ratio(nz.NormalizerConfig(kind="shrinkage", fold_floor=None)) > 1.5
    assert 0.8 <= _hard_prompt_ratio(nz.NormalizerConfig(kind="eb", fold_floor=1.0)) <= 1.25


def test_fold_clip_without_floor_spirals_down():
    "Issue 22: a fold clip at 10·Ẑ below the honest weight 1 cut every valid prior draw; the running mean read 0.5 (here lower)."
    assert _hard_prompt_ratio(nz.NormalizerConfig(kind="eb", fold_floor=None)) < 0.5


def test_unfittable_prior_and_negative_counts_are_named():
    cfg = nz.NormalizerConfig(kind="eb", fold_floor=1.0, m0=0.0)
    est = registry.make("iguana", IguanaConfig(), nz.NormalizerConfig(kind="eb", fold_floor=1.0))
    st = est.init(2)._replace(count=torch.tensor([8.0, -1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match=r"negative counts: n\[1\] = -1.0"):
        nz.estimate(st, nz.NormalizerConfig(kind="eb"), [0])
    zero = nz.update(nz.init(2), cfg, [0, 1], torch.full((2, 4), -math.inf), torch.zeros(2))
    with pytest.raises(ValueError, match=r"cannot fit the prior: the pool is all zero \(8 draws"):
        nz.estimate(zero, cfg, [0])
