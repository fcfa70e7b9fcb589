"""Samples per second of the online loop (fast engine) on one GPU and on several, through DDP or FSDP2, on a random-init
Qwen2 shape; and the agreement of the adapters and draws between world sizes.

    python scripts/bench_multi_gpu.py run DIR --size 1.5b --prompts 4 --M 10 --new-tokens 400 --steps 5 [--score-rows 32]
    torchrun --standalone --nproc_per_node=2 scripts/bench_multi_gpu.py run DIR --strategy ddp --size 1.5b --prompts 4 ...
    python scripts/bench_multi_gpu.py summarize OUT.json DIR [DIR ...]
    python scripts/bench_multi_gpu.py suite DIR --publish FOLDER [--budget-s 540]

`run` writes DIR/result.json (every step's wall time, samples/s without the first step, the per-phase split, peak GPU
memory per rank), DIR/adapter.pt, DIR/log.parquet and DIR/draws.parquet. `summarize` gathers the results and compares
every pair of runs with the same global batch: max |Δ adapter|, the share of identical draws and |Δ log q| on them.
`suite` runs the issue-17 measurements one after the other (1 GPU and 2 DDP ranks at the same global batch with
chunked scoring, 2 FSDP2 ranks on the 14B shape, 2 FSDP2 ranks at the 1.5B batch), skipping parts already done in DIR
and stopping before a part that would not fit in --budget-s (run the same command again to go on); once every part is
done it writes the published folder: config.json (machine, date, commit, command, findings), summary.json, runs/."""
import argparse, json, os, platform, shlex, shutil, signal, subprocess, sys, time
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
        from proposal_nb.lm.distributed import init_from_env, strategy_class
        rank, world, device = init_from_env()
    else: rank, device = 0, "cuda:0" if torch.cuda.is_available() else "cpu"
    cuda = device.startswith("cuda")
    t0 = time.perf_counter()
    pm, tok, tasks, n_params = build(a, device)
    parity = lambda tasks, completions: [float(len(c) % 2 == 0) for c in completions]
    cfg = online_config(engine="fast", compile=a.compile, estimator=a.estimator, M=a.M, prompts_per_step=a.prompts, steps=a.steps + 1,
                        lr=1e-4, max_new_tokens=a.new_tokens, checkpoint_every=10**6, seed=42,
                        score_rows=a.score_rows or None)
    args = (pm, tok, tasks, parity, cfg, out / "run")
    run = strategy_class(a.strategy)(*args, resume=False) if dist_run else OnlineRun(*args, resume=False)
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
                   compile=a.compile, estimator=a.estimator, score_rows=a.score_rows or None, steps=a.steps, step_wall_s=wall, build_s=build_s,
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


def suite_parts(a)->list[dict]:
    "The suite's runs, in order: name, processes, and the `run` options of each."
    big = dict(size=a.size, prompts=a.prompts, M=a.M, score_rows=a.score_rows, steps=a.steps)
    return [dict(name="g1_ddp_base", nproc=1, strategy=None, **big),                 # one GPU, the global batch
            dict(name="g2_ddp", nproc=a.gpus, strategy="ddp", **big),                 # the same global batch on every GPU
            dict(name="g2_fsdp_big", nproc=a.gpus, strategy="fsdp", size=a.fsdp_size, prompts=a.fsdp_prompts, M=a.fsdp_M,
                 score_rows=a.fsdp_score_rows, steps=a.steps),
            dict(name="g2_fsdp", nproc=a.gpus, strategy="fsdp", **big)]              # FSDP2 (graph recaptured) against DDP, same shape


def part_argv(part:dict, a, out:Path)->list[str]:
    "The command line of one part."
    pre = [sys.executable] if part["nproc"] == 1 else [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={part['nproc']}"]
    argv = pre + [__file__, "run", str(out / part["name"]), "--size", part["size"], "--prompts", str(part["prompts"]), "--M", str(part["M"]),
                  "--new-tokens", str(a.new_tokens), "--steps", str(part["steps"]), "--score-rows", str(part["score_rows"]),
                  "--prompt-tokens", str(a.prompt_tokens), "--estimator", a.estimator]
    return argv + (["--strategy", part["strategy"]] if part["strategy"] else [])


def suite(a):
    "Run the parts not done yet within the budget; publish once all are done (or failed)."
    out, t0 = Path(a.dir), time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    for part in suite_parts(a):
        d = out / part["name"]
        if (d / "result.json").exists() or ((d / "error.txt").exists() and not a.retry): continue
        left = a.budget_s - (time.perf_counter() - t0)
        if left < a.min_part_s:
            print(f"[suite] {left:.0f} s left of --budget-s {a.budget_s}: not starting {part['name']}; run the same command again to go on", flush=True)
            raise SystemExit(3)
        argv = part_argv(part, a, out)
        print(f"[suite] {part['name']}: {shlex.join(argv)}", flush=True)
        s = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try: so, se = proc.communicate(timeout=max(30, left - 15))
        except subprocess.TimeoutExpired:                          # out of budget: stop its ranks too, leave the part to the next call
            os.killpg(proc.pid, signal.SIGKILL); proc.communicate(); shutil.rmtree(d, ignore_errors=True)
            print(f"[suite] {part['name']} did not finish within the budget; run the same command again to retry it", flush=True)
            raise SystemExit(3)
        r = subprocess.CompletedProcess(argv, proc.returncode, so, se)
        d.mkdir(parents=True, exist_ok=True)
        (d / "command.txt").write_text(shlex.join(argv) + "\n")
        if r.returncode != 0:
            (d / "error.txt").write_text(f"exit code {r.returncode}\n{(r.stderr or '')[-6000:]}")
            print(f"[suite] {part['name']} FAILED (exit {r.returncode}): {(r.stderr or '').strip()[-800:]}", flush=True)
        else: print(f"[suite] {part['name']} done in {time.perf_counter() - s:.0f} s", flush=True)
    summarize(argparse.Namespace(out=str(out / "summary.json"), dirs=[str(out / p["name"]) for p in suite_parts(a)]))
    if a.publish: publish(a, out, Path(a.publish))


def findings(runs:dict, pairs:list)->dict:
    "The issue-17 numbers from the suite's results (absent parts are left out)."
    g1, g2, fb, f2 = (runs.get(k) for k in ("g1_ddp_base", "g2_ddp", "g2_fsdp_big", "g2_fsdp"))
    pick = lambda r, *ks: {k: r[k] for k in ks if k in r}
    keys = ("samples_per_s", "s_per_sample", "rows_per_step", "rows_per_rank", "score_rows", "phase_s_per_step", "decode_ms_per_token", "peak_gb_per_rank")
    f = {}
    if g1 and g2:
        x = g2["samples_per_s"] / g1["samples_per_s"]
        f["ddp_scaling_same_global_batch"] = dict(one_gpu=pick(g1, *keys), two_gpus=pick(g2, *keys), speedup=x, target=1.8, met=x >= 1.8,
                                                  same_global_batch=g1["rows_per_step"] == g2["rows_per_step"])
        pr = next((q for q in pairs if {q["a"], q["b"]} == {"g1_ddp_base", "g2_ddp"}), None)
        if pr: f["bf16_adapter_1_vs_2_ranks"] = pick(pr, "max_abs_adapter_diff", "max_abs_adapter", "identical_draws_share", "identical_draws_by_step",
                                                      "first_step_max_abs_logq_diff", "max_abs_logq_diff_identical_draws")
    if fb:
        f["fsdp_big"] = pick(fb, "size", "params", "world", *keys) | dict(bf16_weights_gb=fb["params"] * 2 / 2**30)
        if g2:
            scale = fb["params"] / g2["params"]
            f["fsdp_big"]["versus_ddp_scaled_by_size"] = dict(ddp_run="g2_ddp", scale=scale, ddp_s_per_sample=g2["s_per_sample"],
                                                              ddp_scaled_s_per_sample=g2["s_per_sample"] * scale,
                                                              fsdp_over_scaled_ddp=fb["s_per_sample"] / (g2["s_per_sample"] * scale),
                                                              note="per-sample times at different rows per step (the big shape takes fewer)")
    if f2 and g2:
        f["fsdp_vs_ddp_same_shape"] = dict(fsdp=pick(f2, *keys), ddp=pick(g2, *keys), fsdp_over_ddp_samples_per_s=f2["samples_per_s"] / g2["samples_per_s"])
    return f


def publish(a, out:Path, folder:Path):
    "The published run folder: config.json (machine, date, commit, command, findings), summary.json, runs/<part>.json and logs."
    names = [p["name"] for p in suite_parts(a)]
    summary = json.loads((out / "summary.json").read_text())
    runs = summary["runs"]
    folder.mkdir(parents=True, exist_ok=True); (folder / "runs").mkdir(exist_ok=True)
    for n in names:
        for src, dst in ((out / n / "result.json", f"{n}.json"), (out / n / "log.parquet", f"{n}.log.parquet"),
                         (out / n / "error.txt", f"{n}.error.txt"), (out / n / "command.txt", f"{n}.command.txt")):
            if src.exists(): shutil.copyfile(src, folder / "runs" / dst)
    shutil.copyfile(out / "summary.json", folder / "summary.json")
    old = json.loads((folder / "config.json").read_text()) if (folder / "config.json").exists() else {}
    earlier = old.get("earlier") if "suite" in old else ({k: old[k] for k in ("status", "date", "commit", "command", "findings") if k in old} or None)
    first = next((runs[n] for n in names if n in runs), {})
    missing = [n for n in names if n not in runs]
    flags = ["--gpus", a.gpus, "--size", a.size, "--prompts", a.prompts, "--M", a.M, "--score-rows", a.score_rows, "--steps", a.steps,
             "--new-tokens", a.new_tokens, "--fsdp-size", a.fsdp_size, "--fsdp-prompts", a.fsdp_prompts, "--fsdp-M", a.fsdp_M,
             "--fsdp-score-rows", a.fsdp_score_rows]
    cfg = dict(kind="bench_multi_gpu", suite=names,
               status="complete" if not missing else f"PARTIAL: no result for {missing} (see runs/*.error.txt)",
               description="scripts/bench_multi_gpu.py suite: the real online loop (OnlineRun / DDPOnlineRun / FSDPOnlineRun, IGUANA, engine 'fast', "
                           "bf16, LoRA r=8 on q/k/v/o, random-init Qwen2 shapes, fixed-length completions) with chunked scoring "
                           "(loop.score_rows); samples/s = rows per step / step wall time, the first step (graph capture) left out",
               machine=f"{first.get('machine', '?')} × {first.get('world', a.gpus) if 'g2_ddp' not in runs else runs['g2_ddp']['world']}; torch {first.get('torch', '?')}",
               date=datetime.now(timezone.utc).date().isoformat(),
               commit=os.environ.get("BENCH_COMMIT") or first.get("commit"),
               command=shlex.join([Path(sys.executable).name, "scripts/bench_multi_gpu.py", "suite", str(out), "--publish", str(folder)] + list(map(str, flags))),
               user_command=shlex.join([".venv/bin/python", "scripts/bench_multi_gpu.py", "suite", "results/h200x2_multi_gpu", "--publish",
                                        "published/h200x2_multi_gpu"] + list(map(str, flags))),
               parts={n: (out / n / "command.txt").read_text().strip() if (out / n / "command.txt").exists() else None for n in names},
               findings=findings(runs, summary["pairs"]), earlier=earlier)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    print(f"[suite] published {folder}: {cfg['status']}", flush=True)
    print(json.dumps(cfg["findings"], indent=1), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run"); r.add_argument("dir")
    r.add_argument("--size", default="1.5b", help="tiny (CPU smoke runs), 0.5b, 1.5b (throughput.QWEN2_SHAPES) or 14b")
    r.add_argument("--strategy", default="ddp", choices=["ddp", "fsdp"]); r.add_argument("--prompts", type=int, default=4)
    r.add_argument("--M", type=int, default=10); r.add_argument("--new-tokens", type=int, default=400)
    r.add_argument("--prompt-tokens", type=int, default=64); r.add_argument("--steps", type=int, default=5)
    r.add_argument("--estimator", default="iguana"); r.add_argument("--compile", action="store_true")
    r.add_argument("--score-rows", type=int, default=0, help="rows per backward chunk (loop.score_rows); 0: the whole step at once")
    s = sub.add_parser("summarize"); s.add_argument("out"); s.add_argument("dirs", nargs="+")
    u = sub.add_parser("suite"); u.add_argument("dir"); u.add_argument("--publish", help="the published folder to write once every part is done")
    u.add_argument("--budget-s", type=float, default=540, help="seconds this call may take (a device call is capped at 600)")
    u.add_argument("--min-part-s", type=float, default=150, help="do not start a part with less time than this left")
    u.add_argument("--gpus", type=int, default=2); u.add_argument("--size", default="1.5b"); u.add_argument("--prompts", type=int, default=64)
    u.add_argument("--M", type=int, default=10); u.add_argument("--score-rows", type=int, default=32); u.add_argument("--steps", type=int, default=3)
    u.add_argument("--new-tokens", type=int, default=400); u.add_argument("--prompt-tokens", type=int, default=64)
    u.add_argument("--fsdp-size", default="14b"); u.add_argument("--fsdp-prompts", type=int, default=4)
    u.add_argument("--fsdp-M", type=int, default=8); u.add_argument("--fsdp-score-rows", type=int, default=8)
    u.add_argument("--estimator", default="iguana"); u.add_argument("--retry", action="store_true", help="run failed parts again")
    a = ap.parse_args()
    if a.cmd == "run" and a.size not in ("tiny", "0.5b", "1.5b", "14b"): raise SystemExit(f"unknown --size {a.size!r}: tiny, 0.5b, 1.5b or 14b")
    if a.cmd == "run" and a.steps < 2: raise SystemExit(f"--steps must be ≥ 2 (the first step is a warm-up), got {a.steps}")
    if a.cmd == "suite" and (a.steps < 2 or a.gpus < 2): raise SystemExit(f"suite: --steps must be ≥ 2 and --gpus ≥ 2, got {a.steps} and {a.gpus}")
    run(a) if a.cmd == "run" else summarize(a) if a.cmd == "summarize" else suite(a)
