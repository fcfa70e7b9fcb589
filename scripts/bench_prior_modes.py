"""The log p pass of each scoring mode on the CPU, timed on real draws: the embedded model sampled in bf16 by the fast
engine (one training prompt x M draws per visit, <= --max-new tokens, the CPU loop's shape), then per visit, in rotating
order, `densities.prior_token_logprobs` in
  - fp32_prior: the float32 copy of the base (`models.prior_copy`), each prompt's prefix once (the CPU default until now);
  - fixed_shape: the bf16 model itself, each prompt's prefix once and each completion alone after it (the CPU form);
  - model: the bf16 model's own grouped prefix pass (fast, not reproducible: shown for scale).
Also per mode: how far a sequence's log p moves over three batch compositions of the same rows (0 = a function of the
sequence), and how far it lies from the sampler's own log-prob of the draw (the base arm's q) and from fp32_prior.

    python scripts/bench_prior_modes.py OUT_DIR [--visits 8] [--M 8] [--max-new 128]

Writes OUT_DIR/bench_prior_modes.json."""
import argparse, json, math, platform, subprocess, time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

MODES = ("fp32_prior", "fixed_shape", "model")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--visits", type=int, default=8); ap.add_argument("--M", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=128)
    a = ap.parse_args()
    from proposal_nb.lm.densities import prior_token_logprobs
    from proposal_nb.lm.engines import make_engine, own_logprobs
    from proposal_nb.lm.models import embedded_model_path, load_model, native_bf16, prior_copy
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.lm.training import prompt_texts
    from proposal_nb.programs.tasks import split_tasks
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    res = dict(machine=f"{platform.machine()} CPU, {torch.get_num_threads()} threads, native bf16: {native_bf16()}",
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
               command="python scripts/bench_prior_modes.py OUT " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if k != "out"),
               torch=torch.__version__)
    lm, tok = load_model(embedded_model_path(), dtype=torch.bfloat16)
    fp32 = prior_copy(lm, embedded_model_path())
    train, _ = split_tasks(load_task_source("embedded", "native", ["easy", "medium"], None), 0.3, 42)
    tasks = train[:a.visits + 1]
    ids = [tok(t, add_special_tokens=False).input_ids for t in prompt_texts(tok, tasks)]
    eng = make_engine("fast", lm, tok, rows=a.M, max_prompt_len=max(map(len, ids)), max_new_tokens=a.max_new)
    visits = []
    for k, p in enumerate(ids):                                   # the base sampler's own draws, keyed
        gens = eng.generate([p], a.M, torch.arange(k * a.M, (k + 1) * a.M))[0]
        own = [math.fsum(x) for x in own_logprobs(gens, "fast")]
        visits.append(([g.prompt_ids for g in gens], [g.token_ids for g in gens], own))
    res["prompt_tokens"] = [len(v[0][0]) for v in visits]
    res["completion_tokens"] = [[len(c) for c in v[1]] for v in visits]

    def score(mode, P, C):
        return prior_token_logprobs(lm, P, C, mode, fp32 if mode == "fp32_prior" else None)[0].sum(-1)

    times = {m: [] for m in MODES}
    for k, (P, C, _) in enumerate(visits):
        order = MODES[k % 3:] + MODES[:k % 3]                   # rotating order
        for mode in order:
            t0 = time.perf_counter(); score(mode, P, C); dt = time.perf_counter() - t0
            if k: times[mode].append(dt)                          # visit 0: warm-up
        print(f"visit {k}: " + ", ".join(f"{m} {times[m][-1]:.2f} s" for m in MODES) if k else "visit 0: warm-up", flush=True)
    n = a.visits * a.M
    per = {m: float(sum(v) / n) for m, v in times.items()}

    P = [p for v in visits[1:] for p in v[0]]; C = [c for v in visits[1:] for c in v[1]]; own = np.array([x for v in visits[1:] for x in v[2]])
    g = torch.Generator().manual_seed(0)
    perm = torch.randperm(len(P), generator=g).tolist()
    half = list(range(0, len(P), 2))
    lp = {}
    for mode in MODES:                                            # three compositions: all rows, permuted, every other row
        runs = []
        for order in (list(range(len(P))), perm, half):
            s = score(mode, [P[i] for i in order], [C[i] for i in order]).double().numpy()
            runs.append(dict(zip(order, s)))
        lp[mode] = np.array([runs[0][i] for i in range(len(P))])
        res.setdefault("spread_over_compositions_max", {})[mode] = float(max(max(r[i] for r in runs if i in r) - min(r[i] for r in runs if i in r) for i in range(len(P))))
    d_own = {m: lp[m] - own for m in MODES}
    res.update(visits_timed=a.visits, M=a.M, seconds=times, per_sample_s=per,
               ratio_fixed_shape_over_fp32_prior=per["fixed_shape"] / per["fp32_prior"],
               ratio_model_over_fp32_prior=per["model"] / per["fp32_prior"],
               minus_sampler_own=dict(mean={m: float(v.mean()) for m, v in d_own.items()}, sd={m: float(v.std(ddof=1)) for m, v in d_own.items()},
                                      max_abs={m: float(np.abs(v).max()) for m, v in d_own.items()}),
               fixed_shape_minus_fp32_prior=dict(mean=float((lp["fixed_shape"] - lp["fp32_prior"]).mean()),
                                                 sd=float((lp["fixed_shape"] - lp["fp32_prior"]).std(ddof=1))),
               sequences=len(P), mean_completion_tokens=float(np.mean([len(c) for c in C])))
    (out / "bench_prior_modes.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: res[k] for k in ("per_sample_s", "ratio_fixed_shape_over_fp32_prior", "spread_over_compositions_max", "minus_sampler_own",
                                          "fixed_shape_minus_fp32_prior")}, indent=1))


if __name__ == "__main__":
    main()
