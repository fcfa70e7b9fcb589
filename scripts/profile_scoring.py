"""Where the loop's scoring and update go, on a GPU or a CPU: milliseconds and MFU of the three passes the training step
runs on a batch of draws (log p: one packed forward with the adapter off and no graph; log q: the same forward with the
adapter on, keeping its graph; the backward of Σ c_i log q_i to the LoRA weights), each alone, at the loop's shapes; on
a GPU also torch.profiler's kernel time of each pass by kind (matrix products, attention, the rest), against the pass's
wall time: what the kernels leave idle is host time (launches, Python).

    python scripts/profile_scoring.py OUT_DIR [--model smollm2-135m] [--rows 80] [--M 10] [--prompt-tokens 150]
        [--new 40:256] [--compile off] [--head chunked] [--layout packed] [--prior model] [--repeats 5] [--seed 0]

--model smollm2-135m builds a random-init Llama of the embedded model's shape (SmolLM2-135M: 30 layers, width 576,
vocabulary 49,152), 1.5b or 0.5b a random-init Qwen2 of that shape (throughput.QWEN2_SHAPES); LoRA r = 8 on q, k, v, o
either way, in bf16 on a GPU and on a CPU with native bf16 (as the loop), else float32. --rows lists batch sizes (comma-separated), each rows/M prompts of
--prompt-tokens random tokens with M completions whose lengths are uniform in --new (lo:hi). --compile lists the
variants: off, or default (every decoder layer compiled, `throughput.compile_layers`, as the loop's `compile` does for
its update). --head lists the LM head's ways: chunked (`densities.head_token_logprobs`, the default), cross_entropy (the
way before it: -cross_entropy of float32 logits, 32,768 tokens a pass). Every pair of a --compile and a --head variant is
an arm, as is every --layout: packed (`densities.packed_token_logprobs`, the GPU's way: sequences packed into rows) or
prefix (`densities.prefix_token_logprobs`, the CPU's way: each prompt's prefix once, its KV cache read by its rows).
--prior: model (log p from the model's own bf16 pass, adapter off) or fp32 (from a float32 copy of the base,
`models.prior_copy`: the loop's fp32_prior scoring, its default for the embedded model on a GPU). Arms run in the order
given. A pass's MFU counts the model FLOPs of each row's whole sequence (prompt and completion: the packed layout's
work; the prefix layout does less for the same result) against the measured bf16 matrix rate (the fp32 prior's pass
too). Writes OUT_DIR/profile_scoring.json and config.json."""
import argparse, json, platform, sys, time
from pathlib import Path

SMOLLM2_135M = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                    vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)
KINDS = (("attention", ("flash", "fmha", "attention", "sdpa")), ("matmul", ("gemm", "nvjet", "cutlass", "xmma", "splitk", "cublas")),
         ("copy", ("memcpy", "memset", "copy", "catarray")), ("reduction", ("reduce", "softmax", "norm", "logsumexp")))


def kind(name:str)->str:
    "The kind of a GPU kernel, from its name."
    n = name.lower()
    return next((k for k, words in KINDS if any(w in n for w in words)), "elementwise and other")


def build(model:str, device, dtype, seed:int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from proposal_nb.lm import throughput as tp
    from proposal_nb.lm.models import add_lora
    if model == "smollm2-135m":
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            with device: lm = LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M, bos_token_id=1, eos_token_id=2, pad_token_id=0))
        lm = lm.to(dtype).eval()
    else: lm = tp.random_model(model, device=str(device), dtype=dtype, seed=seed)
    torch.manual_seed(seed)
    pm = add_lora(lm, r=8, alpha=16, dropout=0.0)
    with torch.no_grad():                                            # a trained-looking adapter: B ≠ 0
        for n, w in pm.named_parameters():
            if "lora_B" in n: w.normal_(0, 0.01)
    return pm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--model", default="smollm2-135m"); ap.add_argument("--rows", default="80")
    ap.add_argument("--M", type=int, default=10); ap.add_argument("--prompt-tokens", type=int, default=150)
    ap.add_argument("--new", default="40:256"); ap.add_argument("--compile", default="off"); ap.add_argument("--head", default="chunked")
    ap.add_argument("--layout", default="packed"); ap.add_argument("--prior", default="model")
    ap.add_argument("--repeats", type=int, default=5); ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows = [int(r) for r in a.rows.split(",") if r.strip()]
    lo, hi = (int(x) for x in a.new.split(":"))
    variants = [v.strip() for v in a.compile.split(",") if v.strip()]
    heads = [v.strip() for v in a.head.split(",") if v.strip()]
    layouts = [v.strip() for v in a.layout.split(",") if v.strip()]
    if not rows or min(rows) < 1 or any(r % a.M for r in rows) or not 1 <= lo <= hi or a.prompt_tokens < 1 or a.repeats < 1 \
            or not variants or set(variants) - {"off", "default"} or not heads or set(heads) - {"chunked", "cross_entropy"} \
            or not layouts or set(layouts) - {"packed", "prefix"} or a.prior not in ("model", "fp32"):
        raise SystemExit(f"bad arguments: {vars(a)} (rows: multiples of M; --new lo:hi with 1 <= lo <= hi; --compile off,default; --head chunked,cross_entropy; --layout packed,prefix; --prior model|fp32)")
    import torch
    import torch.nn.functional as F
    from torch.autograd import DeviceType
    from proposal_nb.lm import densities
    from torch.profiler import ProfilerActivity, profile
    from proposal_nb.lm import throughput as tp
    from proposal_nb.lm.models import prior_copy, run_dtype
    from proposal_nb.results import write_bench_config
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    if not cuda: torch.set_num_threads(2)
    dtype = run_dtype("auto", dev.type)                             # bf16 on a GPU and on a CPU with native bf16, as the loop
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    machine = torch.cuda.get_device_name() if cuda else platform.processor() or "cpu"
    write_bench_config(sys.argv, machine, torch=torch.__version__)
    peak = tp.matmul_tflops(8192 if cuda else 512, reps=20 if cuda else 3, dtype=dtype, device=str(dev))
    res = dict(machine=machine, dtype=str(dtype), peak_tflops=peak, args=vars(a), variants={})
    print(f"{machine}: measured {dtype} matmul peak {peak:.0f} TFLOP/s", flush=True)

    chunked = densities.head_token_logprobs
    def cross_entropy(head, h, tgt, head_tokens=None):
        "The LM head's log-probs as before `head_token_logprobs`: -cross_entropy of float32 logits, 32,768 tokens a pass."
        return torch.cat([-F.cross_entropy(head(h[s:s + 32768]).float(), tgt[s:s + 32768], reduction="none") for s in range(0, len(tgt), 32768)])
    for variant, head, layout in [(v, hd, l) for v in variants for hd in heads for l in layouts]:
        densities.head_token_logprobs = chunked if head == "chunked" else cross_entropy
        score = densities.packed_token_logprobs if layout == "packed" else densities.prefix_token_logprobs
        arm = "+".join([variant] + ([head] if len(heads) > 1 else []) + ([layout] if len(layouts) > 1 else []))
        pm = build(a.model, dev, dtype, a.seed).train()
        prior = prior_copy(pm) if a.prior == "fp32" else None
        if variant == "default":
            for k in ("recompile_limit", "cache_size_limit"):
                if hasattr(torch._dynamo.config, k): setattr(torch._dynamo.config, k, 64)
            tp.compile_layers(pm)
        fm, V = tp.flop_model(pm), pm.config.vocab_size
        res["variants"][arm] = {}
        for R in rows:
            g = torch.Generator().manual_seed(a.seed + R)
            prompts = [torch.randint(3, V, (a.prompt_tokens,), generator=g).tolist() for _ in range(R // a.M)]
            P = [p for p in prompts for _ in range(a.M)]
            C = [torch.randint(3, V, (int(n),), generator=g).tolist() for n in torch.randint(lo, hi + 1, (R,), generator=g)]
            coef = torch.randn(R, generator=g).to(dev)
            lens = [len(p) + len(c) - 1 for p, c in zip(P, C)]
            tokens = sum(map(len, C))
            fwd = tp.forward_flops(fm, lens, tokens)
            flops = dict(log_p=fwd, log_q=fwd, backward=tp.lora_update_flops(fm, lens, tokens) - fwd)
            holder = {}
            def log_p():
                if prior is not None:
                    with torch.no_grad(): score(prior, P, C)
                else:
                    with torch.no_grad(), pm.disable_adapter(): score(pm, P, C)
            def log_q(): holder["lq"] = score(pm, P, C)[0]
            def backward():
                (coef * holder.pop("lq").sum(-1)).sum().backward()
                pm.zero_grad(set_to_none=True)
            passes = dict(log_p=log_p, log_q=log_q, backward=backward)
            for _ in range(2):                                      # warm-up (compiles at this shape)
                for f in passes.values(): f()
            if cuda: sync(); torch.cuda.reset_peak_memory_stats()
            secs = {k: [] for k in passes}
            for _ in range(a.repeats):
                for k, f in passes.items():
                    sync(); t0 = time.perf_counter(); f(); sync(); secs[k].append(time.perf_counter() - t0)
            r = dict(rows=R, tokens=tokens, positions=sum(lens), passes={})
            for k in passes:
                s = sorted(secs[k])[len(secs[k]) // 2]
                r["passes"][k] = dict(median_ms=1e3 * s, all_ms=[1e3 * x for x in secs[k]], tflops=flops[k] / s / 1e12, mfu=flops[k] / s / 1e12 / peak)
            tot = sum(r["passes"][k]["median_ms"] for k in passes) / 1e3
            r |= dict(total_ms=1e3 * tot, ms_per_sample=1e3 * tot / R, mfu=sum(flops.values()) / tot / 1e12 / peak,
                      update_mfu=(flops["log_q"] + flops["backward"]) / (r["passes"]["log_q"]["median_ms"] + r["passes"]["backward"]["median_ms"]) * 1e3 / 1e12 / peak,
                      peak_mem_gb=torch.cuda.max_memory_allocated() / 2**30 if cuda else None)
            if cuda:                                                # one more iteration under the profiler, pass by pass
                for k, f in passes.items():
                    sync(); t0 = time.perf_counter()
                    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as pr:
                        f(); sync()
                    wall = time.perf_counter() - t0
                    ev = [e for e in pr.key_averages() if e.device_type == DeviceType.CUDA and e.self_device_time_total > 0]
                    by = {}
                    for e in ev: by[kind(e.key)] = by.get(kind(e.key), 0.0) + e.self_device_time_total / 1e3
                    busy = sum(by.values())
                    top = sorted(ev, key=lambda e: -e.self_device_time_total)[:8]
                    r["passes"][k] |= dict(profiled_wall_ms=1e3 * wall, kernel_ms=busy, kernel_ms_by_kind=by, idle_ms=max(0.0, 1e3 * wall - busy),
                                           kernels=sum(e.count for e in ev),
                                           top_kernels=[dict(name=e.key[:90], ms=e.self_device_time_total / 1e3, count=e.count) for e in top])
            res["variants"][arm][str(R)] = r
            print(f"[{arm}] {R} rows, {tokens} completion tokens: " + "  ".join(
                f"{k} {v['median_ms']:.1f} ms (MFU {v['mfu']:.3f})" for k, v in r["passes"].items())
                + f"  | {r['ms_per_sample']:.3f} ms a sample, MFU {r['mfu']:.3f}, update MFU {r['update_mfu']:.3f}", flush=True)
            for k, v in r["passes"].items():
                if "kernel_ms" in v: print(f"    {k}: wall {v['profiled_wall_ms']:.1f} ms, kernels {v['kernel_ms']:.1f} ms ({v['kernels']}), idle {v['idle_ms']:.1f}; "
                                           + ", ".join(f"{n} {t:.1f}" for n, t in sorted(v["kernel_ms_by_kind"].items(), key=lambda x: -x[1])), flush=True)
            (Path(a.out) / "profile_scoring.json").write_text(json.dumps(res, indent=1))
        del pm, prior
        if cuda: torch.cuda.empty_cache()
    if cuda: torch._dynamo.reset()


if __name__ == "__main__":
    main()
