"""The confirmatory campaign's pre-registration (issue 39): the design file is fixed before its runs return data, and the
job script runs its arms through scripts/confirm.py."""
import hashlib, subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DESIGN = REPO / "nbs" / "runs" / "params" / "confirm" / "design.yaml"
# The sha256 of design.yaml as committed before the first confirmatory job ran (2026-12-04). Changing the design after that
# is a new campaign, not an edit: give it a new file and say why in its header.
FIXED = "607b65bc76eb495fc1a8136264dd0debfcb7e4c3893f6669e7bf70dfe1bd5be9"


AMENDMENTS = {"amendment-1.yaml": "e8263a135afc4cf87570ca7b13f247a4552c67c8a30d0b879fe2050297eb1656"}   # each fixed when written; an amendment is a new file, never an edit


def test_design_is_the_preregistered_one():
    assert hashlib.sha256(DESIGN.read_bytes()).hexdigest() == FIXED, f"{DESIGN} changed after its runs began"
    for name, sha in AMENDMENTS.items():
        assert hashlib.sha256((DESIGN.parent / name).read_bytes()).hexdigest() == sha, f"{name} changed after it was fixed"
    assert sorted(p.name for p in DESIGN.parent.glob("amendment-*.yaml")) == sorted(AMENDMENTS), "an amendment is not pinned here"


def test_names_and_settings():
    from proposal_nb.pipeline.confirm_job import arm_names, arm_settings
    names = arm_names()
    assert len(names) == 15 and names[0] == "confirm_iguana_s1" and names[-1] == "confirm_rb_msc_m2_s3"
    draws = {n: (s := arm_settings(n))["steps"] * s["M"] * s["prompts_per_step"] for n in names}
    assert set(draws.values()) == {20_000}, draws          # every run: the published arms' 20,000 draws


def test_script_lists_the_runs():
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "confirm.py"), "names"], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:5] == ["confirm_iguana_s1", "confirm_msc_s1", "confirm_rb_msc_s1", "confirm_msc_m2_s1", "confirm_rb_msc_m2_s1"]


def test_next_call_on_the_command_line_drops_what_the_lease_cannot_hold(tmp_path):
    "2026-12-07's M = 2 pair after its first job on an H200 (115 and 112 of 250 steps), with 1,034 s of lease left."
    import json
    for n, end, s in (("m", 115, 475.3), ("r", 112, 475.0)):
        (tmp_path / n).mkdir()
        (tmp_path / n / "ledger.jsonl").write_text(json.dumps(dict(arm=n, steps=250, stopped=None, start_step=0, end_step=end, train_s=s)) + "\n")
    call = lambda *extra: json.loads(subprocess.run([sys.executable, str(REPO / "scripts" / "confirm.py"), "next-call", str(tmp_path), "m", "r",
                                                     *extra], capture_output=True, text=True, cwd=REPO, check=True).stdout)
    both, within = call(), call("--lease", "1034")
    assert both["lease_s"] == 1115 and "drop" not in both
    assert within["drop"] == ["r"] and within["command"] == "bash scripts/campaign_job.sh 595 m" and within["lease_s"] <= 1034
    sh = (REPO / "scripts" / "campaign_job.sh").read_text()          # the job passes the lease left after itself when the call sets LEASE_S
    assert "LEASE=${LEASE_S:+$(( LEASE_S - $(date +%s) + T0 - 20 ))}" in sh and "${LEASE:+--lease $LEASE}" in sh


def test_snapshot_script_makes_a_self_contained_source_for_the_jobs(tmp_path):
    "scripts/campaign_snapshot.sh: HEAD's package, scripts, designs, tasks, human_eval and base_confirm's draws; it runs from itself."
    import os
    snap = tmp_path / "src"
    r = subprocess.run(["bash", str(REPO / "scripts" / "campaign_snapshot.sh"), str(snap)], capture_output=True, text=True, cwd=REPO,
                       env=os.environ | {"PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr[-3000:]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    assert (snap / "COMMIT").read_text().strip() == head
    for f in ("campaign.py", "confirm.py", "proposal_nb/pipeline/confirm_job.py", "nbs/runs/params/confirm/design.yaml",
              "data/tasks", "human_eval/__init__.py", "runs/base_confirm/heldout_draws.parquet"):
        assert (snap / f).exists(), f
    env = os.environ | {"PYTHONPATH": str(snap)}                    # as on the device: the snapshot first on the path, elsewhere as cwd
    out = subprocess.run([sys.executable, "-c", "import proposal_nb, human_eval; print(proposal_nb.__file__, human_eval.__file__)"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0 and all(p.startswith(str(snap)) for p in out.stdout.split()), out.stdout + out.stderr
    names = subprocess.run([sys.executable, str(snap / "confirm.py"), "names"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert names.returncode == 0 and len(names.stdout.split()) == 15, names.stderr


def test_job_script_runs_confirm_arms_through_confirm_py():
    sh = (REPO / "scripts" / "campaign_job.sh").read_text()
    assert 'K="python3 .campaign/src/confirm.py"' in sh and "$K train $a $R" in sh and "$K base $R" in sh
    assert subprocess.run(["bash", "-n", str(REPO / "scripts" / "campaign_job.sh")]).returncode == 0
