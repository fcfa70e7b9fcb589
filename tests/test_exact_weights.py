"""Issue 36: the weights' q is the sampler's own density, log p is reproducible, the identity stops a run that fails it.

Tiny random-init models on CPU (seconds each). Statistical checks state their seed, draws and tolerance."""
import json, math, warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from proposal_nb.lm.densities import prior_token_logprobs
from proposal_nb.lm.engines import FastEngine, EngineLogprobsError
from proposal_nb.lm.models import add_lora, tiny_model
from proposal_nb.lm.identity_guard import WeightIdentityError
from proposal_nb.lm.training import OnlineRun, online_config, to_flat
from proposal_nb.programs.tasks import Task

torch.set_num_threads(2)
TASKS = [Task(id=f"toy/{i}", prompt=f"task {i}") for i in range(4)]
HELDOUT = [Task(id=f"held/{i}", prompt=f"other {i}") for i in range(3)]


def has_a(tasks, completions): return np.array([float("a" in c) for c in completions])
def never(tasks, completions): return np.zeros(len(completions))


def fresh(seed=0, lora_scale=0.0, dtype=torch.float32):
    "The tiny model with a seeded LoRA adapter; lora_scale > 0 starts q away from p."
    m, tok = tiny_model(seed=seed)
    torch.manual_seed(seed)
    pm = add_lora(m, dropout=0.0)
    if lora_scale:
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for n, p in pm.named_parameters():
                if "lora_B" in n: p.copy_(torch.randn(p.shape, generator=g) * lora_scale)
    return pm.to(dtype), tok


class NoisyScorer(OnlineRun):
    "A run whose scorer's log q moves by N(0, 0.7²) nats a sequence from pass to pass (as bf16 re-scoring does): the sampler is not the scorer."
    def score_rows(self, P, C, prior=True):
        lq, lp, m = super().score_rows(P, C, prior)
        g = torch.Generator().manual_seed(1000 + self.step)
        eps = torch.randn(lq.shape[0], generator=g, dtype=lq.dtype) * 0.7
        return lq + torch.nn.functional.pad(eps[:, None], (0, lq.shape[1] - 1)), lp, m


def noisy_run(tmp, weights, steps=8):
    m, tok = fresh()
    cfg = online_config(M=32, prompts_per_step=4, steps=steps, lr=1e-3, max_new_tokens=8, checkpoint_every=100,
                        identity_window=4, weights=weights, check_weights=False)   # the per-token check would (rightly) refuse this scorer
    return NoisyScorer(m, tok, TASKS, has_a, cfg, tmp)


def test_sampler_density_keeps_the_identity(tmp_path):
    "Seed 42, 8 steps x 128 draws, windows of 4 steps (512 draws): weighed with the sampler's own log-probs, both windows lie within 3 SE of 1."
    log = noisy_run(tmp_path, "sampler").train(progress=False)
    ends = log[log.step % 4 == 0]
    assert (ends.pq_window_out == 0).all() and (ends.pq_window_z.abs() < 3).all(), ends[["step", "pq_window_mean", "pq_window_se"]]
    d = pd.read_parquet(tmp_path / "draws.parquet")         # the same draws weighed with the scorer's q: inflated by about e^(0.7²/2) = 1.28
    scorer = np.exp(d.logp - d.logq_scorer)
    assert scorer.mean() - 1 > 5 * scorer.std(ddof=1) / math.sqrt(len(d)), scorer.mean()


def test_scorer_density_stops_the_run(tmp_path):
    "The same run weighed with the scorer's log q: both windows are out, and the run stops at step 8, naming what to change."
    with pytest.raises(WeightIdentityError, match=r"step 8: .*two windows in a row.*dtype float32, weights 'scorer'"):
        noisy_run(tmp_path, "scorer").train(progress=False)
    log = pd.read_parquet(tmp_path / "log.parquet")
    assert list(log.step) == list(range(1, 9)) and (log[log.step % 4 == 0].pq_window_out == 1).all()


def test_window_sums_match_the_pooled_draws(tmp_path):
    log = noisy_run(tmp_path, "sampler", steps=4).train(progress=False)
    d = pd.read_parquet(tmp_path / "draws.parquet")
    w = np.exp(d.logp - d.logq)
    row = log.iloc[-1]
    assert row.pq_window_mean == pytest.approx(w.mean(), rel=1e-9)
    assert row.pq_window_se == pytest.approx(w.std(ddof=1) / math.sqrt(len(w)), rel=1e-6)
    assert row.pq_window_detectable > 3 * row.pq_window_se


def test_resume_with_another_dtype_or_scoring_is_refused(tmp_path):
    cfg = online_config(M=4, prompts_per_step=2, steps=2, lr=1e-2, max_new_tokens=8, checkpoint_every=1)
    m, tok = fresh(); OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path).train(progress=False)
    assert json.loads((tmp_path / "exact.json").read_text())["scoring"] == "model"
    before = {f: (tmp_path / f).read_bytes() for f in ("config.json", "exact.json")}
    m, tok = fresh()
    with pytest.raises(ValueError, match=r"scoring model.*this run has.*scoring fixed_shape"):
        OnlineRun(m, tok, TASKS, has_a, online_config(**{**to_flat(cfg), "scoring": "fixed_shape"}), tmp_path)
    assert {f: (tmp_path / f).read_bytes() for f in before} == before                     # a refused resume leaves the folder as it was
    m, tok = fresh(dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"dtype float32.*this run has dtype bfloat16"):
        OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path)
    m, tok = fresh(); assert OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path).step == 2     # the same settings resume


def test_a_checkpoint_from_before_exact_weights_resumes_only_as_it_was_trained(tmp_path):
    "A trainer.pt without 'exact' (and a config without the new keys) was trained with the scorer's q and the model's own pass."
    cfg = online_config(M=4, prompts_per_step=2, steps=2, lr=1e-2, max_new_tokens=8, checkpoint_every=1, weights="scorer", scoring="model")
    m, tok = fresh(); OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path).train(progress=False)
    f = tmp_path / "checkpoints/step-2/trainer.pt"
    s = torch.load(f, weights_only=False)
    s.pop("exact"); s.pop("reverse")
    for k in ("weights", "scoring", "identity_window", "identity_z", "identity_stop", "reverse_draws"): s["config"]["loop"].pop(k)
    torch.save(s, f)
    m, tok = fresh()
    with pytest.raises(ValueError, match="weights scorer; this run has .*weights sampler"):
        OnlineRun(m, tok, TASKS, has_a, online_config(M=4, prompts_per_step=2, steps=2, lr=1e-2, max_new_tokens=8, checkpoint_every=1), tmp_path)
    m, tok = fresh(); assert OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path).step == 2




def test_a_run_that_cannot_learn_says_so(tmp_path):
    cfg = online_config(M=4, prompts_per_step=2, steps=4, lr=1e-2, max_new_tokens=8, checkpoint_every=100, identity_window=2)
    m, tok = fresh()
    with pytest.warns(RuntimeWarning, match="validity 0 in every step"):
        OnlineRun(m, tok, TASKS, never, cfg, tmp_path).train(progress=False)
    lines = (tmp_path / "warnings.txt").read_text().splitlines()
    assert [l.split(":")[0] for l in lines] == ["steps 1-2", "steps 3-4"]


class NoLogprobs:
    "An engine that returns draws without the sampler's log-probs."
    name, own_density = "silent", False
    def __init__(self, inner): self.inner = inner
    def generate(self, *a, **kw): return [[g._replace(logprobs=[]) for g in d] for d in self.inner.generate(*a, **kw)]
    def refresh(self): self.inner.refresh()


def test_an_engine_without_logprobs_is_named_with_the_fallback(tmp_path):
    m, tok = fresh()
    eng = NoLogprobs(FastEngine(m, tok, rows=8, max_prompt_len=32, max_new_tokens=8))
    cfg = online_config(M=4, prompts_per_step=2, steps=1, max_new_tokens=8, check_weights=False)
    with pytest.raises(EngineLogprobsError, match=r"engine 'silent'.*Fallback: loop.weights='scorer'"):
        OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path, engine=eng).train(progress=False)
    cfg = online_config(M=4, prompts_per_step=2, steps=1, max_new_tokens=8, check_weights=False, weights="scorer")
    m, tok = fresh()
    OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path / "fallback", engine=NoLogprobs(FastEngine(m, tok, rows=8, max_prompt_len=32, max_new_tokens=8))).train(progress=False)


def test_log_p_is_reproducible_across_batch_compositions():
    "24 completions of the tiny bf16 model, scored in 3 batch compositions: fixed_shape spreads 0, fp32_prior < 1e-4 nats, model (bf16 packed) more."
    g = torch.Generator().manual_seed(1)
    P = [torch.randint(3, 6, (int(n),), generator=g).tolist() for n in torch.randint(1, 9, (24,), generator=g)]
    C = [torch.randint(3, 6, (int(n),), generator=g).tolist() + [2] for n in torch.randint(2, 40, (24,), generator=g)]
    m32 = add_lora(tiny_model(3, chars="ab`", hidden=64)[0], dropout=0.0).eval()
    base = add_lora(tiny_model(3, chars="ab`", hidden=64)[0]).unload().eval()
    m16 = m32.to(torch.bfloat16)
    perm = torch.randperm(24, generator=g).tolist()
    fill_P, fill_C = [[3, 5, 4, 4, 3]] * 9, [[5, 4, 3, 3, 5, 4, 2]] * 9
    def spread(mode, prior=None, prefix=False):     # the packed pass by default (CPU's default prefix pass groups rows by prompt)
        runs = []
        for order, pad in ((list(range(24)), 0), (perm, 0), (list(range(12)), 9)):
            lp, _ = prior_token_logprobs(m16, fill_P[:pad] + [P[i] for i in order], fill_C[:pad] + [C[i] for i in order], mode, prior, batch_size=5,
                                         prefix=prefix)
            runs.append(dict(zip(order, lp.sum(-1)[pad:].tolist())))
        return max(max(r[i] for r in runs if i in r) - min(r[i] for r in runs if i in r) for i in range(24))
    assert spread("fixed_shape") == 0.0
    assert spread("fixed_shape", prefix=True) == 0.0  # its CPU form: each prompt's prefix once, each completion alone after it
    assert spread("fp32_prior", base) < 1e-4
    assert spread("fp32_prior", base, prefix=True) < 1e-4
    assert spread("model") > 1e-3                     # the bf16 packed pass moves: the test above has teeth


def test_reverse_identity_at_checkpoints(tmp_path):
    "Held-out draws from the prior (3 prompts x 64, seed 42), weighed at each checkpoint with the sampler's own q: within 3 SE of 1."
    m, tok = fresh()
    cfg = online_config(M=4, prompts_per_step=2, steps=4, lr=1e-3, max_new_tokens=8, checkpoint_every=2, reverse_draws=64)
    run = OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path, heldout=HELDOUT)
    run.train(progress=False)
    rev = [json.loads(l) for l in (tmp_path / "reverse.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rev] == [2, 4] and all(r["q"] == "sampler" and not r["out"] and r["n"] == 192 for r in rev)
    d = pd.read_parquet(tmp_path / "reverse_draws.parquet")
    assert np.allclose(d.logp, d.logp_prior, atol=1e-4)                      # float32: the prior's sampler is its scorer


@pytest.mark.parametrize("native", [False, True])
def test_bf16_run_defaults_to_an_exact_scoring_mode(tmp_path, monkeypatch, native):
    "A bf16 model on a CPU with scoring 'auto': the fixed-shape pass where the CPU multiplies bf16 natively, else a float32 copy; q is the sampler's."
    import proposal_nb.lm.models as Mo
    monkeypatch.setattr(Mo, "native_bf16", lambda *a: native)
    m, tok = fresh(dtype=torch.bfloat16)
    cfg = online_config(estimator="msc", M=4, prompts_per_step=2, steps=3, lr=1e-2, max_new_tokens=8)
    run = OnlineRun(m, tok, TASKS, has_a, cfg, tmp_path)
    mode = "fixed_shape" if native else "fp32_prior"
    assert run.scoring == mode and (run.prior_model is None if native else run.prior_model.dtype == torch.float32)
    run.train(progress=False)
    assert json.loads((tmp_path / "exact.json").read_text()) == dict(dtype="bfloat16", scoring=mode, weights="sampler", engine="fast")
    d = pd.read_parquet(tmp_path / "draws.parquet")
    assert len(d) == 24 and np.isfinite(d.logp).all() and (d.logp <= 0).all()
