"""What dropping stopped rows saves on a CPU: the main job's evaluation shape (25 held-out prompts × 20 keyed draws,
in `FastEngine` calls of 125 rows, ≤ 128 new tokens) drawn with `FastSampler.draw`'s default `shrink` and with
`shrink=0` (every row decoded to the end), alternating A B B A, on the embedded model with a fresh LoRA adapter (the
base model's draws), with a check that all four runs give the same draws bit for bit (tokens, per-token log-probs,
lengths). Writes OUT_DIR/shrink.json and config.json.

    python scripts/bench_shrink.py OUT_DIR [--prompts 25] [--draws 20] [--rows 125] [--max-new 128]"""
import argparse, json, platform, statistics, sys, time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--prompts", type=int, default=25); ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--rows", type=int, default=125); ap.add_argument("--max-new", type=int, default=128)
    a = ap.parse_args()
    if min(a.prompts, a.draws, a.rows) < 1 or a.max_new < 2: raise SystemExit(f"bad arguments: {vars(a)}")
    import torch
    from proposal_nb.results import write_bench_config
    from proposal_nb.lm import fast_sampler as fs
    from proposal_nb.lm.engines import FastEngine
    from proposal_nb.lm.generation import row_keys
    from proposal_nb.lm.models import add_lora, embedded_model_path, load_model, run_dtype
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.lm.training import prompt_texts
    torch.set_num_threads(2)
    lm, tok = load_model(embedded_model_path(), dtype=run_dtype("auto", "cpu"))
    torch.manual_seed(0)
    peft = add_lora(lm, r=8, alpha=16).eval()
    tasks = load_task_source("embedded", "native", ["easy", "medium"], None)[:a.prompts]
    ids = [tok(t, add_special_tokens=False).input_ids for t in prompt_texts(tok, tasks)]
    keys = torch.tensor([row_keys(7, "eval", t.id, k) for t in tasks for k in range(a.draws)])
    engine = FastEngine(peft, tok, a.rows, max(map(len, ids)), a.max_new)
    draw, step = fs.FastSampler.draw, fs.FastSampler._step
    row_steps = []
    def counted(self): row_steps[-1] += self.B; step(self)         # rows decoded, summed over the steps
    fs.FastSampler._step = counted
    ways = {"shrink": None, "whole": 0.0}                         # None: draw's default
    times, outs, decoded = {k: [] for k in ways}, {k: [] for k in ways}, {k: [] for k in ways}
    try:
        for name in ("shrink", "whole", "whole", "shrink"):
            sh = ways[name]
            fs.FastSampler.draw = draw if sh is None else (lambda self, *x, **k: draw(self, *x, shrink=sh, **k))
            row_steps.append(0)
            t = time.perf_counter(); g = engine.generate(ids, a.draws, keys); times[name].append(time.perf_counter() - t)
            outs[name].append([(x.token_ids, x.logprobs, x.stop_reason) for gs in g for x in gs]); decoded[name].append(row_steps[-1])
            print(f"{name}: {times[name][-1]:.1f} s, {row_steps[-1]:,} row-steps", flush=True)
    finally: fs.FastSampler.draw, fs.FastSampler._step = draw, step
    first = outs["shrink"][0]
    same = all(o == first for v in outs.values() for o in v)
    lengths = [len(t) for t, _, _ in first]
    med = {k: statistics.median(v) for k, v in times.items()}
    res = dict(prompts=a.prompts, draws=a.draws, rows=a.rows, max_new=a.max_new, shrink_default=0.75, floor=fs.SHRINK_FLOOR,
               dtype=str(next(lm.parameters()).dtype), seconds=times, median_s=med, ratio=med["shrink"] / med["whole"],
               row_steps=decoded, row_step_ratio=decoded["shrink"][0] / decoded["whole"][0], same_draws=same,
               mean_length=statistics.mean(lengths), at_cap=sum(n >= a.max_new for n in lengths) / len(lengths))
    print(f"shrink {med['shrink']:.1f} s against whole {med['whole']:.1f} s ({res['ratio']:.3f}); row-steps {res['row_step_ratio']:.3f}; "
          f"same draws: {same}; mean length {res['mean_length']:.1f}", flush=True)
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    (out / "shrink.json").write_text(json.dumps(res, indent=1))
    write_bench_config(sys.argv, f"CPU ({platform.processor() or platform.machine()}), 2 threads", torch=torch.__version__)


if __name__ == "__main__": main()
