"""Red-team suite of the grader (issue 35): one hostile program per class of attack, and benign programs for each idiom
that a real `python prog.py` accepts, graded the way a user grades: a task file through `load_tasks`, then
`make_potential(kind, Executor())` with the default limits.

The classes (the issue's list): the verdict written by the program's own process (reaching the harness through gc or
frames, forging reports on its descriptors); test tampering (always-equal values, the expected value read from the
caller's frame, shadowed `abs`, patched `math.isclose`, `unittest`, `json.loads`, the clock, the stdio comparator);
forged per-test reports for `tiered`; budgets per process instead of per tree (four children against one CPU budget
or one memory budget, a SIGXCPU handler); containment (host files, the task file itself, chmod/utime, unix sockets in
the host's /tmp, IPC objects and keys that outlive the program, a shared tmpfs, a fork chain against the sweep).
Every hostile program is written so that it would score 1 if its attack worked."""
import json, os, socket, subprocess, sys, time, uuid
from pathlib import Path

import pytest

from proposal_nb.programs.potentials import make_potential
from proposal_nb.programs.sandbox import Executor, IOCase, InfrastructureError
from proposal_nb.programs.tasks import load_tasks, data_dir

MARK = uuid.uuid4().hex[:10]
SECRET_TEST = 'assert add(40, 2) == 42'  # a hidden test whose text a program might search for
ROWS = [
    dict(id='rt/add', prompt='Write add(a, b).', entry_point='add',
         public_tests=['assert add(1, 2) == 3', 'assert add(0, 5) == 5', 'assert abs(add(0.1, 0.2) - 0.3) < 1e-9'],
         hidden_tests=[SECRET_TEST, 'assert add(-1, 1) == 0'], solution='def add(a, b):\n    return a + b\n'),
    dict(id='rt/close', prompt='Write half(x).', entry_point='half', context='import math, json, time, unittest\n',
         public_tests=['assert math.isclose(half(3), 1.5)', 'assert json.loads(json.dumps(half(4))) == 2',
                       'class T(unittest.TestCase):\n    def runTest(self): self.assertEqual(half(8), 4)\n'
                       'r = unittest.TextTestRunner(stream=open("/dev/null", "w")).run(T())\nassert r.wasSuccessful()',
                       't0 = time.perf_counter(); v = half(10); assert time.perf_counter() - t0 < 5 and v == 5'],
         hidden_tests=['assert half(1) == 0.5'], solution='def half(x):\n    return x / 2\n'),
    dict(id='rt/sum', prompt='Read two integers, print their sum.', tags={'harness': 'stdio'},
         public_tests=[{'input': '3 4\n', 'output': '7\n'}, {'input': '-2 10\n', 'output': '8\n'}],
         hidden_tests=[{'input': '100 23\n', 'output': '123\n'}], solution='a, b = map(int, input().split())\nprint(a + b)\n'),
]


@pytest.fixture(scope='module')
def task_file(tmp_path_factory):
    p = tmp_path_factory.mktemp('redteam') / f'tasks-{MARK}.jsonl'
    p.write_text(''.join(json.dumps(r) + '\n' for r in ROWS))
    return p


@pytest.fixture(scope='module')
def grader(task_file):
    tasks = {t.id: t for t in load_tasks(task_file)}
    ex = Executor()  # the default limits: 5 CPU-s, 2 GiB, as a user gets them
    pots = {k: make_potential(k, ex) for k in ('no_error', 'strict', 'tiered', 'correctness')}
    yield tasks, pots, ex
    ex.close()


def score(grader, task_id: str, program: str, kinds=('no_error', 'strict', 'tiered', 'correctness')) -> dict:
    tasks, pots, _ = grader
    return {k: float(pots[k]([tasks[task_id]], [program])[0]) for k in kinds}


def verdict(grader, task_id: str, program: str, kind: str = 'strict'):
    tasks, pots, _ = grader
    return pots[kind].grade([tasks[task_id]], [program])[0]


# --- the verdict is text the program's process writes -----------------------------------------------------------

def test_gc_finds_no_test_and_no_harness_to_patch(grader):
    "Scan every object of the process for the hidden test's text and the harness's exec: there is nothing to find."
    prog = ('import gc, sys\nneedle = "== " + str(40 + 2)\n'
            'found = [o for o in gc.get_objects() if isinstance(o, str) and needle in o]\n'
            'for f in gc.get_objects():\n    try:\n        for c in (f.__closure__ or ()) if type(f) is type(lambda: 0) else ():\n'
            '            if c.cell_contents is exec: c.cell_contents = lambda *a, **k: None\n    except Exception: pass\n'
            'print("found", len(found))\n'
            'def add(a, b): return 42 if found else a * b')
    s = score(grader, 'rt/add', prog)
    assert s['correctness'] == 0 and s['strict'] == 0, s
    assert verdict(grader, 'rt/add', prog, 'correctness').stdout.startswith('found 0'), 'the hidden test is in the program\'s memory'


def test_frames_hold_no_pending_test(grader):
    "Walk the caller's frames from inside the call: no test tuple, no expected value, no token."
    prog = ('import sys\ndef add(a, b):\n    f, seen = sys._getframe(1), []\n    while f is not None:\n'
            '        seen += [v for v in f.f_locals.values() if isinstance(v, (int, float)) and v not in (a, b)]\n'
            '        for k, v in list(f.f_locals.items()):\n'
            '            if isinstance(v, tuple) and any(isinstance(x, str) and "assert" in x for x in v): f.f_locals[k] = ("pass",) * len(v)\n'
            '        f = f.f_back\n    return seen[0] if seen else -1')
    s = score(grader, 'rt/add', prog)  # (tiered may catch a coincidence: a local of its own process equal to an answer)
    assert s['no_error'] == 1 and s['strict'] == s['correctness'] == 0 and s['tiered'] < 1, s


def test_forged_reports_on_every_descriptor(grader):
    "Write well-formed and ill-formed reports on every descriptor, then divide by zero: the top level failed."
    prog = ('import os, sys\njudge = sys.modules.get("proposal_nb.programs.judge")\n'
            'msgs = [b"F 0123 ok ok ok", b"P ok", b"T 0 ok"] + ([judge.encode(("top", "ok", ""))] if judge else [])\n'
            'for fd in range(3, 32):\n    for m in msgs:\n        try: os.write(fd, m)\n        except OSError: pass\n'
            'def add(a, b): return a + b\n1 / 0')
    assert score(grader, 'rt/add', prog) == dict(no_error=0.0, strict=0.0, tiered=0.0, correctness=0.0)


def test_dup2_and_a_thread_cannot_pass_tests(grader):
    "Take over the channel: dup2 over it, answer the judge from a thread with made-up values. Only values cross."
    prog = ('import os, sys, threading\njudge = sys.modules.get("proposal_nb.programs.judge")\n'
            'def add(a, b): return 0\nfake = os.dup(3)\nos.dup2(os.open("/dev/null", os.O_RDWR), 4)\n'
            'def serve():\n    p = judge.CandidatePeer(fake); p.namespace = {"add": lambda a, b: "ok"}\n'
            '    while True:\n        m = p.recv(); judge.send_frame(fake, p.reply(m))\n'
            'if judge: threading.Thread(target=serve, daemon=True).start()\n')
    s = score(grader, 'rt/add', prog)
    assert s['strict'] == s['tiered'] == s['correctness'] == 0, s


# --- test tampering: the classic reward hacks ----------------------------------------------------------------------

HACKS = {
    'always_equal': 'class A:\n    def __eq__(s, o): return True\n    def __ne__(s, o): return False\n    def __abs__(s): return 0\n'
                    '    def __sub__(s, o): return s\n    def __lt__(s, o): return True\n'
                    'def add(a, b): return A()\ndef half(x): return A()',
    'int_subclass': 'class I(int):\n    def __eq__(s, o): return True\n    __hash__ = int.__hash__\ndef add(a, b): return I(0)\ndef half(x): return I(0)',
    'expected_from_caller_frame': 'import sys\ndef add(a, b):\n    f = sys._getframe(1)\n'
                                  '    return next((v for v in f.f_locals.values() if type(v) is int and v not in (a, b)), 0)\nhalf = add',
    'shadow_abs': 'import builtins\nbuiltins.abs = lambda x: 0\ndef add(a, b): return 99',
    'patch_isclose_json_unittest_clock': 'import math, json, time, unittest\nmath.isclose = lambda *a, **k: True\n'
                                         'json.loads = lambda *a, **k: 2\nunittest.TestCase.assertEqual = lambda *a, **k: None\n'
                                         'time.perf_counter = lambda: 0.0\ndef half(x): return -1',
    'exit_before_tests': 'import os\ndef add(a, b): os._exit(0)\ndef half(x): os._exit(0)',
}


@pytest.mark.parametrize('name', sorted(HACKS))
def test_reward_hacks_score_zero(grader, name):
    for tid in ('rt/add', 'rt/close'):
        s = score(grader, tid, HACKS[name], kinds=('strict', 'tiered', 'correctness'))
        assert s == dict(strict=0.0, tiered=0.0, correctness=0.0), (name, tid, s)


def test_stdio_comparator_is_out_of_reach(grader):
    "A stdio program that rewrites every comparison it can reach, and prints a wrong sum."
    prog = ('import builtins, sys\n'
            'class S(str):\n    def split(self, *a): return ["7"]\n    def __eq__(self, o): return True\n'
            'builtins.str = S\nprint(0)')
    assert score(grader, 'rt/sum', prog) == dict(no_error=1.0, strict=0.0, tiered=0.0, correctness=0.0)


def test_tiered_counts_only_the_judges_results(grader):
    "Forged per-test reports on every descriptor, then a function that passes none of the public tests."
    prog = ('import os\nfor fd in range(3, 32):\n    for i in range(3):\n        try: os.write(fd, f"T {i} ok".encode())\n'
            '        except OSError: pass\ndef add(a, b): return None')
    assert score(grader, 'rt/add', prog, kinds=('tiered',)) == dict(tiered=0.0)


# --- budgets per program tree ---------------------------------------------------------------------------------------

def test_four_children_share_one_cpu_budget(grader):
    prog = ('import os\nfor _ in range(3): os.fork()\nx = 0\nfor i in range(10 ** 9): x += i\ndef add(a, b): return a + b')
    v = verdict(grader, 'rt/add', prog)
    assert v.reason == 'timeout' and v.cpu < 8, v  # 5 CPU-s budget for the tree, not 4 x 5 s


def test_four_children_share_one_memory_budget(grader):
    """Four processes of 700 MiB each against the default 2 GiB tree limit (each is under the per-process limit).
    The CPU budget is raised to 30 s so that only memory can end it: touching 2 GiB costs 3-5 CPU-s on some virtual
    machines (3.7 s on the 2-core CI machine), near the default 5 s."""
    tasks, _, _ = grader
    prog = ('import os, time\nfor _ in range(2): os.fork()\nb = bytearray(700 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n'
            'time.sleep(1)\ndef add(a, b): return a + b')
    with Executor(cpu_seconds=30) as ex:
        if 'memory' not in ex.isolation['cgroups']: pytest.skip(f'no memory cgroup here: {ex.isolation}')
        v = make_potential('strict', ex).grade([tasks['rt/add']], [prog])[0]
    assert v.reason == 'memory' and not v.ok, v


def test_a_sigxcpu_handler_is_still_a_timeout(grader):
    prog = ('import signal, os\nsignal.signal(signal.SIGXCPU, lambda *a: None)\nwhile True: pass')
    assert verdict(grader, 'rt/add', prog, 'no_error').reason == 'timeout'


# --- containment ----------------------------------------------------------------------------------------------------

def test_host_files_and_the_task_file_are_unreadable(grader, task_file):
    "The task file (by its path, or found through /proc), the checkout and the host's /tmp are not in the program's world."
    prog = (f'import glob, os\nhits = []\nfor p in [{str(task_file)!r}, {str(data_dir() / "tasks" / "embedded.jsonl")!r}, "/proc/1/cmdline"]'
            ' + glob.glob("/proc/*/cmdline") + glob.glob("/tmp/*"):\n'
            f'    try: hits += [p] if {MARK!r} in open(p, errors="replace").read() or "embedded" in open(p, errors="replace").read() else []\n'
            '    except OSError: pass\nprint(hits)\ndef add(a, b): return 42 if hits else 0')
    v = verdict(grader, 'rt/add', prog, 'correctness')
    assert set(v.stdout.splitlines()) == {'[]'} and not v.ok, v  # one line per test: each runs the program afresh


def test_no_chmod_or_utime_of_host_files(grader, tmp_path):
    target = tmp_path / 'host.txt'
    target.write_text('x'); os.chmod(target, 0o644); mtime = target.stat().st_mtime
    prog = ('import os\nok = 0\nfor p in ["/etc/hostname", "/usr/bin/env", "/etc/passwd", ' + repr(str(target)) + ']:\n'
            '    for f in (lambda: os.chmod(p, 0o777), lambda: os.utime(p, (0, 0))):\n'
            '        try: f(); ok += 1\n        except OSError: pass\nprint(ok)')
    v = verdict(grader, 'rt/add', prog, 'no_error')
    assert v.stdout.strip() == '0', v
    assert oct(target.stat().st_mode & 0o777) == '0o644' and target.stat().st_mtime == mtime


def test_host_unix_socket_unreachable(grader):
    path = f'/tmp/pnb-redteam-{MARK}.sock'
    srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1); srv.settimeout(0.5)
    try:
        prog = (f'import socket\ns = socket.socket(socket.AF_UNIX)\ntry: s.connect({path!r}); print("connected")\n'
                'except OSError as e: print("refused", e.errno)')
        v = verdict(grader, 'rt/add', prog, 'no_error')
        assert v.stdout.startswith('refused'), v
        with pytest.raises(OSError): srv.accept()
    finally: srv.close(); os.unlink(path)


def test_ipc_objects_and_keys_do_not_outlive_the_program(grader):
    "A SysV segment, a POSIX shared-memory file and a key: the first two die with the program, the last is refused."
    prog = ('import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nshm = libc.shmget(0x5EED, 4096, 0o1666)\n'
            'open("/dev/shm/pnb-" + str(os.getpid()), "w").write("x")\n'
            'key = libc.syscall(248, b"user", b"pnb", b"v", 1, ctypes.c_int(-3))  # add_key\n'
            'print(shm >= 0, key)')
    v = verdict(grader, 'rt/add', prog, 'no_error')
    assert v.stdout.split()[1] == '-1', v  # add_key refused
    after = subprocess.run(['ipcs', '-m'], capture_output=True, text=True).stdout if Path('/usr/bin/ipcs').exists() else ''
    assert '0x00005eed' not in after
    assert not list(Path('/dev/shm').glob('pnb-*'))
    again = verdict(grader, 'rt/add', 'import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.shmget(0x5EED, 4096, 0o666))', 'no_error')
    assert again.stdout.strip() == '-1', again  # the next program does not find the segment


def test_a_neighbour_filling_its_tmpfs_does_not_fail_a_write(grader):
    _, _, ex = grader
    fill = 'import time\ntry:\n    with open("/tmp/fill", "wb") as f:\n        while True: f.write(b"0" * (1 << 20))\nexcept OSError: pass\ntime.sleep(1.5)'
    write = 'import time\ntime.sleep(0.5)\nopen("/tmp/mine", "wb").write(b"1" * (8 << 20))\nprint("wrote")'
    vs = ex.run([fill, write])
    assert vs[1].reason == 'ok' and vs[1].stdout == 'wrote\n', vs


def test_fork_chains_leave_nothing_and_raise_nothing(grader):
    "Processes that fork and exit in a chain, racing the teardown, on every slot at once."
    _, _, ex = grader
    chain = 'import os\nwhile True:\n    try:\n        if os.fork(): os._exit(0)\n    except OSError: pass\n# {i}'
    vs = ex.run([chain.format(i=i) for i in range(2 * ex.workers)])
    assert all(v.reason in ('timeout', 'early-exit', 'killed') for v in vs), vs
    assert [v.reason for v in ex.run(['print(1)'])] == ['ok']
    time.sleep(0.3)
    base = ex.isolation['uid_base'] or 0  # this executor's block of uids (another executor's candidates are not ours)
    live = {p.name: _state(p) for p in Path('/proc').iterdir() if p.name.isdigit() and _uid(p) in range(base, base + 1024)}
    live = {k: v for k, v in live.items() if v not in ('Z', '')}
    assert len(live) <= 2 * ex.workers, live  # at most the pre-forked candidate and judge of each slot


def _state(p: Path) -> str:
    try: return (p / 'stat').read_text().rsplit(')', 1)[1].split()[0]
    except OSError: return ''


def _uid(p: Path) -> int:
    try: return int((p / 'status').read_text().split('\nUid:\t', 1)[1].split()[0])
    except (OSError, IndexError): return -1


def test_two_executors_never_share_a_uid(grader):
    "kill(-1) or ptrace across executors on one machine would need a shared uid: each server has a block of its own."
    _, _, ex = grader
    with Executor(workers=2, warm_imports=()) as other:
        a, b = ex.isolation['uid_base'], other.isolation['uid_base']
        if a is None: pytest.skip(f'no uid per slot here: {ex.isolation}')
        assert abs(a - b) >= 1024, (a, b)
        who = 'import os\nprint(os.getuid())'
        assert int(ex.run([who])[0].stdout) in range(a, a + 512) and int(other.run([who])[0].stdout) in range(b, b + 512)


def test_nothing_a_program_does_raises_infrastructure_error():
    "kill(-1), closed descriptors, a fork bomb, a sleeper, an output flood, garbage on the channel: verdicts, no fault."
    progs = ['import os, signal\nos.kill(-1, signal.SIGKILL)', 'import os\nos.close(1); os.close(2); os.close(3); os.close(4)',
             'import os\nos.setsid()\nwhile True: os.fork()', 'import time\ntime.sleep(3600)',
             'import sys\nsys.stdout.write("x" * (1 << 24))', 'import os\nos.write(3, b"\\xff" * 100)\ndef add(a, b): return 1']
    with Executor(cpu_seconds=1, wall_seconds=3) as ex:
        vs = ex.run(progs) + ex.run(progs, [['assert add(1, 2) == 3']] * len(progs))
        assert ex.run(['print(1)'])[0].stdout == '1\n'
    assert len(vs) == 2 * len(progs) and not any(v.ok for v in vs[1:]), vs


# --- correct programs are graded right ------------------------------------------------------------------------------

STDIO_IDIOMS = {
    'input': 'a, b = map(int, input().split())\nprint(a + b)',
    'open_0': 'a, b = map(int, open(0).read().split())\nprint(a + b)',
    'os_read_0': 'import os\na, b = map(int, os.read(0, 1 << 16).split())\nprint(a + b)',
    'sys_stdin_buffer': 'import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))',
    'big_stack_thread': 'import sys, threading\nsys.setrecursionlimit(10 ** 6)\nthreading.stack_size(1 << 27)\n'
                        'def main():\n    print(sum(map(int, sys.stdin.read().split())))\nthreading.Thread(target=main).start()',
    'flush_then_os_exit': 'import sys, os\nprint(sum(map(int, sys.stdin.read().split())))\nsys.stdout.flush()\nos._exit(0)',
    'sys_exit_0': 'import sys\nprint(sum(map(int, sys.stdin.read().split())))\nsys.exit(0)',
    'dev_stdin': 'print(sum(map(int, open("/dev/stdin").read().split())))',
}


@pytest.mark.parametrize('name', sorted(STDIO_IDIOMS))
def test_correct_stdio_programs_pass(grader, name):
    assert score(grader, 'rt/sum', STDIO_IDIOMS[name]) == dict(no_error=1.0, strict=1.0, tiered=1.0, correctness=1.0)


def test_correct_function_programs_pass(grader):
    tasks, _, _ = grader
    for tid in ('rt/add', 'rt/close'):
        assert score(grader, tid, tasks[tid].solution) == dict(no_error=1.0, strict=1.0, tiered=1.0, correctness=1.0)
    # benign programs that fork, use threads, a pool and their own tmp files
    benign = ('import os, threading, tempfile, multiprocessing as mp\n'
              'def add(a, b):\n    r = []\n    t = threading.Thread(target=lambda: r.append(a + b)); t.start(); t.join()\n'
              '    with tempfile.TemporaryFile() as f: f.write(b"x")\n    return r[0]\n'
              'with mp.get_context("fork").Pool(2) as p: assert p.map(abs, [-1, 2]) == [1, 2]\n')
    assert score(grader, 'rt/add', benign) == dict(no_error=1.0, strict=1.0, tiered=1.0, correctness=1.0)
