#!/usr/bin/env python
"""The checker phase of the training loop, alone: seconds per sample to grade one step's batch (prompts_per_step x M
real completions of the embedded model) with a potential, as the loop calls it, on this machine's CPUs.

The completions come from a parquet with prompt_id and text (scripts/grader_differential.py --generate writes one);
each step draws its prompts and their completions with a seeded generator, so the batch holds the mix of right,
wrong and broken programs the model writes. The Executor has the loop's default limits and one worker per CPU; identical programs within a step are graded once
(as in the loop), none is carried across steps (the loop's cache would only make it faster).

Usage: .venv/bin/python scripts/bench_checker.py --draws published/grader_differential/completions.parquet [--steps 40]
       [--prompts 8] [--m 10] [--out results/bench_checker.json]"""
import argparse, json, os, time
from pathlib import Path

import numpy as np
import pandas as pd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument("--draws", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    from proposal_nb.programs.tasks import load_embedded
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    tasks = {t.id: t for t in load_embedded()}
    d = pd.read_parquet(a.draws)
    d = d[d.prompt_id.isin(tasks)]
    by = {k: list(g.text) for k, g in d.groupby('prompt_id')}
    ids = sorted(by)
    rng = np.random.default_rng(a.seed)
    res = dict(cpus=os.cpu_count(), steps=a.steps, prompts_per_step=a.prompts, M=a.m, rows=[])
    with Executor(cache=False) as ex:  # no verdict carried across steps (the loop's cache would only make it faster)
        ex.run(['pass'] * ex.workers)
        res['isolation'] = ex.isolation
        for kind in ('no_error', 'strict'):
            pot, secs, n, vals, steps = make_potential(kind, ex), [], 0, [], []
            for s in range(a.steps):
                ps = rng.choice(ids, a.prompts, replace=False); steps.append([str(p) for p in ps])
                ts = [tasks[p] for p in ps for _ in range(a.m)]
                cs = [by[p][rng.integers(len(by[p]))] for p in ps for _ in range(a.m)]
                t0 = time.perf_counter(); r = pot(ts, cs); secs.append(time.perf_counter() - t0)
                n += len(cs); vals += list(r)
            res['rows'].append(dict(potential=kind, s_per_sample=sum(secs) / n, s_per_step_median=float(np.median(secs)),
                                    mean_r=float(np.mean(vals)), samples=n,
                                    step_seconds=[round(x, 4) for x in secs], step_prompts=steps))  # a mean can be one slow program's: see which step
            print(f"{kind:>9}: {1e3 * sum(secs) / n:.3f} ms/sample, median step {1e3 * np.median(secs):.0f} ms, mean r {np.mean(vals):.2f}")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True); a.out.write_text(json.dumps(res, indent=1))


if __name__ == '__main__':
    main()
