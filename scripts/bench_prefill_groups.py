"""What sharing a prompt's prefill between its draws and its forced rows saves in one `FastSampler.draw` at MSC's shape:
P prompts x M draws plus one forced row (the retained reference) per prompt, as an MSC or RB-MSC step draws them. Times
the draw with `_prefill_groups` (one prefill per distinct prompt) against the per-run grouping it replaced (the draws'
prefill, then another for the forced rows on the same prompt), alternating A and B, on the same sampler and keys, and
checks that both give the same tokens, log-probs and lengths. Writes OUT_DIR/prefill_groups.json and config.json.

    python scripts/bench_prefill_groups.py OUT_DIR [--prompts 40] [--M 2] [--max-new 64] [--repeats 3] [--device auto]"""
import argparse, json, platform, statistics, sys, time
from pathlib import Path


def per_run_groups(prompts, counts, fP, R):
    "The grouping before: one prefill per prompt for its draws, then one per run of forced rows on one prompt."
    bounds = [sum(counts[:j]) for j in range(len(counts) + 1)]
    groups = [(p, [slice(bounds[j], bounds[j + 1])]) for j, p in enumerate(prompts)]
    for i, p in enumerate(fP):
        if i and p == fP[i - 1]: groups[-1] = (p, [slice(groups[-1][1][0].start, R + i + 1)])
        else: groups.append((p, [slice(R + i, R + i + 1)]))
    return groups


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--prompts", type=int, default=40); ap.add_argument("--M", type=int, default=2)
    ap.add_argument("--max-new", type=int, default=64); ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="auto")
    a = ap.parse_args()
    if a.prompts < 1 or a.M < 1 or a.max_new < 2 or a.repeats < 1: raise SystemExit(f"bad arguments: {vars(a)}")
    import torch
    from proposal_nb.lm import fast_sampler as fs
    from proposal_nb.lm.generation import row_keys
    from proposal_nb.lm.models import add_lora, embedded_model_path, load_model, run_dtype
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.lm.training import prompt_texts
    from proposal_nb.results import write_bench_config
    dev = torch.device("cuda" if a.device == "auto" and torch.cuda.is_available() else "cpu" if a.device == "auto" else a.device)
    if dev.type == "cpu": torch.set_num_threads(2)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    lm, tok = load_model(embedded_model_path(), dtype=run_dtype("auto", dev.type), device=str(dev))
    torch.manual_seed(0)
    peft = add_lora(lm, r=8, alpha=16).eval()
    tasks = load_task_source("embedded", "native", ["easy", "medium"], None)[:a.prompts]
    if len(tasks) < a.prompts: raise SystemExit(f"--prompts {a.prompts}: the embedded easy and medium tasks are {len(tasks)}")
    ids = [tok(t, add_special_tokens=False).input_ids for t in prompt_texts(tok, tasks)]
    stop = fs.stop_rule(tok, {tok.eos_token_id}, vocab=lm.config.vocab_size)
    R = a.prompts * a.M
    s = fs.FastSampler(peft, R + a.prompts, max(map(len, ids)) + a.max_new, stop=stop)
    keys = torch.tensor([row_keys(0, i, m) for i in range(a.prompts) for m in range(a.M)])
    first = s.draw(ids, a.M, a.max_new, keys)                     # references: each prompt's first draw, as a chain would hold
    refs = [(p, first.tokens[i * a.M, :max(1, int(first.lengths[i * a.M]))].tolist()) for i, p in enumerate(ids)]
    keys = torch.tensor([row_keys(1, i, m) for i in range(a.prompts) for m in range(a.M)])
    calls, orig_prefill = [0], fs.FastSampler._prefill
    def counted(self, *args, **kw): calls[0] += 1; return orig_prefill(self, *args, **kw)
    fs.FastSampler._prefill = counted
    shared, runs = fs._prefill_groups, {"shared": [], "per_run": []}
    outs, prefills = {}, {}
    def draw(name):
        fs._prefill_groups = shared if name == "shared" else per_run_groups
        calls[0] = 0; sync(); t = time.perf_counter()
        d = s.draw(ids, a.M, a.max_new, keys, forced=refs)
        sync(); runs[name].append(time.perf_counter() - t); prefills[name] = calls[0]
        return d
    for k in range(a.repeats + 1):                                # the first pair warms up and is not timed
        for name in (("shared", "per_run") if k % 2 == 0 else ("per_run", "shared")):
            d = draw(name)
            if k == 0: runs[name].clear(); outs[name] = d
    fs._prefill_groups = shared
    same = all(torch.equal(x, y) if x.dtype != torch.float32 else torch.equal(x.nan_to_num(7.0), y.nan_to_num(7.0))
               for x, y in zip(outs["shared"], outs["per_run"]))
    med = {k: statistics.median(v) for k, v in runs.items()}
    res = dict(prompts=a.prompts, M=a.M, forced_rows=a.prompts, rows=R + a.prompts, max_new=a.max_new, repeats=a.repeats,
               device=str(dev), prefills=prefills, seconds=runs, median_s=med, ratio_shared_over_per_run=med["shared"] / med["per_run"],
               identical_draws=same, decode_steps=int(outs["shared"].tokens.shape[1]))
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    (out / "prefill_groups.json").write_text(json.dumps(res, indent=1))
    machine = torch.cuda.get_device_name(0) if dev.type == "cuda" else f"CPU ({platform.processor() or platform.machine()}), 2 threads"
    write_bench_config(sys.argv, machine, torch=torch.__version__)
    print(json.dumps({k: res[k] for k in ("prefills", "median_s", "ratio_shared_over_per_run", "identical_draws", "decode_steps")}))
    if not same: raise SystemExit("the two groupings drew different tokens or log-probs")


if __name__ == "__main__":
    main()
