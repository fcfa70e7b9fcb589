"""The sandbox benchmark (scripts/bench_sandbox.py, run as its command line) at a small size: the warm executor is at least
5x cheaper per program than a naive `python -c` subprocess for programs importing numpy and pandas, with identical verdicts."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_warm_executor_beats_naive_subprocess(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_sandbox.py"), "--trivial", "10", "--heavy", "8", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    print(r.stdout)
    res = json.loads(out.read_text())
    rows = {r['programs']: r for r in res['rows']}
    assert all(r['identical_verdicts'] for r in res['rows'])
    # alone on 2 cores the ratio is 14.9-17.6 (published/cpu_grader); beside another pytest worker it once fell below 10
    assert rows['numpy+pandas']['speedup'] >= 5, rows['numpy+pandas']
    # trivial programs: beside another pytest worker the warm executor once read 30.7 ms against naive 28.9 ms for 10 of them
    # (fresh-clone CI of 2c4fb4f), so here it must only not be much slower; the claim rests on the numpy+pandas row
    assert rows['trivial']['warm_ms'] < 1.5 * rows['trivial']['naive_ms'], rows['trivial']
