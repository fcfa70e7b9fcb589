"""The SMC export (proposal_nb.lm.smc, nbs/25c_smc): each trap of handing the trained proposal to genlm-control fails
loudly, and with only an end-of-program checker and no resampling SMC's weights are this project's importance weights.

The trap tests need no genlm: an adapted prior, the prior's own object as the proposal, a proposal without an adapter,
an untrained adapter (q = p exactly), genlm's max_tokens boundary (it multiplies in p(EOS | y)), a vLLM whose version is
not the project's pin, and genlm missing altogether (the error names the `smc` extra). The rest runs where genlm-control
is installed (pip install 'proposal_nb[smc]') and is skipped, with that reason, where it is not:
    python3 -m venv /tmp/smcvenv && /tmp/smcvenv/bin/pip install -e '.[smc]' ... && /tmp/smcvenv/bin/python -m pytest tests/test_smc.py
Tolerances: 1e-4 nats on the tiny float32 model (the KV-cached steps of SMC and the one packed pass of the project's
scorer round differently, by ~1e-5 over 12 tokens), 1e-3 nats on the embedded model (1.6e-4 measured over 24 tokens)."""
import math
import os
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from proposal_nb.lm import smc as S
from proposal_nb.lm.models import add_lora, tiny_model, tiny_tokenizer
from proposal_nb.programs.tasks import Task
from proposal_nb.estimators.weights import log_mean_weight_np, snis_mean_np

GENLM = S.has_genlm()
needs_genlm = pytest.mark.skipif(not GENLM, reason="genlm-control is not installed (pip install 'proposal_nb[smc]')")
TASK = Task(id="tiny/f", prompt="write f", entry_point="f")


def has_a(tasks, texts):
    "r = 1 for a completion holding an 'a', 0.3 otherwise (no zero weights: every draw is compared)."
    return np.array([1.0 if "a" in t else 0.3 for t in texts])


def tiny_pair(sd=0.3, eos_bias=3.0):
    "A byte-level prior and its copy with a random LoRA adapter (B ~ N(0, sd^2)): a proposal near but not at the prior."
    p, tok = S.tiny_byte_model(seed=0, eos_bias=eos_bias)
    q = S.tiny_byte_model(seed=0, eos_bias=eos_bias)[0]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        q = add_lora(q, r=4, targets=("q_proj", "v_proj", "o_proj"))
        with torch.no_grad():
            for n, w in q.named_parameters():
                if "lora_B" in n: w.normal_(0, sd)
    return p, q.eval(), tok


# ---------------------------------------------------------------- the traps, without genlm

def test_missing_genlm_names_the_extra(monkeypatch):
    for k in [k for k in sys.modules if k == "genlm" or k.startswith("genlm.")]: monkeypatch.delitem(sys.modules, k)
    monkeypatch.setitem(sys.modules, "genlm", None)              # import genlm now fails as if it were not installed
    monkeypatch.setattr(S, "_CLASSES", {})                       # the genlm-built classes too
    assert not S.has_genlm()
    for call in (S.require_genlm, lambda: S.kv_lm(None, None), lambda: S.smc_models(tiny_model()[0], tiny_tokenizer()),
                 lambda: S.load_smc()):
        with pytest.raises(S.SMCUnavailable, match=r"proposal_nb\[smc\].*genlm-control==0\.4\.1"): call()
    assert issubclass(S.SMCUnavailable, ImportError)


def test_peft_model_as_prior_is_refused():
    "The trap: a PeftModel (or the base model peft injected its layers into) as the prior makes p = q."
    peft = add_lora(tiny_model(seed=0)[0])
    tok = tiny_tokenizer()
    for prior in (peft, peft.get_base_model()):
        with pytest.raises(S.PriorIsProposal, match="active LoRA adapter.*p = q"): S.smc_models(prior, tok, peft)
        with pytest.raises(S.PriorIsProposal, match="active LoRA adapter"): S.refuse_adapted_prior(prior)
    with peft.disable_adapter(): S.refuse_adapted_prior(peft)  # switched off, it is the prior
    S.refuse_adapted_prior(tiny_model(seed=0)[0])


def test_proposal_that_is_the_prior_is_refused():
    base, tok = tiny_model(seed=0)
    with pytest.raises(S.PriorIsProposal, match="prior's model object"): S.smc_models(base, tok, base)
    with pytest.raises(S.PriorIsProposal, match="no active adapter"): S.smc_models(base, tok, tiny_model(seed=0)[0])


def test_untrained_adapter_equals_the_prior_and_is_refused():
    base, _ = tiny_model(seed=0)
    fresh = add_lora(tiny_model(seed=0)[0]).eval()               # LoRA B = 0: q = p exactly
    x = torch.tensor([[1, 5, 6, 7]])
    with torch.no_grad():
        lp, lq = base(x).logits[0, -1].log_softmax(-1), fresh(x).logits[0, -1].log_softmax(-1)
    with pytest.raises(S.PriorIsProposal, match="untrained"): S.check_distinct(lp, lq)
    with torch.no_grad():
        for n, w in fresh.named_parameters():
            if "lora_B" in n: w.normal_(0, 0.1)
        S.check_distinct(lp, fresh(x).logits[0, -1].log_softmax(-1))


def test_genlm_max_tokens_boundary_is_refused():
    "The trap: genlm's max_tokens appends EOS weighed by p(EOS | y); the target must stop at the cap unweighed."
    tok = tiny_tokenizer()
    st = S.StopRules(tok, max_new_tokens=12)
    assert st.kwargs() == dict(max_tokens=13, terminate_when=st)
    S.check_termination(13, 12, st)
    for mt, tw in ((12, None), (12, st), (400, None)):
        with pytest.raises(ValueError, match=r"p\(EOS \| y\)"): S.check_termination(mt, 12, tw)


def test_stop_rules_are_the_samplers():
    "terminate_when fires where generation.stop_point stops a completion by fence or length, never before."
    from proposal_nb.lm.generation import TokenText, stop_point
    tok = tiny_tokenizer()
    st, piece = S.StopRules(tok, max_new_tokens=16), TokenText(tok)
    for text in ("```py\nx = 1\n```\nmore", "abc", "x" * 30, "``````", "` `` ```a``` b"):
        ids = tok(text, add_special_tokens=False).input_ids
        k, why = stop_point(ids[:16], {tok.eos_token_id}, piece, True)
        fired = next((i for i in range(1, len(ids) + 1) if st(ids[:i])), None)
        if why == "length" and k < 16: assert fired is None, text          # ran out of text before any stop
        else:
            assert fired == k, (text, fired, k, why)
            assert st.reason(ids[:k], False) == why


def test_vllm_of_another_version_is_refused():
    assert S.project_vllm_pin() == "0.32.0"
    assert S.check_backend("hf") == "hf"
    with pytest.raises(S.BackendMismatch, match=r"0\.26\.1.*0\.32\.0"):
        S.check_backend("vllm", installed="0.26.1", pin="0.32.0", genlm_range="<0.27.0,>=0.26.0")
    with pytest.raises(S.BackendMismatch, match="outside genlm-backend's range"):
        S.check_backend("vllm", installed="0.32.0", pin="0.32.0", genlm_range="<0.27.0,>=0.26.0")
    with pytest.raises(S.BackendMismatch, match="backend='hf'"): S.load_smc(backend="vllm")
    with pytest.raises(ValueError, match="'hf' or 'vllm'"): S.check_backend("sglang")


def test_a_missing_adapter_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="adapter_config.json"): S.load_smc(adapter=tmp_path)


# ---------------------------------------------------------------- with genlm

@pytest.fixture(scope="module")
def models():
    p, q, tok = tiny_pair()
    return S.smc_models(p, tok, q), S.smc_models(p, tok, None)


@needs_genlm
def test_no_resampling_weights_are_the_projects_snis_weights(models):
    "SMC with an end-of-program checker and ess_threshold=0: its weights, log Ẑ and wacc are this project's IS numbers."
    for m, n in zip(models, (48, 16)):
        res = S.run_smc(m, TASK, has_a, n_particles=n, max_new_tokens=12, ess_threshold=0.0, seed=7)
        assert {"eos", "length"} <= set(res.particles.stop_reason)
        ours = S.project_log_weights(m, TASK, res.particles)
        assert S.weights_agree(res.particles.log_weight, ours.logw, atol=1e-4) < 1e-4
        assert math.isclose(res.log_ml, float(log_mean_weight_np(ours.logw.to_numpy())), abs_tol=1e-4)
        correct = (res.particles.r > 0.5).to_numpy(float)
        assert math.isclose(S.smc_metrics(res, correct)["wacc"], float(snis_mean_np(ours.logw.to_numpy(), correct)), abs_tol=1e-4)
        eos = res.particles[res.particles.stop_reason == "eos"]
        assert all(c[-1] == 2 for c in eos.token_ids) and all(len(c) <= 12 for c in res.particles.token_ids)


@needs_genlm
def test_genlm_max_tokens_is_another_target(models):
    "Shown on the draws: genlm's boundary weighs a truncated completion by this project's weight times p(EOS | y)."
    from genlm.control import SMC
    from genlm.control.sampler.token import DirectTokenSampler
    m, tok = models[0], models[0].tokenizer
    ids = tok(S.chat_prompt(tok, TASK.prompt), add_special_tokens=False).input_ids
    pr, pq = m.prior.spawn(prompt_ids=ids), m.proposal.spawn(prompt_ids=ids)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        naive = S._run(SMC(DirectTokenSampler(pr, proposal=pq), S.program_potential(pr, TASK, has_a, tok))(
            n_particles=32, ess_threshold=0.0, max_tokens=12))
    cut = [(c, w) for c, w in naive if len(S.context_ids(c)) == 11]
    assert cut
    df = pd.DataFrame(dict(token_ids=[S.context_ids(c) for c, _ in cut],
                           r=[has_a(None, [tok.decode(S.context_ids(c), skip_special_tokens=True)])[0] for c, _ in cut]))
    ours = S.project_log_weights(m, TASK, df).logw.to_numpy()
    p_eos = np.array([float(pr.model.next_token_logprobs_sync(ids + S.context_ids(c))[2]) for c, _ in cut])
    np.testing.assert_allclose(np.array([w for _, w in cut]) - ours, p_eos, atol=1e-4)
    assert (p_eos < -0.5).all()                                   # not a rounding: a different distribution


@needs_genlm
def test_traps_in_the_genlm_path(models):
    from genlm.backend.llm import AsyncTransformer
    from genlm.control import PromptedLLM
    m = models[0]
    with pytest.raises(ValueError, match=r"p\(EOS \| y\)"): S.run_smc(m, TASK, has_a, 4, 12, max_tokens=12)
    with pytest.raises(TypeError, match="unexpected"): S.run_smc(m, TASK, has_a, 4, 12, temperature=2.0)
    p, _, tok = tiny_pair()
    fresh = add_lora(S.tiny_byte_model(seed=0, eos_bias=3.0)[0], r=4).eval()
    with pytest.raises(S.PriorIsProposal, match="untrained"): S.smc_models(p, tok, fresh)
    assert S.smc_models(p, tok, fresh, allow_equal=True).allow_equal
    # built by hand on genlm's own HF backend: the PeftModel behind the prior is found
    g = PromptedLLM(AsyncTransformer(m.proposal_model, tok))
    with pytest.raises(S.PriorIsProposal, match="active LoRA adapter"): S.check_pair(g, None)
    plain = PromptedLLM(AsyncTransformer(m.prior_model, tok))
    with pytest.raises(S.PriorIsProposal, match="same adapter"): S.check_pair(plain, plain)
    S.check_pair(plain, PromptedLLM(AsyncTransformer(m.proposal_model, tok), token_maps=plain.token_maps))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        S.run_smc(m, TASK, lambda t, c: np.full(len(c), 1.5), 4, 6, ess_threshold=0.0)


@needs_genlm
def test_kv_cache_matches_a_full_forward():
    p, tok = S.tiny_byte_model(seed=2)
    lm = S.kv_lm(p, tok, entries=3)
    pr = [1, 40, 41, 42]
    with torch.no_grad():
        full = lambda s: p(torch.tensor([s])).logits[0, -1].float().log_softmax(-1)
        for s in (pr, pr + [50], pr + [51], pr + [50, 60], pr + [51, 61], pr + [50, 60, 70, 80], [1, 99], pr + [51, 61, 71]):
            torch.testing.assert_close(lm.next_token_logprobs_sync(s), full(s), atol=1e-5, rtol=0)
    assert len(lm.cache) <= 3
    with pytest.raises(ValueError, match="lora_name"): lm.next_token_logprobs_sync(pr, lora_name="a")


@needs_genlm
def test_prefix_checkers_twist_and_kill(models):
    "A prefix checker as a function or as an object with `prefix`: particles it scores 0 die; log Ẑ stays finite."
    m = models[0]
    no_zz = lambda task, text: 0.0 if "zz" in text else 1.0

    class Obj:
        def prefix(self, task, partial_text): return no_zz(task, partial_text)

    for pre in (no_zz, Obj()):
        res = S.run_smc(m, TASK, has_a, n_particles=16, max_new_tokens=12, ess_threshold=0.5, prefix=pre, seed=3)
        assert not res.particles.text.str.contains("zz").any() and np.isfinite(res.log_ml)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        S.run_smc(m, TASK, has_a, 4, 6, prefix=lambda t, x: -0.5, seed=0)


@needs_genlm
@pytest.mark.skipif(not os.environ.get("PROPOSAL_NB_RUN_SLOW"), reason="the embedded model on CPU (about a minute): PROPOSAL_NB_RUN_SLOW=1")
def test_embedded_model_weights_agree(tmp_path):
    "On SmolLM2-135M with a perturbed adapter and the real no_error checker in the sandbox: 1e-3 nats."
    from proposal_nb.lm.models import embedded_model_path
    from proposal_nb.lm.weight_identity import perturbed_adapter
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    from proposal_nb.programs.tasks import load_embedded
    peft, _ = perturbed_adapter(embedded_model_path(), "float32", sigma=0.01, seed=0)
    peft.save_pretrained(tmp_path / "adapter")
    m = S.load_smc(embedded_model_path(), tmp_path / "adapter")
    task = next(t for t in load_embedded() if t.id == "embedded/list_sum")
    with Executor() as ex:
        res = S.run_smc(m, task, make_potential("no_error", ex), n_particles=4, max_new_tokens=24, ess_threshold=0.0, seed=1)
    assert S.weights_agree(res.particles.log_weight, S.project_log_weights(m, task, res.particles).logw, atol=1e-3) < 1e-3
