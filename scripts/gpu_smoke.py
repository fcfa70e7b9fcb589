"""GPU smoke run of the models/densities/generation layer on the embedded SmolLM2-135M-Instruct.

Converts the GGUF once, loads it in bf16 and float32, samples programs in bf16 (card prior and T=1 proposal),
scores every draw in both dtypes (and q/p with a perturbed LoRA adapter), and reports how far bf16 densities
drift from float32 per sequence, plus generation and scoring throughput. Writes a JSON summary.
Usage: PYTHONPATH=. python scripts/gpu_smoke.py --gguf /tmp/m/smollm2.gguf --out $OUT
(also runs on CPU with --device cpu and small --n / --max-new-tokens, to check it before a GPU call)."""
import argparse, json, statistics, time
from pathlib import Path

import torch

from proposal_nb.lm.models import embedded_model_path, load_model, add_lora, chat_prompt
from proposal_nb.lm.densities import DecodingConfig, completion_logprobs, score_pq
from proposal_nb.lm.generation import HFGenerator, check_exact_weights

TASKS = ["Write a Python function `add(a, b)` that returns the sum of a and b.",
         "Write a Python function `is_even(n)` that returns True when n is even.",
         "Write a Python function `reverse(s)` that returns the string s reversed.",
         "Write a Python function `factorial(n)` that returns n factorial.",
         "Write a Python function `count_vowels(s)` that counts the vowels in s.",
         "Write a Python function `max_of(xs)` that returns the largest number in a list.",
         "Write a Python function `fizzbuzz(n)` that returns 'Fizz', 'Buzz', 'FizzBuzz' or str(n).",
         "Write a Python function `is_palindrome(s)` that tells whether s reads the same backwards."]
CONFIGS = dict(card=DecodingConfig(temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05), proposal=DecodingConfig())


def stats(xs):
    xs = [float(x) for x in xs]
    return dict(max=max(xs), median=statistics.median(xs), mean=sum(xs) / len(xs))


def sync(dev):
    if str(dev).startswith("cuda"): torch.cuda.synchronize()


def perturb_lora(pm, seed=0, scale=0.02):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, w in pm.named_parameters():
            if "lora_B" in n: w.copy_(torch.randn(w.shape, generator=g) * scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default=None); ap.add_argument("--cache", default="/tmp/pnb_cache")
    ap.add_argument("--out", default="."); ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, default=10); ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--tasks", type=int, default=len(TASKS))
    a = ap.parse_args()
    dev, res = a.device, dict(device=torch.cuda.get_device_name(0) if a.device.startswith("cuda") else "cpu",
                              torch=torch.__version__)
    import transformers, peft; res.update(transformers=transformers.__version__, peft=peft.__version__)
    t = time.time(); path = embedded_model_path(a.cache, gguf=a.gguf); res["convert_s"] = time.time() - t
    models = {}
    for dt in ("bfloat16", "float32"):
        t = time.time(); models[dt] = load_model(path, dtype=dt, device=dev); res[f"load_{dt}_s"] = time.time() - t
    tok = models["bfloat16"][1]
    prompts = [chat_prompt(tok, x) for x in TASKS[:a.tasks]]
    for name, cfg in CONFIGS.items():
        r = res[name] = {}
        gen = HFGenerator(models["bfloat16"][0], tok, cfg, max_new_tokens=a.max_new_tokens, batch_size=len(prompts) * a.n)
        gen.generate(prompts[:1], 2, seed=123)  # warm-up
        sync(dev); t = time.time()
        out = gen.generate(prompts, a.n, seed=0)
        sync(dev); dt_ = time.time() - t
        flat = [g for row in out for g in row]
        ntok = sum(len(g.token_ids) for g in flat)
        r.update(sequences=len(flat), tokens=ntok, gen_s=dt_, gen_tok_s=ntok / dt_,
                 stop_reasons={k: sum(g.stop_reason == k for g in flat) for k in ("eos", "fence", "length")},
                 mean_len=ntok / len(flat))
        P, C = [g.prompt_ids for g in flat], [g.token_ids for g in flat]
        dens = {}
        for dt in ("bfloat16", "float32"):
            with torch.no_grad():
                completion_logprobs(models[dt][0], P[:2], C[:2], cfg)  # warm-up
                sync(dev); t = time.time()
                dens[dt] = completion_logprobs(models[dt][0], P, C, cfg, batch_size=16).double().cpu()
                sync(dev); r[f"score_{dt}_tok_s"] = ntok / (time.time() - t)
        samp = torch.tensor([g.logprob for g in flat], dtype=torch.float64)
        lens = torch.tensor([len(c) for c in C], dtype=torch.float64)
        fin = torch.isfinite(dens["float32"]) & torch.isfinite(dens["bfloat16"])
        r["infinite_fp32"] = int((~torch.isfinite(dens["float32"])).sum()); r["infinite_bf16"] = int((~torch.isfinite(dens["bfloat16"])).sum())
        drift = (dens["bfloat16"] - dens["float32"]).abs()[fin]
        r["bf16_vs_fp32_per_seq_nats"] = stats(drift)
        r["bf16_vs_fp32_per_token_nats"] = stats(drift / lens[fin])
        r["sampler_bf16_vs_score_bf16_per_seq"] = stats((samp - dens["bfloat16"]).abs()[fin])
        r["sampler_bf16_vs_score_fp32_per_seq"] = stats((samp - dens["float32"]).abs()[fin])
        try:
            chk = check_exact_weights(out, models["float32"][0], cfg, tol=1e-3, sample=None)
            r["exact_weight_check_fp32"] = dict(max=chk.max_diff, median=chk.median_diff)
        except ValueError as e:
            r["exact_weight_check_fp32"] = f"refused: {e}"[:300]
        r["example"] = flat[0].text[:400]
        if name == "proposal":   # q and p with a LoRA adapter, in both dtypes, on the same draws
            qp = {}
            for dt in ("bfloat16", "float32"):
                m, _ = load_model(path, dtype=dt, device=dev)
                pm = add_lora(m, dropout=0.0).eval(); perturb_lora(pm)
                pm.to(dev)
                for n_, w in pm.named_parameters():
                    if "lora_" in n_: w.data = w.data.to(getattr(torch, dt))
                with torch.no_grad():
                    sync(dev); t = time.time()
                    lq, lp = score_pq(pm, P, C, prior_config=CONFIGS["card"], batch_size=16)
                    sync(dev); r[f"score_pq_{dt}_tok_s"] = ntok / (time.time() - t)
                qp[dt] = (lq.double().cpu(), lp.double().cpu())
                del pm, m
            d_q = (qp["bfloat16"][0] - qp["float32"][0]).abs()
            r["lora_logq_bf16_vs_fp32_per_seq"] = stats(d_q)
            r["lora_logq_minus_logp_fp32"] = stats((qp["float32"][0] - dens["float32"]).abs())
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "gpu_smoke.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
