"""Data-parallel training on CPU with gloo, through DDP and FSDP2: two ranks give the adapter one rank gives for the same
global batch (within float tolerance), checkpoints move between world sizes and strategies, and bad launches fail with
errors that name the bad value."""
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

pytestmark = pytest.mark.xdist_group("torchrun")   # one torchrun job at a time: two gloo jobs side by side once aborted a rank in CI

WORKER = str(Path(__file__).with_name("dist_worker.py"))
# The adapters of two runs that differ only in how float32 sums are ordered (each rank packs and scores its own shard; since
# issue 36 the weights take the sampler's own log-probs, whose rounding follows each rank's batch size; another CPU's kernels
# sum in another order) agree entry by entry to rounding, except the few entries Adam magnifies: it divides by |g|, so an
# entry whose gradient is near 0 moves by up to lr a step either way. So 99.9% of the entries agree to 1e-5 (seen: 1.5e-6
# at most, where training moved entries by up to 6e-3) and every entry to a tenth of what steps 3-4 moved the adapter (seen:
# 2.4%, on an Intel Xeon with AMX on 2026-12-06; two entries of 14,336 differed by more than 1e-5; before, 7e-5 absolute).
Q999, REL = 1e-5, 0.1


def close(a, b, moved):
    "The adapters agree to rounding but for Adam's few magnified entries, and training moved them (the check has teeth)."
    assert moved > 2e-3, moved
    d = torch.cat([(a[k] - b[k]).abs().flatten() for k in a])
    assert float(d.quantile(0.999)) < Q999 and float(d.max()) < REL * moved, (float(d.quantile(0.999)), float(d.max()), moved)


def launch(ranks, *args, ok=True, **env):
    pre = [sys.executable] if ranks == 0 else [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
    r = subprocess.run([*pre, WORKER, *map(str, args)], capture_output=True, text=True, timeout=900,
                       env=os.environ | {k.upper(): str(v) for k, v in env.items()})
    assert (r.returncode == 0) == ok, r.stderr[-3000:]
    return r.stderr


def one(*args, **env): return launch(0, *args, **env)
def two(*args, **env): return launch(2, *args, **env)


def adapter(run, step):
    return torch.load(Path(run) / f"checkpoints/step-{step}/trainer.pt", weights_only=False)["adapter"]


def max_diff(a, b):
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    "One-process runs, one per (estimator, engine), shared by the strategies."
    done = {}
    def get(estimator, engine, prefix=True):
        if (estimator, engine, prefix) not in done:
            d = tmp_path_factory.mktemp(f"one-{estimator}-{engine}")
            one(d, estimator, engine=engine, **({} if prefix else dict(prefix=0))); done[estimator, engine, prefix] = d
        return done[estimator, engine, prefix]
    return get


@pytest.mark.parametrize("estimator,engine,strategy", [("iguana", "fast", "ddp"), ("msc", "fast", "ddp"), ("iguana", "hf", "ddp"),
                                                       ("msc", "fast", "fsdp"), ("iguana", "hf", "fsdp")])
def test_two_ranks_equal_one(tmp_path, reference, estimator, engine, strategy):
    """Each rank decodes its shard as one batch (2 prompts × 4 draws on one rank, 1 × 4 on each of two): keyed draws make
    the batches' composition irrelevant, and the estimator's step on the gathered batch gives every rank the same state."""
    ref = reference(estimator, engine, prefix=strategy != "fsdp")   # FSDP ranks score packed (FSDPOnlineRun.prefix_scoring): so does its reference
    two(tmp_path / "two", estimator, engine=engine, strategy=strategy)
    a, b = adapter(ref, 4), adapter(tmp_path / "two", 4)
    close(a, b, max_diff(a, adapter(ref, 2)))
    la, lb = (pd.read_parquet(Path(x) / "log.parquet") for x in (ref, tmp_path / "two"))
    pd.testing.assert_series_equal(la.validity, lb.validity)               # the same draws, graded the same
    assert (la.loss - lb.loss).abs().max() < 1e-4


@pytest.mark.parametrize("estimator,strategy", [("iguana", "ddp"), ("msc", "fsdp"), ("rb-msc", "ddp")])
def test_two_ranks_chunked_equal_one(tmp_path, estimator, strategy):
    """Chunked scoring (3 rows per backward chunk) on two ranks with unequal shares against one process scoring each step in
    one pass: 3 prompts per step put 2 on rank 0 and 1 on rank 1, so rank 1 runs idle chunks at weight 0 to match rank 0's
    collectives. Float32: the tolerance of the unchunked comparison (chunks only reorder float32 sums)."""
    one(tmp_path / "one", estimator, engine="fast", prompts=3)
    two(tmp_path / "two", estimator, engine="fast", strategy=strategy, prompts=3, score_rows=3)
    a, b = adapter(tmp_path / "one", 4), adapter(tmp_path / "two", 4)
    close(a, b, max_diff(a, adapter(tmp_path / "one", 2)))
    la, lb = (pd.read_parquet(Path(x) / "log.parquet") for x in (tmp_path / "one", tmp_path / "two"))
    pd.testing.assert_series_equal(la.validity, lb.validity)
    assert ((la.grad_norm - lb.grad_norm).abs() <= 1e-5 * la.grad_norm.abs() + 1e-9).all()


def test_checkpoints_move_between_world_sizes_and_strategies(tmp_path, reference):
    ref = reference("iguana", "fast")
    two(tmp_path / "a", "iguana", 2, engine="fast", strategy="ddp")      # two DDP ranks stop after step 2
    one(tmp_path / "a", "iguana", 4, engine="fast")                      # one process continues to step 4
    close(adapter(ref, 4), adapter(tmp_path / "a", 4), max_diff(adapter(ref, 4), adapter(ref, 2)))
    one(tmp_path / "b", "iguana", 2, engine="fast")                      # one process stops after step 2
    two(tmp_path / "b", "iguana", 4, engine="fast", strategy="fsdp")     # two FSDP ranks continue to step 4
    close(adapter(ref, 4), adapter(tmp_path / "b", 4), max_diff(adapter(ref, 4), adapter(ref, 2)))


def test_bad_launches_name_the_bad_value(tmp_path):
    err = two(tmp_path / "few", "iguana", 2, ok=False, prompts=1)
    assert "prompts_per_step=1 is less than the 2 processes" in err
    one(tmp_path / "r8", "iguana", 2, engine="fast")
    err = one(tmp_path / "r8", "iguana", 4, ok=False, engine="fast", lora_r=4)   # a checkpoint of rank 8 into a rank-4 adapter
    assert "does not fit this model" in err and "(8, " in err and "(4, " in err
    err = two(tmp_path / "r8", "msc", 4, ok=False, engine="fast")                # a different estimator
    assert "different config" in err and "estimator.name" in err
