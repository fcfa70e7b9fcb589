"""proposal_nb.analysis.eb_check (scripts/campaign_eb.py's check): the EB interval from a run's weights, its Beta-binomial predictive check and the exact
Poisson-binomial tail, on cases worked by hand; and the published folder against its sources."""
import json, math
from pathlib import Path
import numpy as np, pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
import proposal_nb.analysis.eb_check as eb


def test_run_interval_is_eb_interval_of_the_raw_sums():
    import torch
    from proposal_nb.estimators import normalizer as nz
    # prompt a: weights 0.5, 0.5, 1 (S = 2, n = 3, ESS = 4 / 1.5); prompt b: 0, 0, 0, 2 (S = 2, n = 4, ESS = 1)
    d = pd.DataFrame(dict(prompt_id=["a"] * 3 + ["b"] * 4, log_uw=np.log([0.5, 0.5, 1.0, 1e-300, 1e-300, 1e-300, 2.0])))
    t = eb.run_interval(d).set_index("prompt_id")
    assert t.n.tolist() == [3, 4] and t.S.to_numpy() == pytest.approx([2.0, 2.0])
    assert t.ess.to_numpy() == pytest.approx([4 / 1.5, 1.0])
    st = nz.init(2)._replace(count=torch.tensor([3.0, 4.0], dtype=torch.float64), log_sum_raw=torch.tensor(np.log([2.0, 2.0])))
    iv = nz.eb_interval(st, level=0.9, raw=True)
    assert t.lo.to_numpy() == pytest.approx(iv.lo.numpy()) and t.hi.to_numpy() == pytest.approx(iv.hi.numpy())
    assert t.A.to_numpy() == pytest.approx(iv.a + np.array([2.0, 2.0])) and t.B.to_numpy() == pytest.approx(iv.b + np.array([1.0, 2.0]))


def test_predictive_check_by_hand():
    # Beta(1, 1) posterior: the Beta-binomial(4, 1, 1) predictive is uniform on 0..4 (cdf 0.2, 0.4, ..., 1), so its central
    # 60% set runs from ppf(0.2) = 0 to ppf(0.8) = 3 and holds 4/5 of the mass: k = 0 and 2 are inside, k = 4 is not
    iv = pd.DataFrame(dict(prompt_id=["a", "b", "c"], A=1.0, B=1.0))
    t = eb.predictive_check(iv, pd.DataFrame(dict(prompt_id=["a", "b", "c"], k=[0, 2, 4], m=4)), level=0.6).set_index("prompt_id")
    assert t.k_lo.tolist() == [0, 0, 0] and t.k_hi.tolist() == [3, 3, 3] and t.p_inside.to_numpy() == pytest.approx([0.8] * 3)
    assert t.inside.tolist() == [True, True, False]
    with pytest.raises(ValueError, match="no independent draws"):
        eb.predictive_check(iv, pd.DataFrame(dict(prompt_id=["a"], k=[0], m=[4])))


def test_poisson_binomial_cdf_exact():
    assert eb.poisson_binomial_cdf(np.array([0.5, 0.5]), 0) == pytest.approx(0.25)
    assert eb.poisson_binomial_cdf(np.array([0.5, 0.5]), 1) == pytest.approx(0.75)
    p = np.array([0.9, 0.8, 0.7])
    assert eb.poisson_binomial_cdf(p, 1) == pytest.approx(0.1 * 0.2 * 0.3 + 0.9 * 0.2 * 0.3 + 0.1 * 0.8 * 0.3 + 0.1 * 0.2 * 0.7)
    assert eb.poisson_binomial_cdf(p, 3) == pytest.approx(1.0)


def test_published_eb_folder_matches_its_sources():
    f = ROOT / "published" / "campaign_eb_intervals"
    if not (f / "config.json").exists(): pytest.skip("published/campaign_eb_intervals is not built (python scripts/campaign_eb.py published)")
    t, s = pd.read_csv(f / "intervals.csv"), json.loads((f / "summary.json").read_text())
    for arm, g in t.groupby("arm"):
        assert s[arm]["prompts"] == len(g) == 59 and s[arm]["inside"] == int(g.inside.sum())
        d = pd.read_parquet(ROOT / "published" / f"campaign_{arm}" / "draws.parquet")
        n = d.groupby("prompt_id").size()
        assert (g.set_index("prompt_id").n == n.reindex(g.prompt_id).to_numpy()).all()     # every training draw of the run
        assert ((g.k >= 0) & (g.k <= g.m) & (g.m == 20)).all()
