"""The fp32 arms of the campaign (proposal_nb.pipeline.campaign_job) (fixed after the weight check: bf16 inflates p/q, fp32 reads 1) on CPU with a tiny random
model: each copies its bf16 arm's settings exactly, the CLI runs it in fp32, its reference is base_fp32 (the base arm's held-out
draws drawn in fp32), and the report writes its evaluation apart from campaign_eval."""
import json

import pytest

from proposal_nb.pipeline import campaign_cli
from test_campaign_strict import BEFORE, C, R, ROOT, flat, tiny_path   # noqa: F401 (tiny_path is a fixture)


def test_fp32_arms_copy_their_bf16_arm():
    assert set(C.FP32_ARMS) == {f"{a}_fp32" for a in C.ARMS}
    for a, (src, why) in C.FP32_ARMS.items():
        assert flat(C.arm_config(a).to_dict()) == BEFORE[src], a                  # the same settings; only the dtype differs
        assert (C.arm_dtype(a), C.reference(a), C.train_potential(a)) == ("float32", "base_fp32", "no_error")
        assert why.endswith(", in fp32") and a.removesuffix("_fp32") == src
    assert C.arm_dtype("base_fp32") == "float32"
    assert all(C.arm_dtype(a) is None for a in [*C.ARMS, *C.STRICT_ARMS, "base"])   # the bf16 campaign is untouched


@pytest.fixture(scope="module")
def fp32_runs(tmp_path_factory, tiny_path):
    "base, base_fp32, iguana and iguana_fp32 (through the CLI) trained 2 steps with held-out checkpoints, on 3 + 2 prompts; the dtypes asked."
    from proposal_nb.lm import models
    runs, asked, real = tmp_path_factory.mktemp("runs"), [], models.load_model
    tr, ho = C._tasks()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(C, "_tasks", lambda: (tr[:3], ho[:2]))
        for k, v in dict(R=1, M=3, batch_size=8).items(): mp.setitem(C.EVAL, k, v)
        mp.setitem(C.SHARED, "max_new_tokens", 8)
        mp.setattr(models, "load_model", lambda path, dtype=None, **kw: asked.append(dtype) or real(path, dtype=dtype, **kw))
        campaign_cli.main(["base", str(runs), "--model", tiny_path])
        campaign_cli.main(["base-fp32", str(runs), "--model", tiny_path])
        for arm in ("iguana", "iguana_fp32"):
            campaign_cli.main(["train", arm, str(runs), "--model", tiny_path, "--deadline-s", "1e9",
                    *(f"--set={k}={v}" for k, v in dict(M=2, prompts_per_step=2, max_new_tokens=8, steps=2).items())])
    return runs, asked


def test_the_cli_runs_fp32_arms_and_base_fp32_in_fp32(fp32_runs):
    runs, asked = fp32_runs
    assert asked == [None, "float32", None, "float32"]                             # base, base_fp32, iguana, iguana_fp32
    led = lambda a: json.loads((runs / a / "ledger.jsonl").read_text().splitlines()[-1])
    assert led("iguana_fp32")["dtype"] == led("base_fp32")["dtype"] == "float32" and led("iguana_fp32")["end_step"] == 2
    assert led("base_fp32")["arm"] == "base_fp32" and len(list((runs / "iguana_fp32" / "heldout").glob("step-*_prior.parquet"))) == 2


def test_report_keeps_the_fp32_evaluation_apart(fp32_runs, tmp_path):
    import pandas as pd
    from proposal_nb.results import read_table
    runs, _ = fp32_runs
    R.report(runs, tmp_path, n_boot=50)
    cfg = {k: json.loads((tmp_path / k / "config.json").read_text()) for k in ("campaign_eval", "campaign_fp32_eval", "campaign_iguana_fp32")}
    assert cfg["campaign_eval"]["checkpoints"] == ["base", "iguana-step-1", "iguana-step-2"]
    assert cfg["campaign_fp32_eval"]["checkpoints"] == ["base_fp32", "iguana_fp32-step-1", "iguana_fp32-step-2"]
    assert set(cfg["campaign_fp32_eval"]["gpu_minutes"]) == {"base_fp32", "iguana_fp32"} and not any(a.endswith("_fp32") for a in cfg["campaign_eval"]["gpu_minutes"])
    assert "fp32" in cfg["campaign_fp32_eval"]["machine"] and "bf16" in cfg["campaign_eval"]["machine"]
    assert "fp32" in cfg["campaign_iguana_fp32"]["machine"] and cfg["campaign_iguana_fp32"]["user_command"] == C.FP32_COMMAND
    d = read_table(tmp_path / "campaign_fp32_eval", "draws")
    base = pd.read_parquet(runs / "base_fp32" / "heldout_draws.parquet")
    assert list(d[d.checkpoint == "base_fp32"].text_hash) == list(base.text_hash)    # the reference is base_fp32's own draws
    assert set(read_table(tmp_path / "campaign_fp32_eval", "summary").query("checkpoint == 'base_fp32'").step) == {0}   # 'fp32' names no step


def test_analysis_reads_the_fp32_side_against_base_fp32(fp32_runs, tmp_path, monkeypatch):
    # analysis.campaign.run_analyses on the report of the tiny runs: the fp32 arm gets its break-even and bins from campaign_fp32_eval
    # against base_fp32, the bf16 arm from campaign_eval against base; each folder's machine names its dtype
    import shutil
    from proposal_nb.results import read_json
    import proposal_nb.analysis.campaign as ca
    runs, _ = fp32_runs
    R.report(runs, tmp_path, n_boot=50)
    shutil.copytree(ROOT / "published" / ca.ZX, tmp_path / ca.ZX)
    import proposal_nb.analysis.campaign_zbins as cz
    monkeypatch.setattr(cz, "WINDOW", 2); monkeypatch.setattr(cz, "WINDOW_M", 2)   # one training window: the 2 steps
    ca.run_analyses(tmp_path, n_boot=50)
    for arm, dt in (("iguana", "bf16"), ("iguana_fp32", "fp32")):
        be = read_json(tmp_path / f"campaign_breakeven_{arm}", "config")
        assert be["machine"].endswith(f"(one NVIDIA H200, {dt})"), be["machine"]
        assert read_json(tmp_path / f"campaign_breakeven_{arm}", "summary")["checkpoints"] == [f"{arm}-step-1", f"{arm}-step-2"]
        ev, ref = ("campaign_fp32_eval", "base_fp32") if dt == "fp32" else ("campaign_eval", "base")
        assert be["base_checkpoints"] == [ref] and be["source"]["rates"] == f"{ev}/draws.parquet (checkpoint {ref})"   # the README names them too
        assert f"`{ev}`, checkpoint `{ref}`" in (tmp_path / f"campaign_breakeven_{arm}" / "README.md").read_text()
    z = read_json(tmp_path / "campaign_fp32_zbins", "config")
    assert z["arms"] == ["iguana_fp32"] and z["view"] == dict(ev="campaign_fp32_eval", ref="base_fp32", potential="no_error")
    assert read_json(tmp_path / "campaign_zbins", "config")["arms"] == ["iguana"]


def test_plan_fp32_needs_a_check_that_calls_for_it(tmp_path):
    from proposal_nb.results import write_json
    check = {dt: dict(n=1920, mean_ratio=m, se=se, z=(m - 1) / se, sd_log=0.5) for dt, m, se in (("bfloat16", 1.24, 0.035), ("float32", 1.015, 0.015))}
    write_json(tmp_path / "wc", "summary", dict(dtype_check=check, dtype_verdict="bf16 inflates p/q and fp32 reads 1: re-run"))
    doc = R.plan_fp32(tmp_path / "plan", tmp_path / "wc")
    assert set(doc["arms"]) == set(C.FP32_ARMS) and doc["arms"]["iguana_fp32"]["checkpoints"] == [4, 16, 63, 250]
    assert doc["arms"]["msc_m2_fp32"]["checkpoints"] == [6, 35, 210, 1250] and doc["why"]["check"]["float32"]["mean_ratio"] == 1.015
    assert doc["card"]["arm"] == "bc_card_fp32" and doc["card"]["references"] == ["base_card_fp32", "base_fp32"]
    assert json.loads((tmp_path / "plan" / "campaign_fp32.json").read_text()) == json.loads(json.dumps(doc))   # tuples read back as lists
    for verdict in ("both read 1 within 2 SE: ...", None):
        write_json(tmp_path / "wc", "summary", dict(dtype_check=check, dtype_verdict=verdict))
        with pytest.raises(SystemExit, match="does not call for fp32"): R.plan_fp32(tmp_path / "plan", tmp_path / "wc")
