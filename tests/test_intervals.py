"""proposal_nb.analysis.intervals (nbs/36b_intervals) beyond the notebook's own checks: the percentile interval against every
published paired table, BCa against scipy on the campaign's tied (sparse) differences, the paired t interval's coverage on a
normal population at 25 prompts, the replicate interval's moments by hand, and the published coverage folder against the
per-prompt tables it was built from (recomputed here with pandas alone)."""
import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import proposal_nb.analysis.intervals as I

PUB = Path(__file__).resolve().parents[1] / "published"


def published(name:str)->Path:
    p = PUB / name
    if not (p / "config.json").exists(): pytest.skip(f"published/{name} is not there")
    return p


@pytest.mark.parametrize("ev", ["campaign_fp32_eval", "campaign_card_eval", "campaign_card_fp32_eval", "campaign_strict_eval"])
def test_percentile_is_the_published_paired_table(ev):
    "Every stored paired CI (evaluation.evaluate: 2,000 resamples, seed 0) is the percentile interval of the per-prompt differences."
    f = published(ev)
    pp, paired = pd.read_csv(f / "per_prompt.csv"), pd.read_csv(f / "paired.csv")
    w = {k: g.set_index("prompt_id") for k, g in pp.groupby("checkpoint")}
    ids = list(dict.fromkeys(pp.prompt_id))                                  # the evaluation's prompt order: resamples are by position
    D = np.stack([w[r.b].loc[ids, r.metric].to_numpy(float) - w[r.a].loc[ids, r.metric].to_numpy(float) for r in paired.itertuples()])
    lo, hi = I.bounds_from(D, I.resamples(len(ids), 2000, 0), ["percentile"])["percentile"]
    assert np.allclose(lo, paired.lo, atol=1e-12) and np.allclose(hi, paired.hi, atol=1e-12)


def test_bca_on_tied_differences_is_scipys():
    "bc_card_fp32 − base_card_fp32 pass@1: 11 of 25 differences are 0 (ties with the estimate's resamples count half, as in scipy)."
    f = published("campaign_card_fp32_eval")
    pp = pd.read_csv(f / "per_prompt.csv")
    w = pp.pivot(index="prompt_id", columns="checkpoint", values="pass1")
    d = (w["bc_card_fp32-step-2270"] - w["base_card_fp32"]).to_numpy()
    assert (d == 0).sum() == 11
    mine = I.bounds_from(d, I.resamples(25, 2000, 3), ["bca"])["bca"]
    ci = stats.bootstrap((d,), np.mean, n_resamples=2000, method="BCa", rng=np.random.default_rng(3)).confidence_interval
    assert mine == pytest.approx((ci.low, ci.high), abs=1e-10)


def test_paired_t_covers_on_a_normal_population():
    "2,000 prompts from N(0.03, 0.1²) as the population, 4,000 samples of 25 (seed 21): t covers 95% ± 3 MC-SE (0.941 here); the"
    " studentized interval tracks it within 0.01 (0.9345: 1,000 resamples estimate t*'s tails), the percentile interval is short by"
    " more than that (0.916: at 25 prompts it is about the normal interval with sd/√n, not t's quantile)."
    pop = np.c_[np.zeros(2000), np.random.default_rng(20).normal(0.03, 0.1, 2000)]
    r = I.simulate(pop, "diff", 25, reps=4000, n_boot=1000, draw_seed=21)
    se = math.sqrt(0.95 * 0.05 / 4000)
    assert abs(r["t"]["coverage"] - 0.95) <= 3 * se, r["t"]
    assert abs(r["studentized"]["coverage"] - r["t"]["coverage"]) <= 0.01, r
    assert r["percentile"]["coverage"] < r["studentized"]["coverage"] - 0.01, r


def test_replicate_t_by_hand():
    "Two runs of a and three of b on four prompts: the moments and Satterthwaite's degrees of freedom written out longhand."
    a = np.array([[0.1, 0.4, 0.2, 0.5], [0.3, 0.4, 0.4, 0.7]])
    b = np.array([[0.5, 0.6, 0.4, 0.9], [0.4, 0.8, 0.5, 0.7], [0.6, 0.9, 0.6, 1.0]])
    def run_var(y):
        S, P = y.shape
        res = y - y.mean(1)[:, None] - y.mean(0)[None, :] + y.mean()
        ms = (res ** 2).sum() / ((S - 1) * (P - 1))
        return max(0.0, np.var(y.mean(1), ddof=1) - ms / P) / S, S
    D = b.mean(0) - a.mean(0)
    parts = [(np.var(D, ddof=1) / 4, 3), *((w, S - 1) for w, S in (run_var(a), run_var(b)))]
    se = math.sqrt(sum(w for w, _ in parts))
    dof = se ** 4 / sum(w ** 2 / k for w, k in parts if w > 0)
    r = I.replicate_ci(a, b, "t")
    assert (r.est, r.se) == pytest.approx((D.mean(), se), abs=1e-12)
    assert (r.lo, r.hi) == pytest.approx((D.mean() - stats.t.ppf(0.975, dof) * se, D.mean() + stats.t.ppf(0.975, dof) * se), abs=1e-12)
    assert (r.runs_a, r.runs_b, r.prompts) == (2, 3, 4)


def test_n_for_power_is_the_smallest_n():
    "The search against a plain loop over n from 2 (sd 0.09, effect 0.03: 73 prompts, about 2.04 times 25·(h/g)²)."
    want = next(n for n in range(2, 1000) if I.paired_power(n, 0.09, 0.03) >= 0.8)
    assert I.n_for_power(0.09, 0.03) == want == 73


def per_prompt_tables():
    out = {}
    for ev, ref in I.EVALS:
        pp = pd.read_csv(published(ev) / "per_prompt.csv")
        out[ev] = (pp, ref)
    return out


def test_published_coverage_folder_holds_the_campaigns_pairs():
    "Populations counted from the per-prompt tables with pandas alone: every checkpoint against its reference (23 + 20), every pair"
    " of arms' last checkpoints (28 + 10, of which 5 agree at pass@40 on every prompt), every checkpoint's level (24 + 21)."
    f = published("campaign_interval_coverage")
    s = json.loads((f / "summary.json").read_text())
    assert s["chosen"] == I.CHOSEN and s["overall"] == I.CHOSEN_OVERALL
    gain = last = lvl = 0
    zero40 = 0
    for ev, (pp, ref) in per_prompt_tables().items():
        cks = list(dict.fromkeys(pp.checkpoint))
        gain += len(cks) - 1; lvl += len(cks)
        arms = [a for a in dict.fromkeys(pp.arm) if a != pp[pp.checkpoint == ref].arm.iloc[0]]
        lasts = [pp[pp.arm == a].sort_values("step").checkpoint.iloc[-1] for a in arms]
        last += len(list(combinations(lasts, 2)))
        w = pp.pivot(index="prompt_id", columns="checkpoint", values="pass@40")
        zero40 += sum((w[x] == w[y]).all() for x, y in combinations(lasts, 2))
    for c, (metric, pairs, stat) in I.CLASSES.items():
        want = {"gain": gain, "between": last, "level": lvl}[pairs] - (zero40 if c == "between-arm pass@40" else 0)
        assert s["populations"][c] == want, (c, s["populations"][c], want)
    assert (gain, last, lvl, zero40) == (43, 38, 45, 5) and s["left_out"] == {"between-arm pass@40": 5}


def test_published_coverage_values_and_table_agree_with_their_sources():
    "Each validity-gain population's known value is its mean per-prompt difference in per_prompt.csv; coverage.csv at 25 prompts is"
    " the mean of populations.csv over each class's populations; the README's bold cell is the chosen method's coverage."
    f = published("campaign_interval_coverage")
    rows, table = pd.read_csv(f / "populations.csv"), pd.read_csv(f / "coverage.csv")
    tabs = per_prompt_tables()
    g = rows[(rows.cls == "validity gain") & (rows.n == 25) & (rows.method == "t")]
    for r in g.itertuples():
        pp, _ = tabs[r.evaluation]
        w = pp.pivot(index="prompt_id", columns="checkpoint", values="validity")
        assert r.value == pytest.approx((w[r.b] - w[r.a]).mean(), abs=1e-6), r
    t25 = table[table.n == 25].set_index(["cls", "method"])
    mean = rows[rows.n == 25].groupby(["cls", "method"]).coverage.mean()
    assert np.allclose(t25.coverage.reindex(mean.index), mean, atol=1e-6)
    readme = (f / "README.md").read_text()
    s = json.loads((f / "summary.json").read_text())
    for c, m in s["chosen"].items():
        r = t25.loc[(c, m)]
        assert f"**{r.coverage:.3f} ({r.worst:.2f})**" in readme, (c, m)
    assert (t25.loc[(slice(None), "current"), "coverage"] < 0.95).all()       # the percentile bootstrap short in every class


def test_one_published_population_simulates_again():
    "The first between-arm pass@1 population, simulated again with the folder's seeds, gives its rows of populations.csv."
    f = published("campaign_interval_coverage")
    s = json.loads((f / "summary.json").read_text())
    pops = I.populations(PUB)
    j = next(i for i, p in enumerate(pops) if p.cls == "between-arm pass@1")
    p = pops[j]
    r = I.simulate(p.values, p.stat, 25, s["reps"], s["n_boot"], s["seed"], (s["seed"], j, 25))
    rows = pd.read_csv(f / "populations.csv").query("cls == 'between-arm pass@1' and n == 25 and a == @p.a and b == @p.b and evaluation == @p.evaluation")
    got = rows.set_index("method").coverage.to_dict()
    assert got == pytest.approx({m: v["coverage"] for m, v in r.items()}, abs=1e-6)
