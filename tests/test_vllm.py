"""vLLM (CPU build, float32) against the HF training copy on the tiny model: the sampler's per-sequence
log-probs must equal `completion_logprobs` to <= 1e-4 nats for plain and truncated configs, with and without
a LoRA adapter, and a changed adapter must be picked up. Runs in the vLLM venv:
    bash scripts/setup_vllm.sh && .venv-vllm/bin/python -m pytest tests/test_vllm.py
Skipped where vllm is not importable (the main .venv)."""
import math

import pytest
import torch

vllm = pytest.importorskip("vllm")

from proposal_nb.lm.models import tiny_model, add_lora
from proposal_nb.lm.densities import DecodingConfig, completion_logprobs
from proposal_nb.lm.generation import VLLMGenerator, check_exact_weights

TOL = 1e-4
CONFIGS = [DecodingConfig(), DecodingConfig(temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05),
           DecodingConfig(temperature=1.2, min_p=0.05), DecodingConfig(top_k=5)]
PROMPTS = ["def f(x):", "```py\nx = ", "print("]


def _perturb(model, seed, scale=0.2):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, w in model.named_parameters():
            if "lora_B" in n: w.normal_(0, scale, generator=g)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    torch.set_num_threads(2)
    d = tmp_path_factory.mktemp("tiny")
    model, tok = tiny_model(0)
    model.save_pretrained(d / "base"); tok.save_pretrained(d / "base")
    gen = VLLMGenerator(d / "base", max_new_tokens=24, stop_at_fence=False, seed=0, max_lora_rank=8,
                        max_model_len=256, max_num_seqs=32)
    return gen, model, tok, d


@pytest.mark.parametrize("config", CONFIGS, ids=["plain", "card", "min_p", "top_k"])
def test_vllm_matches_hf_density(engine, config):
    gen, model, tok, _ = engine
    out = gen.generate(PROMPTS, n=8, config=config)
    flat = [g for row in out for g in row]
    assert len(flat) == 24 and all(len(g.token_ids) == len(g.logprobs) > 0 for g in flat)
    # vLLM tokenised nothing itself: the prompt ids are ours
    assert [g.prompt_ids for g in flat[::8]] == [tok(p, add_special_tokens=False).input_ids for p in PROMPTS]
    chk = check_exact_weights(out, model, config, tol=TOL, sample=None)
    print(f"{config}: max {chk.max_diff:.2e}, median {chk.median_diff:.2e}")
    assert chk.max_diff <= TOL


def test_vllm_lora_and_refresh(engine):
    gen, model, tok, d = engine
    pm = add_lora(tiny_model(0)[0], dropout=0.0).eval()
    _perturb(pm, 0)
    pm.save_pretrained(d / "adapter")
    r1 = gen.lora_request(d / "adapter")
    out = gen.generate(PROMPTS, n=6, adapter=d / "adapter")
    chk = check_exact_weights(out, pm, DecodingConfig(), tol=TOL, sample=None)
    assert chk.max_diff <= TOL
    # the same draws are far from the base model's density: the adapter was applied
    with torch.no_grad():
        flat = [g for row in out for g in row]
        base = completion_logprobs(model, [g.prompt_ids for g in flat], [g.token_ids for g in flat])
    assert max(abs(g.logprob - b) for g, b in zip(flat, base.tolist())) > 0.1
    # a new adapter saved to the same folder gets a new request id and is used
    _perturb(pm, 1)
    pm.save_pretrained(d / "adapter")
    assert gen.lora_request(d / "adapter").lora_int_id == r1.lora_int_id + 1
    out2 = gen.generate(PROMPTS, n=6, adapter=d / "adapter")
    assert check_exact_weights(out2, pm, DecodingConfig(), tol=TOL, sample=None).max_diff <= TOL
    assert gen.lora_request(d / "adapter").lora_int_id == r1.lora_int_id + 1   # unchanged: same id


def test_truncation_matches_vllm_kernels():
    "DecodingConfig.logprobs equals vLLM's own top-k/top-p/min-p code on random logits, token for token."
    from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 300, generator=g) * 3
    for k, p in [(20, 0.8), (0, 0.9), (5, 1.0), (50, 0.5)]:
        ref = apply_top_k_top_p_pytorch(logits.clone() / 0.7, torch.full((64,), k) if k else None,
                                        torch.full((64,), p) if p < 1 else None, allow_cpu_sync=True).log_softmax(-1)
        ours = DecodingConfig(temperature=0.7, top_k=k, top_p=p).logprobs(logits)
        assert torch.equal(ref.isinf(), ours.isinf()), (k, p)
        fin = ~ours.isinf()
        assert torch.allclose(ref[fin], ours[fin], atol=1e-6)


def test_online_loop_on_the_vllm_engine(engine, tmp_path):
    """The real loop (training.OnlineRun) sampling through engines.VLLMEngine: the adapter is saved and served as a new
    LoRA request after every step, and the loop's exact-weight check (vLLM's own log-probs against the trainer's
    float32 scorer, every token of every step) holds to 1e-3 nats while the adapter moves."""
    import numpy as np
    from proposal_nb.lm.engines import VLLMEngine
    from proposal_nb.programs.tasks import Task
    from proposal_nb.lm.training import OnlineRun, online_config
    gen, model, tok, d = engine
    torch.manual_seed(0)
    pm = add_lora(tiny_model(0)[0], dropout=0.0)
    tasks = [Task(id=f"toy/{i}", prompt=f"task {i}") for i in range(4)]
    has_a = lambda tasks, completions: np.array([float("a" in c) for c in completions])
    eng = VLLMEngine(pm, tok, d / "base", generator=gen, adapter_dir=tmp_path / "adapter")
    first_id = gen.lora_request(eng.adapter).lora_int_id
    cfg = online_config(estimator="iguana", M=4, prompts_per_step=2, steps=3, lr=3e-2, max_new_tokens=24, engine="vllm")
    log = OnlineRun(pm, tok, tasks, has_a, cfg, tmp_path / "run", engine=eng).train(progress=False)
    assert set(log.engine) == {"vllm"} and len(log) == 3
    assert (log.logprob_gap_max < 1e-3).all(), log.logprob_gap_max.tolist()
    assert gen.lora_request(eng.adapter).lora_int_id > first_id          # the moved adapter was served anew
