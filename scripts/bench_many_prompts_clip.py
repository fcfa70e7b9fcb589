"""Issue 22's clip probes on the 64-prompt enumerable task of nbs/18_many_prompts: IGUANA arms with a chosen relative clip c
(and optionally the clip floor of 12_iguana: level max(c·Ẑ, floor)) against that notebook's DPG-style per-context arm, on a
learning-rate grid, seeds and budgets (8 prompts x 8 draws per step). Writes the KL tables (also per seed), the median Ẑ/Z per Z bin, the
share of valid draws the clip cut per Z bin, config.json (machine, date, commit, command) and, with one IGUANA arm and
the DPG arm, verdict.json: issue 22's pass criteria (see `estimators.many_prompts.confirmation_verdict`).

    .venv/bin/python scripts/bench_many_prompts_clip.py OUT_DIR [--clip 10|none] [--clip-floor 1] [--arms eb,shrinkage] [--seeds 0-5]
        [--lrs 1e-3,3e-3,1e-2] [--budgets 32000,128000] [--workers 1]

Arms: eb (NormalizerConfig(kind="eb", fold_floor=1.0)), shrinkage (kind="shrinkage", fold_floor=None), dpg, and the DPG arm
with one of IGUANA's elements (the ablation): dpg+clip (IGUANA's clip at --clip/--clip-floor), dpg+past (past-only Ẑ),
dpg+b1 (baseline 1 per draw)."""
import argparse, json, os, platform, subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path
import torch
from proposal_nb.estimators.many_prompts import make_task, Arm, DPGConfig, RunConfig, benchmark, kl_table, best_lr, ratio_table, clip_table, confirmation_verdict
from proposal_nb.estimators import normalizer as nz, iguana as ig

NORMALISERS = dict(eb=nz.NormalizerConfig(kind="eb", fold_floor=1.0), shrinkage=nz.NormalizerConfig(kind="shrinkage", fold_floor=None))


def arms(names:list, clip:float, floor:float|None)->list:
    "The named arms, IGUANA ones at clip c with the given floor."
    c = ig.IguanaConfig(clip=clip, clip_floor=floor)
    tag = "no clip" if clip is None else f"c{clip:g}" + ("" if floor is None else f" floor {floor:g}")
    out = []
    for n in names:
        if n == "dpg": out.append(Arm("dpg · per-context mean", "dpg"))
        elif n == "dpg+clip": out.append(Arm(f"dpg + clip {tag}", "dpg", dpg=DPGConfig(clip=clip, clip_floor=floor)))
        elif n == "dpg+past": out.append(Arm("dpg + past-only Ẑ", "dpg", dpg=DPGConfig(past_only=True)))
        elif n == "dpg+b1": out.append(Arm("dpg + baseline 1", "dpg", dpg=DPGConfig(baseline="one")))
        elif n in NORMALISERS: out.append(Arm(f"iguana {tag} · {n}", "iguana", iguana=c, normalizer=NORMALISERS[n]))
        else: raise SystemExit(f"unknown arm {n!r} (use eb, shrinkage, dpg, dpg+clip, dpg+past, dpg+b1)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--clip", type=lambda v: None if v.lower() == "none" else float(v), default=10.0)
    ap.add_argument("--clip-floor", type=float, default=None); ap.add_argument("--arms", default="eb,shrinkage")
    ap.add_argument("--seeds", default="0-5"); ap.add_argument("--lrs", default="1e-3,3e-3,1e-2")
    ap.add_argument("--budgets", default="32000,128000"); ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    lo, hi = map(int, a.seeds.split("-"))
    lrs, budgets = tuple(float(x) for x in a.lrs.split(",")), tuple(int(x) for x in a.budgets.split(","))
    torch.set_num_threads(1)
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    windows = tuple(sorted({w for w in (0, 1024, 8000) if w <= max(budgets)} | {b + 1 for b in budgets}))
    git = lambda *args: subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD")                                  # the code this run starts from
    dirty = git("status", "--porcelain", "--", "proposal_nb/estimators", "proposal_nb/theory", "scripts/bench_many_prompts_clip.py")
    t0 = time.time()
    E, V = benchmark(make_task(), arms(a.arms.split(","), a.clip, a.clip_floor), lrs, tuple(range(lo, hi + 1)),
                     RunConfig(budgets=budgets), workers=a.workers, progress=False)
    t = kl_table(E)
    t.to_csv(out / "kl_table.csv", index=False); best_lr(t).to_csv(out / "best_lr.csv", index=False)
    hard = E.assign(kl_hard=E.kl.where(E.Z <= 0.02))                              # per seed, for paired comparisons
    hard.groupby(["arm", "lr", "samples", "seed"])[["kl", "kl_hard", "acceptance"]].mean().reset_index().to_csv(out / "per_seed.csv", index=False)
    ratio_table(E).reset_index().to_csv(out / "zhat_over_z.csv", index=False)
    clip_table(V, windows).reset_index().to_csv(out / "clip_share.csv", index=False)
    cfg = dict(kind="benchmark", description=__doc__.split("\n\n")[0],
               machine=f"{platform.machine()} CPU, {os.cpu_count()} cores shared with other jobs, torch {torch.__version__}",
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               commit=commit + (" with uncommitted changes: " + dirty.replace("\n", "; ") if dirty else ""),
               command="python scripts/bench_many_prompts_clip.py " + " ".join(sys.argv[1:]),
               user_command=".venv/bin/python scripts/bench_many_prompts_clip.py " + " ".join(sys.argv[1:]),
               seconds=round(time.time() - t0), runs=len(E.groupby(["arm", "lr", "seed"])))
    v = confirmation_verdict(t, ratio_table(E), budgets)
    if v: (out / "verdict.json").write_text(json.dumps(v, indent=2) + "\n"); cfg["verdict"] = "PASSED" if v["passed"] else "FAILED"
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    print(best_lr(t).round(3).to_string()); print(ratio_table(E).round(2).to_string())
    print(clip_table(V, windows).round(3).to_string())
    if v: print(json.dumps(v, indent=2))


if __name__ == "__main__":
    main()
