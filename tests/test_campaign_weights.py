"""proposal_nb.analysis.weight_check and lm.weight_identity (scripts/campaign_weights.py's checks): the E_q[p/q] = 1 check on tables built by hand, and the published folder against its sources."""
import json, math
from pathlib import Path
import numpy as np, pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
import proposal_nb.analysis.weight_check as cw
from proposal_nb.lm.weight_identity import identity_draws


def test_ratio_stats_by_hand():
    d = pd.DataFrame(dict(logp=np.log([1.0, 2.0, 3.0]), logq=0.0))
    s = cw.ratio_stats(d)
    assert s["n"] == 3 and s["mean_ratio"] == pytest.approx(2.0) and s["se"] == pytest.approx(1 / math.sqrt(3))
    assert s["mean_log"] == pytest.approx(np.log(6) / 3)
    assert math.isnan(cw.ratio_stats(d.iloc[:1])["mean_ratio"])                    # one draw: no standard error


def test_exact_draws_from_q_read_one(tmp_path):
    # q = Bernoulli(0.3) over two outcomes, p = Bernoulli(0.6): draws from q, seed 0, n = 200,000; E_q[p/q] = 1 exactly,
    # the SE is sqrt(χ²(p‖q) / n) with χ² = 0.36/0.3 + 0.16/0.7 − 1 = 0.4286: 0.0015; the check must read 1 within 4 SE
    rng = np.random.default_rng(0)
    y = rng.random(200_000) < 0.3
    d = pd.DataFrame(dict(logp=np.log(np.where(y, 0.6, 0.4)), logq=np.log(np.where(y, 0.3, 0.7))))
    s = cw.ratio_stats(d)
    assert abs(s["mean_ratio"] - 1) < 4 * s["se"] and s["se"] == pytest.approx(math.sqrt(0.4286 / 200_000), rel=0.05)


def test_tables_read_training_runs_and_skip_references(tmp_path):
    from proposal_nb.results import write_json
    for arm, kind in (("x", "train"), ("card_eval", "evaluate")):
        (tmp_path / f"campaign_{arm}").mkdir()
        write_json(tmp_path / f"campaign_{arm}", "config", dict(kind=kind))
    pd.DataFrame(dict(step=[1, 2, 2, 30], logp=[0.0, 0.0, np.log(2.0), 0.0], logq=0.0, length=[5, 5, 6, 7])).to_parquet(tmp_path / "campaign_x" / "draws.parquet")
    pd.DataFrame(dict(checkpoint="c", arm="a", logp=[0.0], logq=[1.0])).to_parquet(tmp_path / "campaign_card_eval" / "draws.parquet")
    t = cw.training_table(tmp_path)
    assert t.arm.tolist() == ["x", "x"] and t.what.tolist() == ["steps 2-25", "steps 26-30"] and t.n.tolist() == [2, 1]
    assert t.mean_ratio.iloc[0] == pytest.approx(1.5)                                # step 1 (p = q exactly) left out
    (tmp_path / "campaign_eval").mkdir()
    pd.DataFrame(dict(checkpoint=["base", "base", "x-1", "x-1"], arm=["base", "base", "x", "x"], logp=[-1.0, -2.0, 0.0, 0.0],
                      logq=[-1.0, -2.0, 0.0, np.log(0.5)])).to_parquet(tmp_path / "campaign_eval" / "draws.parquet")
    h = cw.heldout_table(tmp_path)
    assert h.what.tolist() == ["x-1"] and h.mean_ratio.iloc[0] == pytest.approx(1.5)  # the reference (log q = log p) is not a check


def test_dtype_counts_split_bf16_and_fp32_arms():
    # windows more than 2 SE above 1, counted apart for the arms named ARM_fp32; a dtype with no arm is left out
    # and, apart, those more than 2 SE below 1 (a heavy tail)
    tr = pd.DataFrame(dict(arm=["iguana", "iguana", "iguana_fp32"], mean_ratio=[1.3, 1.05, 1.3], se=[0.1, 0.1, 0.1]))
    ho = pd.DataFrame(dict(arm=["iguana_fp32", "msc_m2_fp32"], mean_ratio=[1.0, 0.847], se=[0.01, 0.065]))
    assert cw.dtype_counts(tr, ho) == dict(
        bf16=dict(training_windows=2, training_windows_above_1=1, heldout_checkpoints=0, heldout_above_1=0, training_windows_below_1=0, heldout_below_1=0),
        fp32=dict(training_windows=1, training_windows_above_1=1, heldout_checkpoints=2, heldout_above_1=0, training_windows_below_1=0, heldout_below_1=1))
    assert list(cw.dtype_counts(tr[:2], ho[:0])) == ["bf16"]


def test_twin_table_pairs_each_fp32_arm_with_its_bf16_twin(tmp_path):
    # campaign_eval (base, iguana, msc) and campaign_fp32_eval (base_fp32, iguana_fp32): only iguana has a twin; each side's
    # base is its step 0; ESS/M from summary.csv, KL from report_card.csv, CIs kept
    def ev(name, rows):
        (tmp_path / name).mkdir()
        pd.DataFrame([dict(checkpoint=c, arm=a, step=st, metric="ess_per_m", estimate=e, lo=e - 0.1, hi=e + 0.1) for c, a, st, e, _ in rows]
                     ).to_csv(tmp_path / name / "summary.csv", index=False)
        pd.DataFrame([dict(checkpoint=c, kl=k, kl_lo=k - 0.2, kl_hi=k + 0.2) for c, _, _, _, k in rows]).to_csv(tmp_path / name / "report_card.csv", index=False)
    assert cw.twin_table(tmp_path).empty                                              # no evaluations: nothing
    ev("campaign_eval", [("base", "base", 0, 0.5, 0.8), ("iguana-step-4", "iguana", 4, 0.4, 0.9), ("msc-step-4", "msc", 4, 0.3, 1.0)])
    ev("campaign_fp32_eval", [("base_fp32", "base_fp32", 0, 0.5, 0.7), ("iguana_fp32-step-4", "iguana_fp32", 4, 0.6, 0.5)])
    t = cw.twin_table(tmp_path)
    assert set(t.twin) == {"iguana"} and t.checkpoint.tolist() == ["base", "iguana-step-4", "base_fp32", "iguana_fp32-step-4"]
    assert t.dtype.tolist() == ["bf16", "bf16", "fp32", "fp32"] and t.kl.tolist() == [0.8, 0.9, 0.7, 0.5] and t.ess_hi.tolist() == pytest.approx([0.6, 0.5, 0.6, 0.7])
    spec = cw.twin_chart(pd.concat([t, t.assign(twin="msc", ess_lo=t.ess_lo - 0.2)])).to_dict()
    assert len(spec["vconcat"]) == 2                                                  # one row of panels per twin
    doms = [r["hconcat"][0]["layer"][0]["encoding"]["y"]["scale"]["domain"] for r in spec["vconcat"]]
    assert doms[0] == doms[1] == pytest.approx([0.1, 0.7])                          # ESS/M: one range for every row, from all CIs


def test_dtype_table_reads_each_dtype_run_from_step_2(tmp_path):
    # weight_check/<dtype>/iguana/{draws,log}.parquet (campaign_job.sh's arm weightcheck); step 1 and steps past 25 left out
    for dt, lp in (("bfloat16", np.log([4.0, 2.0, 1.0, 3.0])), ("float32", np.log([9.0, 1.0, 1.0, 9.0]))):
        (tmp_path / dt / "iguana").mkdir(parents=True)
        pd.DataFrame(dict(step=[1, 2, 25, 26], prompt_id="p", draw=0, length=5, valid=True, logp=lp, logq=0.0)).to_parquet(tmp_path / dt / "iguana" / "draws.parquet")
        pd.DataFrame(dict(step=[1, 2, 25, 26], logprob_gap_mean=[0.0, 0.1, 0.3, 9.0] if dt == "bfloat16" else 0.0)).to_parquet(tmp_path / dt / "iguana" / "log.parquet")
    (tmp_path / "stray").mkdir()                                                       # a folder without a run: skipped
    d = cw.dtype_draws(tmp_path)
    assert len(d) == 8 and d.gap.tolist()[:4] == [0.0, 0.1, 0.3, 9.0]
    t = cw.dtype_table(d)
    assert t.dtype.tolist() == ["bfloat16", "float32"] and t.n.tolist() == [2, 2] and t.steps.tolist() == ["2-25", "2-25"]
    assert t.mean_ratio.tolist() == pytest.approx([1.5, 1.0]) and t.z.iloc[0] == pytest.approx(0.5 / 0.5)
    assert math.isnan(t.z.iloc[1]) and t.gap_per_token.tolist() == pytest.approx([0.2, 0.0])   # no spread: no SE, no z
    with pytest.raises(ValueError, match="no <dtype>"): cw.dtype_draws(tmp_path / "stray")


def test_dtype_verdict_applies_the_rule_fixed_before_the_run():
    v = lambda b, f: cw.dtype_verdict(dict(bfloat16=dict(mean_ratio=b, se=0.03), float32=dict(mean_ratio=f, se=0.015)))
    assert v(1.24, 1.015).startswith("bf16 inflates")            # fp32 within 2 SE (0.03), bf16 8 SE out: re-run in fp32
    assert v(1.24, 1.04).startswith("fp32 misses")               # fp32 2.7 SE out
    assert v(1.05, 1.0).startswith("both read 1")                # bf16 within 2 SE (0.06)
    assert cw.dtype_verdict(None) is None and cw.dtype_verdict(dict(float32=dict(mean_ratio=1.0, se=0.1))) is None


def test_rescore_summary_by_hand():
    r = pd.DataFrame(dict(length=[10, 20, 100, 110, 200, 210], logp_fp32=0.0, logp_bf16_cpu=[0.1, -0.1, 0.2, -0.2, 0.3, -0.3],
                          logp_stored=[0.2, -0.2, 0.2, -0.2, 0.2, -0.2]))
    s = cw.rescore_summary(r)["CPU bf16 − CPU fp32"]
    e = np.array([0.1, -0.1, 0.2, -0.2, 0.3, -0.3])
    assert s["mean"] == pytest.approx(0.0) and s["sd"] == pytest.approx(e.std(ddof=1), abs=1e-4)
    assert s["sd_by_length"]["1-60"] == pytest.approx(np.std([0.1, -0.1], ddof=1), abs=1e-3) and s["inflation"] == pytest.approx(np.exp(e.var(ddof=1) / 2), abs=1e-3)


def test_published_weight_check_matches_the_draws():
    f = ROOT / "published" / "campaign_weight_check"
    if not (f / "config.json").exists(): pytest.skip("published/campaign_weight_check is not built")
    r = pd.read_csv(f / "ratios.csv")
    row = r[(r.arm == "iguana") & (r.what == "steps 2-25")].iloc[0]
    d = pd.read_parquet(ROOT / "published" / "campaign_iguana" / "draws.parquet").query("2 <= step <= 25")
    assert row.n == len(d) and row.mean_ratio == pytest.approx(np.exp(d.logp - d.logq).mean())


def test_identity_holds_in_fp32_on_a_tiny_model():
    # draws from a tiny fp32 model with a perturbed adapter: log q and log p from the same fp32 scorer must give
    # E_q[p/q] = 1 (exact identity); seed 0, 6 prompts x 40 draws of up to 6 tokens, B ~ N(0, 0.03²): sd of log(p/q) 0.55,
    # SE of the mean 0.04; tolerance 4 SE (a bias of 1.2, as on the H200's bf16 runs, is 5 SE away)
    import torch
    from proposal_nb.lm.models import add_lora, tiny_model
    from proposal_nb.programs.tasks import Task
    m, tok = tiny_model(seed=0)
    torch.manual_seed(0); peft = add_lora(m, r=4, alpha=8)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n, p in peft.named_parameters():
            if "lora_B" in n: p.copy_(torch.randn(p.shape, generator=g) * 0.03)
    tasks = [Task(id=f"t{i}", prompt="ab" * (i + 1), entry_point="f") for i in range(6)]
    d = identity_draws(peft.eval(), tok, tasks, draws=40, max_new_tokens=6, batch_size=48)
    s = cw.ratio_stats(d)
    assert s["n"] == 240 and s["sd_log"] > 0.1                                       # q differs from p ...
    assert abs(s["mean_ratio"] - 1) < 4 * s["se"], s                                  # ... and the identity holds
    assert np.allclose(d.logq_sampler, d.logq, atol=1e-4)                             # the sampler's density is the scorer's


def test_dtype_chart_shows_each_window_and_the_rule_at_one():
    w = pd.DataFrame([dict(dtype=dt, window=win, n=10, mean_ratio=m, se=0.01, sd_log=0.5) for dt, m in (("bfloat16", 1.2), ("float32", 1.0))
                      for win in ("2-8", "9-16", "17-25", "2-25")])
    spec = cw.dtype_chart(w).to_dict()
    rows = [r for d in spec["datasets"].values() for r in d if "dtype" in r]
    assert sorted({r["steps"] for r in rows}) == ["steps 17-25", "steps 2-8", "steps 9-16"] and len(rows) == 6   # the whole run is left out
    assert [r["lo"] for r in rows if r["dtype"] == "float32"] == pytest.approx([0.98] * 3)                            # mean − 2 SE
    assert any(r.get("y") == 1.0 for d in spec["datasets"].values() for r in d)                                    # the identity's rule


def test_chance_above_is_the_binomial_tail_of_a_2se_exceedance():
    # one check exceeds 2 SE with P = 1 - Phi(2) = 0.02275 (exact weights); P(at least 1 of 28) = 1 - (1 - P)^28, P(at least 0) = 1
    assert cw.P_ABOVE_2SE == pytest.approx(0.0227501, abs=1e-7)
    assert cw.chance_above(28, 1) == pytest.approx(1 - (1 - cw.P_ABOVE_2SE) ** 28, rel=1e-12)
    assert cw.chance_above(5, 0) == pytest.approx(1.0) and cw.chance_above(2, 2) == pytest.approx(cw.P_ABOVE_2SE ** 2)


def test_above_names_lists_one_dtypes_windows_above_2se():
    tr = pd.DataFrame(dict(arm=["msc", "msc_fp32"], what=["steps 2-25", "steps 2-25"], mean_ratio=[1.3, 1.01], se=[0.1, 0.01]))
    ho = pd.DataFrame(dict(arm=["msc_fp32"], what=["msc_fp32-step-250"], mean_ratio=[1.165], se=[0.069]))
    assert cw.above_names(tr, ho, "fp32") == ["msc_fp32-step-250: 1.165 ± 0.069"]   # 1.01 - 2 x 0.01 < 1: not above
    assert cw.above_names(tr, ho, "bf16") == ["msc steps 2-25: 1.300 ± 0.100"]
    edge = pd.DataFrame(dict(arm=["rb_msc_fp32"] * 2, what=["steps 2-25", "steps 26-100"], mean_ratio=[1.19, 1.21], se=[0.1, 0.1]))
    assert cw.above_names(edge, ho[:0], "fp32") == ["rb_msc_fp32 steps 26-100: 1.210 ± 0.100"]   # 1.9 SE is not above, 2.1 SE is


def test_below_md_names_checks_below_2se_with_their_reverse_reading():
    tr = pd.DataFrame(dict(arm=["msc_m2_fp32", "msc_m2_fp32", "iguana"], what=["steps 2-25", "steps 101-250", "steps 2-25"],
                           mean_ratio=[0.95, 0.881, 0.5], se=[0.03, 0.039, 0.1]))   # 1.7 SE below: not named; 3.05 SE below: named
    ho = pd.DataFrame(dict(arm=["msc_m2_fp32"], what=["msc_m2_fp32-step-210"], mean_ratio=[0.847], se=[0.065]))
    rv = pd.DataFrame(dict(arm=["msc_m2_fp32"], what=["msc_m2_fp32-step-210"], mean_ratio=[1.045], se=[0.072]))
    assert cw.above_names(tr, ho, "fp32", cw._below) == ["msc_m2_fp32 steps 101-250: 0.881 ± 0.039", "msc_m2_fp32-step-210: 0.847 ± 0.065"]
    assert cw.above_names(tr, ho, "fp32") == []                                            # nothing above
    md = cw.below_md(tr, ho, rv)
    assert "**fp32 arms:** **2 of 3**" in md and "(the reverse check below): msc_m2_fp32-step-210: 1.045 ± 0.072." in md
    assert "**bf16 arms:** **1 of 1**" in md                                               # iguana 0.5 ± 0.1: 5 SE below
    assert cw.below_md(tr[:1], ho[:0], rv) == ""                                            # none below 2 SE: no paragraph


def _eval_folder(root, draws, prior):
    (root / "campaign_eval").mkdir(parents=True)
    pd.DataFrame(draws).to_parquet(root / "campaign_eval" / "draws.parquet"); pd.DataFrame(prior).to_parquet(root / "campaign_eval" / "prior.parquet")


def test_reverse_table_takes_q_over_p_on_the_references_draws(tmp_path):
    # prior.parquet: the reference's draws scored under each checkpoint (arm NaN there: the arm comes from draws.parquet);
    # the reference's own rows (log q = log p) are not a check; q/p of [4, 1] has mean 2.5 (p/q, 0.25 and 1, would read 0.625)
    _eval_folder(tmp_path, dict(checkpoint=["base", "x-1"], arm=["base", "x"], logp=0.0, logq=[0.0, 1.0]),
                 dict(checkpoint=["base", "base", "x-1", "x-1"], arm=["base", "base", None, None], logp=[-1.0, -2.0, 0.0, 0.0],
                      logq=[-1.0, -2.0, np.log(4.0), 0.0]))
    r = cw.reverse_table(tmp_path)
    assert r.what.tolist() == ["x-1"] and r.arm.tolist() == ["x"] and r.split.tolist() == ["reverse (campaign_eval)"]
    assert r.mean_ratio.iloc[0] == pytest.approx(2.5) and r.n.iloc[0] == 2            # q/p = 4 and 1, not p/q = 0.25 and 1


def test_reverse_identity_reads_one_on_exact_draws_from_p(tmp_path):
    # p = Bernoulli(0.6), q = Bernoulli(0.3), draws y ~ p (seed 0, n = 200,000): E_p[q/p] = 1 exactly, while the unswapped
    # mean E_p[p/q] = 0.36/0.3 + 0.16/0.7 = 1.4286; SE sqrt(χ²(q‖p) / n) with χ² = 0.3²/0.6 + 0.7²/0.4 − 1 = 0.375: 0.0014;
    # the check must read 1 within 4 SE
    y = np.random.default_rng(0).random(200_000) < 0.6
    lp, lq = np.log(np.where(y, 0.6, 0.4)), np.log(np.where(y, 0.3, 0.7))
    _eval_folder(tmp_path, dict(checkpoint=["base", "x-1"], arm=["base", "x"], logp=0.0, logq=[0.0, 1.0]),
                 dict(checkpoint=np.repeat(["base", "x-1"], len(y)), logp=np.tile(lp, 2), logq=np.concatenate([lp, lq])))
    r = cw.reverse_table(tmp_path).iloc[0]
    assert abs(r.mean_ratio - 1) < 4 * r.se and r.se == pytest.approx(math.sqrt(0.375 / 200_000), rel=0.05)


def test_reverse_counts_and_the_forward_exceptions_on_the_reverse_check():
    ho = pd.DataFrame(dict(arm=["msc_fp32", "msc_fp32", "msc"], what=["msc_fp32-step-250", "msc_fp32-step-4", "msc-step-4"],
                           mean_ratio=[1.165, 1.0, 1.25], se=[0.069, 0.01, 0.04]))
    rv = pd.DataFrame(dict(arm=["msc_fp32", "msc_fp32", "msc"], what=["msc_fp32-step-250", "msc_fp32-step-4", "msc-step-4"],
                           mean_ratio=[0.976, 1.03, 1.149], se=[0.029, 0.01, 0.028]))
    assert cw.reverse_counts(rv) == dict(bf16=dict(checkpoints=1, above_1=1), fp32=dict(checkpoints=2, above_1=1))   # 1.03 is 3 SE above
    assert cw.reverse_of_exceptions(ho, rv, "fp32") == ["msc_fp32-step-250: 0.976 ± 0.029"]
    assert cw.reverse_of_exceptions(ho, rv, "bf16") == ["msc-step-4: 1.149 ± 0.028"] and cw.reverse_counts(rv[:0]) == {}
    spec = cw.reverse_chart(ho, rv).to_dict()
    pts = [r for d in spec["datasets"].values() for r in d if "z_fwd" in r]
    z = {r["what"]: (r["z_fwd"], r["z_rev"], r["dtype"]) for r in pts}
    assert z["msc_fp32-step-250"] == pytest.approx((0.165 / 0.069, -0.024 / 0.029, "fp32")) and z["msc-step-4"][2] == "bf16"
    assert sum(1 for d in spec["datasets"].values() for r in d if r.get("v") == 2.0) >= 1                 # the 2-SE lines
