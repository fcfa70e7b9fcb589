#!/usr/bin/env python
"""Ground-truth fuzz of the sandbox harness (issue 18). Programs are composed from a small grammar of endings; an
oracle derived from the same grammar gives each program's true verdict; hypothesis draws the programs from a seed.
Every program is graded serially and 8-way concurrently; a wrong verdict is a reason that differs from the oracle's,
a wrong "valid" is one the no-error potential would accept (ok or assertion) when the oracle does not.

The grammar, the oracle and the grading are proposal_nb.programs.hostile (nbs/21c_hostile.ipynb).

The same run also measures the checker's speed against a naive `python -c` (scripts/bench_sandbox.py), so the
verdicts and the speed come from one code state; `--no-speed` skips it.

Usage: .venv/bin/python scripts/bench_grader_fuzz.py [--n 1000] [--seed 18] [--no-speed] [--out results/bench_grader_fuzz.json]"""
import argparse, json, os, sys, time
from pathlib import Path

from proposal_nb.programs.hostile import check, sample, show

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--no-speed", action='store_true', help='skip the speed comparison with a naive python -c')
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    import hypothesis
    t0 = time.time()
    items = sample(a.n, a.seed)
    res = dict(seed=a.seed, hypothesis=hypothesis.__version__, cpus=os.cpu_count(), load_before=os.getloadavg()[0],
               **check(items))
    res['load_after'] = os.getloadavg()[0]
    show(res)
    if not a.no_speed:
        import bench_sandbox   # beside this file (scripts/ is the first entry of sys.path when it runs)
        res['speed'] = bench_sandbox.bench()
        bench_sandbox.show(res['speed'])
    res['seconds'] = time.time() - t0
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1, default=str))
    slow = 'speed' in res and any(r['programs'] == 'numpy+pandas' and r['speedup'] < 10 for r in res['speed']['rows'])
    sys.exit(1 if any(r['wrong'] for r in res['runs'].values()) or res['flips'] or slow else 0)
