"""nbs/runs/40_bench_gpu_step.ipynb's loop arms at several prompts a step, on the CPU with the tiny shape (about 6 s): an arm
of n prompts times n·M draws a step, keeps the one-prompt arm's name, reports its scoring + update MFU when every row ran
to the cap (None otherwise), and a bad count is refused before anything runs."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "nbs" / "runs" / "40_bench_gpu_step.ipynb"


def run(out, *params):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "exec_notebook.py"), str(NB), "sizes=tiny", "new_tokens=6",
                           "device=cpu", "arms=loop", "profile=False", "steps=2", f"out_dir={out}", *params],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_loop_arms_at_one_and_three_prompts_a_step(tmp_path):
    r = run(tmp_path, "loop_prompts=1,3")
    assert r.returncode == 0, r.stderr[-3000:]
    arms = json.loads((tmp_path / "bench.json").read_text())["sizes"]["tiny"]
    assert set(arms) == {"loop", "loop_p3"}
    for name, n in (("loop", 1), ("loop_p3", 3)):
        a = arms[name]
        assert a["prompts_per_step"] == n and a["timed_samples"] == 2 * n * 10       # 2 timed steps of n prompts x M = 10
        assert a["per_sample_total_s"] > 0 and a["mean_length"] <= 6
        assert a["rows_at_cap"] == (a["mean_length"] == 6)                         # 6 new tokens: every row at the cap
        assert (a["score_update_mfu"] > 0) if a["rows_at_cap"] else a["score_update_mfu"] is None


def test_bad_prompt_count_is_refused(tmp_path):
    r = run(tmp_path, "loop_prompts=0")
    assert r.returncode != 0 and "loop_prompts must list prompt counts >= 1" in r.stderr + r.stdout
    assert not (tmp_path / "bench.json").exists()
