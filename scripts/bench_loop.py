"""Time the real online loop (training.OnlineRun) per phase, with each sampling engine, on one model and task set.

    python scripts/bench_loop.py OUT_DIR [--model PATH] [--gguf FILE] [--engines fast,hf] [--steps 30] [--hf-steps 3]
                                 [--prompts 8] [--M 10] [--max-new 256] [--limit 0]

Each name in --engines is an arm: an engine, optionally with `+compile` (the decode layer compiled), `+serial` or
`+overlap` (the checker after the scoring, or beside it; neither: the loop's default), `+prefix` (every scoring pass runs
each prompt's prefix once for its draws, `densities.prefix_token_logprobs`; the default: on a CPU only), e.g.
`--engines fast+serial,fast+compile+overlap` times the loop before and after both levers in one run.
Writes OUT_DIR/<arm>/{log.parquet, draws.parquet, config.json} and OUT_DIR/bench_loop.json: seconds per sample of
generation, potential (the seconds a step waited for the checker), scoring and update (the first step, which captures
the CUDA graph or compiles, is left out), tokens per second, the sampler-vs-scorer log-prob gap, and the ratios between
arms measured in this one run."""
import argparse, json, platform, subprocess, time
from datetime import datetime, timezone
from pathlib import Path

import torch

from proposal_nb.lm.models import add_lora, embedded_model_path, load_model
from proposal_nb.programs.potentials import make_potential
from proposal_nb.lm.rollouts import load_task_source
from proposal_nb.programs.sandbox import Executor
from proposal_nb.programs.tasks import split_tasks
from proposal_nb.lm.training import OnlineRun, online_config

PHASES = ("t_generation", "t_potential", "t_scoring", "t_update")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--model", default=""); ap.add_argument("--gguf", default="")
    ap.add_argument("--engines", default="fast,hf"); ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--hf-steps", type=int, default=3); ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--M", type=int, default=10); ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--limit", type=int, default=0); ap.add_argument("--estimator", default="iguana")
    ap.add_argument("--lr", type=float, default=1e-5); ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    path = a.model or embedded_model_path(gguf=a.gguf or None)
    train, _ = split_tasks(load_task_source("embedded", "native", None, a.limit or None), 0.3, 42)
    res = dict(machine=torch.cuda.get_device_name() if torch.cuda.is_available() else platform.processor() or "cpu",
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"), command="python scripts/bench_loop.py " + " ".join(
                   f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if k != "out"),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or None,
               torch=torch.__version__, model=str(a.model or "embedded:SmolLM2-135M-Instruct"), train_prompts=len(train), engines={})
    for arm in a.engines.split(","):
        eng, *flags = arm.split("+")
        if bad := sorted(set(flags) - {"compile", "serial", "overlap", "prefix"}): raise SystemExit(f"arm {arm!r}: unknown option(s) {bad}; use +compile, +serial, +overlap, +prefix")
        if {"serial", "overlap"} <= set(flags): raise SystemExit(f"arm {arm!r}: +serial and +overlap exclude each other")
        overlap = True if "overlap" in flags else False if "serial" in flags else None
        lm, tok = load_model(path)
        torch.manual_seed(0)
        peft = add_lora(lm, r=8, alpha=16)
        steps = a.steps if eng != "hf" else a.hf_steps
        cfg = online_config(engine=eng, estimator=a.estimator, M=a.M, prompts_per_step=a.prompts, steps=steps, lr=a.lr,
                            max_new_tokens=a.max_new, checkpoint_every=10_000, compile=a.compile or "compile" in flags,
                            overlap_checks=overlap, seed=42)
        t0 = time.time()
        with Executor() as ex:
            run = OnlineRun(peft, tok, train, make_potential("no_error", ex), cfg, out / arm, resume=False)
            if "prefix" in flags: run.prefix_scoring = True
            log = run.train(progress=True)
        wall = time.time() - t0
        timed = log.iloc[1:] if len(log) > 1 else log
        n, ntok = timed.n_samples.sum(), timed.n_tokens.sum()
        per = {k.removeprefix("t_"): float(timed[k].sum() / n) for k in PHASES}
        res["engines"][arm] = dict(engine=run.engine.name, compile=cfg.loop.compile, overlap_checks=run.overlapping(), prefix_scoring=run.prefix_scoring, scoring=run.scoring, steps=len(log), timed_steps=len(timed), samples=int(n), tokens=int(ntok),
                                   per_sample_s=per, total_per_sample_s=sum(per.values()),
                                   gen_tokens_per_s=float(ntok / timed.t_generation.sum()), mean_length=float(timed.mean_length.mean()),
                                   validity=float(log.validity.mean()), logprob_gap_max=float(log.logprob_gap_max.max()),
                                   logprob_gap_mean=float(log.logprob_gap_mean.mean()), first_step_s=float(log.iloc[0][list(PHASES)].sum()),
                                   wall_s=wall, dtype=str(next(peft.parameters()).dtype))
        print(json.dumps({arm: res["engines"][arm]}, indent=1), flush=True)
        del run, peft, lm; torch.cuda.empty_cache() if torch.cuda.is_available() else None
    e = res["engines"]
    if "fast" in e and "hf" in e: res["hf_over_fast_per_sample"] = e["hf"]["total_per_sample_s"] / e["fast"]["total_per_sample_s"]
    first = next(iter(e), None)                                       # every arm against the first one named (the 'before')
    res["over_first_per_sample"] = {k: v["total_per_sample_s"] / e[first]["total_per_sample_s"] for k, v in e.items()}
    (out / "bench_loop.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k != "engines"}, indent=1))


if __name__ == "__main__":
    main()
