"""The swarm control's pre-registration (published/h200_swarm_control_plan, scripts/plan_swarm_control.py): today's data and
code pick the same tasks, and the run notebook takes every parameter the plan fixes."""
import ast, json, subprocess, sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "published" / "h200_swarm_control_plan" / "preregistration.json"


def test_the_plan_picks_the_same_tasks_today(tmp_path):
    r = subprocess.run([sys.executable, "scripts/plan_swarm_control.py", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    now, saved = json.loads((tmp_path / "preregistration.json").read_text()), json.loads(PLAN.read_text())
    assert now["task_ids"] == saved["task_ids"] and now["run"] == saved["run"] and now["seeds"] == saved["seeds"]
    assert saved["run"]["n_bundles"] == len(saved["task_ids"]) == saved["data"]["kept"] > 0


def test_the_notebook_takes_the_plans_parameters():
    nb = nbformat.read(ROOT / "nbs" / "runs" / "30_calibration.ipynb", as_version=4)
    src = next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    names = {n.target.id for n in ast.parse(src).body if isinstance(n, ast.AnnAssign)}
    saved = json.loads(PLAN.read_text())
    assert set(saved["run"]) | {"task_ids", "seed"} <= names
    from proposal_nb.programs.tasks import load_embedded
    assert set(saved["task_ids"]) <= {t.id for t in load_embedded()}


def test_the_params_file_is_the_plans_run():
    "nbs/runs/params/swarm_control.yaml (a user's one command for a seed) holds exactly the plan's run parameters and task ids."
    import yaml
    plan = json.loads(PLAN.read_text())
    params = yaml.safe_load((ROOT / "nbs" / "runs" / "params" / "swarm_control.yaml").read_text())
    assert params.pop("notebook") == "30_calibration.ipynb" and params == plan["run"] | dict(task_ids=plan["task_ids"])
