"""Data-parallel training on CPU with gloo: two ranks give the adapter one rank gives for the same global batch
(within float tolerance), and a checkpoint written by two ranks resumes in one process."""
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

WORKER = str(Path(__file__).with_name("dist_worker.py"))
TOL = 5e-5   # float32 sums in a different order across ranks (each rank packs and scores its own shard), through Adam's normalisation


def one(*args, engine="auto"):
    r = subprocess.run([sys.executable, WORKER, *map(str, args)], capture_output=True, text=True, timeout=900, env=os.environ | {"ENGINE": engine})
    assert r.returncode == 0, r.stderr[-3000:]


def two(*args, engine="auto"):
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", WORKER, *map(str, args)],
                       capture_output=True, text=True, timeout=900, env=os.environ | {"ENGINE": engine})
    assert r.returncode == 0, r.stderr[-3000:]


def adapter(run, step):
    return torch.load(Path(run) / f"checkpoints/step-{step}/trainer.pt", weights_only=False)["adapter"]


def max_diff(a, b):
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.mark.parametrize("estimator,engine", [("iguana", "fast"), ("msc", "fast"), ("iguana", "hf")])
def test_two_ranks_equal_one(tmp_path, estimator, engine):
    """Each rank decodes its shard as one batch (2 prompts × 4 draws on one rank, 1 × 4 on each of two): keyed draws make
    the batches' composition irrelevant, and the estimator's step on the gathered batch gives every rank the same state."""
    one(tmp_path / "one", estimator, engine=engine)
    two(tmp_path / "two", estimator, engine=engine)
    a, b = adapter(tmp_path / "one", 4), adapter(tmp_path / "two", 4)
    assert max_diff(a, b) < TOL
    assert max_diff(a, adapter(tmp_path / "one", 2)) > 20 * TOL           # training moved the adapter: the check has teeth
    la, lb = (pd.read_parquet(tmp_path / x / "log.parquet") for x in ("one", "two"))
    pd.testing.assert_series_equal(la.validity, lb.validity)               # the same draws, graded the same
    assert (la.loss - lb.loss).abs().max() < 1e-4


def test_checkpoint_of_two_ranks_resumes_in_one(tmp_path):
    one(tmp_path / "ref", "iguana", 4)
    two(tmp_path / "mixed", "iguana", 2)                                    # two ranks stop after step 2
    one(tmp_path / "mixed", "iguana", 4)                                    # one process continues to step 4
    assert max_diff(adapter(tmp_path / "ref", 4), adapter(tmp_path / "mixed", 4)) < TOL
