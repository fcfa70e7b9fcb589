"""Fault test: a CPU run killed with SIGKILL after a checkpoint resumes to exactly the run that never stopped
(identical adapter weights and identical logged metrics)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proposal_nb.lm.training import same_run

WORKER = str(Path(__file__).with_name("train_worker.py"))


def run(*args, **kw):
    return subprocess.Popen([sys.executable, WORKER, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.mark.parametrize("estimator", ["iguana", "rb-msc"])
def test_sigkill_then_resume_is_exact(tmp_path, estimator):
    full, killed = tmp_path / "full", tmp_path / "killed"
    p = run(full, estimator)
    assert p.wait(timeout=600) == 0, p.stderr.read().decode()[-2000:]
    q = run(killed, estimator, 4)            # slows down from step 4, after the step-3 checkpoint
    deadline = time.time() + 600
    while not (killed / "checkpoints" / "step-3").exists() or not (killed / "log.parquet").exists():
        assert q.poll() is None, q.stderr.read().decode()[-2000:]
        assert time.time() < deadline, "no checkpoint within 10 minutes"
        time.sleep(0.1)
    q.stdout.readline()                      # wait until it is past step 4 (mid-run, between checkpoints)
    os.kill(q.pid, signal.SIGKILL)
    assert q.wait(timeout=60) == -signal.SIGKILL
    assert not (killed / "checkpoints" / "step-8").exists()
    r = run(killed, estimator)
    assert r.wait(timeout=600) == 0, r.stderr.read().decode()[-2000:]
    assert same_run(full, killed, 8)
    assert same_run(full, killed, 6)
