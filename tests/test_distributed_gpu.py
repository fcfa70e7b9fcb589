"""The CUDA/NCCL variant of the 2-rank = 1-rank test (skipped without 2 GPUs): the tiny model in float32, one process on
cuda:0 against two NCCL ranks on cuda:0 and cuda:1, through DDP and FSDP2, with the fast engine (CUDA-graph decode on
one rank, under DDP, and under FSDP2, where the graph is recaptured after every gather), whole-step and chunked
scoring. And, on one GPU, the sampler's graph recapture: a graph captured before the weights moved replays the old
weights; `recapture()` makes the next draw use the moved ones."""
import pytest
import torch

from test_distributed import adapter, close, max_diff, one, two

two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("one-cuda")
    one(d, "msc", engine="fast", device="cuda")
    return d


@two_gpus
@pytest.mark.parametrize("strategy,score_rows", [("ddp", None), ("fsdp", None), ("ddp", 3), ("fsdp", 3)])
def test_two_nccl_ranks_equal_one_gpu(tmp_path, reference, strategy, score_rows):
    two(tmp_path / "two", "msc", engine="fast", strategy=strategy, **({} if score_rows is None else dict(score_rows=score_rows)))
    a, b = adapter(reference, 4), adapter(tmp_path / "two", 4)
    d = max_diff(a, b)
    print(f"{strategy} score_rows={score_rows}: max |Δ adapter| 1 GPU vs 2 NCCL ranks = {d:.3g} (movement {max_diff(a, adapter(reference, 2)):.3g})")
    close(a, b, max_diff(a, adapter(reference, 2)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_recapture_follows_weights_that_moved():
    from proposal_nb.lm.fast_sampler import FastSampler
    from proposal_nb.lm.generation import row_keys
    from proposal_nb.lm.models import add_lora, tiny_model
    m, tok = tiny_model(seed=0, layers=2, heads=4, kv_heads=2)
    torch.manual_seed(0)
    pm = add_lora(m, dropout=0.0).to("cuda").eval()
    prompt = [tok("<|im_start|>def f(x):")["input_ids"]]
    keys = torch.tensor([row_keys(0, 0, j) for j in range(4)])
    s = FastSampler(pm, batch=4, max_len=40, graph=True)
    s.draw(prompt, 4, 12, keys)                                       # captures the graph on the current weights
    gate = pm.get_base_model().model.layers[0].mlp.gate_proj.weight  # a base weight the sampler reads in place
    old = gate.data
    with torch.no_grad(): gate.data = old * 3.0                      # new values at a new address (as after an FSDP2 gather)
    assert gate.data_ptr() != old.data_ptr()
    stale = s.draw(prompt, 4, 12, keys)                               # the graph still reads `old` (kept alive above)
    s.recapture()
    fresh = s.draw(prompt, 4, 12, keys)
    eager = FastSampler(pm, batch=4, max_len=40, graph=False).draw(prompt, 4, 12, keys)
    assert torch.equal(fresh.tokens, eager.tokens) and torch.allclose(fresh.logprobs, eager.logprobs, atol=1e-5)
    assert not torch.allclose(stale.logprobs, eager.logprobs, atol=1e-5)   # without recapture the draw used the old weights
