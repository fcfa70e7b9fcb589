"""Issue 40 item 1: a training run streamed live to a tracker (`report_to`, proposal_nb.lm.tracking), on the tiny random
model (lm.models.tiny_model). TensorBoard's event files, read back with TensorBoard's own reader, hold every numeric
column of log.parquet as a series with one point per step, equal to it, also after a SIGKILL and a resume; trackio
writes the same numbers into its local database without touching the network (a token and a Space id in the
environment notwithstanding); the run notebook takes `report_to` and refuses an unknown tracker by name."""
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from proposal_nb.lm import tracking
from proposal_nb.lm.models import add_lora, tiny_model
from proposal_nb.lm.tracking import Track, report_targets
from proposal_nb.lm.training import OnlineRun, SavePoints, online_config
from proposal_nb.programs.tasks import Task

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("proposal-nb"))
TASKS = [Task(id=f"toy/{i}", prompt=f"task {i}") for i in range(4)]

# A tiny run in a process of its own: `python -c WORKER RUN_DIR REPORT_TO SLOW_AFTER`; from step SLOW_AFTER on (0: never)
# each step prints its number and sleeps 1 s, so that the test can kill it between two checkpoints.
WORKER = """
import sys, time
import numpy as np, torch
from proposal_nb.lm.models import add_lora, tiny_model
from proposal_nb.lm.training import Callback, OnlineRun, SavePoints, online_config
from proposal_nb.lm.tracking import Track
from proposal_nb.programs.tasks import Task
class Slow(Callback):
    def __init__(self, after): self.after = after
    def after_step(self, run, row, seconds):
        if self.after and run.step >= self.after: print(f"step {run.step}", flush=True); time.sleep(1.0)
run_dir, report_to, slow = sys.argv[1], sys.argv[2], int(sys.argv[3])
m, tok = tiny_model(seed=0); torch.manual_seed(0); model = add_lora(m, dropout=0.0)
cfg = online_config(estimator="iguana", M=4, prompts_per_step=2, steps=8, lr=3e-3, max_new_tokens=8, checkpoint_every=3)
has_a = lambda tasks, completions: np.array([float("a" in c) for c in completions])
run = OnlineRun(model, tok, [Task(id=f"toy/{i}", prompt=f"task {i}") for i in range(4)], has_a, cfg, run_dir)
run.train(progress=False, callbacks=[SavePoints(), Track(report_to), Slow(slow)])
"""


def has_a(tasks, completions):
    return np.array([float("a" in c) for c in completions])


def fresh():
    m, tok = tiny_model(seed=0)
    torch.manual_seed(0)
    return add_lora(m, dropout=0.0), tok


def event_series(log_dir) -> dict:
    "tag -> [(step, value), ...] of every scalar series in an event folder, in reading order (TensorBoard's EventAccumulator)."
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util.tensor_util import make_ndarray
    ea = EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    ea.Reload()
    return {t: [(e.step, float(make_ndarray(e.tensor_proto))) for e in ea.Tensors(t)] for t in ea.Tags()["tensors"]
            if ea.SummaryMetadata(t).plugin_data.plugin_name == "scalars"}


def numeric_columns(log: pd.DataFrame) -> list:
    return [c for c in log.columns if c != "step" and pd.api.types.is_numeric_dtype(log[c])]


def assert_series_are_the_log(series: dict, log: pd.DataFrame):
    "Every numeric column of the log is a series with one point per step, equal to the column (NaN where it is NaN)."
    cols = numeric_columns(log)
    assert sorted(t for t in series if "/" not in t) == sorted(cols)
    for c in cols:
        assert [s for s, _ in series[c]] == log.step.tolist(), c
        np.testing.assert_array_equal([v for _, v in series[c]], log[c].to_numpy(float), err_msg=c)


def test_report_to_is_checked_by_name(monkeypatch):
    assert report_targets("none") == () and report_targets("tensorboard,trackio") == ("tensorboard", "trackio")
    with pytest.raises(ValueError, match="unknown tracker 'wandb'; use one of none, trackio, tensorboard"):
        Track("wandb")
    monkeypatch.setattr(tracking, "_installed", lambda package: package != "tensorboard")
    with pytest.raises(ImportError, match=r"report_to='tensorboard' needs the tensorboard package, which is not installed here: pip install 'proposal_nb\[track\]'"):
        Track(["trackio", "tensorboard"])


def test_tensorboard_scalars_are_the_log(tmp_path):
    model, tok = fresh()
    cfg = online_config(estimator="msc", M=4, prompts_per_step=2, steps=5, lr=1e-2, max_new_tokens=8, checkpoint_every=2)
    log = OnlineRun(model, tok, TASKS, has_a, cfg, tmp_path).train(progress=False, callbacks=[SavePoints(), Track("tensorboard")])
    saved = pd.read_parquet(tmp_path / "log.parquet")
    pd.testing.assert_frame_equal(saved, log)
    assert len(numeric_columns(saved)) >= 35 and "kept" in saved            # every diagnostic the loop logs, MSC's own among them
    assert_series_are_the_log(event_series(tmp_path / "tensorboard"), saved)


def test_tensorboard_after_sigkill_keeps_one_point_per_step(tmp_path):
    "Killed between two checkpoints (steps 4 and 5 sent, the checkpoint at 3), resumed in a new process: one point per step, the resumed ones."
    d = tmp_path / "killed"
    q = subprocess.Popen([sys.executable, "-c", WORKER, str(d), "tensorboard", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert q.stdout.readline().strip() == b"step 5", q.stderr.read().decode()[-2000:]
    os.kill(q.pid, signal.SIGKILL)
    assert q.wait(timeout=60) == -signal.SIGKILL
    before = event_series(d / "tensorboard")
    assert [s for s, _ in before["loss"]] == [1, 2, 3, 4, 5] and (d / "checkpoints" / "step-3").exists()
    time.sleep(1.1)                                          # event files are named by the second they were opened in
    r = subprocess.run([sys.executable, "-c", WORKER, str(d), "tensorboard", "0"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    log = pd.read_parquet(d / "log.parquet")
    assert log.step.tolist() == list(range(1, 9))
    after = event_series(d / "tensorboard")
    assert_series_are_the_log(after, log)
    assert [v for s, v in after["t_generation"] if s in (4, 5)] != [v for s, v in before["t_generation"] if s in (4, 5)]   # the resumed run's times


def test_trackio_stays_local_and_gets_every_column(tmp_path):
    "trackio in its own process (its database folder is read when it is imported): a token, a Space id and a server in the"
    " environment, every network connection refused and recorded; the run streams to trackio and TensorBoard at once."
    probe = f"""
import json, socket, sys
attempts = []
def refuse(kind):
    def f(*a, **k):
        attempts.append([kind, repr(a[:2])]); raise OSError("no network in this test")
    return f
_connect = socket.socket.connect
def connect(self, addr):
    if self.family in (socket.AF_INET, socket.AF_INET6): return refuse("connect")(addr)
    return _connect(self, addr)
socket.socket.connect, socket.getaddrinfo = connect, refuse("getaddrinfo")
sys.argv = ["worker", {str(tmp_path / "run")!r}, "trackio,tensorboard", "0"]
exec(compile({WORKER!r}, "worker", "exec"))
from trackio.sqlite_storage import SQLiteStorage
logs = SQLiteStorage.get_logs("proposal_nb", "run")
json.dump(dict(attempts=attempts, logs=logs, runs=SQLiteStorage.get_runs("proposal_nb")), open({str(tmp_path / "trackio.json")!r}, "w"), default=str)
"""
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "HF_TOKEN": "hf_not_a_real_token",
           "TRACKIO_SPACE_ID": "someone/a-space", "TRACKIO_SERVER_URL": "http://192.0.2.1:7860"}
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    got = json.loads((tmp_path / "trackio.json").read_text())
    assert got["attempts"] == [], got["attempts"]
    assert got["runs"] == ["run"] and (tmp_path / "trackio" / "proposal_nb.db").exists()
    log = pd.read_parquet(tmp_path / "run" / "log.parquet")
    rows = {r["step"]: r for r in got["logs"] if "loss" in r}
    assert sorted(rows) == log.step.tolist()
    for c in numeric_columns(log):
        want = log[c].to_numpy(float)
        have = np.array([np.nan if rows[s].get(c) is None else float(rows[s][c]) for s in log.step], dtype=float)
        np.testing.assert_array_equal(have, want, err_msg=c)
    assert [rows[s]["prompts"] for s in log.step] == log.prompts.tolist()          # the texts too
    assert_series_are_the_log(event_series(tmp_path / "run" / "tensorboard"), log)


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    "A user's folder: the tiny model saved as my-coder and seven embedded tasks as a native task file."
    d = tmp_path_factory.mktemp("user")
    m, tok = tiny_model(seed=0)
    m.save_pretrained(d / "my-coder"); tok.save_pretrained(d / "my-coder")
    rows = [json.loads(l) for l in (ROOT / "data" / "tasks" / "embedded.jsonl").read_text().splitlines()[:7]]
    (d / "my_tasks.jsonl").write_text("".join(json.dumps({**r, "id": r["id"].replace("embedded/", "mine/")}) + "\n" for r in rows))
    return d


def cli(*args, cwd):
    e = {**os.environ, "PATH": str(Path(sys.executable).parent), "COLUMNS": "200"}
    return subprocess.run([CLI, "run", "11_train_online.ipynb", "-p", "model", "my-coder", "-p", "tasks", "my_tasks.jsonl", *args],
                          cwd=cwd, env=e, capture_output=True, text=True, timeout=600)


def test_run_notebook_streams_to_tensorboard(user):
    "-p report_to tensorboard: the run folder's tensorboard/ holds the log; the run records its trackers outside its parameters,"
    " so a resume may change them; an unknown tracker stops the run naming it."
    small = ["--set", "steps=2", "--set", "M=2", "--set", "max_new_tokens=8", "--set", "checkpoint_every=1"]
    p = cli("-p", "report_to", "tensorboard", "--out", "runs/tracked", *small, cwd=user)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    run = user / "runs" / "tracked"
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["report_to"] == ["tensorboard"] and "report_to" not in cfg["parameters"]
    assert_series_are_the_log(event_series(run / "tensorboard"), pd.read_parquet(run / "log.parquet"))
    p = cli("-p", "report_to", "none", "--out", "runs/tracked", *small, "--set", "steps=3", cwd=user)     # resumed, not tracked
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert len(pd.read_parquet(run / "log.parquet")) == 3 and json.loads((run / "config.json").read_text())["report_to"] == []
    p = cli("-p", "report_to", "wandb", "--out", "runs/wandb", *small, cwd=user)
    assert p.returncode != 0 and "unknown tracker 'wandb'" in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-3000:]
    assert not (user / "runs" / "wandb" / "log.parquet").exists()
