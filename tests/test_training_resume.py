"""Fault test: a CPU run killed with SIGKILL after a checkpoint resumes to exactly the run that never stopped
(identical adapter weights, identical logged metrics and identical draws, their completions among them), also when the
kill falls between the parts a step appends and the next checkpoint."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proposal_nb.lm.training import same_run

WORKER = str(Path(__file__).with_name("train_worker.py"))

# The same tiny run in one `train` call (train_worker.py calls it once per step, so the tables are compacted every step):
# here a step only appends its parts, and the tables are compacted at the checkpoints (every 3 steps) and at the end.
# `python -c ONE_CALL RUN_DIR ESTIMATOR SLOW_AFTER`: from step SLOW_AFTER on (0: never) each step prints and sleeps 1 s.
ONE_CALL = """
import sys, time
import numpy as np, torch
from proposal_nb.lm.models import add_lora, tiny_model
from proposal_nb.lm.training import Callback, OnlineRun, SavePoints, online_config
from proposal_nb.programs.tasks import Task
class Slow(Callback):
    def __init__(self, after): self.after = after
    def after_step(self, run, row, seconds):
        if self.after and run.step >= self.after: print(f"step {run.step}", flush=True); time.sleep(1.0)
run_dir, estimator, slow = sys.argv[1], sys.argv[2], int(sys.argv[3])
m, tok = tiny_model(seed=0); torch.manual_seed(0); model = add_lora(m, dropout=0.0)
cfg = online_config(estimator=estimator, M=4, prompts_per_step=2, steps=8, lr=3e-3, max_new_tokens=8, checkpoint_every=3)
has_a = lambda tasks, completions: np.array([float("a" in c) for c in completions])
run = OnlineRun(model, tok, [Task(id=f"toy/{i}", prompt=f"task {i}") for i in range(4)], has_a, cfg, run_dir)
run.train(progress=False, callbacks=[SavePoints(), Slow(slow)])
"""


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


def test_sigkill_between_appended_parts_and_a_checkpoint(tmp_path):
    "Killed after step 5 appended its parts (checkpoint and compaction at step 3): the resumed run drops steps 4-5 and ends as the unbroken one."
    import pandas as pd
    from proposal_nb.lm.rollouts import text_hash
    from proposal_nb.lm.run_tables import run_table
    full, killed = tmp_path / "full", tmp_path / "killed"
    one = lambda d, slow: subprocess.Popen([sys.executable, "-c", ONE_CALL, str(d), "iguana", str(slow)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p = one(full, 0)
    assert p.wait(timeout=600) == 0, p.stderr.read().decode()[-2000:]
    q = one(killed, 5)
    assert q.stdout.readline().strip() == b"step 5", q.stderr.read().decode()[-2000:]
    os.kill(q.pid, signal.SIGKILL)
    assert q.wait(timeout=60) == -signal.SIGKILL
    assert sorted(f.name for f in (killed / "parts").iterdir()) == [f"{t}-{s:08d}.parquet" for t in ("draws", "log") for s in (4, 5)]
    assert pd.read_parquet(killed / "log.parquet").step.tolist() == [1, 2, 3]            # compacted at the checkpoint only
    assert run_table(killed, "log").step.tolist() == [1, 2, 3, 4, 5]                     # the live view reads the parts too
    r = one(killed, 0)
    assert r.wait(timeout=600) == 0, r.stderr.read().decode()[-2000:]
    assert not list((killed / "parts").iterdir())
    assert same_run(full, killed, 8) and same_run(full, killed, 6)
    d = pd.read_parquet(killed / "draws.parquet")
    assert len(d) == 8 * 2 * 4 and [text_hash(c) for c in d.completion] == d.text_hash.tolist()
