#!/usr/bin/env python
"""Ground-truth fuzz of the sandbox harness (issue 18). Programs are composed from a small grammar of endings; an
oracle derived from the same grammar gives each program's true verdict; hypothesis draws the programs from a seed.
Every program is graded serially and 8-way concurrently; a wrong verdict is a reason that differs from the oracle's,
a wrong "valid" is one the no-error potential would accept (ok or assertion) when the oracle does not.

The grammar: an optional fork (os.fork, posix.fork, getattr(os, "fork"), libc fork, a raw clone syscall, a
multiprocessing child that escapes into the program, a double fork) whose parent may wait for the child and whose
child ends any way below; atexit handlers; builtin rebinding (through `builtins`, `__builtins__`, `sys.modules`,
an imported module or the program's globals) right before the original process's ending; an output flood; and one
ending: a normal end, a raise of various classes (AssertionError, its subclasses, look-alikes, SystemExit and its
subclasses, ...), `assert`, `sys.exit(k)`, `os._exit(k)`, a signal to itself (default action, ignored, or a
handler that exits, raises or returns), or `exec`. Test snippets run after a program that ends normally.

Since issue 35 the snippets run in the trusted judge, not in the program's namespace, so a program's rebinding no
longer reaches them; and `__builtins__` in the program's `__main__` is the builtins module, as under `python prog.py`.
The grammar also defines, in one of several ways, the function `f` the tests may call: honestly, raising, or with a
reward hack (an always-equal value, an int subclass equal to everything, the expected value read from the caller's
frame, a patched `abs` or `math.isclose`); a hack's true verdict is a failed assertion.

The same run also measures the checker's speed against a naive `python -c` (scripts/bench_sandbox.py), so the
verdicts and the speed come from one code state; `--no-speed` skips it.

Usage: .venv/bin/python scripts/bench_grader_fuzz.py [--n 1000] [--seed 18] [--no-speed] [--out results/bench_grader_fuzz.json]"""
import argparse, json, os, platform, signal, sys, time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

LIMIT = 1 << 16  # output limit of the fuzz executor: a flood writes 4x this


class _SubAE(AssertionError): pass
class _SubSE(SystemExit): pass
class _CustomE(Exception): pass
class _FakeAE(Exception): pass
_FakeAE.__name__ = 'AssertionError'  # named like it, not derived from it

CLASSES = {c.__name__ if c is not _FakeAE else '_FakeAE': c for c in
           (AssertionError, ValueError, Exception, BaseException, KeyError, KeyboardInterrupt, SystemExit, MemoryError,
            RecursionError, GeneratorExit, _SubAE, _SubSE, _CustomE, _FakeAE)}
RAISED = tuple(CLASSES)
REBOUND_EXC = ('AssertionError', 'SystemExit', 'MemoryError', 'BaseException', 'Exception', 'KeyboardInterrupt', 'ValueError')
TARGETS = ('Exception', 'BaseException', 'ValueError', 'AssertionError', 'SystemExit', '_FakeAE', '_SubAE')
REBOUND_FN = ('len', 'range', 'type', 'isinstance', 'compile', 'exec', 'str', 'getattr', 'iter', 'next')
ROUTES = ('builtins', 'dunder', 'sys.modules', 'module', 'globals')
SIGNALS = {'SIGTERM': 'killed', 'SIGKILL': 'killed', 'SIGSEGV': 'killed', 'SIGABRT': 'killed', 'SIGXCPU': 'killed',
           'SIGQUIT': 'killed', 'SIGINT': 'exception:KeyboardInterrupt', 'SIGPIPE': 'ok', 'SIGCHLD': 'ok'}  # SIGPIPE: ignored by Python
HANDLERS = {'exit': ('SIGUSR1', 'early-exit'), 'raise': ('SIGUSR2', 'exception:ValueError'), 'pass': ('SIGHUP', 'ok'),
            'os_exit': ('SIGALRM', 'early-exit')}
FORKS = ('os.fork', 'posix.fork', 'getattr', 'libc', 'mp-escape', 'double') + (('clone',) if platform.machine() == 'x86_64' else ())
TESTS = ((), ('x = 1',), ('assert True', 'assert False'), ('1 / 0',), ('import sys; sys.exit(0)',), ('raise AssertionError("t")',),
         ('assert f() == 1',), ('import math\nassert abs(f() - 1) < 1e-9 and math.isclose(f(), 1)',), ('assert f() == 1', 'assert f() != 2'))
FUNCS = {  # how `f` is defined (true answer: 1), and the reasons of a test comparing f() and one doing arithmetic on it
    '': ('', 'exception:NameError', 'exception:NameError'),
    'honest': ('def f(): return 1', 'ok', 'ok'),
    'raises': ('def f(): raise ValueError("f")', 'exception:ValueError', 'exception:ValueError'),
    'always_equal': ('class _A:\n    def __eq__(s, o): return True\n    def __ne__(s, o): return False\n    def __sub__(s, o): return s\n'
                     '    def __abs__(s): return 0\n    def __float__(s): return 1.0\ndef f(): return _A()', 'assertion', 'exception:TypeError'),
    'int_subclass': ('class _I(int):\n    def __eq__(s, o): return True\n    def __ne__(s, o): return False\n    __hash__ = int.__hash__\n'
                     'def f(): return _I(5)', 'assertion', 'exception:TypeError'),  # a handle: no arithmetic with it
    'caller_frame': ('def f():\n    for v in sys._getframe(1).f_locals.values():\n        if v.__class__ is int: return v + 7\n    return 7',
                     'assertion', 'assertion'),  # (no builtin the grammar may rebind)
    'patched_abs': ('builtins.abs = lambda x: 0\nimport math\nmath.isclose = lambda *a, **k: True\ndef f(): return 3', 'assertion', 'assertion'),
}


class Ending(NamedTuple):
    kind: str  # end, raise, assert, sys.exit, os._exit, signal, handler, exec
    arg: str = ''  # class name, exit argument, signal name or handler kind


class Fork(NamedTuple):
    how: str  # one of FORKS
    child: Ending  # how the child (the grandchild for a double fork) ends
    wait: bool  # the parent waits for the child before its own ending
    child_flood: str = ''  # '', 'stdout' or 'stderr' (only when the parent waits: otherwise a race with the sweep)


class Spec(NamedTuple):
    ending: Ending  # how the original process ends
    rebind: tuple = ()  # (route, name, target) applied right before the original's ending
    fork: Fork | None = None
    flood: str = ''  # the original floods stdout or stderr before its ending
    atexit: str = ''  # an atexit handler registered first (never runs: the harness leaves with os._exit)
    tests: tuple = ()
    func: str = ''  # how `f` is defined (a key of FUNCS)


PRELUDE = '''import os, sys, signal, time, atexit, builtins, ctypes, posix
class _SubAE(AssertionError): pass
class _SubSE(SystemExit): pass
class _CustomE(Exception): pass
class _FakeAE(Exception): pass
_FakeAE.__name__ = "AssertionError"
_VE = ValueError
def _h_exit(*a): sys.exit(0)
def _h_raise(*a): raise _VE("handler")
def _h_pass(*a): pass
def _h_os_exit(*a): os._exit(0)
'''


def _ending_code(e: Ending) -> list[str]:
    if e.kind == 'end': return ['pass']
    if e.kind == 'raise': return [f'raise {e.arg}("x")']
    if e.kind == 'assert': return ['assert 1 == 2, "x"']
    if e.kind == 'sys.exit': return [f'sys.exit({e.arg})']
    if e.kind == 'os._exit': return [f'os._exit({e.arg})']
    if e.kind == 'signal': return [f'os.kill(os.getpid(), signal.{e.arg})', 'time.sleep(0.05)']
    if e.kind == 'handler': return [f'os.kill(os.getpid(), signal.{HANDLERS[e.arg][0]})', 'time.sleep(0.05)']
    if e.kind == 'exec': return ['os.execv("/bin/true", ["true"])']
    raise ValueError(e)


def _rebind_code(route: str, name: str, target: str, i: int) -> list[str]:
    t = target if name not in REBOUND_FN else 'lambda *a, **k: None'
    if route == 'builtins': return [f'builtins.{name} = {t}']
    if route == 'dunder': return [f'vars(__builtins__)["{name}"] = {t}']  # in __main__ it is the builtins module
    if route == 'sys.modules': return [f'sys.modules["builtins"].{name} = {t}']
    if route == 'globals': return [f'{name} = {t}']
    if route == 'module':
        return [f'open("_rb{i}.py", "w").write("import builtins\\nbuiltins.{name} = {t}\\n")', 'sys.path.insert(0, ".")',
                f'import _rb{i}']
    raise ValueError(route)


def _flood(stream: str) -> list[str]:
    return [f'sys.{stream}.write("x" * {4 * LIMIT}); sys.{stream}.flush()']


def program(s: Spec) -> str:
    "The program's source."
    lines = PRELUDE.splitlines()
    lines += ['for _s, _h in ((signal.SIGUSR1, _h_exit), (signal.SIGUSR2, _h_raise), (signal.SIGHUP, _h_pass), '
              '(signal.SIGALRM, _h_os_exit)): signal.signal(_s, _h)']
    if s.atexit: lines.append(f'atexit.register({s.atexit})')
    if FUNCS[s.func][0] and any('f()' in t for t in s.tests): lines += FUNCS[s.func][0].splitlines()
    body = []
    if s.flood: body += _flood(s.flood)
    for i, (route, name, target) in enumerate(s.rebind): body += _rebind_code(route, name, target, i)
    body += _ending_code(s.ending)
    if s.fork is None: return '\n'.join(lines + body) + '\n'
    f = s.fork
    lines.append('_me = os.getpid()')
    if f.how == 'os.fork': lines.append('_pid = os.fork()')
    elif f.how == 'posix.fork': lines.append('_pid = posix.fork()')
    elif f.how == 'getattr': lines.append('_pid = getattr(os, "fork")()')
    elif f.how == 'libc': lines.append('_pid = ctypes.CDLL(None).fork()')
    elif f.how == 'clone': lines.append('_pid = ctypes.CDLL(None).syscall(56, 17, 0, 0, 0, 0)  # clone(SIGCHLD)')
    elif f.how == 'mp-escape':
        lines += ['import multiprocessing', 'def _noop(): pass', '_real = os._exit', 'os._exit = lambda code: None',
                  '_p = multiprocessing.get_context("fork").Process(target=_noop)', 'try: _p.start()',
                  'except AttributeError: pass  # the escaped child has no sentinel', 'os._exit = _real', '_pid = _p.pid']
    elif f.how == 'double':
        lines += ['_pid = os.fork()', 'if _pid == 0:', '    _pid2 = os.fork()', '    if _pid2:',
                  f'        {"os.waitpid(_pid2, 0)" if f.wait else "pass"}', '        os._exit(0)  # the middle child leaves']
    child = (_flood(f.child_flood) if f.child_flood else []) + _ending_code(f.child)
    parent = (['os.waitpid(_pid, 0)'] if f.wait else []) + body
    lines += ['if os.getpid() != _me:'] + ['    ' + l for l in child] + ['else:'] + ['    ' + l for l in parent]
    return '\n'.join(lines) + '\n'


def _reason_of(cls: type) -> str:
    "The reason the published rule gives an uncaught exception of class `cls`."
    if issubclass(cls, SystemExit): return 'early-exit'
    if issubclass(cls, AssertionError): return 'assertion'
    if issubclass(cls, MemoryError): return 'memory'
    return f'exception:{cls.__name__}'


def oracle(s: Spec) -> str:
    "The true verdict's reason, from the grammar alone: only the original process's own ending counts."
    if s.flood or (s.fork and s.fork.wait and s.fork.child_flood): return 'output-limit'
    bound = {name: target for _, name, target in s.rebind if name not in REBOUND_FN}
    e = s.ending
    r = {'end': 'ok', 'assert': 'assertion', 'sys.exit': 'early-exit', 'os._exit': 'early-exit', 'exec': 'early-exit'}.get(e.kind)
    if e.kind == 'raise': r = _reason_of(CLASSES[bound.get(e.arg, e.arg)])
    elif e.kind == 'signal': r = SIGNALS[e.arg]
    elif e.kind == 'handler': r = HANDLERS[e.arg][1]
    if r != 'ok': return r
    for t in s.tests:  # tests run in the judge: the program's rebinding does not reach them
        tr = {'x = 1': 'ok', 'assert True': 'ok', 'assert False': 'assertion', '1 / 0': 'exception:ZeroDivisionError',
              'import sys; sys.exit(0)': 'early-exit', 'raise AssertionError("t")': 'assertion'}.get(t) or FUNCS[s.func][2 if 'abs(' in t else 1]
        if tr != 'ok': return tr
    return 'ok'


def endings() -> st.SearchStrategy:
    return st.one_of(st.just(Ending('end')), st.builds(Ending, st.just('raise'), st.sampled_from(RAISED)),
                     st.just(Ending('assert')), st.builds(Ending, st.just('sys.exit'), st.sampled_from(['', '0', '1', '"msg"'])),
                     st.builds(Ending, st.just('os._exit'), st.sampled_from(['0', '1'])),
                     st.builds(Ending, st.just('signal'), st.sampled_from(sorted(SIGNALS))),
                     st.builds(Ending, st.just('handler'), st.sampled_from(sorted(HANDLERS))), st.just(Ending('exec')))


@st.composite
def rebindings(draw) -> tuple:
    out = []
    for name in draw(st.lists(st.sampled_from(REBOUND_EXC + REBOUND_FN), max_size=2, unique=True)):
        route = draw(st.sampled_from(ROUTES if name not in REBOUND_FN else ROUTES[:3] + ROUTES[4:]))  # module: exceptions only
        target = '' if name in REBOUND_FN else draw(st.sampled_from(TARGETS if route != 'module' else TARGETS[:5]))
        out.append((route, name, target))
    # an imported module needs the import machinery, which calls builtins such as len and compile: import first
    return tuple(sorted(out, key=lambda r: r[0] != 'module'))


@st.composite
def specs(draw) -> Spec:
    fork = None
    if draw(st.booleans()):
        wait = draw(st.booleans())
        fork = Fork(draw(st.sampled_from(FORKS)), draw(endings()), wait,
                    draw(st.sampled_from([''] * 6 + ['stdout', 'stderr'])) if wait else '')
    return Spec(ending=draw(endings()), rebind=draw(rebindings()), fork=fork,
                flood=draw(st.sampled_from([''] * 10 + ['stdout', 'stderr'])),
                atexit=draw(st.sampled_from(['', 'os._exit, 0', 'print, "atexit ran"', 'sys.exit, 3'])),
                tests=draw(st.sampled_from(TESTS)), func=draw(st.sampled_from(sorted(FUNCS))))


def sample(n: int, seed: int) -> list[Spec]:
    "`n` distinct programs drawn by hypothesis from `seed` (generation only: no shrinking, no example database)."
    got: dict[str, Spec] = {}
    @hseed(seed)
    @settings(max_examples=2 * n, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(specs())
    def collect(s):
        if len(got) < n: got.setdefault(program(s) + repr(s.tests), s)
    collect()
    return list(got.values())


def grade(items: list[Spec], workers: int, warm_imports=('numpy',)):
    "Verdicts of the programs and the seconds the batch took."
    from proposal_nb.programs.sandbox import Executor
    with Executor(cpu_seconds=2, wall_seconds=60, memory_mb=1024, workers=workers, output_limit=LIMIT,
                  warm_imports=warm_imports, cache=False) as ex:
        t0 = time.perf_counter()
        vs = ex.run([program(s) for s in items], [s.tests for s in items])
        return vs, time.perf_counter() - t0


VALID = ('ok', 'assertion')  # what the no-error potential accepts


def check(items: list[Spec], workers=(1, 8)) -> dict:
    "Grade at each concurrency; count wrong verdicts, wrong valids and flips between the concurrencies."
    truth = [oracle(s) for s in items]
    res = dict(programs=len(items), oracle=dict(Counter(truth)), runs={})
    reasons = {}
    for w in workers:
        vs, secs = grade(items, w)
        reasons[w] = [v.reason for v in vs]
        wrong = [(i, t, v.reason) for i, (t, v) in enumerate(zip(truth, vs)) if v.reason != t]
        res['runs'][w] = dict(seconds=secs, wrong=len(wrong), wrong_valid=sum(r in VALID and t not in VALID for _, t, r in wrong),
                              examples=[dict(want=t, got=r, program=program(items[i]), tests=items[i].tests) for i, t, r in wrong[:5]])
    a, b = workers[0], workers[-1]
    res['flips'] = sum(x != y for x, y in zip(reasons[a], reasons[b]))
    res['coverage'] = dict(fork=Counter(s.fork.how for s in items if s.fork), ending=Counter(s.ending.kind for s in items),
                           func=Counter(s.func for s in items if any('f()' in t for t in s.tests)),
                           rebind_route=Counter(r[0] for s in items for r in s.rebind),
                           flood=sum(bool(s.flood or (s.fork and s.fork.child_flood)) for s in items))
    return res


def show(res: dict):
    print(f"{res['programs']} programs (seed {res['seed']}, hypothesis {res['hypothesis']}); true verdicts: {res['oracle']}")
    for w, r in res['runs'].items():
        print(f"  workers={w}: {r['seconds']:.1f}s, wrong verdicts {r['wrong']}, wrong 'valid' {r['wrong_valid']}")
        for e in r['examples']: print(f"    want {e['want']!r} got {e['got']!r}:\n{e['program']}")
    print(f"  flips between workers={min(res['runs'])} and workers={max(res['runs'])}: {res['flips']}")
    print(f"  coverage: {res['coverage']}")


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
