"""Where the CPU loop's generation time goes: torch.profiler over the fast sampler's draws of one real training prompt
x M rows (the embedded model in the given dtype, LoRA r=8 merged, <= --max-new tokens, the loop's cache layout: the
longest embedded prompt + max-new columns), after a warm-up draw. Also times each piece of one decode step alone at the
same shapes (the weight products of one layer, attention over the static cache, the keyed draw) to say which bound it is.

    python scripts/profile_cpu_decode.py OUT_DIR [--M 8] [--max-new 128] [--dtype auto] [--draws 3]

Writes OUT_DIR/profile_cpu_decode.json."""
import argparse, json, platform, subprocess, time
from datetime import datetime, timezone
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--M", type=int, default=8); ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--dtype", default="auto"); ap.add_argument("--draws", type=int, default=3)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile
    from proposal_nb.lm.engines import FastSampler
    from proposal_nb.lm.models import add_lora, embedded_model_path, load_model, native_bf16, run_dtype
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.lm.training import prompt_texts
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    dtype = run_dtype(a.dtype, "cpu")
    lm, tok = load_model(embedded_model_path(), dtype=dtype)
    torch.manual_seed(0)
    peft = add_lora(lm, r=8, alpha=16).eval()
    tasks = load_task_source("embedded", "native", ["easy", "medium"], None)
    ids = [tok(t, add_special_tokens=False).input_ids for t in prompt_texts(tok, tasks)]
    end = max(map(len, ids))
    s = FastSampler(peft, batch=a.M, max_len=end + a.max_new, prompt_end=end)
    prompt, keys = [ids[0]], torch.arange(a.M)
    s.draw(prompt, a.M, a.max_new, keys)                                   # warm-up
    t0 = time.perf_counter()
    for _ in range(a.draws): s.draw(prompt, a.M, a.max_new, keys)
    per_draw = (time.perf_counter() - t0) / a.draws
    with profile(activities=[ProfilerActivity.CPU]) as prof: s.draw(prompt, a.M, a.max_new, keys)
    ev = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in ev)
    top = [dict(op=e.key, share=round(e.self_cpu_time_total / total, 4), calls=e.count, self_ms=round(e.self_cpu_time_total / 1e3, 1)) for e in ev[:12]]

    def clock(f, n=200):                                                   # microseconds per call, after 20 warm-up calls
        for _ in range(20): f()
        t = time.perf_counter()
        for _ in range(n): f()
        return round((time.perf_counter() - t) / n * 1e6, 1)
    w, T = s.w[0], s.max_len
    x = torch.randn(a.M, 1, w["qkv"].shape[1], dtype=dtype)
    h = torch.randn(a.M, 1, w["down"].shape[1], dtype=dtype)
    q = torch.randn(a.M, s.KV, s.H // s.KV, s.dh, dtype=dtype)
    mask = torch.ones(a.M, 1, 1, T, dtype=torch.bool); mask[..., end + a.max_new // 2:] = False
    pieces = dict(qkv=clock(lambda: F.linear(x, w["qkv"])), o=clock(lambda: F.linear(x, w["o"])), gate=clock(lambda: F.linear(x, w["gate"])),
                  up=clock(lambda: F.linear(x, w["up"])), down=clock(lambda: F.linear(h, w["down"])),
                  attention_full_cache=clock(lambda: F.scaled_dot_product_attention(q, s.kc[0], s.vc[0], attn_mask=mask, scale=s.scale)),
                  attention_used_columns=clock(lambda: F.scaled_dot_product_attention(q, s.kc[0][:, :, :end + a.max_new // 2], s.vc[0][:, :, :end + a.max_new // 2],
                                                                                      attn_mask=mask[..., :end + a.max_new // 2], scale=s.scale)),
                  head=clock(lambda: s.head(x[:, -1])))
    layer_bytes = sum(t.numel() * t.element_size() for k, t in w.items() if torch.is_tensor(t) and k in ("qkv", "o", "gate", "up", "down"))
    res = dict(machine=f"{platform.machine()} CPU, {torch.get_num_threads()} threads, native bf16: {native_bf16()}", dtype=str(dtype).removeprefix("torch."),
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
               command="python scripts/profile_cpu_decode.py OUT " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if k != "out"),
               torch=torch.__version__, M=a.M, max_new=a.max_new, cache_columns=T, prompt_end=end, layers=len(s.w),
               seconds_per_draw_call=round(per_draw, 3), ms_per_decode_step=round(per_draw / a.max_new * 1e3, 2),
               profile_top_self=top, piece_us=pieces, layer_weight_bytes=layer_bytes,
               layer_products_us=round(sum(pieces[k] for k in ("qkv", "o", "gate", "up", "down")), 1),
               layer_products_gb_per_s=round(layer_bytes / (sum(pieces[k] for k in ("qkv", "o", "gate", "up", "down")) * 1e-6) / 1e9, 1))
    (out / "profile_cpu_decode.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: res[k] for k in ("seconds_per_draw_call", "ms_per_decode_step", "profile_top_self", "piece_us", "layer_products_gb_per_s")}, indent=1))


if __name__ == "__main__":
    main()
