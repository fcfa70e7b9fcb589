"""The CPU loop's scoring phase before and after shared-prefix scoring, interleaved in one process: the embedded model,
LoRA r=8, one visit = one real chat prompt x M draws (the CPU loop's shape: one prompt per step), per visit
`densities.score_tokens(..., prefix=False)` (the packed pass) and `prefix=True` (each prompt's prefix once), in
alternating order. The scoring phase is what the loop times as t_scoring: log p (adapter off, no graph) and log q
(adapter on, with its graph); the backward of sum log q is timed apart (a share of the update phase).
Completions are random token ids with lengths uniform in [--min-len, --max-len] (the published loop's mean is 93).
Also records how far the two paths' per-token log-probs and LoRA gradients lie apart, on this model and the tiny one.

    python scripts/bench_scoring_prefix.py OUT_DIR [--visits 6] [--M 8] [--min-len 60] [--max-len 128]

Writes OUT_DIR/bench_scoring_prefix.json."""
import argparse, json, platform, resource, subprocess, time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from proposal_nb.lm.densities import score_tokens
from proposal_nb.lm.models import add_lora, chat_prompt, embedded_model_path, load_model, tiny_model
from proposal_nb.lm.rollouts import load_task_source
from proposal_nb.programs.tasks import split_tasks


def lora_grads(pm, lq):
    ps = [p for p in pm.parameters() if p.requires_grad]
    return torch.autograd.grad(lq.sum(), ps)


def agreement(pm, P, C):
    "Largest per-token |Δ| of log q and log p, largest |Δ| of a sequence's sum, largest |Δ| of a LoRA gradient entry (and its scale)."
    a, b = (score_tokens(pm, P, C, prefix=x) for x in (False, True))
    ga, gb = lora_grads(pm, a[0]), lora_grads(pm, b[0])
    return dict(max_abs_token_logq=float((a[0] - b[0]).abs().max()), max_abs_token_logp=float((a[1] - b[1]).abs().max()),
                max_abs_seq_logq=float((a[0].sum(-1) - b[0].sum(-1)).abs().max()), max_abs_seq_logp=float((a[1].sum(-1) - b[1].sum(-1)).abs().max()),
                max_abs_grad=max(float((x - y).abs().max()) for x, y in zip(ga, gb)), max_abs_grad_entry=max(float(x.abs().max()) for x in ga),
                masks_equal=bool(torch.equal(a[2], b[2])))


def perturb(pm, seed, scale):
    "Random LoRA B (a trained adapter's q differs from p; a fresh one has B = 0)."
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, w in pm.named_parameters():
            if "lora_B" in n: w.copy_(torch.randn(w.shape, generator=g) * scale)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--visits", type=int, default=6); ap.add_argument("--M", type=int, default=8)
    ap.add_argument("--min-len", type=int, default=60); ap.add_argument("--max-len", type=int, default=128)
    a = ap.parse_args()
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    res = dict(machine="the project's 2-core CPU machine, shared with other work", threads=torch.get_num_threads(), cpu=platform.machine(),
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
               command="python scripts/bench_scoring_prefix.py OUT " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if k != "out"),
               torch=torch.__version__)
    import transformers; res["transformers"] = transformers.__version__

    tm, _ = tiny_model(2, chars="ab`")
    tpm = add_lora(tm, dropout=0.0).eval(); perturb(tpm, 0, 0.3)
    g = torch.Generator().manual_seed(1)
    tP = [[3, 4, 5, 3]] * 4 + [[4]] * 3 + [[5, 5]] * 2
    tC = [torch.randint(3, 6, (int(torch.randint(1, 12, (1,), generator=g)),), generator=g).tolist() for _ in tP]
    res["agreement_tiny"] = agreement(tpm, tP, tC)

    lm, tok = load_model(embedded_model_path())
    torch.manual_seed(0)
    pm = add_lora(lm, r=8, alpha=16).eval()
    perturb(pm, 0, 0.02)
    train, _ = split_tasks(load_task_source("embedded", "native", ["easy", "medium"], None), 0.3, 42)
    g = torch.Generator().manual_seed(0)
    V = lm.config.vocab_size
    visits = []
    for k in range(a.visits + 1):
        p = tok(chat_prompt(tok, train[k].prompt), add_special_tokens=False).input_ids
        C = [torch.randint(0, V, (int(torch.randint(a.min_len, a.max_len + 1, (1,), generator=g)),), generator=g).tolist() for _ in range(a.M)]
        visits.append(([p] * a.M, C))
    res["prompt_tokens"] = [len(v[0][0]) for v in visits]
    res["completion_tokens"] = [[len(c) for c in v[1]] for v in visits]
    res["agreement_embedded"] = agreement(pm, *visits[0])

    times = {False: dict(scoring=[], backward=[]), True: dict(scoring=[], backward=[])}
    for k, (P, C) in enumerate(visits):
        for prefix in ((False, True) if k % 2 == 0 else (True, False)):
            t0 = time.perf_counter()
            lq, lp, m = score_tokens(pm, P, C, prefix=prefix)
            t1 = time.perf_counter()
            lq.sum(-1).sum().backward()
            t2 = time.perf_counter()
            pm.zero_grad(set_to_none=True)
            if k: times[prefix]["scoring"].append(t1 - t0); times[prefix]["backward"].append(t2 - t1)   # visit 0: warm-up
            print(f"visit {k} prefix={prefix}: scoring {t1 - t0:.2f} s, backward {t2 - t1:.2f} s", flush=True)
    n = a.visits * a.M
    per = {name: {ph: float(sum(v[ph]) / n) for ph in ("scoring", "backward")} for name, v in (("packed", times[False]), ("prefix", times[True]))}
    ratios = [b / o for b, o in zip(times[True]["scoring"], times[False]["scoring"])]
    res.update(visits_timed=a.visits, M=a.M, seconds=dict(packed=times[False], prefix=times[True]), per_sample_s=per,
               scoring_ratio_prefix_over_packed=per["prefix"]["scoring"] / per["packed"]["scoring"],
               scoring_ratio_per_visit=ratios, scoring_ratio_per_visit_median=float(np.median(ratios)),
               backward_ratio_prefix_over_packed=per["prefix"]["backward"] / per["packed"]["backward"],
               median_per_sample_s={name: {ph: float(np.median(v[ph]) / a.M) for ph in ("scoring", "backward")} for name, v in (("packed", times[False]), ("prefix", times[True]))},
               max_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    (out / "bench_scoring_prefix.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: res[k] for k in ("per_sample_s", "median_per_sample_s", "scoring_ratio_prefix_over_packed", "scoring_ratio_per_visit_median",
                                          "backward_ratio_prefix_over_packed", "agreement_tiny", "agreement_embedded")}, indent=1))


if __name__ == "__main__":
    main()
