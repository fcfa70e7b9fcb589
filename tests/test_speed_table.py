"""scripts/speed_table.py: the committed published/speed_table is what the script reads from the published folders now (a
number edited in the table, or a source file changed, fails here), and rows of each kind of reader hold the value read here
independently from their source file."""
import csv, json, subprocess, sys
from pathlib import Path
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PUB = ROOT / "published"


def test_committed_table_is_the_scripts_reading(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "speed_table.py"), str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("table.csv", "README.md"):
        assert (tmp_path / name).read_text() == (PUB / "speed_table" / name).read_text(), name
    assert json.loads((tmp_path / "config.json").read_text())["user_command"].startswith(".venv/bin/python scripts/speed_table.py")


def test_rows_hold_their_sources_values():
    rows = list(csv.DictReader(open(PUB / "speed_table" / "table.csv")))
    def row(figure, source, what): return next(r for r in rows if figure in r["figure"] and (r["source"], r["what"]) == (source, what))
    g4 = lambda x: float(f"{x:.4g}")                                      # the table's four significant digits
    bench = json.loads((PUB / "cpu_loop_vs_trl_bf16" / "bench_cpu_trl.json").read_text())
    r = row("per sample", "cpu_loop_vs_trl_bf16/bench_cpu_trl.json", "bf16 both sides, fixed-shape log p")
    assert float(r["value"]) == g4(bench["ours_over_trl_per_sample_s"]) and (r["target"], r["meets"]) == ("<= 0.5", "yes")
    assert "exit 0 secs 1159" in (PUB / "cpu_main_job_bf16" / "fresh_clone_console.txt").read_text()
    assert float(row("with set-up", "cpu_main_job_bf16/fresh_clone_console.txt", "40 steps per arm, 25 x 12 held-out draws")["value"]) == 1159
    p = pd.read_csv(PUB / "cpu_main_job_fixed_shape" / "fresh_clone_af6b89f_eval_paired.csv").query("a == 'base' and metric == 'validity'").set_index("b")
    for arm, fig in (("iguana", "IGUANA - base"), ("msc", "MSC - base")):
        r = row(fig, "cpu_main_job_fixed_shape/fresh_clone_af6b89f_eval_paired.csv", "25 prompts x 15 draws")
        assert float(r["value"]) == g4((p.hi[arm] - p.lo[arm]) / 2) and r["meets"] == "yes" and r["commit"] == "af6b89f"
    prof = json.loads((PUB / "h100_decode_profile_1p5b" / "profile_decode.json").read_text())
    r = row("decode step", "h100_decode_profile_1p5b/profile_decode.json", "floor: weights read once at the copy rate")
    assert float(r["value"]) == g4(prof["step_weight_bytes"] / prof["copy_gb_per_s"] / 1e6) == 1.036 and r["machine"] == "H100"
