"""Verdicts must not depend on load: the same >= 200 programs (fast, slow, heavy numpy/pandas, timeouts, memory
bombs, failures) graded serially and 8-way concurrently on this small machine give identical verdicts (0 flips),
and the warm fork server agrees with cold interpreters."""
import time

import pytest

from proposal_nb.programs.sandbox import Executor
from proposal_nb.programs.tasks import load_embedded

pytestmark = pytest.mark.xdist_group("sandbox_concurrency")   # one worker: its module fixture grades once, not once per worker

HEAVY = '''import numpy as np, pandas as pd
rng = np.random.default_rng({seed})
df = pd.DataFrame({{"k": rng.integers(0, 50, 200_000), "v": rng.normal(size=200_000)}})
g = df.groupby("k")["v"].agg(["mean", "std", "count"])
print(int(g["count"].sum()), round(float(g["mean"].abs().max()), 6))
'''
SLOW = 's = 0\nfor i in range({n}):\n    s += i * i % 7\nprint(s)\n'


def programs() -> tuple[list[str], list[tuple[str, ...]], list[str]]:
    "About 280 programs with their tests and a kind label."
    emb = load_embedded()
    progs, tests, kinds = [], [], []
    for t in emb:  # right, then wrong (renamed) solutions with public + hidden tests
        progs.append(t.context + t.solution); tests.append(t.public_tests + t.hidden_tests); kinds.append('right')
        progs.append(t.context + t.solution.replace(f'def {t.entry_point}(', f'def {t.entry_point}_x(', 1))
        tests.append(t.public_tests + t.hidden_tests); kinds.append('wrong')
    extra = ([(HEAVY.format(seed=s), 'heavy') for s in range(10)] + [(SLOW.format(n=n), 'slow') for n in range(1_000_000, 3_400_000, 300_000)]
             + [('while True: pass', 'timeout'), ('x = 0\nwhile True: x += 1', 'timeout'), ('import itertools\nfor _ in itertools.count(): pass', 'timeout')]
             + [('x = bytearray(4 << 30)', 'memory'), ('import numpy as np\nnp.zeros((1 << 15, 1 << 16))', 'memory')]
             + [('import sys\nsys.exit(0)', 'early'), ('raise ValueError(1)', 'exception'), ('print(1/0)', 'exception')])
    for p, k in extra: progs.append(p); tests.append(()); kinds.append(k)
    return progs, tests, kinds


def key(v): return (v.ok, v.reason, v.tests, v.stdout)


@pytest.fixture(scope='module')
def graded():
    progs, tests, kinds = programs()
    out = {}
    for name, workers in (('serial', 1), ('8-way', 8)):
        with Executor(cpu_seconds=1, wall_seconds=120, memory_mb=2048, workers=workers, cache=False) as ex:
            t0 = time.time()
            out[name] = ex.run(progs, tests)
            out[name + '_secs'] = time.time() - t0
    return progs, kinds, out


def test_the_8way_run_was_concurrent(graded):
    "The comparison means something only if programs really overlapped: the 8-way run kept several in flight."
    progs, kinds, out = graded
    busy = sum(v.seconds for v in out['8-way'])  # wall time each program spent in the sandbox
    print(f"8-way: mean programs in flight {busy / out['8-way_secs']:.1f}")
    assert busy / out['8-way_secs'] >= 3, f"mean programs in flight {busy / out['8-way_secs']:.1f}: the run was not concurrent"
    assert len(out['8-way']) == len(out['serial']) == len(progs) >= 200


def test_serial_vs_8way_identical(graded):
    progs, kinds, out = graded
    flips = [(k, a.reason, b.reason) for k, a, b in zip(kinds, out['serial'], out['8-way']) if key(a) != key(b)]
    print(f"serial {out['serial_secs']:.1f}s, 8-way {out['8-way_secs']:.1f}s, {len(progs)} programs, flips: {len(flips)}")
    assert flips == []


def test_verdicts_are_the_expected_ones(graded):
    _, kinds, out = graded
    want = {'right': {'ok'}, 'wrong': {'exception:NameError'}, 'heavy': {'ok'}, 'slow': {'ok'}, 'timeout': {'timeout'},
            'memory': {'memory'}, 'early': {'early-exit'}, 'exception': {'exception:ValueError', 'exception:ZeroDivisionError'}}
    bad = [(k, v.reason) for k, v in zip(kinds, out['serial']) if v.reason not in want[k]]
    assert bad == []
    assert all(v.stdout.startswith('200000 ') for k, v in zip(kinds, out['serial']) if k == 'heavy')


def test_warm_and_cold_agree():
    progs, tests, kinds = programs()
    pick = [i for i, k in enumerate(kinds) if k not in ('right', 'wrong')] + list(range(0, 8))
    res = {}
    for warm in (True, False):
        with Executor(cpu_seconds=1, wall_seconds=120, workers=2, warm=warm, cache=False) as ex:
            res[warm] = ex.run([progs[i] for i in pick], [tests[i] for i in pick])
    assert [key(v) for v in res[True]] == [key(v) for v in res[False]]
