"""The CUDA/NCCL variant of the 2-rank = 1-rank test (skipped without 2 GPUs): the tiny model in float32, one process on
cuda:0 against two NCCL ranks on cuda:0 and cuda:1, through DDP and FSDP2, with the fast engine (CUDA-graph decode on
one rank and under DDP; gathered weights without a graph under FSDP)."""
import pytest
import torch

from test_distributed import TOL, adapter, max_diff, one, two

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("one-cuda")
    one(d, "msc", engine="fast", device="cuda")
    return d


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_nccl_ranks_equal_one_gpu(tmp_path, reference, strategy):
    two(tmp_path / "two", "msc", engine="fast", strategy=strategy)
    a, b = adapter(reference, 4), adapter(tmp_path / "two", 4)
    d = max_diff(a, b)
    print(f"{strategy}: max |Δ adapter| 1 GPU vs 2 NCCL ranks = {d:.3g} (movement {max_diff(a, adapter(reference, 2)):.3g})")
    assert d < TOL
    assert max_diff(a, adapter(reference, 2)) > 20 * TOL
