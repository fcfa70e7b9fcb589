"""nbs/runs/40_bench_gpu_step.ipynb's loop arms at several prompts a step and with chunked scoring, on the CPU with the tiny
shape (about 15 s): an arm of n prompts times n·M draws a step, keeps the one-prompt arm's name, an arm `…_rK` runs with
loop.score_rows = K, every arm counts its scoring + update FLOPs at the draws' own lengths (no more than the count at the
cap, and equal to it exactly when every row ran to the cap), and a bad count is refused before anything runs."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "nbs" / "runs" / "40_bench_gpu_step.ipynb"


def run(out, *params):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "exec_notebook.py"), str(NB), "sizes=tiny", "new_tokens=6",
                           "device=cpu", "arms=loop", "profile=False", "steps=2", f"out_dir={out}", *params],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_loop_arms_at_one_and_three_prompts_a_step(tmp_path):
    r = run(tmp_path, "loop_prompts=1,3", "loop_score_rows=0,8")
    assert r.returncode == 0, r.stderr[-3000:]
    arms = json.loads((tmp_path / "bench.json").read_text())["sizes"]["tiny"]
    assert set(arms) == {"loop", "loop_r8", "loop_p3", "loop_p3_r8"}
    for name, n, k in (("loop", 1, None), ("loop_r8", 1, 8), ("loop_p3", 3, None), ("loop_p3_r8", 3, 8)):
        a = arms[name]
        assert a["prompts_per_step"] == n and a["timed_samples"] == 2 * n * 10       # 2 timed steps of n prompts x M = 10
        assert a["score_rows"] == k                                                  # the run's own loop.score_rows
        assert a["per_sample_total_s"] > 0 and a["mean_length"] <= 6
        assert a["rows_at_cap"] == (a["mean_length"] == 6)                         # 6 new tokens: every row at the cap
        flops, cap = a["score_update_flops"], a["score_update_flops_at_cap"]
        assert 0 < flops <= cap * (1 + 1e-12) and (abs(flops - cap) <= 1e-9 * cap) == a["rows_at_cap"], (name, flops, cap)
        assert a["score_update_mfu"] > 0


def test_bad_score_rows_are_refused(tmp_path):
    r = run(tmp_path, "loop_score_rows=-1")
    assert r.returncode != 0 and "loop_score_rows must list row counts >= 0" in r.stderr + r.stdout
    assert not (tmp_path / "bench.json").exists()


def test_bad_prompt_count_is_refused(tmp_path):
    r = run(tmp_path, "loop_prompts=0")
    assert r.returncode != 0 and "loop_prompts must list prompt counts >= 1" in r.stderr + r.stdout
    assert not (tmp_path / "bench.json").exists()
