#!/usr/bin/env python
"""Benchmark of proposal_nb.programs.sandbox: per-program cost of a naive `python -c` subprocess vs the executor (warm fork
server and cold interpreters) for (a) trivial programs, (b) programs importing numpy and pandas, (c) function programs
with three tests each (judged in the trusted judge; naive: the tests appended to the program in one `python -c`), and
(d) stdio programs with five tests each (each test its own process; naive: `python -c prog < input` per test); the
throughput of the warm executor at concurrency 1, 2 and the machine's CPU count, and a check that all paths give
identical verdicts. With `--repeats n` each path is timed n times and its fastest time kept (the least disturbed by other
work on the machine); every repeat's verdicts must agree.

Usage: .venv/bin/python scripts/bench_sandbox.py [--trivial 40] [--heavy 20] [--repeats 1] [--out results/bench_sandbox.json]"""
import argparse, json, os, subprocess, sys, time
from pathlib import Path

from proposal_nb.programs.sandbox import Executor, IOCase

TRIVIAL = 'xs = [i * i for i in range({i} + 100)]\nprint(sum(xs) % 97)\n'
HEAVY = '''import numpy as np
import pandas as pd
df = pd.DataFrame({{"k": np.arange(200) % 7, "v": np.arange(200) * {i}}})
result = df.groupby("k")["v"].sum()
print(int(result.max()))
'''


FUNCTION = 'def f{i}(x):\n    return sorted(x)[::-1][:{k}]\nf = f{i}\n'
FUNCTION_TESTS = ('assert f([3, 1, 2]) == [3, 2, 1][:{k}]', 'assert f([]) == []', 'assert f(list(range(50))) == list(range(49, -1, -1))[:{k}]')
STDIO = 'import sys\nxs = list(map(int, sys.stdin.read().split()))\nprint(sum(xs) + {i} - {i})\n'
STDIO_CASES = tuple(IOCase(' '.join(map(str, range(j, j + 10))) + '\n', str(sum(range(j, j + 10))) + '\n') for j in range(5))


def naive(programs: list[str], tests=None) -> tuple[float, list[tuple[bool, str]]]:
    "Seconds per program and (ok, stdout) of each, running `python -c program` one after another (stdio: once per test)."
    out, t0 = [], time.perf_counter()
    for i, p in enumerate(programs):
        ts = tests[i] if tests else ()
        if ts and isinstance(ts[0], IOCase):
            rs = [subprocess.run([sys.executable, '-c', p], input=c.input, capture_output=True, text=True, timeout=120) for c in ts]
            out.append((all(r.returncode == 0 and r.stdout.split() == c.output.split() for r, c in zip(rs, ts)), ''))
            continue
        r = subprocess.run([sys.executable, '-c', p + '\n' + '\n'.join(ts)], capture_output=True, text=True, timeout=120)
        out.append((r.returncode == 0, r.stdout if not ts else ''))
    return (time.perf_counter() - t0) / len(programs), out


def executor(programs: list[str], tests=None, **kw) -> tuple[float, list[tuple[bool, str]]]:
    "Seconds per program (after the server is up) and (ok, stdout) of each."
    with Executor(cache=False, cpu_seconds=5, **kw) as ex:
        ex.run(['pass'] * ex.workers)  # the server and its workers are up
        t0 = time.perf_counter()
        vs = ex.run(programs, tests)
        dt = time.perf_counter() - t0
    return dt / len(programs), [(v.ok, v.stdout if not tests else '') for v in vs]


def fastest(path, repeats: int, *args, **kw) -> tuple[float, list[tuple[bool, str]] | None, list[float]]:
    "The fastest of `repeats` timings of `path(*args, **kw)`, its verdicts (None if the repeats' differ), and every timing."
    runs = [path(*args, **kw) for _ in range(repeats)]
    return min(t for t, _ in runs), runs[0][1] if all(v == runs[0][1] for _, v in runs) else None, [t for t, _ in runs]


def bench(n_trivial: int = 40, n_heavy: int = 20, repeats: int = 1) -> dict:
    "Run the whole benchmark, each path timed `repeats` times (the fastest kept); return its numbers."
    if repeats < 1: raise ValueError(f"repeats must be at least 1, got {repeats}")
    n_fn = n_trivial
    sets = {'trivial': ([TRIVIAL.format(i=i) for i in range(n_trivial)], None),
            'numpy+pandas': ([HEAVY.format(i=i) for i in range(n_heavy)], None),
            'function, 3 tests': ([FUNCTION.format(i=i, k=3) for i in range(n_fn)], [tuple(t.format(k=3) for t in FUNCTION_TESTS)] * n_fn),
            'stdio, 5 tests': ([STDIO.format(i=i) for i in range(n_fn)], [STDIO_CASES] * n_fn)}
    res = {'cpus': os.cpu_count(), 'load_before': os.getloadavg()[0], 'repeats': repeats, 'rows': []}
    many = os.cpu_count() or 1
    for name, (progs, tests) in sets.items():
        t_naive, v_naive, all_naive = fastest(naive, repeats, progs, tests)
        t_cold, v_cold, all_cold = fastest(executor, repeats, progs, tests, warm=False, workers=1)
        t_w1, v_w1, all_w1 = fastest(executor, repeats, progs, tests, workers=1)
        t_w2, v_w2, _ = fastest(executor, repeats, progs, tests, workers=2)
        t_wn, v_wn, _ = fastest(executor, repeats, progs * max(1, many // 2), tests * max(1, many // 2) if tests else None, workers=many) if many > 2 else (t_w2, v_w2, None)
        same = (v_naive is not None and v_wn is not None and v_naive == v_cold == v_w1 == v_w2
                and all(ok for ok, _ in v_naive) and all(ok for ok, _ in v_wn))
        per_test = len(tests[0]) if tests and isinstance(tests[0][0], IOCase) else 1
        res['rows'].append(dict(programs=name, n=len(progs), naive_ms=1e3 * t_naive, cold_ms=1e3 * t_cold,
                                warm_ms=1e3 * t_w1, speedup=t_naive / t_w1, throughput_c1=1 / t_w1,
                                throughput_c2=1 / t_w2, throughput_cpus=1 / t_wn, ms_per_test_c1=1e3 * t_w1 / per_test,
                                identical_verdicts=same,
                                timings_ms={k: [1e3 * t for t in v] for k, v in (("naive", all_naive), ("cold", all_cold), ("warm", all_w1))}))
    res['load_after'] = os.getloadavg()[0]
    return res


def show(res: dict):
    print(f"machine: {res['cpus']} CPUs, load average {res['load_before']:.1f} -> {res['load_after']:.1f}; "
          f"the fastest of {res.get('repeats', 1)} timing(s) per path")
    print(f"{'programs':>18} {'n':>4} {'naive python -c':>16} {'cold executor':>14} {'warm executor':>14} {'speedup':>8} "
          f"{'prog/s @1':>10} {'prog/s @2':>10} {'prog/s @cpus':>13} {'identical':>10}")
    for r in res['rows']:
        print(f"{r['programs']:>18} {r['n']:>4} {r['naive_ms']:>13.1f} ms {r['cold_ms']:>11.1f} ms {r['warm_ms']:>11.1f} ms "
              f"{r['speedup']:>7.1f}x {r['throughput_c1']:>10.1f} {r['throughput_c2']:>10.1f} {r['throughput_cpus']:>13.1f} "
              f"{str(r['identical_verdicts']):>10}")


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument("--trivial", type=int, default=40)
    ap.add_argument("--heavy", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    res = bench(a.trivial, a.heavy, a.repeats)
    show(res)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1))
