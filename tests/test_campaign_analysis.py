"""proposal_nb.analysis.campaign_breakeven and campaign_zbins (scripts/campaign_analysis.py's analyses): the GPU-time attribution of shared jobs, break-even on a table computed by hand, training windows,
up/down with its no-change expectation, and the published folders checked against the tables they were built from."""
import json
from pathlib import Path
import numpy as np, pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
import proposal_nb.analysis.campaign_breakeven as cb
import proposal_nb.analysis.campaign_zbins as cz
PUB = ROOT / "published"


def job(start, end, wall, date, gpu="H200"):
    return dict(start_step=start, end_step=end, wall_s=wall, date=f"2026-12-01T{date}+00:00", gpu=gpu)


def test_job_shares_split_a_shared_gpu_exactly():
    # x: two jobs of 100 s; y: one job of 100 s that overlaps x's first job completely -> x#0 and y share 1/2, x#1 runs alone
    cfg = {"x": dict(jobs=[job(0, 10, 100, "03:01:40"), job(10, 20, 100, "03:03:20")]), "y": dict(jobs=[job(0, 5, 100, "03:01:40")])}
    s = cb.job_shares(cfg).set_index(["arm", "job"])
    # results.gpu_minutes rounds to 0.01 minute (0.3 s at most): shares of 100-s jobs are exact to 0.003
    assert s.loc[("x", 0), "share"] == pytest.approx(0.5, abs=0.003) and s.loc[("y", 0), "share"] == pytest.approx(0.5, abs=0.003)
    assert s.loc[("x", 1), "share"] == pytest.approx(1.0, abs=0.003)
    assert s.attributed_s.sum() == pytest.approx(200.0, abs=0.9)                      # the GPU was busy 200 s: 100 shared + 100 alone


def test_job_shares_of_the_published_arms_add_up_to_their_attributed_minutes():
    # every job that shared the GPU (campaign_eval's jobs: base, rollouts, base_card, ...) splits it: equal to 0.01 min rounding
    arms = [a for a in ("iguana", "msc", "iguana_kl", "rb_msc", "msc_m2", "bc_spread", "bc_sort") if (PUB / f"campaign_{a}" / "config.json").exists()]
    if not arms: pytest.skip("no published campaign arms")
    cfg = {a: json.loads((PUB / f"campaign_{a}" / "config.json").read_text()) for a in arms}
    jobs = json.loads((PUB / "campaign_eval" / "config.json").read_text())["jobs"]
    strict = PUB / "campaign_strict_eval" / "config.json"              # the strict pair trained beside the BC fits and msc_m2
    jobs |= json.loads(strict.read_text()).get("jobs", {}) if strict.exists() else {}
    assert {"base", "rollouts", "rollouts_card", "base_card"} <= set(jobs)
    s = cb.job_shares(cfg, jobs)
    for a in arms:
        assert abs(s[s.arm == a].attributed_s.sum() / 60 - cfg[a]["gpu_minutes"]["attributed"]) <= 0.01 * len(cfg[a]["jobs"]), a
    alone = cb.job_shares(cfg)                                  # without the other jobs the arms' share is larger
    assert alone.attributed_s.sum() > s[s.arm.isin(arms)].attributed_s.sum()


def test_job_shares_give_the_other_jobs_rows_of_their_own():
    # x (100 s) overlaps the other job r (100 s) completely: each gets half; r's row is named other:r
    s = cb.job_shares({"x": dict(jobs=[job(0, 10, 100, "03:01:40")])}, {"r": [dict(wall_s=100, date="2026-12-01T03:01:40+00:00", gpu="H200")]})
    assert s.arm.tolist() == ["x", "other:r"]
    assert s.share.tolist() == pytest.approx([0.5, 0.5], abs=0.003)


def test_offline_bill_by_hand():
    # rollouts: one job of 400 s at share 1/2 that drew 1,000 programs, checked at 0.1 s each -> 100 s checking (CPU, as measured)
    # and 300 s generation, of which the GPU is charged 300 x 1/2 = 150 s; the fit: jobs of 80 s at share 1/4 and 40 s alone -> 60 s
    from proposal_nb.analysis.breakeven import Costs
    shares = pd.DataFrame(dict(arm=["other:rollouts", "bc", "bc"], job=[0, 0, 1], wall_s=[400.0, 90.0, 45.0],
                               attributed_s=[200.0, 22.5, 45.0], share=[0.5, 0.25, 1.0], train_s=[0.0, 80.0, 40.0]))
    b = cb.offline_bill("bc", 125, shares, 1000, Costs(generation=0.01, potential=0.1, scoring=0.0, update=0.0)).iloc[0]
    assert (b.step, b.samples, b.checker_calls) == (125, 1000, 1000)
    assert b.wall_s == pytest.approx(150 + 100 + 60) and b.gpu_h == pytest.approx((150 + 60) / 3600)
    with pytest.raises(ValueError, match="no rollouts job"):
        cb.offline_bill("bc", 125, shares[shares.arm == "bc"], 1000, Costs(0.01, 0.1, 0.0, 0.0))


def test_is_online_tells_the_online_log_from_a_bc_fit():
    assert cb.is_online(pd.DataFrame(columns=["step", "n_samples", "t_generation", "t_potential", "t_scoring", "t_update"]))
    assert not cb.is_online(pd.DataFrame(columns=["step", "n_samples", "loss", "t_update"]))


def test_attributed_log_scales_device_stages_by_the_job_that_ran_each_step():
    log = pd.DataFrame(dict(step=[1, 2, 3, 4], n_samples=10, t_generation=4.0, t_potential=2.0, t_scoring=1.0, t_update=8.0))
    shares = pd.DataFrame(dict(arm="x", job=[0, 1], start_step=[0, 2], end_step=[2, 4], share=[0.25, 0.5]))
    a = cb.attributed_log(log, shares)
    assert a.t_generation.tolist() == [1.0, 1.0, 2.0, 2.0] and a.t_update.tolist() == [2.0, 2.0, 4.0, 4.0]
    assert a.t_potential.tolist() == [2.0] * 4                                  # the checker runs on the CPU: as measured
    with pytest.raises(ValueError, match="log step 5"):
        cb.attributed_log(pd.concat([log, log.tail(1).assign(step=5)]), shares)


def fake_campaign(tmp:Path)->Path:
    "campaign_eval + campaign_x whose break-even is computable by hand (see the test below)."
    from proposal_nb.results import write_json, write_table
    rows = [dict(prompt_id=p, checkpoint="base", run=0, draw=i, valid=float(i < 20), correct=float(i < 20 and p == "a"))
            for p in ("a", "b") for i in range(40)]
    write_table(tmp / "campaign_eval", "draws", pd.DataFrame(rows))
    pp = pd.DataFrame(dict(prompt_id=["a", "b"], arm="x", checkpoint="x-step-2", step=2, pass1=[0.625, 0.0]))
    write_table(tmp / "campaign_eval", "per_prompt", pp)
    log = pd.DataFrame(dict(step=[1, 2], n_samples=10, t_generation=[4.0, 8.0], t_potential=1.0, t_scoring=2.0, t_update=2.0))
    write_table(tmp / "campaign_x", "log", log)
    write_json(tmp / "campaign_x", "config", dict(jobs=[job(0, 1, 100, "03:01:40"), job(1, 2, 100, "03:03:20")]))
    return tmp


def test_breakeven_on_a_table_computed_by_hand(tmp_path):
    # base: prompt a has Z = 1/2, s = 1; prompt b has Z = 1/2, s = 0 -> macro best-of-K pass@1 = (1 - 2^-K) / 2: 1/4, 3/8, 7/16
    # trained pass@1 = (0.625 + 0) / 2 = 0.3125 = halfway from K = 1 to K = 2 -> K_eq = 1.5 exactly;
    # draws D(1) = 1, D(2) = 1 + 1/2 -> D = 1.25; checks C(1) = 0, C(2) = 1 -> C = 0.5
    # bill: 20 samples = 20 checker calls -> N* = 20 / 0.5 = 40 prompts
    # one job alone per step -> share 1: seconds per sample gen 12/20, checker 2/20; saving = 0.25 gen + 0.5 checker
    root = fake_campaign(tmp_path)
    shares = cb.job_shares({"x": json.loads((root / "campaign_x" / "config.json").read_text())})
    assert shares.share.tolist() == [1.0, 1.0]
    be, extra = cb.breakeven_arm("x", root / "campaign_eval", root / "campaign_x", shares, n_boot=200)
    r = be.per_checkpoint.iloc[0]
    assert r.k_eq == pytest.approx(1.5) and r.draws == pytest.approx(1.25) and r.checks == pytest.approx(0.5)
    assert r.nstar_checker_calls == pytest.approx(40.0)
    gen, pot = 12 / 20, 2 / 20
    assert r.train_wall_s == pytest.approx(4 + 8 + 2 * (1 + 2 + 2))
    assert r.nstar_wall_s == pytest.approx(r.train_wall_s / (0.25 * gen + 0.5 * pot))
    assert r.nstar_gpu_h == pytest.approx((12 + 4 + 4) / (0.25 * gen))          # GPU: generation, scoring, update; serving: generation


def test_arm_window_holds_equal_draws():
    cfg = lambda M: dict(training=dict(loop=dict(M=M)))
    assert cz.arm_window(cfg(10)) == cz.WINDOW == 25 and cz.arm_window(cfg(2)) == 125 and cz.arm_window(cfg(4)) == 62   # 62.5 rounds to even
    with pytest.raises(ValueError, match="M must be"): cz.arm_window(cfg(0))


def test_window_rates_keep_whole_windows_only():
    d = pd.DataFrame(dict(step=[1, 1, 2, 3, 4, 5], prompt_id=["a", "b", "a", "a", "b", "a"], valid=[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]))
    w = cz.window_rates(d, window=2)                                          # steps 1-2 and 3-4; step 5 starts a window never finished
    got = {(r.checkpoint, r.prompt_id): (r.n, r.validity) for r in w.itertuples()}
    assert got == {("steps 1-2", "a"): (2, 0.5), ("steps 1-2", "b"): (1, 0.0), ("steps 3-4", "a"): (1, 1.0), ("steps 3-4", "b"): (1, 1.0)}
    assert w.step.tolist() == [2, 2, 4, 4]
    with pytest.raises(ValueError, match="no whole window"):
        cz.window_rates(d, window=10)


def test_move_counts_add_the_exact_no_change_expectation():
    from proposal_nb.analysis.zbins import null_moves
    pp = pd.DataFrame(dict(prompt_id=["a", "b"] * 2, checkpoint=["s0"] * 2 + ["s1"] * 2, validity=[0.5, 0.5, 1.0, 0.5], n=[2, 2, 2, 2]))
    rates = cz.binned(pd.DataFrame(dict(prompt_id=["a", "b"], Z=[0.5, 0.5], C=[0.0, 0.0])))
    moves, counts = cz.move_counts(pp, rates, "s0", "s1", "validity")
    assert moves.set_index("prompt_id").move.to_dict() == dict(a="up", b="flat")
    up_a, dn_a = null_moves(2, 2, 0.75)                                     # prompt a: pooled rate (0.5 + 1) / 2
    up_b, dn_b = null_moves(2, 2, 0.5)
    c = counts.set_index("zbin").loc["all"]
    assert (c.up, c.flat, c.down, c.prompts) == (1, 1, 0, 2)
    assert c.null_up == pytest.approx(up_a[0] + up_b[0]) and c.null_down == pytest.approx(dn_a[0] + dn_b[0])
    # by hand, two draws each at p = 1/2 (rates 0, 1/2, 1 w.p. 1/4, 1/2, 1/4): up = P(diff = 1/2) + P(diff = 1) = 1/4 + 1/16
    assert up_b[0] == pytest.approx(5 / 16)


def published(name:str)->Path:
    p = PUB / name
    if not (p / "config.json").exists(): pytest.skip(f"published/{name} is not built (python scripts/campaign_analysis.py published)")
    return p


def base_rates()->pd.DataFrame:
    "Z, s, n per held-out prompt straight from campaign_eval's base draws (no proposal_nb code)."
    d = pd.read_parquet(PUB / "campaign_eval" / "draws.parquet").query("checkpoint == 'base'")
    g = d.assign(vc=d.valid * d.correct).groupby("prompt_id").agg(n=("valid", "size"), v=("valid", "sum"), c=("vc", "sum"))
    return g.assign(Z=g.v / g.n, s=np.where(g.v > 0, g.c / g.v.where(g.v > 0, 1), 0.0))


@pytest.mark.parametrize("arm", ["iguana", "msc", "iguana_kl", "rb_msc", "bc_spread", "bc_sort"])
def test_published_breakeven_matches_its_sources(arm):
    # an independent recomputation of K_eq and N* (checker calls) from the tables the folder was built from:
    # curve(K) = mean_x s(x) (1 - (1 - Z)^K), first crossing interpolated linearly; C(K) = mean_x (1 - (1 - Z)^(K-1)) / Z
    f = published(f"campaign_breakeven_{arm}")
    r = base_rates()
    K = np.arange(1, cb.K_MAX + 1)
    miss = (1 - r.Z.to_numpy())[:, None] ** K[None, :]
    curve = (r.s.to_numpy()[:, None] * (1 - miss)).mean(0)
    Z = r.Z.to_numpy()[:, None]
    checks = np.where(Z > 0, (1 - (1 - Z) ** (K[None, :] - 1)) / np.where(Z > 0, Z, 1), K - 1).mean(0)
    pp = pd.read_csv(PUB / "campaign_eval" / "per_prompt.csv").query("arm == @arm")
    pc = pd.read_csv(f / "per_checkpoint.csv").set_index("checkpoint")
    assert set(pc.index) == set(pp.checkpoint)
    for ck, g in pp.groupby("checkpoint"):
        t = g.pass1.mean()
        j = int(np.argmax(curve >= t)) if (curve >= t).any() else None
        k_eq = 1.0 if j == 0 else (np.inf if j is None else j + (t - curve[j - 1]) / (curve[j] - curve[j - 1]))
        assert pc.loc[ck, "k_eq"] == pytest.approx(k_eq, abs=1e-9), ck
        c = np.interp(k_eq, K, checks) if np.isfinite(k_eq) else checks[-1]
        bill = int(g.step.iloc[0]) * 80 if not arm.startswith("bc_") else 340 * 59   # 8 prompts x M = 10 a step; BC: its rollouts
        assert pc.loc[ck, "train_checker_calls"] == bill
        assert pc.loc[ck, "nstar_checker_calls"] == pytest.approx(bill / c if c > 0 else np.inf), ck


def test_published_skyline_and_bins_match_the_draws():
    f = published("campaign_zbins")
    r = base_rates()
    sk = pd.read_csv(f / "skyline.csv")
    assert sk.macro.iloc[0] == pytest.approx(r.s.mean()) and sk.pooled.iloc[0] == pytest.approx(r.c.sum() / r.v.sum())
    assert (sk.prompts == 25).all() and (sk.base_draws_per_prompt == 40).all()
    zt = pd.read_csv(f / "z_table.csv")
    assert zt.groupby("split").size().to_dict() == {"heldout": 25, "training": 59}
    b = pd.read_csv(f / "bins.csv")
    per_ck = b.groupby(["split", "binning", "metric", "arm", "checkpoint"]).prompts.sum()
    assert (per_ck[per_ck.index.get_level_values("split") == "heldout"] == 25).all()
    assert (per_ck[per_ck.index.get_level_values("split") == "training"] == 59).all()
    ud = pd.read_csv(f / "updown.csv").query("zbin == 'all'")
    assert (ud.prompts == ud.split.map(dict(heldout=25, training=59))).all()
    assert (ud.up + ud.flat + ud.down == ud.prompts).all()


def test_published_training_and_heldout_prompts_are_the_campaign_split():
    # training draws' prompts (59) and held-out prompts (25) are disjoint, and the Z(x) run has base draws for all of them
    f = published("campaign_zbins")
    zt = pd.read_csv(f / "z_table.csv")
    tr, ho = set(zt[zt.split == "training"].prompt_id), set(zt[zt.split == "heldout"].prompt_id)
    assert len(tr) == 59 and len(ho) == 25 and not tr & ho
    for arm in ("iguana", "msc", "iguana_kl", "rb_msc"):
        assert set(pd.read_parquet(PUB / f"campaign_{arm}" / "draws.parquet").prompt_id) == tr, arm
    assert ho == set(pd.read_csv(PUB / "campaign_eval" / "per_prompt.csv").prompt_id)
    c = pd.read_csv(f / "bins.csv").query("binning == 'C'")
    assert c.zbin.str.contains("C").all() and not c.zbin.str.contains("Z").any()      # C bins are named after C


def test_zx_draws_grade_with_the_named_potential(tmp_path):
    from proposal_nb.results import write_table
    d = pd.DataFrame(dict(prompt_id="a", draw=[0, 1, 2], valid=[1.0, 1.0, 0.0], correct=[1.0, 0.0, 0.0], r_no_error=[1.0, 1.0, 0.0],
                          r_strict=[1.0, 0.0, 0.0], r_correctness=[1.0, 1.0, 1.0]))
    write_table(tmp_path, "base_rollouts", d)
    s = cz.zx_draws(tmp_path, "strict")
    assert s.valid.tolist() == [1.0, 0.0, 0.0] and s.correct.tolist() == [1.0, 0.0, 0.0]   # correct needs valid under strict
    assert cz.zx_draws(tmp_path).correct.tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="no column r_tiered"):
        cz.zx_draws(tmp_path, "tiered")


def test_published_strict_bins_use_the_strict_z():
    # training prompts binned by strict Z from h200_z_embedded (its own z_table, potential strict), held-out by base_strict's
    # 40 regraded draws; never the no-error Z of campaign_zbins
    f = published("campaign_strict_zbins")
    zt = pd.read_csv(f / "z_table.csv")
    assert zt.groupby("split").size().to_dict() == {"heldout": 25, "training": 59}
    ref = pd.read_csv(PUB / "h200_z_embedded" / "z_table.csv").query("potential == 'strict'").set_index("prompt_id").Z
    tr = zt[zt.split == "training"].set_index("prompt_id").Z
    assert np.allclose(tr.to_numpy(), ref.reindex(tr.index).to_numpy())
    assert int((tr <= 0.1).sum()) == 35 and int((tr == 0).sum()) == 19                   # the pre-registered count
    d = pd.read_parquet(PUB / "campaign_strict_eval" / "draws.parquet").query("checkpoint == 'base_strict'")
    ho = zt[zt.split == "heldout"].set_index("prompt_id").Z
    assert np.allclose(ho.to_numpy(), d.groupby("prompt_id").valid.mean().reindex(ho.index).to_numpy())
    b = pd.read_csv(f / "bins.csv")
    assert set(b.arm) == {"base_strict", "iguana_strict", "iguana_kl_strict"}


def test_the_run_notebook_regenerates_the_published_analyses(tmp_path):
    "nbs/runs/37_campaign_analyses through papermill, on a copy of published/: every table, summary, chart and README it"
    " writes equals the published file byte for byte (config.json aside: its date and commit are the run's)."
    import filecmp, shutil
    from proposal_nb.pipeline.notebooks import RUNS, run_notebook
    pub = tmp_path / "published"
    shutil.copytree(ROOT / "published", pub)
    run_notebook(RUNS / "37_campaign_analyses.ipynb", tmp_path / "out", dict(published=str(pub), out_dir=str(tmp_path / "out")),
                 log=tmp_path / "out" / "run.log")
    written = json.loads((tmp_path / "out" / "config.json").read_text())["written"]
    assert len(written) >= 17 and {"campaign_zbins", "campaign_breakeven_iguana", "campaign_interval_coverage"} <= set(written), written
    for name in written:
        files = sorted(p.name for p in (pub / name).iterdir() if p.name != "config.json")
        same, diff, err = filecmp.cmpfiles(ROOT / "published" / name, pub / name, files, shallow=False)
        diff = [f for f in diff if not same_to_rounding(ROOT / "published" / name / f, pub / name / f)]
        assert not diff and not err, f"{name}: differs {diff}, missing {err}"


def same_to_rounding(a:Path, b:Path, rel:float=1e-12)->bool:
    """Two tables (.csv) or chart specs (.json) equal up to the last bits of their floats. The training bins' bootstrap
    bounds (campaign_*zbins) moved in their 16th digit between the library versions of 2026-12-03 and 2026-12-04 (a fresh
    .venv then took pandas 3.1.1 and numpy 2.4.6); every other file still compares byte for byte."""
    import math
    def close(x, y):
        if isinstance(x, float) or isinstance(y, float):
            if not (isinstance(x, (int, float)) and isinstance(y, (int, float))): return False
            return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=rel, abs_tol=1e-15)
        if isinstance(x, dict): return isinstance(y, dict) and x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
        if isinstance(x, list): return isinstance(y, list) and len(x) == len(y) and all(map(close, x, y))
        return x == y
    if a.suffix == ".csv":
        import pandas as pd
        ta, tb = pd.read_csv(a), pd.read_csv(b)
        return list(ta.columns) == list(tb.columns) and close(ta.to_dict("list"), tb.to_dict("list"))
    def spec(f):                                          # a chart names its data by their hash: name them by position
        text = f.read_text()
        for i, name in enumerate(json.loads(text).get("datasets", {})): text = text.replace(name, f"dataset-{i}")
        return json.loads(text)
    if a.suffix == ".json": return close(spec(a), spec(b))
    return False
