"""Issue 22's follow-up probe: IGUANA with the relative clip at c = 30 (fitted-prior `eb` and fixed `shrinkage` normalisers)
on the 64-prompt enumerable task of nbs/18_many_prompts, on the grid of its published full run (lr 1e-3, 3e-3, 1e-2;
seeds 0-5; budgets 32k and 128k samples; 8 prompts x 8 draws per step). Compare with that notebook's DPG-style arm.

    .venv/bin/python scripts/bench_many_prompts_clip.py OUT_DIR [--clip 30] [--seeds 0-5] [--workers 1]"""
import argparse, json, os, platform, subprocess, time
from datetime import datetime, timezone
from pathlib import Path
import torch
from proposal_nb.estimators.many_prompts import make_task, Arm, RunConfig, benchmark, kl_table, best_lr, ratio_table
from proposal_nb.estimators import normalizer as nz, iguana as ig


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--clip", type=float, default=30.0)
    ap.add_argument("--seeds", default="0-5"); ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    lo, hi = map(int, a.seeds.split("-"))
    torch.set_num_threads(1)
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    task, c = make_task(), ig.IguanaConfig(clip=a.clip)
    arms = [Arm(f"iguana c{a.clip:g} · eb", "iguana", iguana=c, normalizer=nz.NormalizerConfig(kind="eb", fold_floor=1.0)),
            Arm(f"iguana c{a.clip:g} · shrinkage", "iguana", iguana=c, normalizer=nz.NormalizerConfig(kind="shrinkage", fold_floor=None))]
    t0 = time.time()
    E, _ = benchmark(task, arms, (1e-3, 3e-3, 1e-2), tuple(range(lo, hi + 1)), RunConfig(budgets=(32_000, 128_000)),
                     workers=a.workers, progress=False)
    t = kl_table(E)
    t.to_csv(out / "kl_table.csv", index=False); best_lr(t).to_csv(out / "best_lr.csv", index=False)
    ratio_table(E).reset_index().to_csv(out / "zhat_over_z.csv", index=False)
    cfg = dict(kind="benchmark", description=__doc__.split("\n\n")[0], machine=f"{platform.machine()} CPU, {os.cpu_count()} cores (shared)",
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
               command=f"python scripts/bench_many_prompts_clip.py {a.out} --clip {a.clip:g} --seeds {a.seeds} --workers {a.workers}",
               user_command=f".venv/bin/python scripts/bench_many_prompts_clip.py results/cpu_many_prompts_c30 --clip {a.clip:g}",
               seconds=round(time.time() - t0), runs=len(E.groupby(["arm", "lr", "seed"])))
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    print(best_lr(t).round(3).to_string()); print(ratio_table(E).round(2).to_string())


if __name__ == "__main__":
    main()
