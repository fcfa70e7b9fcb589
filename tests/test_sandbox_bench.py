"""The sandbox benchmark (scripts/bench_sandbox.py, run as its command line) at a small size: the warm executor is at least
5x cheaper per program than a naive `python -c` subprocess for programs importing numpy and pandas, with identical verdicts."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_warm_executor_beats_naive_subprocess(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_sandbox.py"), "--trivial", "10", "--heavy", "4", "--repeats", "3",
                        "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    print(r.stdout)
    res = json.loads(out.read_text())
    rows = {r['programs']: r for r in res['rows']}
    assert all(r['identical_verdicts'] for r in res['rows'])
    # alone on 2 cores the ratio is 14.9-17.6 (published/cpu_grader); beside another pytest worker it once fell below 10
    assert rows['numpy+pandas']['speedup'] >= 5, rows['numpy+pandas']
    # trivial programs: beside another pytest worker the warm executor once read 30.7 ms against naive 28.9 ms for 10 of them
    # (fresh-clone CI of 2c4fb4f) and once 35.7 against 22.8 (CI of 7f602a0, one timing per path, load average 6.5), so
    # each path now keeps the fastest of 3 timings, and here it must only not be much slower; the claim rests on the
    # numpy+pandas row
    assert res['repeats'] == 3
    for r in res['rows']:                       # each path's figure is the fastest of its three timings
        for path, ms in r['timings_ms'].items():
            assert len(ms) == 3 and r[f'{path}_ms'] == min(ms), (r['programs'], path, ms)
    assert rows['trivial']['warm_ms'] < 1.5 * rows['trivial']['naive_ms'], rows['trivial']


def test_repeats_below_one_are_refused():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_sandbox.py"), "--trivial", "1", "--heavy", "1", "--repeats", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "repeats must be at least 1, got 0" in r.stderr, r.stderr[-2000:]
