#!/usr/bin/env python
"""Benchmark of proposal_nb.programs.sandbox: per-program cost of a naive `python -c` subprocess vs the executor (warm fork
server and cold interpreters) for (a) trivial programs and (b) programs importing numpy and pandas, the throughput
of the warm executor at concurrency 1 and 2, and a check that all paths give identical verdicts.

Usage: .venv/bin/python scripts/bench_sandbox.py [--trivial 40] [--heavy 20] [--out results/bench_sandbox.json]"""
import argparse, json, os, subprocess, sys, time
from pathlib import Path

from proposal_nb.programs.sandbox import Executor

TRIVIAL = 'xs = [i * i for i in range({i} + 100)]\nprint(sum(xs) % 97)\n'
HEAVY = '''import numpy as np
import pandas as pd
df = pd.DataFrame({{"k": np.arange(200) % 7, "v": np.arange(200) * {i}}})
result = df.groupby("k")["v"].sum()
print(int(result.max()))
'''


def naive(programs: list[str]) -> tuple[float, list[tuple[bool, str]]]:
    "Seconds per program and (ok, stdout) of each, running `python -c program` one after another."
    out, t0 = [], time.perf_counter()
    for p in programs:
        r = subprocess.run([sys.executable, '-c', p], capture_output=True, text=True, timeout=120)
        out.append((r.returncode == 0, r.stdout))
    return (time.perf_counter() - t0) / len(programs), out


def executor(programs: list[str], **kw) -> tuple[float, list[tuple[bool, str]]]:
    "Seconds per program (after the server is up) and (ok, stdout) of each."
    with Executor(cache=False, cpu_seconds=5, **kw) as ex:
        ex.run(['pass'])  # the server and its workers are up
        t0 = time.perf_counter()
        vs = ex.run(programs)
        dt = time.perf_counter() - t0
    return dt / len(programs), [(v.ok, v.stdout) for v in vs]


def bench(n_trivial: int = 40, n_heavy: int = 20) -> dict:
    "Run the whole benchmark; return its numbers."
    sets = {'trivial': [TRIVIAL.format(i=i) for i in range(n_trivial)], 'numpy+pandas': [HEAVY.format(i=i) for i in range(n_heavy)]}
    res = {'cpus': os.cpu_count(), 'load_before': os.getloadavg()[0], 'rows': []}
    for name, progs in sets.items():
        t_naive, v_naive = naive(progs)
        t_cold, v_cold = executor(progs, warm=False, workers=1)
        t_w1, v_w1 = executor(progs, workers=1)
        t_w2, v_w2 = executor(progs, workers=2)
        same = v_naive == v_cold == v_w1 == v_w2 and all(ok for ok, _ in v_naive)
        res['rows'].append(dict(programs=name, n=len(progs), naive_ms=1e3 * t_naive, cold_ms=1e3 * t_cold,
                                warm_ms=1e3 * t_w1, speedup=t_naive / t_w1, throughput_c1=1 / t_w1,
                                throughput_c2=1 / t_w2, identical_verdicts=same))
    res['load_after'] = os.getloadavg()[0]
    return res


def show(res: dict):
    print(f"machine: {res['cpus']} CPUs, load average {res['load_before']:.1f} -> {res['load_after']:.1f}")
    print(f"{'programs':>14} {'n':>4} {'naive python -c':>16} {'cold executor':>14} {'warm executor':>14} {'speedup':>8} "
          f"{'prog/s @1':>10} {'prog/s @2':>10} {'identical':>10}")
    for r in res['rows']:
        print(f"{r['programs']:>14} {r['n']:>4} {r['naive_ms']:>13.1f} ms {r['cold_ms']:>11.1f} ms {r['warm_ms']:>11.1f} ms "
              f"{r['speedup']:>7.1f}x {r['throughput_c1']:>10.1f} {r['throughput_c2']:>10.1f} {str(r['identical_verdicts']):>10}")


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--trivial', type=int, default=40)
    ap.add_argument('--heavy', type=int, default=20)
    ap.add_argument('--out', type=Path)
    a = ap.parse_args()
    res = bench(a.trivial, a.heavy)
    show(res)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1))
