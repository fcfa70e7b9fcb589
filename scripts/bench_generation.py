"""Throughput on this machine, in one run: HF `generate` vs vLLM (CPU, float32) on the embedded
SmolLM2-135M-Instruct at batch 10 and 32, and scoring tokens/s of both densities (`score_pq`: log q with the
LoRA adapter on, log p with it off, on the identical tokens).
Run in the vLLM venv:  bash scripts/setup_vllm.sh && .venv-vllm/bin/python scripts/bench_generation.py
Add --no-vllm to run the HF half in the main venv. Prints a table and writes --out (JSON)."""
import argparse, json, os, time
from pathlib import Path

import torch

TASKS = ["Write a Python function `add(a, b)` that returns the sum of a and b.",
         "Write a Python function `is_even(n)` that returns True when n is even.",
         "Write a Python function `reverse(s)` that returns the string s reversed.",
         "Write a Python function `factorial(n)` that returns n factorial."]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-new-tokens", type=int, default=200); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-vllm", action="store_true"); ap.add_argument("--out", default="results/bench_generation.json")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    from proposal_nb.lm.models import embedded_model_path, load_model, add_lora, chat_prompt
    from proposal_nb.lm.densities import DecodingConfig, score_pq
    from proposal_nb.lm.generation import HFGenerator, stop_point
    path = embedded_model_path()
    model, tok = load_model(path, dtype="float32", device="cpu")
    prompts = [chat_prompt(tok, t) for t in TASKS]
    shapes = {10: (prompts[:1], 10), 32: (prompts, 8)}       # batch = prompts x draws
    cfg, M = DecodingConfig(), a.max_new_tokens
    res = dict(load=os.getloadavg()[0], max_new_tokens=M, threads=a.threads, rows=[])
    draws = None
    for b, (P, n) in shapes.items():
        gen = HFGenerator(model, tok, cfg, max_new_tokens=M, batch_size=b)
        t = time.time(); out = gen.generate(P, n, seed=0); dt = time.time() - t
        flat = [g for r in out for g in r]; ntok = sum(len(g.token_ids) for g in flat)
        res["rows"].append(dict(engine="hf", batch=b, seqs=len(flat), kept_tokens=ntok, produced_tokens=ntok, secs=dt,
                                kept_tok_s=ntok / dt, produced_tok_s=ntok / dt))
        if b == 32: draws = flat
    # scoring both densities on the batch-32 draws: no grad (weights) and with grad (a training step's forward)
    pm = add_lora(model, dropout=0.0)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for nm, w in pm.named_parameters():
            if "lora_B" in nm: w.copy_(torch.randn(w.shape, generator=g) * 0.02)
    Pi, Ci = [d.prompt_ids for d in draws], [d.token_ids for d in draws]
    ntok = sum(map(len, Ci))
    with torch.no_grad():
        t = time.time(); score_pq(pm, Pi, Ci, batch_size=8); dt = time.time() - t
    res["score_pq_nograd"] = dict(tokens=ntok, secs=dt, tok_s=ntok / dt)
    t = time.time(); lq, lp = score_pq(pm, Pi, Ci, batch_size=8); lq.sum().backward(); dt = time.time() - t
    res["score_pq_grad_backward"] = dict(tokens=ntok, secs=dt, tok_s=ntok / dt)
    card = DecodingConfig(temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05)
    with torch.no_grad():
        t = time.time(); score_pq(pm, Pi, Ci, prior_config=card, batch_size=8); dt = time.time() - t
    res["score_pq_card_prior_nograd"] = dict(tokens=ntok, secs=dt, tok_s=ntok / dt)
    pm = pm.unload(); del pm
    if not a.no_vllm:
        from proposal_nb.lm.generation import VLLMGenerator
        t = time.time()
        v = VLLMGenerator(path, cfg, max_new_tokens=M, stop_at_fence=False, seed=0, max_num_seqs=32, max_model_len=1024)
        res["vllm_start_s"] = time.time() - t
        v.generate(prompts[:1], 2)  # warm-up
        for b, (P, n) in shapes.items():
            t = time.time(); out = v.generate(P, n); dt = time.time() - t
            flat = [g for r in out for g in r]
            raw = sum(len(g.token_ids) for g in flat)
            kept = sum(stop_point(g.token_ids, v.eos_ids, v.piece, True)[0] for g in flat)
            res["rows"].append(dict(engine="vllm", batch=b, seqs=len(flat), kept_tokens=kept, produced_tokens=raw, secs=dt,
                                    kept_tok_s=kept / dt, produced_tok_s=raw / dt))
    res["load_end"] = os.getloadavg()[0]
    print(f"{'engine':7s} {'batch':>5s} {'seqs':>5s} {'kept tok':>9s} {'made tok':>9s} {'secs':>7s} {'kept tok/s':>10s} {'made tok/s':>10s}")
    for r in res["rows"]:
        print(f"{r['engine']:7s} {r['batch']:5d} {r['seqs']:5d} {r['kept_tokens']:9d} {r['produced_tokens']:9d} {r['secs']:7.1f} "
              f"{r['kept_tok_s']:10.1f} {r['produced_tok_s']:10.1f}")
    for k in ("score_pq_nograd", "score_pq_grad_backward", "score_pq_card_prior_nograd"):
        print(f"{k:28s} {res[k]['tokens']} tokens in {res[k]['secs']:.1f}s: {res[k]['tok_s']:.0f} tok/s (both densities)")
    print(f"vLLM engine start {res.get('vllm_start_s', float('nan')):.1f}s; load average {res['load']:.2f} -> {res['load_end']:.2f} "
          f"(other processes share these {os.cpu_count()} cores)")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
