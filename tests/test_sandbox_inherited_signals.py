"""Regression: a sandboxed program inherited the signal state of whatever started the grader.

A fresh-clone CI run launched as a background job of a non-interactive bash (`( bash fresh-clone-ci.sh > log 2>&1 & )`)
failed tests/test_sandbox_fuzz.py::test_no_wrong_verdicts at 2 and 8 workers: 5 wrong verdicts, 3 of them wrongly
valid, all programs ending with `os.kill(os.getpid(), signal.SIGQUIT); time.sleep(0.05)`. bash sets SIGINT and SIGQUIT
to SIG_IGN for the background jobs of a shell without job control; pytest, the fork server, the slot workers and every
program inherited that (a blocked signal mask is inherited the same way through fork and exec), so the self-kill did
nothing and the program was graded by what followed (`ok`, `early-exit`, `exception:ZeroDivisionError`). Not a race:
the same sample passed 3 times out of 3 in the foreground with 6 busy loops on the 2 cores.

Why the existing tests missed it: every sandbox test and notebook inherits the signal state of the shell that runs
pytest, and a foreground or interactive shell leaves SIGQUIT at its default with nothing blocked, the state the fuzz
oracle assumes; no test varied the state of the process that starts the Executor. These tests set a hostile state in a
child interpreter (and launch one exactly as that CI run was launched), so they fail on the old code from any shell."""
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# what each self-signal gives in a fresh `python` started by a clean parent (the fuzz oracle's table)
SELF_SIGNAL = {'SIGQUIT': 'killed', 'SIGTERM': 'killed', 'SIGUSR1': 'killed', 'SIGINT': 'exception:KeyboardInterrupt',
               'SIGPIPE': 'ok'}
PROBE = ('st = dict(l.split(":\\t") for l in open("/proc/self/status").read().splitlines())\n'
         'print(st["SigBlk"], st["SigIgn"])')

# the grader's host: reports its own signal state, then grades the programs in the file named by argv[3]
HOST = f'''
import json, signal, sys
sys.path.insert(0, {str(ROOT)!r})
from proposal_nb.programs.sandbox import Executor
if sys.argv[1] == 'hostile':
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1): signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
host = dict(quit=int(signal.getsignal(signal.SIGQUIT)), blocked=sorted(signal.pthread_sigmask(signal.SIG_BLOCK, ())))
programs = json.loads(open(sys.argv[3]).read())
with Executor(cpu_seconds=2, warm_imports=(), workers=2, warm=sys.argv[2] == 'warm') as ex:
    vs = ex.run(programs)
print(json.dumps(dict(host=host, reasons=[v.reason for v in vs], probe=vs[-1].stdout.split())))
'''


def _programs():
    return [f'import os, signal, time\nos.kill(os.getpid(), signal.{s}); time.sleep(0.05)' for s in SELF_SIGNAL] + [PROBE]


@pytest.mark.parametrize('launch, path', [('hostile', 'warm'), ('hostile', 'cold'), ('bash-background', 'warm')])
def test_self_sigquit_is_killed_when_the_grader_inherits_sigquit_ignored_or_blocked(tmp_path, launch, path):
    "A self-SIGQUIT is `killed` (and the other self-signals get a fresh python's verdicts) whatever the host inherited."
    script, programs = tmp_path / 'host.py', tmp_path / 'programs.json'
    script.write_text(HOST)
    programs.write_text(json.dumps(_programs()))
    if launch == 'hostile':  # SIGINT, SIGQUIT, SIGTERM, SIGUSR1 ignored and every signal blocked in the host
        cmd = [sys.executable, str(script), 'hostile', path, str(programs)]
    else:  # as the failing CI run: a background job of a non-interactive bash (which ignores SIGINT and SIGQUIT)
        cmd = ['bash', '-c', '"$0" "$1" plain "$2" "$3" & wait', sys.executable, str(script), path, str(programs)]
    out = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    # the hostile state really reached the host (else this test would check nothing)
    assert res['host']['quit'] == int(signal.SIG_IGN), res['host']
    if launch == 'hostile': assert signal.SIGQUIT in res['host']['blocked'], res['host']
    assert dict(zip(SELF_SIGNAL, res['reasons'])) == SELF_SIGNAL, res
    assert res['reasons'][-1] == 'ok', res
    blocked, ignored = (int(x, 16) for x in res['probe'])
    assert blocked == 0, res['probe']
    assert ignored == (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1)), res['probe']  # as in `python -c`
