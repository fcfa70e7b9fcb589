"""Samples per second of the online loop (fast engine) on one GPU and on several, through DDP or FSDP2, on a random-init
Qwen2 shape; and the agreement of the adapters and draws between world sizes.

    python scripts/bench_multi_gpu.py run DIR --size 1.5b --prompts 4 --M 10 --new-tokens 400 --steps 5
    torchrun --standalone --nproc_per_node=2 scripts/bench_multi_gpu.py run DIR --strategy ddp --size 1.5b --prompts 4 ...
    python scripts/bench_multi_gpu.py summarize OUT.json DIR [DIR ...]

`run` writes DIR/result.json (every step's wall time, samples/s without the first step, the per-phase split, peak GPU
memory per rank), DIR/adapter.pt, DIR/log.parquet and DIR/draws.parquet. `summarize` gathers the results and compares
every pair of runs with the same global batch: max |Δ adapter|, the share of identical draws and |Δ log q| on them."""
import argparse, json, os, platform, subprocess, time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch

SHAPES = {"14b": dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8,
                      vocab_size=152064, tie_word_embeddings=False)}   # Qwen2.5-14B's shape; 0.5b, 1.5b from throughput.QWEN2_SHAPES
PHASES = ("t_generation", "t_potential", "t_scoring", "t_update")


def build(a, device):
    from proposal_nb.lm import throughput as tp
    from proposal_nb.lm.models import add_lora
    from proposal_nb.programs.tasks import Task
    size, over = (a.size, {}) if a.size in tp.QWEN2_SHAPES else ("1.5b", SHAPES[a.size])
    model = tp.random_model(size, device=device, dtype=torch.bfloat16 if device.startswith("cuda") else torch.float32, seed=0, **over)
    n_params = sum(p.numel() for p in model.parameters())
    torch.manual_seed(0)
    pm = add_lora(model, r=8, alpha=16, dropout=0.0)
    tok = tp.word_tokenizer(model.config.vocab_size)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"      # the prompt is the task's words
    rng = np.random.default_rng(0)
    tasks = [Task(id=f"bench/{i}", prompt=" ".join(f"w{w}" for w in rng.integers(3, min(30000, model.config.vocab_size), a.prompt_tokens))) for i in range(a.prompts * 4)]
    return pm, tok, tasks, n_params


def run(a):
    from proposal_nb.lm.training import OnlineRun, online_config
    out = Path(a.dir); out.mkdir(parents=True, exist_ok=True)
    dist_run = "RANK" in os.environ                              # under torchrun (any world size): DDP or FSDP2
    world = 1
    if dist_run:
        from proposal_nb.lm.distributed import DistributedOnlineRun, init_from_env
        rank, world, device = init_from_env()
    else: rank, device = 0, "cuda:0" if torch.cuda.is_available() else "cpu"
    cuda = device.startswith("cuda")
    t0 = time.perf_counter()
    pm, tok, tasks, n_params = build(a, device)
    parity = lambda tasks, completions: [float(len(c) % 2 == 0) for c in completions]
    cfg = online_config(engine="fast", compile=a.compile, estimator=a.estimator, M=a.M, prompts_per_step=a.prompts, steps=a.steps + 1,
                        lr=1e-4, max_new_tokens=a.new_tokens, checkpoint_every=10**6, seed=42)
    args = (pm, tok, tasks, parity, cfg, out / "run")
    run = DistributedOnlineRun(*args, strategy=a.strategy, resume=False) if dist_run else OnlineRun(*args, resume=False)
    build_s = time.perf_counter() - t0
    if cuda: torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    after_build_gb = torch.cuda.memory_allocated() / 2**30 if cuda else 0.0
    wall = []
    for _ in range(a.steps):
        if dist_run: torch.distributed.barrier()
        if cuda: torch.cuda.synchronize()
        s = time.perf_counter()
        run.train(progress=False, stop_after=1)
        if cuda: torch.cuda.synchronize()
        if dist_run: torch.distributed.barrier()
        wall.append(time.perf_counter() - s)
    peak = [torch.cuda.max_memory_allocated() / 2**30 if cuda else 0.0, after_build_gb]
    peaks = run.gather(peak) if dist_run else [peak]
    if rank == 0:
        log = pd.DataFrame(run.log)
        timed = log.iloc[1:]
        rows = a.prompts * a.M
        res = dict(machine=torch.cuda.get_device_name() if cuda else platform.processor() or "cpu", gpus=world if cuda else 0,
                   date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   commit=os.environ.get("BENCH_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or None,
                   torch=torch.__version__, world=world, strategy=a.strategy if dist_run else "single", size=a.size, params=n_params,
                   prompts_per_step=a.prompts, M=a.M, rows_per_step=rows, rows_per_rank=rows // world, new_tokens=a.new_tokens,
                   compile=a.compile, estimator=a.estimator, steps=a.steps, step_wall_s=wall, build_s=build_s,
                   samples_per_s=rows * (len(wall) - 1) / sum(wall[1:]), s_per_sample=sum(wall[1:]) / (rows * (len(wall) - 1)),
                   phase_s_per_step={k.removeprefix("t_"): float(timed[k].mean()) for k in PHASES},
                   decode_ms_per_token=1e3 * float(timed.t_generation.mean()) / a.new_tokens, mean_length=float(timed.mean_length.mean()),
                   logprob_gap_max=float(log.logprob_gap_max.max()),
                   peak_gb_per_rank=[p[0] for p in peaks], allocated_after_build_gb_per_rank=[p[1] for p in peaks])
        (out / "result.json").write_text(json.dumps(res, indent=1))
        torch.save({k: v.float().cpu() for k, v in run.trained_state().items()}, out / "adapter.pt")
        log.to_parquet(out / "log.parquet"); pd.DataFrame(run.draws).to_parquet(out / "draws.parquet")
        print(json.dumps({k: v for k, v in res.items() if k not in ("step_wall_s",)}), flush=True)
    if dist_run: torch.distributed.destroy_process_group()


def summarize(a):
    runs = {}
    for d in map(Path, a.dirs):
        if (d / "result.json").exists(): runs[d.name] = (d, json.loads((d / "result.json").read_text()))
        else: print(f"no result in {d}")
    out = dict(runs={k: r for k, (_, r) in runs.items()}, pairs=[])
    names = list(runs)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            (dx, rx), (dy, ry) = runs[x], runs[y]
            if (rx["size"], rx["prompts_per_step"], rx["M"], rx["new_tokens"]) != (ry["size"], ry["prompts_per_step"], ry["M"], ry["new_tokens"]):
                continue
            ax, ay = (torch.load(d / "adapter.pt") for d in (dx, dy))
            a0 = max(float(v.abs().max()) for v in ax.values())
            gx, gy = (pd.read_parquet(d / "draws.parquet") for d in (dx, dy))
            m = gx.merge(gy, on=["step", "prompt_id", "draw"], suffixes=("_x", "_y"))
            same = m.text_hash_x == m.text_hash_y
            by_step = m.assign(same=same).groupby("step").same.mean()
            out["pairs"].append(dict(a=x, b=y, speedup_b_over_a=ry["samples_per_s"] / rx["samples_per_s"],
                                     max_abs_adapter_diff=max(float((ax[k] - ay[k]).abs().max()) for k in ax), max_abs_adapter=a0,
                                     identical_draws_share=float(same.mean()), identical_draws_by_step=by_step.round(3).tolist(),
                                     max_abs_logq_diff_identical_draws=float((m.logq_x - m.logq_y)[same].abs().max()) if same.any() else None,
                                     first_step_max_abs_logq_diff=float((m.logq_x - m.logq_y)[same & (m.step == 1)].abs().max()) if (same & (m.step == 1)).any() else None))
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["pairs"], indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run"); r.add_argument("dir")
    r.add_argument("--size", default="1.5b", help="tiny (CPU smoke runs), 0.5b, 1.5b (throughput.QWEN2_SHAPES) or 14b")
    r.add_argument("--strategy", default="ddp", choices=["ddp", "fsdp"]); r.add_argument("--prompts", type=int, default=4)
    r.add_argument("--M", type=int, default=10); r.add_argument("--new-tokens", type=int, default=400)
    r.add_argument("--prompt-tokens", type=int, default=64); r.add_argument("--steps", type=int, default=5)
    r.add_argument("--estimator", default="iguana"); r.add_argument("--compile", action="store_true")
    s = sub.add_parser("summarize"); s.add_argument("out"); s.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    if a.cmd == "run" and a.size not in ("tiny", "0.5b", "1.5b", "14b"): raise SystemExit(f"unknown --size {a.size!r}: tiny, 0.5b, 1.5b or 14b")
    if a.cmd == "run" and a.steps < 2: raise SystemExit(f"--steps must be ≥ 2 (the first step is a warm-up), got {a.steps}")
    run(a) if a.cmd == "run" else summarize(a)
