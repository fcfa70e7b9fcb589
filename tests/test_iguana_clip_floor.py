"""Issue 22's clip floor: IGUANA's relative clip level max(c·Ẑ, clip_floor), where the clip binds on the many-prompt
benchmark (clip_table), and the confirmation's pass criteria (many_prompts.confirmation_verdict, which scripts/bench_many_prompts_clip.py writes).

12_iguana checks the coefficients on single tensors and the expected gradient by enumeration; these pin the same rule
where a training loop sees it (the estimator registry with a normaliser in the slot), so a change to the clip or to the
registry's wiring that brings back the cut on honest weights fails here by name."""
import math

import pandas as pd
import pytest
import torch

from proposal_nb.estimators import normalizer as nz, registry
from proposal_nb.estimators.iguana import IguanaConfig, coefficients
from proposal_nb.estimators.many_prompts import clip_table, confirmation_verdict



def _hard_visit(iguana:IguanaConfig):
    "One prompt whose running mean reads Ẑ = 0.01 (1 in 100); q = p, so a valid draw weighs exactly 1; 2 of 8 draws valid."
    cfg = nz.NormalizerConfig(kind="mean", fold_clip=None)
    est = registry.make("iguana", iguana, cfg)
    st = est.init(1)._replace(log_sum=torch.zeros(1, dtype=torch.float64), count=torch.tensor([100.0], dtype=torch.float64))
    logr = torch.tensor([[0., 0.] + [-math.inf] * 6], dtype=torch.float64)
    v = registry.Visit(torch.tensor([0]), torch.zeros(1, 8, dtype=torch.float64, requires_grad=True), torch.zeros(1, 8, dtype=torch.float64), logr)
    _, _, info = est.step(st, v)
    return info


def test_clip_cut_the_honest_weight_of_a_hard_prompt_and_the_floor_does_not():
    "With Ẑ = 0.01 and c = 10 the clip cut u = 1 to 0.1: coefficient (10 − 1)/8 instead of (1/Ẑ − 1)/8 = 99/8 — 11x smaller."
    old, new = _hard_visit(IguanaConfig(clip=10.0)), _hard_visit(IguanaConfig(clip=10.0, clip_floor=1.0))
    torch.testing.assert_close(old.coef[0, :2], torch.full((2,), 9 / 8, dtype=torch.float64), rtol=0, atol=1e-12)
    torch.testing.assert_close(new.coef[0, :2], torch.full((2,), 99 / 8, dtype=torch.float64), rtol=0, atol=1e-12)
    for info in (old, new): torch.testing.assert_close(info.coef[0, 2:], torch.full((6,), -1 / 8, dtype=torch.float64), rtol=0, atol=1e-12)
    assert old.clipped[0, :2].all() and not new.clipped.any()


def test_floor_never_cuts_a_weight_at_most_one_and_still_caps_the_rest():
    "Seed 0, 64 visits of 16 draws, Ẑ log-uniform on [1e-3, 1]: weights ≤ 1 give exactly the unclipped coefficients; above, the level max(10·Ẑ, 1)."
    g = torch.Generator().manual_seed(0)
    B, M = 64, 16
    lz = torch.empty(B, dtype=torch.float64).uniform_(math.log(1e-3), 0.0, generator=g)
    logp = torch.randn(B, M, generator=g, dtype=torch.float64) * 2
    logr = torch.where(torch.rand(B, M, generator=g) < 0.5, 0.0, -math.inf).double()
    base = lz.exp()
    for low in (True, False):
        logq = logp + (torch.rand(B, M, generator=g, dtype=torch.float64) * 3 if low else -torch.rand(B, M, generator=g, dtype=torch.float64) * 8)
        c_f, clp, _ = coefficients(logr + logp - logq, lz, base, IguanaConfig(clip=10.0, clip_floor=1.0))
        c_n, _, _ = coefficients(logr + logp - logq, lz, base, IguanaConfig(clip=None))
        if low:
            assert not clp.any(); assert torch.equal(c_f, c_n)
        else:
            u = (logr + logp - logq).exp()
            level = torch.maximum(10 * base, torch.ones_like(base))[:, None]
            assert clp.any() and torch.equal(clp, u > level)
            torch.testing.assert_close(c_f, (torch.minimum(u, level) - base[:, None]) / (M * base[:, None]), rtol=1e-12, atol=1e-12)


def test_clip_table_by_hand():
    "Two visits of one arm in one bin and window: 1 of 4 valid draws cut, weight 10 of which 6 kept -> shares 0.25 and 0.4."
    v = pd.DataFrame(dict(arm="a", samples=[64, 128], prompt=0, Z=0.01, zhat=0.01, n_valid=[3, 1], n_clipped=[1, 0],
                          u=[8.0, 2.0], u_kept=[4.0, 2.0]))
    t = clip_table(v, (0, 1024))
    b = t.columns.get_level_values(1)[0]
    assert t[("draws", b)].iloc[0] == pytest.approx(0.25) and t[("weight", b)].iloc[0] == pytest.approx(0.4)


def _table(iguana_kl, dpg_kl):
    "A kl_table of one lr per arm and the two budgets: (all, hard) KL per budget."
    rows = []
    for arm, kls in (("iguana x", iguana_kl), ("dpg · per-context mean", dpg_kl)):
        for n, (k, h) in zip((32_000, 128_000), kls): rows.append(dict(arm=arm, lr=3e-3, samples=n, kl_mean=k, kl_hard_mean=h))
    return pd.DataFrame(rows)


def test_verdict_needs_every_criterion():
    "The confirmation's rule: a loss on one criterion (hard prompts at 128k) or one bin outside [0.8, 1.25] fails the whole."
    bins = pd.Index(["(0.0, 0.02]", "(0.02, 0.05]"])
    good = pd.DataFrame([[0.9, 1.1]], columns=bins, index=pd.MultiIndex.from_tuples([("iguana x", 32_000)]))
    v = confirmation_verdict(_table([(2.0, 3.0), (1.2, 2.0)], [(2.1, 3.1), (1.3, 2.1)]), good, (32_000, 128_000))
    assert v["passed"] and len(v["criteria"]) == 5
    v = confirmation_verdict(_table([(2.0, 3.0), (1.2, 2.2)], [(2.1, 3.1), (1.3, 2.1)]), good, (32_000, 128_000))
    assert not v["passed"] and [k for k, c in v["criteria"].items() if not c["passed"]] == ["KL Z <= 0.02 at 128000"]
    bad = good.copy(); bad.iloc[0, 0] = 0.79
    assert not confirmation_verdict(_table([(2.0, 3.0), (1.2, 2.0)], [(2.1, 3.1), (1.3, 2.1)]), bad, (32_000, 128_000))["passed"]
