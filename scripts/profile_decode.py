"""Where a decode step of the fast sampler goes, on a CPU or a GPU: milliseconds per decode step of whole draws (the
loop's generation phase) for each decode-layer variant asked for; torch.profiler's top operators of an eager draw (on a
GPU also the kernels' busy time per step, against the step's wall time with and without the CUDA graph); each piece of
one step alone at the same shapes (one layer's weight products, attention over the whole static cache and over the
columns in use at mid-completion, the LM head, the keyed draw); and the floor: the step's weight bytes at the measured copy bandwidth.

    python scripts/profile_decode.py OUT_DIR [--model embedded] [--device auto] [--M 8] [--max-new 128]
        [--prompt-tokens 64] [--dtype auto] [--draws 3] [--compile off]

--model embedded draws from one real training prompt with the loop's cache layout (the longest embedded prompt + max-new
columns); a key of throughput.QWEN2_SHAPES (0.5b, 1.5b, tiny) builds a random-init Qwen2 of that shape with a random
prompt of --prompt-tokens. LoRA r = 8 is merged either way, and every draw runs to --max-new tokens (no stop). --compile
lists the decode-layer variants to time, comma-separated: off, packed (a bf16 CPU: the products on oneDNN-prepacked
weights), default, or a torch.compile mode such as max-autotune-no-cudagraphs; each variant's draws are compared with
the first variant's (`same_draws_as_first`). Writes OUT_DIR/profile_decode.json."""
import argparse, json, platform, subprocess, time
from datetime import datetime, timezone
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--model", default="embedded"); ap.add_argument("--device", default="auto")
    ap.add_argument("--M", type=int, default=8); ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--prompt-tokens", type=int, default=64); ap.add_argument("--dtype", default="auto")
    ap.add_argument("--draws", type=int, default=3); ap.add_argument("--compile", default="off")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile
    from proposal_nb.lm import throughput as tp
    from proposal_nb.lm.fast_sampler import FastSampler
    from proposal_nb.lm.models import add_lora, embedded_model_path, load_model, run_dtype
    dev = torch.device("cuda" if a.device == "auto" and torch.cuda.is_available() else "cpu" if a.device == "auto" else a.device)
    cuda = dev.type == "cuda"
    variants = [v.strip() for v in a.compile.split(",") if v.strip()]
    if not variants or a.M < 1 or a.max_new < 2 or a.draws < 1: raise SystemExit(f"bad arguments: {vars(a)}")
    if a.model != "embedded" and a.model not in tp.QWEN2_SHAPES: raise SystemExit(f"--model {a.model!r}: embedded or one of {list(tp.QWEN2_SHAPES)}")
    if not cuda: torch.set_num_threads(2)
    dtype = run_dtype(a.dtype, dev.type)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)

    if a.model == "embedded":
        from proposal_nb.lm.rollouts import load_task_source
        from proposal_nb.lm.training import prompt_texts
        lm, tok = load_model(embedded_model_path(), dtype=dtype, device=str(dev))
        ids = [tok(t, add_special_tokens=False).input_ids for t in prompt_texts(tok, load_task_source("embedded", "native", ["easy", "medium"], None))]
        prompt, end = ids[0], max(map(len, ids))
    else:
        lm = tp.random_model(a.model, device=str(dev), dtype=dtype, seed=0)
        g = torch.Generator().manual_seed(0)
        prompt = torch.randint(3, lm.config.vocab_size, (a.prompt_tokens,), generator=g).tolist()
        end = len(prompt)
    torch.manual_seed(0)
    peft = add_lora(lm, r=8, alpha=16).eval()
    keys, T = torch.arange(a.M), end + a.max_new
    for k in ("recompile_limit", "cache_size_limit"):                  # one compiled decode layer per variant
        if hasattr(torch._dynamo.config, k): setattr(torch._dynamo.config, k, 64)

    def sampler(variant, graph=None):
        c = False if variant in ("off", "packed") else True if variant == "default" else dict(mode=variant)
        return FastSampler(peft, batch=a.M, max_len=T, prompt_end=end, compile=c, graph=graph, pack=variant == "packed")

    def per_step_ms(s):                                                   # whole draws, after a warm-up draw (capture, compile)
        t = time.perf_counter(); s.draw([prompt], a.M, a.max_new, keys); sync(); warm = time.perf_counter() - t
        t = time.perf_counter()
        for _ in range(a.draws): d = s.draw([prompt], a.M, a.max_new, keys)
        sync(); s.last = d
        return round((time.perf_counter() - t) / a.draws / a.max_new * 1e3, 3), round(warm, 1)

    timed, first = {}, None
    for v in variants:
        s = sampler(v); ms, warm = per_step_ms(s)
        first = first or s.last
        same = torch.equal(s.last.tokens, first.tokens) and torch.equal(s.last.logprobs, first.logprobs)
        timed[v] = dict(ms_per_decode_step=ms, warmup_s=warm, tokens_per_s=round(a.M / ms * 1e3), same_draws_as_first=same)
        print(f"{v}: {ms} ms a decode step ({timed[v]['tokens_per_s']} tokens/s; warm-up {warm} s)", flush=True)
        del s
        if cuda: torch.cuda.empty_cache()

    s = sampler("off", graph=False)                                       # eager: every operator and kernel visible
    eager_ms, _ = per_step_ms(s)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof: s.draw([prompt], a.M, a.max_new, keys); sync()
    ev = prof.key_averages()
    dev_t = lambda e: getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0))
    own = dev_t if cuda else (lambda e: e.self_cpu_time_total)
    total = sum(own(e) for e in ev)
    top = [dict(op=e.key[:80], share=round(own(e) / total, 4), calls=e.count, self_ms=round(own(e) / 1e3, 1))
           for e in sorted(ev, key=lambda e: -own(e))[:15]]
    busy_ms = round(total / 1e3 / a.max_new, 3) if cuda else None   # kernels' time per step; the rest of a step is idle GPU

    def clock(f, n=200):                                                   # microseconds per call, after 20 warm-up calls
        for _ in range(20): f()
        sync(); t = time.perf_counter()
        for _ in range(n): f()
        sync(); return round((time.perf_counter() - t) / n * 1e6, 1)
    w = s.w[0]
    x = torch.randn(a.M, 1, w["qkv"].shape[1], dtype=dtype, device=dev)
    h = torch.randn(a.M, 1, w["down"].shape[1], dtype=dtype, device=dev)
    q = torch.randn(a.M, s.KV, s.H // s.KV, s.dh, dtype=dtype, device=dev)
    half = end + a.max_new // 2                                           # the columns in use at mid-completion
    mask = torch.ones(a.M, 1, 1, T, dtype=torch.bool, device=dev); mask[..., half:] = False
    logits = torch.randn(a.M, s.vocab, device=dev)
    pieces = dict(qkv=clock(lambda: F.linear(x, w["qkv"])), o=clock(lambda: F.linear(x, w["o"])), gate=clock(lambda: F.linear(x, w["gate"])),
                  up=clock(lambda: F.linear(x, w["up"])), down=clock(lambda: F.linear(h, w["down"])),
                  attention_full_cache=clock(lambda: F.scaled_dot_product_attention(q, s.kc[0], s.vc[0], attn_mask=mask, scale=s.scale)),
                  attention_used_columns=clock(lambda: F.scaled_dot_product_attention(q, s.kc[0][:, :, :half], s.vc[0][:, :, :half],
                                                                                      attn_mask=mask[..., :half], scale=s.scale)),
                  head=clock(lambda: s.head(x[:, -1])), keyed_draw=clock(lambda: s._choose(logits)))
    nbytes = lambda t: t.numel() * t.element_size()
    layer_bytes = sum(nbytes(t) for k, t in w.items() if torch.is_tensor(t) and k in ("qkv", "o", "gate", "up", "down"))
    step_bytes = layer_bytes * len(s.w) + nbytes(s.head.weight)
    big = torch.empty(2**28 if cuda else 2**27, dtype=torch.uint8, device=dev); dst = torch.empty_like(big)
    copy_gbps = round(2 * big.numel() / (clock(lambda: dst.copy_(big), n=20) * 1e-6) / 1e9, 1)   # bytes read + written a second: the memory's rate
    products_us = sum(pieces[k] for k in ("qkv", "o", "gate", "up", "down"))
    name = torch.cuda.get_device_name(dev) if cuda else f"{platform.machine()} CPU, {torch.get_num_threads()} threads"
    res = dict(machine=name, device=dev.type, model=a.model, dtype=str(dtype).removeprefix("torch."), torch=torch.__version__,
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
               command="python scripts/profile_decode.py OUT " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if k != "out"),
               M=a.M, max_new=a.max_new, cache_columns=T, prompt_end=end, layers=len(s.w), variants=timed,
               eager_ms_per_decode_step=eager_ms, kernels_busy_ms_per_step=busy_ms, profile_top_self=top, piece_us=pieces,
               layer_weight_bytes=layer_bytes, step_weight_bytes=step_bytes, copy_gb_per_s=copy_gbps,
               layer_products_us=round(products_us, 1), layer_products_gb_per_s=round(layer_bytes / (products_us * 1e-6) / 1e9, 1),
               floor_ms_per_step=round(step_bytes / (copy_gbps * 1e9) * 1e3, 3))   # reading the weights once, at the copy's bytes a second
    (out / "profile_decode.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: res[k] for k in ("variants", "eager_ms_per_decode_step", "kernels_busy_ms_per_step", "floor_ms_per_step",
                                          "piece_us", "layer_products_gb_per_s", "copy_gb_per_s", "profile_top_self")}, indent=1))


if __name__ == "__main__":
    main()
