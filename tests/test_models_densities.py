"""Plain pytest checks of proposal_nb.lm.models / densities / generation that the notebooks do not make:
local-folder loading with gradient checkpointing, batch-size invariance of score_pq, and the HF sampler's
repetition penalty ignoring left padding."""
import torch
from fastcore.test import test_close as close_, test_eq as eq_

from proposal_nb.lm.models import tiny_model, add_lora, load_model
from proposal_nb.lm.densities import DecodingConfig, completion_logprobs, score_pq, seen_masks
from proposal_nb.lm.generation import ConfigProcessor, HFGenerator, check_exact_weights

torch.set_num_threads(2)
CARD = DecodingConfig(temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05)


def _perturbed(seed=0, scale=0.2, **kw):
    pm = add_lora(tiny_model(0, **kw)[0], dropout=0.0).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, w in pm.named_parameters():
            if "lora_B" in n: w.normal_(0, scale, generator=g)
    return pm


def _draws(n=6):
    m, tok = tiny_model(0)
    gens = HFGenerator(m, tok, CARD, max_new_tokens=15).generate(["def f(x):", "y", "print(1 +"], n=n, seed=0)
    return [g for row in gens for g in row], m, tok


def test_load_model_local_folder_and_checkpointing(tmp_path):
    "load_model reads a saved folder (float32 on CPU, left padding); gradient checkpointing leaves gradients unchanged."
    m, tok = tiny_model(0)
    m.save_pretrained(tmp_path); tok.save_pretrained(tmp_path)
    grads = []
    for ckpt in (False, True):
        lm, ltok = load_model(tmp_path, gradient_checkpointing=ckpt)
        eq_(lm.dtype, torch.float32); eq_(ltok.padding_side, "left")
        pm = add_lora(lm, dropout=0.0); pm.train()
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for n, w in pm.named_parameters():   # A too: its default init draws from the global RNG
                if "lora_" in n: w.copy_(torch.randn(w.shape, generator=g) * 0.1)
        lq, _ = score_pq(pm, [[5, 6, 7], [8]], [[9, 10, 2], [11, 2]])
        lq.sum().backward()
        grads.append(torch.cat([w.grad.flatten() for n, w in pm.named_parameters() if "lora_A" in n]))
    close_(grads[0], grads[1], eps=1e-5)


def test_score_pq_batch_invariant():
    "score_pq gives the same log q and log p whatever the batch size (padding never leaks)."
    draws, _, _ = _draws()
    pm = _perturbed()
    P, C = [d.prompt_ids for d in draws], [d.token_ids for d in draws]
    with torch.no_grad():
        a = score_pq(pm, P, C, prior_config=CARD, batch_size=1)
        b = score_pq(pm, P, C, prior_config=CARD, batch_size=7)
    for x, y in zip(a, b):
        fin = torch.isfinite(x)
        assert torch.equal(fin, torch.isfinite(y))
        close_(x[fin], y[fin], eps=1e-4)   # float32 sums of ~15 tokens, different padding shapes


def test_processor_ignores_left_padding():
    "The HF sampler's seen-set for the repetition penalty is the unpadded prompt plus the completion so far."
    cfg = DecodingConfig(repetition_penalty=2.0)
    V = 12
    logits = torch.linspace(-2, 2, V).repeat(2, 1)
    ids = torch.tensor([[0, 0, 5, 6], [3, 4, 5, 6]])          # row 0: two pads (id 0) on the left
    out = ConfigProcessor(cfg, torch.tensor([2, 0]))(ids, logits.clone())
    seen = torch.zeros(2, V, dtype=torch.bool); seen[0, [5, 6]] = True; seen[1, [3, 4, 5, 6]] = True
    close_(out, cfg.logprobs(logits, seen))
    assert not torch.allclose(out[0], cfg.logprobs(logits[:1], seen[1:])[0])  # the padded row differs from row 1


def test_seen_masks_match_definition():
    "seen[b, t, v] is True iff v is in the prompt or among the first t (real) completion tokens."
    g = torch.Generator().manual_seed(0)
    tg = torch.randint(0, 9, (3, 6), generator=g); tm = torch.ones(3, 6, dtype=torch.bool); tm[2, 4:] = False
    P = [[1], [2, 3], []]
    s = seen_masks(P, tg, tm, 9)
    for b in range(3):
        for t in range(6):
            want = set(P[b]) | set(tg[b, :t][tm[b, :t]].tolist())   # padding is never 'seen'
            eq_(set(torch.nonzero(s[b, t]).flatten().tolist()), want)


def test_exact_weight_check_on_ragged_lora_batch():
    "Draws of a LoRA proposal (ragged prompts, card penalty) score to the sampler's own log-probs (<= 1e-4)."
    pm = _perturbed()
    _, tok = tiny_model(0)
    gens = HFGenerator(pm, tok, CARD, max_new_tokens=20).generate(["a", "def g(y, z):", "x ="], n=5, seed=3)
    chk = check_exact_weights(gens, pm, CARD, tol=1e-4, sample=None)
    assert chk.n == 15 and chk.max_diff < 1e-4
