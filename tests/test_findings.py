"""The findings table (proposal_nb.analysis.findings) read from run folders built through the real writers
(results.write_table / write_json, analysis.evaluation.evaluation_tables / write_evaluation): for each finding, a
folder built to reproduce it, one built to fail it and one too small to decide, with the verdict known in advance;
and a root without the campaign's folders, where every row must say 'not run' and name its folder, never a number.

Draw tables are seeded (numpy default_rng, seeds stated per test); sizes are chosen so that the expected verdict holds
with a wide margin (each test says how wide), never at the edge of a CI."""
import math

import numpy as np
import pandas as pd
import pytest

from proposal_nb.analysis import findings as F
from proposal_nb.analysis.evaluation import evaluation_tables, write_evaluation
from proposal_nb.results import write_json, write_table

N_BOOT = 500


def draws_for(spec:dict, n_prompts:int, R:int=4, M:int=10, seed:int=0)->pd.DataFrame:
    "Held-out draws: spec = {checkpoint: (arm, validity [P], P(correct | valid) [P], distinct programs?)}; log p = log q."
    rng, rows = np.random.default_rng(seed), []
    ids = [f"p{i:03d}" for i in range(n_prompts)]
    for ck, (arm, v, c, distinct) in spec.items():
        v, c = np.broadcast_to(v, n_prompts), np.broadcast_to(c, n_prompts)
        valid = rng.random((n_prompts, R, M)) < v[:, None, None]
        correct = valid & (rng.random((n_prompts, R, M)) < c[:, None, None])
        for p in range(n_prompts):
            for r in range(R):
                for m in range(M):
                    h = f"{ck}-{p}-{r}-{m}" if distinct else f"{p}-{int(correct[p, r, m])}"
                    rows.append((ids[p], ck, arm, r, m, float(valid[p, r, m]), float(correct[p, r, m]), -20.0, -20.0,
                                 0.0 if valid[p, r, m] else -math.inf, 50, h))
    return pd.DataFrame(rows, columns=["prompt_id", "checkpoint", "arm", "run", "draw", "valid", "correct", "logp", "logq",
                                       "logr", "length", "text_hash"])


def write_eval(folder, draws:pd.DataFrame):
    "An evaluation run folder as scripts/campaign.py report writes it: summary, paired, per_prompt, draws, config."
    ev = evaluation_tables(draws, checkpoints=list(dict.fromkeys(draws.checkpoint)), n_boot=N_BOOT)
    write_evaluation(folder, ev); write_table(folder, "draws", draws)
    write_json(folder, "config", dict(kind="evaluate"))
    return folder


def row(root, i:int, sources=F.PUBLISHED, **kw)->dict:
    return F.findings_table(root, sources, which=[i], n_boot=N_BOOT, **kw).iloc[0].to_dict()


# (1) validity rises while P(correct | valid) stays flat; 60 prompts x 40 draws, seed 0 ----------------------------
@pytest.mark.parametrize("case, arm_valid, arm_cv, n, verdict", [
    ("reproduces", 0.8, 0.5, 60, F.REPRODUCED),         # validity +0.4 (SE ~0.02); P(c|v) equal (CI half-width ~0.03 < 0.05)
    ("fails", 0.8, 0.95, 60, F.NOT_REPRODUCED),          # P(c|v) +0.45: the CI lies far above +0.05
    ("too small", 0.45, 0.5, 3, F.INCONCLUSIVE),         # 3 prompts: validity +0.05 cannot clear 0
])
def test_validity(tmp_path, case, arm_valid, arm_cv, n, verdict):
    d = draws_for({"base": ("base", 0.4, 0.5, True), "iguana-step-250": ("iguana", arm_valid, arm_cv, True)}, n, seed=0)
    write_eval(tmp_path / "campaign_eval", d)
    r = row(tmp_path, 1)
    assert r["verdict"] == verdict, r
    assert r["project"].startswith("iguana-step-250 − base: validity +"), r["project"]
    if verdict == F.INCONCLUSIVE:                                     # a size at 80% power, beyond the embedded set's 124 tasks here
        assert "held-out prompts" in r["decides"] and "80% power" in r["decides"] and r["decides"].startswith("untestable here: "), r
        assert int(r["decides"].split("≈ ")[1].split()[0].replace(",", "")) > F.EMBEDDED_TASKS, r
    assert r["decides"].endswith("interval over one training run per arm"), r


# (2) MSC sharpens and loses pass@10; IGUANA keeps it; 40 prompts, seed 1 -----------------------------------------
def test_coverage(tmp_path):
    half = np.r_[np.full(20, 0.9), np.full(20, 0.0)]                  # MSC: right on half the prompts, never on the rest
    spec = {"base": ("base", 0.6, 0.45, True), "iguana-step-250": ("iguana", 0.6, 0.45, True),
            "msc-step-250": ("msc", 0.9, half, False)}                 # MSC repeats one program per prompt
    write_eval(tmp_path / "a" / "campaign_eval", draws_for(spec, 40, seed=1))
    r = row(tmp_path / "a", 2)
    assert r["verdict"] == F.REPRODUCED, r                            # pass@10: ~0.99 vs ~0.5; distinct: 1 vs ~0.1
    spec["msc-step-250"] = ("msc", 0.6, 0.45, True)                   # MSC = IGUANA in law: coverage gain ~0 and no sharpening
    spec["iguana-step-250"] = ("iguana", 0.9, half, False)            # now IGUANA is the one that collapses
    write_eval(tmp_path / "b" / "campaign_eval", draws_for(spec, 40, seed=1))
    assert row(tmp_path / "b", 2)["verdict"] == F.NOT_REPRODUCED
    write_eval(tmp_path / "c" / "campaign_eval", draws_for({k: spec[k] for k in ("base", "iguana-step-250")}, 40, seed=1))
    r = row(tmp_path / "c", 2)
    assert r["verdict"] == F.NOT_RUN and "arms iguana and msc" in r["decides"], r


def train_folder(folder, arm:str, draws:pd.DataFrame, log:pd.DataFrame|None=None, training:dict|None=None):
    "A training run folder (kind train) with its draws and log, as scripts/campaign.py report writes it."
    write_table(folder, "draws", draws)
    write_table(folder, "log", log if log is not None else pd.DataFrame(dict(step=sorted(draws.step.unique()))))
    write_json(folder, "config", dict(kind="train", arm=arm, training=training or {}))


def training_draws(z:np.ndarray, late:np.ndarray, steps:int=40, M:int=10, seed:int=0)->pd.DataFrame:
    "Every prompt visited at every step; validity z in the first half of the steps and `late` in the second."
    rng, rows = np.random.default_rng(seed), []
    for s in range(1, steps + 1):
        v = z if s <= steps / 2 else late
        for p in range(len(z)):
            rows += [(s, f"p{p:03d}", m, float(rng.random() < v[p])) for m in range(M)]
    return pd.DataFrame(rows, columns=["step", "prompt_id", "draw", "valid"])


# (3) anchored vs free change of training validity on the Z <= 0.1 prompts; 30 prompts, 40 steps x 10 draws --------
@pytest.mark.parametrize("case, n_hard, kl_late, free_late, verdict", [
    ("reproduces", 12, 0.3, 0.0, F.REPRODUCED),          # anchored hard prompts climb 0 -> 0.3, free ones stay at 0
    ("fails", 12, 0.0, 0.3, F.NOT_REPRODUCED),           # the other way round
    ("too small", 2, 0.3, 0.0, F.INCONCLUSIVE),          # 2 hard prompts: the split cannot test the finding
])
def test_anchor(tmp_path, case, n_hard, kl_late, free_late, verdict):
    z = np.r_[np.zeros(n_hard), np.full(30 - n_hard, 0.5)]
    for arm, late, seed in (("iguana", free_late, 2), ("iguana_kl", kl_late, 3)):
        train_folder(tmp_path / f"campaign_{arm}", arm, training_draws(z, np.where(z == 0, late, 0.6), seed=seed))
    write_table(tmp_path / "h200_z_embedded", "z_table", pd.DataFrame(dict(prompt_id=[f"p{i:03d}" for i in range(30)], Z=z, C=z / 2,
                                                                          potential="no_error")))
    write_json(tmp_path / "h200_z_embedded", "config", dict(kind="zx"))
    r = row(tmp_path, 3)
    assert r["verdict"] == verdict, r
    assert r["project"].startswith(f"{n_hard} of 30 training prompts at Z ≤ 0.1"), r["project"]
    if verdict == F.INCONCLUSIVE: assert "needs ≥ 5" in r["decides"], r


# (4) the guards: the run's weights replayed with and without them; 8 prompts x 10 draws x 30 steps, seed 4 ---------
@pytest.mark.parametrize("case, spike, guards, verdict", [
    ("reproduces", 5500.0, True, F.REPRODUCED),          # one uw = 5,500: unguarded shrinkage Ẑ jumps by ~5500/180 > 2
    ("fails", 5500.0, False, F.NOT_REPRODUCED),          # the run itself had no guards: its Ẑ inflated
    ("untested", None, True, F.INCONCLUSIVE),            # weights <= 1: nothing threatened Ẑ
])
def test_guards(tmp_path, case, spike, guards, verdict):
    d = training_draws(np.full(8, 0.5), np.full(8, 0.5), steps=30, seed=4)
    d["log_uw"] = np.where(d.valid > 0, 0.0, -np.inf)
    if spike: d.loc[(d.step == 10) & (d.valid > 0), "log_uw"] = np.r_[math.log(spike), np.zeros(int(((d.step == 10) & (d.valid > 0)).sum()) - 1)]
    nz = dict(kind="shrinkage", n0=100.0, m0=50.0, mu0=0.5, fold_clip=10.0 if guards else None, baseline_cap=1.0 if guards else None)
    train_folder(tmp_path / "campaign_iguana", "iguana", d, training=dict(normalizer=nz))
    r = row(tmp_path, 4)
    assert r["verdict"] == verdict, r
    assert "guarded" in r["project"] and "unguarded" in r["project"], r


# (5) wacc approaches the skyline: the base's runs with no valid draw score 0; 200 prompts, seed 5 -----------------
@pytest.mark.parametrize("case, arm_valid, verdict", [
    ("reproduces", 0.9, F.REPRODUCED),        # base: 12% valid, 28% of its runs score 0 (wacc ~0.36, gain ~0.14, SE ~0.015);
                                              # arm: wacc ~0.5 (SE ~0.006); skyline ~0.5 (SE ~0.016): skyline − 0.05 ~3 SE below
    ("fails", 0.05, F.NOT_REPRODUCED),        # arm: 60% of runs with no valid draw: wacc ~0.2, far below 0.5 − 0.05
])
def test_skyline(tmp_path, case, arm_valid, verdict):
    spec = {"base": ("base", 0.12, 0.5, True), "iguana-step-250": ("iguana", arm_valid, 0.5, True)}
    write_eval(tmp_path / "campaign_eval", draws_for(spec, 200, seed=5))
    r = row(tmp_path, 5)
    assert r["verdict"] == verdict, r
    assert "vs skyline 0.5" in r["project"] and "(40+ base draws per prompt)" in r["project"], r["project"]


def test_skyline_too_small(tmp_path):
    "4 prompts x 8 draws: neither part can be decided (seed 6)."
    spec = {"base": ("base", 0.4, 0.5, True), "iguana-step-250": ("iguana", 0.5, 0.5, True)}
    write_eval(tmp_path / "campaign_eval", draws_for(spec, 4, R=2, M=4, seed=6))
    assert row(tmp_path, 5)["verdict"] == F.INCONCLUSIVE


# (6) batching of the BC runs, from their logs' n_prompts (distinct prompts per batch) -----------------------------
def bc_log(n_prompts:list, ema:float|None=None)->pd.DataFrame:
    t = pd.DataFrame(dict(epoch=0, step=np.arange(1, len(n_prompts) + 1), loss=1.0, grad_norm=1.0, n_prompts=n_prompts, n_accepted=8,
                          padding=0.0, t_update=0.1, n_samples=8))
    return t if ema is None else t.assign(grad_ema_norm=ema)


@pytest.mark.parametrize("case, sort, spread, verdict", [
    ("reproduces", [1] * 79 + [3] * 21, [8] * 50 + [7] * 50, F.REPRODUCED),     # 1.42 distinct, 79% single vs 7.5
    ("fails", [6] * 100, [7] * 100, F.NOT_REPRODUCED),                         # sorted batches mix prompts
    ("too small", [1] * 5, [8] * 5, F.INCONCLUSIVE),                           # 5 batches
])
def test_batching(tmp_path, case, sort, spread, verdict):
    for arm, n in (("bc_sort", sort), ("bc_spread", spread)):
        write_table(tmp_path / f"campaign_{arm}", "log", bc_log(n))
        write_json(tmp_path / f"campaign_{arm}", "config", dict(kind="train", arm=arm))
    r = row(tmp_path, 6)
    assert r["verdict"] == verdict, r
    if case == "reproduces":
        assert r["project"].startswith("sort: 1.42 distinct prompts per batch, 79% single-prompt (100 batches)"), r["project"]
        assert "no gradient-EMA norm" in r["decides"], r                      # the untested part is named
    write_table(tmp_path / "campaign_bc_sort", "log", bc_log(sort, ema=1.0))
    write_table(tmp_path / "campaign_bc_spread", "log", bc_log(spread, ema=1.3))
    assert row(tmp_path, 6)["verdict"] == (F.NOT_REPRODUCED if case != "too small" else F.INCONCLUSIVE)   # sort's EMA below spread's


def test_batching_shows_what_the_fits_did(tmp_path):
    # shown beside the rule, not ruled on: validity sort − spread from the paired table (40 prompts, seed 8: 0.3 vs 0.9, far
    # apart), the share of each fit's held-out draws at its cap (set exactly: every 4th draw of sort, none of spread), and the
    # mean per-batch gradient norm ratio (3 / 1.5 = 2, NaN of a skipped batch left out)
    for arm, g in (("bc_sort", [3.0, np.nan, 3.0]), ("bc_spread", [1.5, 1.5, 1.5])):
        write_table(tmp_path / f"campaign_{arm}", "log", bc_log([4] * 3).assign(grad_norm=g))
        write_json(tmp_path / f"campaign_{arm}", "config", dict(kind="train", arm=arm, training=dict(cap=100)))
    d = draws_for({"base": ("base", 0.5, 0.5, True), "bc_spread-step-9": ("bc_spread", 0.9, 0.5, True),
                   "bc_sort-step-9": ("bc_sort", 0.3, 0.5, True)}, 40, seed=8)
    d.loc[(d.checkpoint == "bc_sort-step-9") & (d.draw % 4 == 0), "length"] = 100
    write_eval(tmp_path / "campaign_eval", d)
    p = row(tmp_path, 6)["project"]
    assert "; mean per-batch gradient norm sort / spread 2.00" in p, p
    assert "; held-out draws at the completion cap: sort 30%, spread 0%" in p, p    # draws 0, 4, 8 of 10
    lo, hi = (float(x.replace("−", "-")) for x in p.split("held-out validity sort − spread ")[1].split("[")[1].split("]")[0].split(", "))
    assert hi < -0.4 and lo > -0.8, p                                               # −0.6 at 40 prompts x 40 draws
    assert "order control" not in p                                                 # no bc_sort_shuffled run: nothing said
    # the order control (sort's batches shuffled): validity 0.8 against sort's 0.3, none of its draws at the cap
    write_json(tmp_path / "campaign_bc_sort_shuffled", "config", dict(kind="train", arm="bc_sort_shuffled", training=dict(cap=100)))
    write_eval(tmp_path / "campaign_eval", pd.concat([d, draws_for({"bc_sort_shuffled-step-9": ("bc_sort_shuffled", 0.8, 0.5, True)}, 40, seed=9)]))
    p = row(tmp_path, 6)["project"]
    assert p.endswith(", 0% of its draws at the cap") and "; held-out draws at the completion cap: sort 30%, spread 0%" in p, p
    lo, hi = (float(x.replace("−", "-")) for x in p.split("− sort: validity ")[1].split("[")[1].split("]")[0].split(", "))
    assert 0.3 < lo < hi < 0.7, p                                                   # +0.5 at 40 prompts x 40 draws


# (7) the prior must be the rollout sampler: the card arm against the card sampler's own draws; seed 7 --------------
@pytest.mark.parametrize("case, base_cv, arm_cv, n, verdict", [
    ("reproduces", 0.95, 0.95, 200, F.REPRODUCED),  # P(c|v) 0.95 in both: wacc gain ~0 (paired SE ~0.004, so the CI ends near
                                                     # +0.01, 2.5 SE below 0.02), while pass@1 rises 0.855 -> 0.94
    ("fails", 0.5, 1.0, 60, F.NOT_REPRODUCED),      # P(c|v) 0.5 -> 1: wacc gains +0.5, far above 0.02
])
def test_prior(tmp_path, case, base_cv, arm_cv, n, verdict):
    spec = {"base_card": ("base_card", 0.9, base_cv, True), "base": ("base", 0.6, 0.5, True), "bc_card-step-100": ("bc_card", 0.99, arm_cv, True),
            "bc_card_t1prior-step-100": ("bc_card_t1prior", 0.99, arm_cv, True)}   # the layout of campaign.py report-card
    write_eval(tmp_path / "campaign_card_eval", draws_for(spec, n, seed=7))
    r = row(tmp_path, 7)
    assert r["verdict"] == verdict, r
    assert r["project"].startswith("bc_card-step-100 − base_card: wacc "), r["project"]
    assert "; control bc_card_t1prior-step-100 − base: wacc +" in r["project"], r["project"]   # shown beside, not ruled on
    assert "kept set" not in r["project"]                                     # no summary.json: no zero-weight share shown
    write_json(tmp_path / "campaign_card_eval", "summary", {"zero_weight_share bc_card-step-100": 0.25})
    assert "; 25% of bc_card-step-100's draws lie outside the card sampler's kept set (weight 0)" in row(tmp_path, 7)["project"]
    write_eval(tmp_path / "campaign_card_eval", draws_for({k: spec[k] for k in ("base", "bc_card-step-100")}, 60, seed=7))
    assert row(tmp_path, 7)["verdict"] == F.NOT_RUN                           # no card sampler's own checkpoint
    # the fp32 re-evaluation (campaign.py eval-card-fp32, report-card): read first, every name suffixed _fp32
    s32 = {k.replace("-step", "_fp32-step") if "-step" in k else f"{k}_fp32": (v[0] + "_fp32",) + v[1:] for k, v in spec.items()}
    write_eval(tmp_path / "campaign_card_fp32_eval", draws_for(s32, 60, seed=8))
    r = row(tmp_path, 7)
    assert r["project"].startswith("bc_card_fp32-step-100 − base_card_fp32: wacc ") and "; control bc_card_t1prior_fp32-step-100 − base_fp32" in r["project"], r
    assert r["source"] == "campaign_card_fp32_eval" and r["decides"].endswith("read on the fp32 arms (campaign_fp32_plan)"), r


def test_prior_where_no_prompt_differs_reads_the_exact_bound(tmp_path):
    "Every valid draw correct in both arms (60 prompts, seed 7): wacc = 1 on every prompt of both, so the gain is 0 on all 60."
    " That is no [0.00, 0.00] interval: the exact bound ±(1 − 0.025^(1/60)) = ±0.06 allows a gain above 0.02, so the wacc half is"
    " inconclusive, and no size can be read off an estimate of exactly 0."
    spec = {"base_card": ("base_card", 0.9, 1.0, True), "bc_card-step-100": ("bc_card", 0.99, 1.0, True)}
    write_eval(tmp_path / "campaign_card_eval", draws_for(spec, 60, seed=7))
    r = row(tmp_path, 7)
    assert r["project"].startswith("bc_card-step-100 − base_card: wacc +0.00 [−0.06, +0.06] (exact: no prompt of 60 differs); pass@1 +"), r
    assert r["verdict"] == F.INCONCLUSIVE and r["decides"].startswith("no size"), r


# (8) break-even over checkpoints: per_checkpoint tables with N* and its CI ----------------------------------------
@pytest.mark.parametrize("case, est, lo, hi, verdict", [
    ("reproduces", [9e4, 3e4, 8e4], [7e4, 2e4, 6e4], [1.2e5, 4e4, 1e5], F.REPRODUCED),
    ("fails", [math.inf, 6e4, 3e4], [9e4, 5e4, 2e4], [math.inf, 7e4, 4e4], F.NOT_REPRODUCED),   # falls to the last checkpoint
    ("too small", [9e4, 3e4], [7e4, 2e4], [1.2e5, 4e4], F.INCONCLUSIVE),                       # two checkpoints
])
def test_breakeven(tmp_path, case, est, lo, hi, verdict):
    f, steps = tmp_path / "campaign_breakeven_iguana", [16, 63, 250][:len(est)]
    write_table(f, "per_checkpoint", pd.DataFrame(dict(checkpoint=[f"iguana-step-{s}" for s in steps], step=steps, nstar_checker_calls=est,
                                                       nstar_checker_calls_lo=lo, nstar_checker_calls_hi=hi)))
    write_table(f, "prompt_breakeven", pd.DataFrame(dict(prompt_id=np.repeat([f"p{i}" for i in range(25)], len(steps)),
                                                         checkpoint="x", step=np.tile(steps, 25))))
    write_json(f, "config", dict(kind="breakeven", arm="iguana"))
    r = row(tmp_path, 8)
    assert r["verdict"] == verdict, r
    assert r["project"].startswith("N* (checker calls) by step: 16: "), r["project"]
    if case == "too small": assert "a U needs ≥ 3" in r["decides"], r


# (9) the fitness hill and the positive control ----------------------------------------------------------------------
@pytest.mark.parametrize("case, top, star, verdict", [
    ("reproduces", (40, 0.55, 0.40, 0.69), (0.18, 0.10, 0.04, 0.16), F.REPRODUCED),
    ("fails", (40, 0.0, 0.0, 0.09), (0.18, 0.10, 0.04, 0.16), F.NOT_REPRODUCED),   # the top bucket's CI lies below the bottom's
    ("floor", (40, 0.55, 0.40, 0.69), (0.0, 0.0, 0.0, 0.0), F.INCONCLUSIVE),       # no arm passes a sample
])
def test_calibration(tmp_path, case, top, star, verdict):
    f, B = tmp_path / "h200_calibration_v2", ["0", "≤¼", "¼–½", "½–¾", "¾–90%", "90%–all-but-one", "all"]
    n, rate, lo, hi = top
    write_table(f, "hill", pd.DataFrame(dict(bucket=B, programs=[700, 5, 5, 5, 5, 5, n], pass_rate=[0.2] + [np.nan] * 5 + [rate],
                                             wilson_lo=[0.17] + [np.nan] * 5 + [lo], wilson_hi=[0.23] + [np.nan] * 5 + [hi])))
    pr, gain, glo, ghi = star
    write_table(f, "primary", pd.DataFrame(dict(arm=["resample", "star"], pass_rate=[0.08 if pr else 0.0, pr], gain=[0.0, gain],
                                                gain_lo=[0.0, glo], gain_hi=[0.0, ghi], bar=0.0)))
    write_json(f, "config", dict(kind="calibration", n_bundles=24, bar=0.0))
    r = row(tmp_path, 9)
    assert r["verdict"] == verdict, r
    assert r["source"] == "h200_calibration_v2", r                           # the resized control is read before the first one


def test_nothing_run_says_which_folder(tmp_path):
    "A root without any of the campaign's folders: nine 'not run' rows, each naming its folder, no number anywhere."
    (tmp_path / "other").mkdir(); write_json(tmp_path / "other", "config", dict(kind="theory"))
    t = F.findings_table(tmp_path, n_boot=N_BOOT)
    assert list(t["#"]) == list(range(1, 10)) and list(t.columns) == F.COLUMNS
    assert set(t.verdict) == {F.NOT_RUN}, t.verdict
    assert (t.project == "").all() and (t.source == "").all()
    for i, folder in enumerate(["campaign_eval", "campaign_eval", "campaign_iguana", "campaign_iguana", "campaign_eval",
                                "campaign_bc_sort", "campaign_card_eval with arm bc_card", "campaign_breakeven_iguana", "campaign_calibration"], 1):
        assert folder in t.decides[i - 1], (i, t.decides[i - 1])
    assert F.findings_table(tmp_path, F.JOB, which=[1]).decides[0].startswith("needs eval ")


def test_bad_finding_number(tmp_path):
    with pytest.raises(ValueError, match=r"finding numbers run 1..9; got \[10\]"): F.findings_table(tmp_path, which=[10])


def test_site_overview_leads_with_the_table(tmp_path):
    "The built site's index.html opens with the findings table read from the published folders the results hold (seed 8)."
    from proposal_nb.site.build import build_site
    spec = {"base": ("base", 0.4, 0.5, True), "iguana-step-250": ("iguana", 0.8, 0.5, True)}
    write_eval(tmp_path / "pub" / "campaign_eval", draws_for(spec, 60, seed=8))
    (tmp_path / "res").mkdir()
    html = build_site(tmp_path / "res", tmp_path / "site", published=[tmp_path / "pub"])[0].read_text()
    assert html.index("<h2>Published runs (1)</h2>") < html.index("<h2>Findings of the published runs</h2>")
    body = html[html.index("<h2>Findings of the published runs</h2>"):]
    body = body[:body.index("</table>")]
    assert body.count("<tr") == 10, body                                      # header + nine findings
    assert "iguana-step-250 − base: validity +" in body and ">reproduced<" in body and ">not run<" in body


def test_anchor_prefers_the_strict_pair(tmp_path):
    "With both pairs run, finding 3 reads the strict-potential arms and Z under strict (30 prompts, 12 at Z = 0 under strict "
    "only; seeds 5 and 6): the no-error pair, where no prompt is hard, would have called it inconclusive."
    z_strict, z_noerr = np.r_[np.zeros(12), np.full(18, 0.5)], np.full(30, 0.6)
    for arm, late, seed in (("iguana_strict", 0.0, 5), ("iguana_kl_strict", 0.3, 6), ("iguana", 0.0, 5), ("iguana_kl", 0.0, 6)):
        train_folder(tmp_path / f"campaign_{arm}", arm, training_draws(z_strict, np.where(z_strict == 0, late, 0.6), seed=seed))
    ids = [f"p{i:03d}" for i in range(30)]
    write_table(tmp_path / "h200_z_embedded", "z_table", pd.concat([pd.DataFrame(dict(prompt_id=ids, Z=z, C=z / 2, potential=p))
                                                                    for z, p in ((z_noerr, "no_error"), (z_strict, "strict"))]))
    write_json(tmp_path / "h200_z_embedded", "config", dict(kind="zx"))
    r = row(tmp_path, 3)
    assert r["verdict"] == F.REPRODUCED and r["project"].startswith("12 of 30 training prompts at Z ≤ 0.1 under strict"), r
    assert r["source"].startswith("campaign_iguana_strict, campaign_iguana_kl_strict"), r


def test_calibration_need_beyond_the_task_pool(tmp_path):
    "v2's shape: 38 bundles of one easy function, a gain too small to decide; the size it would need exceeds the pool."
    f, B = tmp_path / "h200_calibration_v2", ["0", "all"]
    write_table(f, "hill", pd.DataFrame(dict(bucket=B, programs=[1289, 535], pass_rate=[0.031, 0.828], wilson_lo=[0.023, 0.794],
                                             wilson_hi=[0.042, 0.858])))
    write_table(f, "primary", pd.DataFrame(dict(arm=["resample", "star"], pass_rate=[0.294, 0.270], gain=[0.0, -0.024],
                                                gain_lo=[0.0, -0.094], gain_hi=[0.0, 0.042], bar=0.0)))
    write_json(f, "config", dict(kind="calibration", n_bundles=38, bar=0.0, bundle_size=1, difficulties=["easy"], task_set="embedded"))
    from proposal_nb.programs.grading import calibration_pool
    r = row(tmp_path, 9, task_pool=calibration_pool)                   # the caller (the site) knows the task pools
    assert r["verdict"] == F.INCONCLUSIVE and "more than the 38 disjoint bundles its task pool holds (easy, size 1)" in r["decides"], r
    assert "task pool" not in row(tmp_path, 9)["decides"]                # no pool given: the verdict alone


def test_rows_that_weigh_by_p_over_q_read_the_fp32_arms_first(tmp_path):
    # row 5 weighs draws by p/q: with campaign_fp32_eval (base_fp32, iguana_fp32) present it reads there and names it, without
    # the failed check's note (that check is of the bf16 weights); row 1 counts draws and keeps reading campaign_eval
    from proposal_nb.results import write_json
    write_eval(tmp_path / "campaign_eval", draws_for({"base": ("base", 0.4, 0.5, True), "iguana-step-250": ("iguana", 0.6, 0.5, True)}, 10, seed=3))
    write_json(tmp_path / "campaign_weight_check", "config", dict(kind="weight_check"))
    write_json(tmp_path / "campaign_weight_check", "summary", dict(training_windows=4, training_windows_above_1=3))
    assert row(tmp_path, 5)["project"].startswith("iguana-step-250: wacc") and "weights fail" in row(tmp_path, 5)["decides"]
    write_eval(tmp_path / "campaign_fp32_eval", draws_for({"base_fp32": ("base_fp32", 0.4, 0.5, True),
                                                          "iguana_fp32-step-250": ("iguana_fp32", 0.7, 0.5, True)}, 10, seed=4))
    r = row(tmp_path, 5)
    assert r["project"].startswith("iguana_fp32-step-250: wacc") and "Δ wacc vs base_fp32" in r["project"], r
    assert r["decides"].endswith("read on the fp32 arms (campaign_fp32_plan)") and "weights fail" not in r["decides"] and r["source"] == "campaign_fp32_eval"
    assert row(tmp_path, 1)["project"].startswith("iguana-step-250 − base"), row(tmp_path, 1)
    assert F.findings_table(tmp_path, F.PUBLISHED._replace(exact=None), which=[5], n_boot=N_BOOT).iloc[0].project.startswith("iguana-step-250")   # no exact sources: never


def test_rows_that_weigh_by_p_over_q_name_a_failed_weight_check(tmp_path):
    # row 5 weighs draws by p/q, row 1 counts them: only row 5 carries the note, and only while the check has failed
    spec = {"base": ("base", 0.4, 0.5, True), "iguana-step-250": ("iguana", 0.6, 0.5, True)}
    write_eval(tmp_path / "campaign_eval", draws_for(spec, 10, seed=3))
    assert "weights fail" not in row(tmp_path, 5)["decides"]                      # no check published: no note
    write_json(tmp_path / "campaign_weight_check", "config", dict(kind="weight_check"))
    write_json(tmp_path / "campaign_weight_check", "summary", dict(training_windows=4, training_windows_above_1=3))
    assert row(tmp_path, 5)["decides"].endswith("read with care: the weights fail E_q[p/q] = 1 in 3 of 4 training windows (campaign_weight_check)")
    assert "weights fail" not in row(tmp_path, 1)["decides"]
    write_json(tmp_path / "campaign_weight_check", "summary", dict(training_windows=4, training_windows_above_1=3,
               dtype_verdict="bf16 inflates p/q and fp32 reads 1: the IS-weighted numbers need fp32 re-runs"))
    assert row(tmp_path, 5)["decides"].endswith("training windows (campaign_weight_check); bf16 is the cause (fp32 reads 1): this number needs an fp32 re-run")
    write_json(tmp_path / "campaign_weight_check", "summary", dict(training_windows=6, training_windows_above_1=3,
               by_dtype=dict(bf16=dict(training_windows=4, training_windows_above_1=3), fp32=dict(training_windows=2, training_windows_above_1=0))))
    assert "fail E_q[p/q] = 1 in 3 of 4 training windows" in row(tmp_path, 5)["decides"]   # split by dtype: the bf16 arms' count
    write_json(tmp_path / "campaign_weight_check", "summary", dict(training_windows=4, training_windows_above_1=0))
    assert "weights fail" not in row(tmp_path, 5)["decides"]                      # a check that passed says nothing
    assert "weights fail" not in row(tmp_path, 5, F.JOB)["decides"]               # the CPU job's sources name no check


# issue 39: intervals over training runs, power at 80%, and what no size decides ------------------------------------
def test_several_training_runs_widen_the_interval(tmp_path):
    "Three runs of iguana (validity 0.70, 0.75, 0.80) told apart by per_prompt's `replicate` column, 40 prompts, seed 11: row 1's"
    " validity gain is intervals.replicate_ci over the runs and prompts, recomputed here from per_prompt.csv, and the row says so."
    from proposal_nb.analysis.intervals import replicate_ci
    runs = {"iguana-step-250": 0.70, "iguana_s2-step-250": 0.75, "iguana_s3-step-250": 0.80}
    spec = {"base": ("base", 0.4, 0.5, True)} | {ck: ("iguana", v, 0.5, True) for ck, v in runs.items()}
    f = write_eval(tmp_path / "campaign_eval", draws_for(spec, 40, seed=11))
    one = row(tmp_path, 1)
    assert "training runs" not in one["project"] and one["decides"].endswith("interval over one training run per arm"), one
    pp = pd.read_csv(f / "per_prompt.csv")
    write_table(f, "per_prompt", pp.assign(replicate=pp.checkpoint.map({"base": 0, **{ck: i for i, ck in enumerate(runs)}})))
    r = row(tmp_path, 1)
    assert r["project"].split(" − base: validity +")[0] in runs and "(over 3 training runs)" in r["project"], r   # one run's name, for all
    assert r["decides"].endswith("intervals over 3 training runs per arm and the prompts"), r
    w = pp.pivot(index="prompt_id", columns="checkpoint", values="validity")
    want = replicate_ci(w[["base"]].to_numpy().T, w[list(runs)].to_numpy().T, "t")
    got = F.compare(F.eval_tables(tmp_path, F.PUBLISHED), "base", "iguana-step-250", "validity")
    assert (got.est, got.lo, got.hi, got.runs, got.method) == pytest.approx((want.est, want.lo, want.hi, 3, "replicates")), (got, want)
    single = F.compare(F.eval_tables(tmp_path, F.PUBLISHED), "base", "iguana_s2-step-250", "validity", "gain")
    assert single.runs == 3                                                   # any run's name stands for all of them


def test_skyline_gain_untestable_without_headroom(tmp_path):
    "Base validity 0.9 (a run of 10 lacks a valid draw with probability 1e-10): the base's wacc is s(x) on every run, the headroom is"
    " 0, and the gain part reads 'untestable here' with that reason instead of a size (30 prompts, seed 12)."
    spec = {"base": ("base", 0.9, 0.5, True), "iguana-step-250": ("iguana", 0.95, 0.5, True)}
    write_eval(tmp_path / "campaign_eval", draws_for(spec, 30, seed=12))
    r = row(tmp_path, 5)
    assert r["verdict"] == F.INCONCLUSIVE and "; the base's headroom 0.0000" in r["project"], r
    assert r["decides"].startswith("untestable here: the wacc gain over base is 0 by construction"), r


def test_decides_states_power_pools_and_runs():
    c = lambda need, note="": F.Call(F.INCONCLUSIVE, need, note)
    assert F._decides(c(60), "held-out prompts", 1) == "≈ 60 held-out prompts at 80% power; interval over one training run per arm"
    assert "more than the 84 easy and medium tasks" in F._decides(c(100), "held-out prompts")
    assert F._decides(c(200), "held-out prompts") == "untestable here: 80% power needs ≈ 200 held-out prompts, more than the 124 tasks of the embedded set"
    assert F._decides(c(200), "bundles") == "≈ 200 bundles at 80% power"                       # the embedded set bounds prompts only
    assert F._decides(F.untestable("why"), "held-out prompts", 3) == "untestable here: why; intervals over 3 training runs per arm and the prompts"
    assert F._decides(c(None), "held-out prompts") == "no size (the estimate sits on the boundary)"
    assert F._decides(F.Call(F.REPRODUCED), "batches", None) == ""


def test_power_sizes_are_the_decides_column(tmp_path):
    "power_sizes lists the held-out sizes the inconclusive rows name (seed 0, 3 prompts: row 1's validity gain cannot clear 0)."
    d = draws_for({"base": ("base", 0.4, 0.5, True), "iguana-step-250": ("iguana", 0.45, 0.5, True)}, 3, seed=0)
    write_eval(tmp_path / "campaign_eval", d)
    sizes, r = F.power_sizes(tmp_path, n_boot=N_BOOT), row(tmp_path, 1)
    assert sizes and f"≈ {sizes[-1]:,} held-out prompts" in r["decides"], (sizes, r)
