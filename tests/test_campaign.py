"""proposal_nb.pipeline.campaign_job's pure pieces: the design read from nbs/runs/params/campaign against the published plans, the log-spaced
checkpoints (the GPU-minute attribution is tested in nbs/05_results)."""
import json
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
from proposal_nb.pipeline import campaign_job as campaign  # noqa: E402


def test_log_steps_are_log_spaced_and_end_at_the_budget():
    assert campaign.log_steps(250) == [4, 16, 63, 250]
    assert campaign.log_steps(1250) == [6, 35, 210, 1250]
    assert campaign.log_steps(1) == [1]


def test_chain_check_on_cpu_is_exact(tmp_path):
    "The chain check itself: four IGUANA steps unbroken, and in two processes with pack / unpack between them, are identical."
    from proposal_nb.lm.models import tiny_model
    m, tok = tiny_model(seed=0); m.save_pretrained(tmp_path / "m"); tok.save_pretrained(tmp_path / "m")
    sets = ("M=2", "prompts_per_step=2", "max_new_tokens=8")
    assert campaign.chain_check(tmp_path / "cc", str(tmp_path / "m"), steps=4, split_at=2, sets=sets)
    res = json.loads((tmp_path / "cc" / "chain_check.json").read_text())
    assert res == dict(arm="iguana", steps=4, split_at=2, identical=True, deterministic=True, gpu="cpu")
    ck = tmp_path / "cc" / "part2" / "iguana" / "checkpoints"
    steps = sorted(int(p.name.split("-")[1]) for p in ck.iterdir())
    assert steps[0] == 2 and steps[-1] == 4                                  # the second process resumed from the packed step 2


def test_pack_runs_keeps_tables_then_rollouts_then_unfinished_states(tmp_path):
    "Inside the limit: every small file, the rollouts an unfinished BC arm needs, then the states in turn; finished arms' states never."
    import tarfile
    r = tmp_path / "runs"
    def put(rel, mb=0.0, text=None):
        f = r / rel; f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text) if text is not None else f.write_bytes(bytes(int(mb * 2**20)))
    led = lambda end, steps: json.dumps(dict(end_step=end, steps=steps)) + "\n"
    put("rollouts/base.parquet", 1.0); put("rollouts/ledger.jsonl", text="{}\n")
    put("bc_spread/ledger.jsonl", text=led(5, 10)); put("bc_spread/checkpoints/step-5/trainer.pt", 1.0)
    put("msc_m2/ledger.jsonl", text=led(35, 1250)); put("msc_m2/checkpoints/step-6/trainer.pt", 1.0)
    put("msc_m2/checkpoints/step-35/trainer.pt", 1.0); put("msc_m2/log.parquet", 0.01)
    put("iguana/ledger.jsonl", text=led(250, 250)); put("iguana/checkpoints/step-250/trainer.pt", 1.0); put("iguana/heldout/x.parquet", 0.01)
    res = campaign.pack_runs(r, tmp_path / "p.tgz", limit_mb=2.5)
    names = set(tarfile.open(tmp_path / "p.tgz").getnames())
    assert {"rollouts/base.parquet", "msc_m2/log.parquet", "iguana/heldout/x.parquet", "bc_spread/checkpoints/step-5/trainer.pt"} <= names
    assert res["states"] == ["bc_spread/checkpoints/step-5", "msc_m2/checkpoints/step-35"] and res["left_out"] == ["msc_m2/checkpoints/step-35"]
    assert not any("iguana/checkpoints" in n or "step-6" in n for n in names)      # finished arm; older state
    put("bc_sort/ledger.jsonl", text=led(10, 10)); put("bc_spread/ledger.jsonl", text=led(10, 10))
    put("bc_spread/checkpoints/step-10/trainer.pt", 0.1)
    res = campaign.pack_runs(r, tmp_path / "q.tgz", limit_mb=2.5)               # both BC arms finished: their rollouts stay behind
    names = set(tarfile.open(tmp_path / "q.tgz").getnames())
    assert "rollouts/base.parquet" not in names and res["states"] == ["msc_m2/checkpoints/step-35"] and res["left_out"] == []


def test_skipped_since_counts_only_the_job_s_own_batches():
    # a resumed fit's log holds every batch so far; its ledger line counts the batches after the checkpoint it resumed from
    import pandas as pd
    log = pd.DataFrame(dict(step=range(1, 7), skipped=["", "grad", "", "grad", "logq", ""]))
    assert campaign.skipped_since(log, 0) == {"grad": 2, "logq": 1}
    assert campaign.skipped_since(log, 3) == {"grad": 1, "logq": 1}              # rows 4..6: one of each
    assert campaign.skipped_since(log, 6) == {} and campaign.skipped_since(log.iloc[:0], 0) == {}


def test_the_order_control_differs_from_bc_sort_only_in_its_order():
    from dataclasses import asdict
    sort, shuf = (asdict(campaign._bc_config(campaign.OFFLINE[a][0], None, campaign.BC_ORDER.get(a, "scheme"))) for a in ("bc_sort", "bc_sort_shuffled"))
    assert {k for k in sort if sort[k] != shuf[k]} == {"order"} and (sort["order"], shuf["order"]) == ("scheme", "shuffled")


PUB = ROOT / "published"


def test_the_design_files_are_the_design_that_ran():
    # the YAML design reproduces every plan document the campaign published before its arms ran
    plan = json.loads((PUB / "campaign_eval" / "config.json").read_text())["campaign"]
    assert campaign.SHARED == plan["shared"] and campaign.SPLIT == plan["split"]
    assert {k: campaign.WHY[k] for k in plan["why"]} == plan["why"]     # the strict pair's mu0 reason came later, with its plan
    for arm, a in plan["arms"].items():
        assert campaign.ARMS[arm] == (a["settings"], a["what"]), arm
        assert campaign.log_steps((campaign.SHARED | a["settings"])["steps"]) == a["checkpoints"], arm
    for arm, a in plan["offline"].items():
        assert campaign.OFFLINE[arm] == (a["scheme"], a["what"]) and a["rollouts"] == campaign.BC_DRAWS * 59, arm
    strict = json.loads((PUB / "campaign_strict_plan" / "campaign_strict.json").read_text())["design"]["arms"]
    assert {a: (v["copies"], v["what"]) for a, v in strict.items()} == campaign.STRICT_ARMS
    assert all(v["potential"] == campaign.STRICT["potential"] and v["settings"] == campaign.arm_settings(a) for a, v in strict.items())
    fp32 = json.loads((PUB / "campaign_fp32_plan" / "campaign_fp32.json").read_text())
    assert {a: (v["copies"], v["what"]) for a, v in fp32["arms"].items()} == {a: campaign.FP32_ARMS[a] for a in fp32["arms"]}
    assert all(v["settings"] == campaign.ARMS[v["copies"]][0] for v in fp32["arms"].values())
    assert fp32["shared"] == campaign.SHARED and fp32["split"] == campaign.SPLIT and fp32["eval"] == campaign.EVAL


def test_an_overlay_may_not_redefine_the_design(tmp_path):
    import shutil
    for f in campaign.DESIGN_FILES: shutil.copy(campaign.DESIGN_DIR / f, tmp_path / f)
    d = campaign.load_design(tmp_path)
    assert set(d["files"]) == set(campaign.DESIGN_FILES) and all(len(h) == 64 for h in d["files"].values())
    (tmp_path / "fp32.yaml").write_text((tmp_path / "fp32.yaml").read_text() + "shared: {M: 2}\n")
    with pytest.raises(ValueError, match=r"fp32.yaml redefines \['shared'\]"): campaign.load_design(tmp_path)


def test_pack_runs_keeps_a_finished_run_s_adapter(tmp_path):
    """A finished online run keeps its trained adapter only inside its last checkpoint: the pack carries that adapter (never
    the optimizer state), so a run finished in a job can be published. confirm_iguana_s2 (2026-12-04) lost its step-250
    adapter because the pack took no file of a finished run's checkpoints."""
    import tarfile
    r = tmp_path / "runs"
    def put(rel, text="x"):
        f = r / rel; f.parent.mkdir(parents=True, exist_ok=True); f.write_text(text)
    put("confirm_iguana_s2/ledger.jsonl", json.dumps(dict(end_step=250, steps=250)) + "\n")
    for s in (243, 250):
        put(f"confirm_iguana_s2/checkpoints/step-{s}/trainer.pt"); put(f"confirm_iguana_s2/checkpoints/step-{s}/adapter/adapter_model.safetensors")
    put("bc_card/ledger.jsonl", json.dumps(dict(end_step=3, steps=3)) + "\n"); put("bc_card/adapter/adapter_model.safetensors")
    put("bc_card/checkpoints/step-3/adapter/adapter_model.safetensors")         # an arm with its own adapter folder: nothing more
    res = campaign.pack_runs(r, tmp_path / "p.tgz")
    names = set(tarfile.open(tmp_path / "p.tgz").getnames())
    assert res["adapters"] == ["confirm_iguana_s2/checkpoints/step-250/adapter"] and res["states"] == []
    assert "confirm_iguana_s2/checkpoints/step-250/adapter/adapter_model.safetensors" in names
    assert not any(n.endswith("trainer.pt") or "step-243" in n or n.startswith("bc_card/checkpoints") for n in names)
