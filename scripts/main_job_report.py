"""Summarise main-job results folders side by side: step seconds, per-sample training phases, the evaluation's plan and its
paired validity intervals. Writes one JSON (and copies each folder's small source files beside it, renamed).

    python scripts/main_job_report.py OUT_DIR --run before=results_old --run after=results
"""
import argparse, json, re, shutil
from pathlib import Path

ARMS = ("iguana", "msc")


def _json(p: Path): return json.loads(p.read_text()) if p.exists() else None


def eval_arm_seconds(notebook: Path) -> dict:
    "Each arm's draw, score and grade seconds as the executed evaluation notebook printed them ('NAME: validity ... (N s)')."
    if not notebook.exists(): return {}
    text = "".join("".join(o.get("text", "")) for c in json.loads(notebook.read_text())["cells"] for o in c.get("outputs", []))
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+): validity [0-9.]+, correct [0-9.]+ \((\d+) s\)$", text, re.M)}


def weight_diagnostics(draws) -> dict:
    """Per evaluation arm, from its held-out draws: E_q[p/q] per prompt (its median and mean over prompts: 1 when q covers p
    and the draws are many), and wacc (the self-normalised estimate of P(correct) under p * r) from each run's draws alone
    and from all runs of a prompt pooled (a prompt without a valid draw counts 0). The two differ even where q = p (a run
    without a valid draw counts 0, and a mean of ratios is not a ratio of sums); where q is far from p they also differ
    because self-normalised estimates lean towards q's own preference at few draws. The base's macro skyline beside: it is
    the base's pooled wacc by construction, so the pooled wacc is the like-for-like comparison with it."""
    import numpy as np
    import pandas as pd
    def snis(g):
        lw = (g.logp - g.logq + g.logr).to_numpy()
        if np.isneginf(lw).all(): return 0.0
        w = np.exp(lw - lw.max()); return float((w * g.correct.to_numpy()).sum() / w.sum())
    out = {}
    for ck, g in draws.groupby("checkpoint"):
        pq = g.assign(r=np.exp(g.logp - g.logq)).groupby("prompt_id").r.mean()
        per_run = g.groupby(["prompt_id", "run"]).apply(snis).groupby(level=0).mean()
        out[ck] = dict(draws_per_prompt=int(g.groupby("prompt_id").size().iloc[0]), runs=int(g.run.nunique()),
                       mean_p_over_q_median=float(pq.median()), mean_p_over_q_mean=float(pq.mean()),
                       wacc_per_run=float(per_run.mean()), wacc_pooled=float(g.groupby("prompt_id").apply(snis).mean()))
    base = draws[draws.checkpoint == "base"].groupby("prompt_id")[["valid", "correct"]].sum()
    if len(base): out["base_macro_skyline"] = float((base.correct / base.valid.where(base.valid > 0)).fillna(0).mean())
    return out


def summarise(results: Path) -> dict:
    "The numbers of one main-job results folder that the speed and precision targets read."
    import pandas as pd
    ev = _json(results / "eval" / "config.json") or {}
    paired = pd.read_csv(results / "eval" / "paired.csv")
    out = dict(step_seconds=_json(results / "timing.json"), plan=_json(results / "eval" / "plan.json"),
               eval=dict(R=ev.get("R"), M=ev.get("M"), dtype=ev.get("dtype"), scoring=ev.get("scoring"),
                         prior_runs=(ev.get("parameters") or {}).get("prior_runs", 0)), arms={})
    out["job_seconds"] = round(sum((out["step_seconds"] or {}).values()), 1)
    out["eval_arm_seconds"] = eval_arm_seconds(results / "eval" / "13_evaluate.ipynb")
    if (results / "eval" / "draws.parquet").exists(): out["weights"] = weight_diagnostics(pd.read_parquet(results / "eval" / "draws.parquet"))
    for arm in ARMS:
        cfg, tm = _json(results / arm / "config.json") or {}, _json(results / arm / "timing.json") or {}
        loop = (cfg.get("training") or {}).get("loop", {})
        row = paired[(paired.a == "base") & (paired.b == arm) & (paired.metric == "validity")]
        v = row.iloc[0] if len(row) else None
        out["arms"][arm] = dict(steps=loop.get("steps"), M=loop.get("M"), prompts_per_step=loop.get("prompts_per_step"),
                                seconds_per_sample=tm,
                                validity_diff=None if v is None else dict(diff=float(v["diff"]), lo=float(v["lo"]), hi=float(v["hi"]),
                                                                          halfwidth=float(v["hi"] - v["lo"]) / 2))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=Path, help="folder that receives main_job.json and the runs' source files")
    ap.add_argument("--run", action="append", required=True, metavar="LABEL=RESULTS", help="a main job's results folder, labelled")
    a = ap.parse_args()
    a.out_dir.mkdir(parents=True, exist_ok=True)
    report = {}
    for spec in a.run:
        label, _, folder = spec.partition("=")
        if not folder: raise SystemExit(f"--run wants LABEL=RESULTS, got {spec!r}")
        res = Path(folder)
        report[label] = summarise(res)
        for src, name in [("timing.json", "timing.json"), ("eval/plan.json", "eval_plan.json"), ("eval/paired.csv", "eval_paired.csv"),
                          ("eval/config.json", "eval_config.json")] + [(f"{arm}/{f}", f"{arm}_{f}") for arm in ARMS for f in ("timing.json", "config.json")]:
            if (res / src).exists(): shutil.copyfile(res / src, a.out_dir / f"{label}_{name}")
    (a.out_dir / "main_job.json").write_text(json.dumps(report, indent=1) + "\n")
    for label, r in report.items():
        arms = ", ".join(f"{k} {v['steps']} steps, validity {v['validity_diff']['diff']:+.3f} ± {v['validity_diff']['halfwidth']:.3f}"
                         for k, v in r["arms"].items() if v["validity_diff"])
        print(f"{label}: {r['job_seconds']:.0f} s of steps; {arms}")


if __name__ == "__main__": main()
