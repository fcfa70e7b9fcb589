"""Grader integrity (issue 18): the two ways a program got a wrong "valid", with their variants, each pinned by name.

1. Rebinding a builtin exception class. The harness used to match the program's exception with `except
   AssertionError:`, a name it looked up in builtins *after* the program ran, so `builtins.AssertionError =
   BaseException; raise ValueError` read as a tolerated assertion. The adversarial suite missed it because none of
   its programs rebinds a name the harness itself looks up.
2. A forked child speaking for its parent. The harness read its pid once, before the program ran, and wrote it into
   each status line; a forked child inherits both, finishes the harness under the parent's pid, and the verdict kept
   the first report. The suite's `child_speaks_for_parent` case missed it because there the parent exits first, so
   the child's report comes second and was ignored; here the child finishes first.

Every verdict must be the one of the original program process alone: an uncaught AssertionError (or a subclass) is
tolerated, anything that leaves early is not.

Since issue 35 the tests run in a judge process and the supervisor hears the top level's end on a status socket that
names the sender's pid; the candidate's side of the channel binds every builtin at import. These cases stay as they
were written against the old in-process harness: the same programs must still get the same verdicts.
"""
import pytest

from proposal_nb.programs.sandbox import Executor

PARENT_RAISES = 'raise ValueError("the parent fails")'

# (name, program, tests, expected reason)
REBINDING = [
    ('builtins_assertion_to_base', 'import builtins\nbuiltins.AssertionError = BaseException\nraise ValueError("x")', (), 'exception:ValueError'),
    ('builtins_assertion_to_exception', 'import builtins\nbuiltins.AssertionError = Exception\nraise KeyError(1)', (), 'exception:KeyError'),
    ('dunder_builtins', 'b = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)\n'
                        'b["AssertionError"] = Exception\nraise ValueError("x")', (), 'exception:ValueError'),
    ('sys_modules_builtins', 'import sys\nsys.modules["builtins"].AssertionError = Exception\n1 / 0', (), 'exception:ZeroDivisionError'),
    ('inside_imported_module', 'import sys\nopen("m18.py", "w").write("import builtins\\nbuiltins.AssertionError = Exception\\n")\n'
                               'sys.path.insert(0, ".")\nimport m18\nraise ValueError("x")', (), 'exception:ValueError'),
    ('module_global_shadow', 'AssertionError = Exception\nraise ValueError("x")', (), 'exception:ValueError'),
    # other names the harness matches or calls: wrong reasons before (early-exit), never a pass, but a wrong verdict
    ('builtins_systemexit', 'import builtins\nbuiltins.SystemExit = Exception\nraise ValueError("x")', (), 'exception:ValueError'),
    ('builtins_baseexception', 'import builtins\nbuiltins.BaseException = KeyError\nraise ValueError("x")', (), 'exception:ValueError'),
    ('builtins_type', 'import builtins\nbuiltins.type = lambda *a: None\nraise ValueError("x")', (), 'exception:ValueError'),
    ('builtins_range_skips_tests', 'import builtins\nbuiltins.range = lambda *a: []', ('assert False',), 'assertion'),
    ('builtins_exec_compile', 'import builtins\nbuiltins.exec = builtins.compile = lambda *a, **k: None', ('1 / 0',), 'exception:ZeroDivisionError'),
    # the harness's own functions, reached through its modules (importable from a program in the warm server; the
    # harness lives in proposal_nb.programs.runner since the sandbox was split in two, its walls in .confine)
    ('patch_harness_module', 'import sys\nfor n in ("proposal_nb.programs.runner", "proposal_nb.programs.confine", "proposal_nb.programs.sandbox"):\n'
                             '    for f in vars(sys.modules[n]).values():\n'
                             '        if callable(f) and hasattr(f, "__code__"): f.__code__ = (lambda *a, **k: "ok").__code__',
     ('assert False',), 'assertion'),
    # the candidate's side of the channel itself, neutered: it can no longer answer, which is never a pass
    ('patch_channel_module', 'import sys\nm = sys.modules["proposal_nb.programs.judge"]\nfor f in list(vars(m).values()):\n'
                             '    if callable(f) and hasattr(f, "__code__"): f.__code__ = (lambda *a, **k: ("top", "ok", "")).__code__',
     ('assert True',), 'early-exit'),
    # what the rule tolerates stays tolerated; a look-alike does not
    ('assert_after_rebinding', 'import builtins\nbuiltins.AssertionError = Exception\nassert 1 == 2', (), 'assertion'),
    ('assertion_subclass', 'class Fail(AssertionError): pass\nraise Fail("x")', (), 'assertion'),
    ('named_like_assertion', 'class E(Exception): pass\nE.__name__ = "AssertionError"\nraise E("x")', (), 'exception:AssertionError'),
    ('name_with_newline', 'class E(Exception): pass\nE.__name__ = "x\\nF 0 ok"\nraise E("x")', (), 'exception:?'),
]

CHILD_FINISHES = 'if pid == 0:\n    pass  # the child runs to the end of the program\nelse:\n    os.waitpid(pid, 0)\n    {parent}'
FORKS = [
    ('os_fork', 'import os\npid = os.fork()\n'),
    ('posix_fork', 'import os, posix\npid = posix.fork()\n'),
    ('getattr_fork', 'import os\nfork = getattr(os, "fork")\npid = fork()\n'),
    ('libc_fork', 'import os, ctypes\npid = ctypes.CDLL(None).fork()\n'),
    ('raw_clone_syscall', 'import os, ctypes, platform\nassert platform.machine() == "x86_64"\n'
                          'pid = ctypes.CDLL(None, use_errno=True).syscall(56, 17, 0, 0, 0, 0)  # clone(SIGCHLD)\n'),
]
FORK = [(f'{name}_child_finishes_parent_{how}', src + CHILD_FINISHES.format(parent=end), (), want)
        for name, src in FORKS
        for how, end, want in (('raises', PARENT_RAISES, 'exception:ValueError'), ('os_exit', 'os._exit(0)', 'early-exit'))]
FORK += [
    ('os_fork_child_finishes_parent_sys_exit', 'import os, sys\npid = os.fork()\n' + CHILD_FINISHES.format(parent='sys.exit(0)'), (), 'early-exit'),
    ('os_fork_child_finishes_parent_killed', 'import os, signal\npid = os.fork()\n'
                                             + CHILD_FINISHES.format(parent='os.kill(os.getpid(), signal.SIGTERM)'), (), 'killed'),
    # the child would also pass the tests the parent never reached
    ('os_fork_child_passes_tests', 'import os\npid = os.fork()\n' + CHILD_FINISHES.format(parent=PARENT_RAISES),
     ('assert True',), 'exception:ValueError'),
    ('double_fork', 'import os\nme = os.getpid()\npid = os.fork()\nif pid == 0:\n    pid2 = os.fork()\n'
                    '    if pid2: os.waitpid(pid2, 0)  # the grandchild and then the child run to the end\n'
                    'else:\n    os.waitpid(pid, 0)\n    ' + PARENT_RAISES, (), 'exception:ValueError'),
    ('multiprocessing_plain', 'import multiprocessing as mp\ndef f(): pass\np = mp.get_context("fork").Process(target=f)\n'
                              'p.start(); p.join()\n' + PARENT_RAISES, (), 'exception:ValueError'),
    # with os._exit neutered the multiprocessing child returns from start() into the program and runs to its end
    ('multiprocessing_child_escapes', 'import os, multiprocessing as mp\ndef f(): pass\nme, real = os.getpid(), os._exit\n'
                                      'os._exit = lambda code: None\np = mp.get_context("fork").Process(target=f)\n'
                                      'try: p.start()\nexcept AttributeError: pass  # the escaped child has no sentinel\n'
                                      'os._exit = real\nif os.getpid() == me:\n    os.waitpid(p.pid, 0)\n    ' + PARENT_RAISES,
     (), 'exception:ValueError'),
    # the child reads the harness's secret token from its frames and writes a final report with it: still its own pid
    ('child_forges_report_with_token', 'import os, sys\npid = os.fork()\nif pid == 0:\n    f = sys._getframe()\n'
                                       '    while f is not None and "token" not in f.f_locals: f = f.f_back\n'
                                       '    os.write(3, f"F {f.f_locals[\'token\']} ok".encode())\n    os._exit(0)\n'
                                       'os.waitpid(pid, 0)\n' + PARENT_RAISES, (), 'exception:ValueError'),
    # the kernel refuses credentials naming another pid (the program holds no capability)
    ('child_forges_credentials', 'import os, socket, struct\nparent = os.getpid()\npid = os.fork()\nif pid == 0:\n'
                                 '    s = socket.socket(fileno=os.dup(3))\n'
                                 '    try:\n'
                                 '        s.sendmsg([b"P ok"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("iII", parent, os.getuid(), os.getgid()))])\n'
                                 '        print("forged", flush=True)\n'
                                 '    except OSError as e: print("refused", e.errno, flush=True)\n'
                                 '    os._exit(0)\n'
                                 'os.waitpid(pid, 0)\n' + PARENT_RAISES, (), 'exception:ValueError'),
    # the original's verdict, not the child's: a failing child does not spoil a parent that ends well
    ('os_fork_child_raises_parent_ends', 'import os\npid = os.fork()\nif pid == 0:\n    raise ValueError("child")\nos.waitpid(pid, 0)',
     ('assert True',), 'ok'),
]
CASES = REBINDING + FORK


@pytest.fixture(scope='module')
def verdicts():
    with Executor(cpu_seconds=2, wall_seconds=60, workers=2, warm_imports=('numpy',), cache=False) as ex:
        warm = ex.run([c[1] for c in CASES], [c[2] for c in CASES])
    with Executor(cpu_seconds=2, wall_seconds=60, workers=2, warm=False, cache=False) as ex:
        pick = [i for i, c in enumerate(CASES) if c[0] in ('builtins_assertion_to_base', 'os_fork_child_finishes_parent_raises',
                                                          'builtins_type', 'double_fork')]
        cold = dict(zip(pick, ex.run([CASES[i][1] for i in pick], [CASES[i][2] for i in pick])))
    return warm, cold


@pytest.mark.parametrize('i', range(len(CASES)), ids=[c[0] for c in CASES])
def test_graded_as_the_original_process_ended(verdicts, i):
    name, _, tests, want = CASES[i]
    v = verdicts[0][i]
    assert v.reason == want, f'{name}: got {v.reason!r} (tests {v.tests}), want {want!r}; stderr={v.stderr[-400:]!r}'
    assert v.ok == (want == 'ok')
    if name == 'child_forges_credentials': assert v.stdout.startswith('refused'), v.stdout


def test_cold_interpreters_agree(verdicts):
    warm, cold = verdicts
    assert cold and all(cold[i].reason == warm[i].reason == CASES[i][3] for i in cold), {CASES[i][0]: cold[i].reason for i in cold}


def test_original_process_forging_its_own_report_is_not_a_pass():
    "The old known limit (issue 18): the original process writes a report itself and leaves. Now there is no token to"
    " find, and a forged report buys nothing: the tests call the program, which is gone."
    forge = ('import os, sys\nm = sys.modules["proposal_nb.programs.judge"]\nb = m.encode(("top", "ok", ""))\n'
             'os.write(m.STATUS_FD, b)\nos.write(3, m._U32.pack(len(b)) + b)\nos._exit(0)\n')
    with Executor(cpu_seconds=1, workers=1, warm_imports=()) as ex:
        v = ex.run([forge + 'def add(a, b): return a + b\n'], [['assert add(1, 2) == 3']])[0]
    assert v.reason == 'early-exit' and not v.ok, v
