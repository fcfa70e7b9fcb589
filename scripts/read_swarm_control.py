"""Read the pre-registered swarm control (issue 39 item 6) from its seeds' run folders.

Checks every run against the plan (published/h200_swarm_control_plan/preregistration.json): the task ids, the seeds, each
parameter of the run, and the number of programs drawn. Then applies the plan's rule
(analysis.calibration.control_verdict) and writes OUT/summary.json, OUT/per_seed.csv (each seed's primary table),
OUT/hill.csv, OUT/rescue.csv and OUT/by_round.csv (each seed's), OUT/config.json and OUT/README.md. A run that departs from the plan is
refused by name: its numbers would not be the pre-registered control's.
Usage: .venv/bin/python scripts/read_swarm_control.py RUN [RUN ...] [--plan DIR] [--out DIR]"""
import argparse, json, subprocess, sys
from datetime import datetime, timezone
from pathlib import Path
import pandas as pd
from proposal_nb.analysis.calibration import BUCKETS, SHARING_ARMS, control_verdict


def check_run(run: Path, plan: dict) -> dict:
    "The run's config, after checking that it is one of the plan's seeds with the plan's tasks and parameters (how it ran, e.g. batch_size, may differ)."
    cfg = json.loads((run / "config.json").read_text())
    bad = [f"{k}={cfg.get(k)!r} (plan: {v!r})" for k, v in plan["run"].items() if cfg.get(k) != v]
    if cfg.get("task_ids") != plan["task_ids"]: bad.append(f"task_ids: {len(cfg.get('task_ids') or [])} ids, not the plan's {len(plan['task_ids'])}")
    if cfg.get("seed") not in plan["seeds"]: bad.append(f"seed={cfg.get('seed')!r} (plan: {plan['seeds']})")
    records = pd.read_parquet(run / "records.parquet")
    r = plan["run"]
    want = r["n_bundles"] * len(r["arms"]) * r["particles"] * r["rounds"]
    if len(records) != want: bad.append(f"{len(records)} programs, not the plan's {want}")
    if bad: raise ValueError(f"{run}: departs from the plan: " + "; ".join(bad))
    return cfg


def by_round(run: Path, seed: int) -> pd.DataFrame:
    "Each arm's programs, mean share of the fitness passed, share that do not parse and hidden pass rate by round: does refining climb?"
    r = pd.read_parquet(run / "records.parquet", columns=["arm", "round", "fitness", "visible_total", "passed", "reason"])
    r = r.assign(fitness_share=r.fitness / r.visible_total.clip(lower=1), syntax_error=(r.reason == "syntax").astype(float))
    return (r.groupby(["arm", "round"]).agg(programs=("passed", "size"), fitness_share=("fitness_share", "mean"),
                                            syntax_error=("syntax_error", "mean"), pass_rate=("passed", "mean"))
            .reset_index().assign(seed=seed))


def read(runs: list, plan_dir: Path) -> tuple:
    "(verdict, per-seed primary, hill and rescue tables, configs) of the plan's seeds."
    plan = json.loads((plan_dir / "preregistration.json").read_text())
    cfgs = {}
    for run in runs:
        cfg = check_run(run, plan)
        if cfg["seed"] in cfgs: raise ValueError(f"{run}: seed {cfg['seed']} is also {cfgs[cfg['seed']][0]}")
        cfgs[cfg["seed"]] = (run, cfg)
    missing = sorted(set(plan["seeds"]) - set(cfgs))
    if missing: raise ValueError(f"the plan's seeds {missing} have no run folder among {[str(r) for r in runs]}")
    table = lambda name: pd.concat([pd.read_csv(r / f"{name}.csv").assign(seed=s) for s, (r, _) in sorted(cfgs.items())], ignore_index=True)
    primary = table("primary")
    verdict = control_verdict({s: primary[primary.seed == s] for s in sorted(cfgs)}, sharing=SHARING_ARMS)
    rounds = pd.concat([by_round(r, s) for s, (r, _) in sorted(cfgs.items())], ignore_index=True)
    return plan, verdict, primary, table("hill"), table("rescue"), rounds, cfgs


def readme(plan, verdict, primary, hill, rounds, cfgs) -> str:
    "The reading's README, every number from the tables beside it."
    run_of = {s: str(r) for s, (r, _) in cfgs.items()}
    machine = sorted({f"{c['device']} ({c.get('dtype', 'the device default dtype')})" for _, c in cfgs.values()})
    where = ("The plan was written for an H200; the device was not lent in the sessions that followed, so the seeds ran on "
             "the project's 2-core CPU machine, in bf16 where the config says bfloat16 (`dtype=auto`: the dtype the H200 loads)."
             if any(c["device"] == "cpu" for _, c in cfgs.values()) else "As planned, on a GPU.")
    gain = lambda g, lo, hi, v: "—" if v == "reference" else f"{g:+.3f} [{lo:+.3f}, {hi:+.3f}]".replace("-", "−")
    rows = "\n".join(f"| {s} | {a} | {p:.3f} [{lo:.3f}, {hi:.3f}] | {gain(g, glo, ghi, v)} | {v} |"
                     for s, a, p, lo, hi, g, glo, ghi, v in primary[["seed", "arm", "pass_rate", "pass_lo", "pass_hi", "gain", "gain_lo", "gain_hi", "verdict"]]
                     .itertuples(index=False))
    mid = hill[~hill.bucket.astype(str).isin([BUCKETS[0], BUCKETS[-1]])]
    fill = "; ".join(f"seed {s}: {int(g.programs.sum())} of {int(hill[hill.seed == s].programs.sum())} programs" for s, g in mid.groupby("seed"))
    return f"""# The swarm control on tasks the base never passes: the reading (issue 39 item 6)

The control pre-registered in `{plan['folder']}` (written {plan['written']} at {plan['commit']}), read from its seeds'
runs: {', '.join(f'seed {s} `{n}`' for s, n in sorted(run_of.items()))}.
`scripts/read_swarm_control.py` checked each run against the plan (tasks, seed, every parameter of the run, the number of
programs) and applied its rule.

**Verdict: {verdict['verdict']}.** Sharing arms that clear at every seed: {', '.join(verdict['clears_at_every_seed']) or 'none'}.
Per seed: {'; '.join(f"seed {s}: " + ', '.join(f'{a} {v}' for a, v in c.items()) for s, c in verdict['per_seed'].items())}.

**Rule** (the plan's): {plan['rule']}. Read as: one sharing arm clearing at every seed (a split between ring and star is
inconclusive; `nbs/34_calibration`, `control_verdict`).

| seed | arm | hidden pass rate [95% CI] | gain over resample [95% CI] | verdict |
|---|---|---|---|---|
{rows}

Each seed: {plan['run']['n_bundles']} bundles of one function, {len(plan['run']['arms'])} arms, {plan['run']['particles']} particles x
{plan['run']['rounds']} rounds. Intervals are bundle-bootstrap percentile intervals ({plan['run']['n_boot']} resamples), as the notebook's
primary metric. Programs in the hill's middle buckets (some but not all of the fitness passed): {fill or 'no hill table'}
(`hill.csv`).

Does refining climb? Each arm's mean share of the fitness passed, round by round from round 0 (`by_round.csv`):
{'; '.join(f"seed {s} {a}: " + ' / '.join(f'{v:.3f}' for v in g.sort_values('round').fitness_share) for (s, a), g in rounds.groupby(['seed', 'arm']))}.
Share of programs that do not parse, the same way: {'; '.join(f"seed {s} {a}: " + ' / '.join(f'{v:.2f}' for v in g.sort_values('round').syntax_error) for (s, a), g in rounds.groupby(['seed', 'arm']))}.

**Where it ran:** {', '.join(machine)}. {where} Batch size and sandbox workers are how a run executes, not what it
draws from; the runs' configs hold them.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="the seeds' run folders (nbs/runs/30_calibration outputs)")
    ap.add_argument("--plan", type=Path, default=Path("published/h200_swarm_control_plan"), help="the pre-registration's folder")
    ap.add_argument("--out", type=Path, default=Path("published/swarm_control"), help="where the reading goes")
    a = ap.parse_args(argv)
    try: plan, verdict, primary, hill, rescue, rounds, cfgs = read(a.runs, a.plan)
    except ValueError as e: sys.exit(f"read_swarm_control: {e}")
    plan["folder"] = str(a.plan)
    a.out.mkdir(parents=True, exist_ok=True)
    primary.to_csv(a.out / "per_seed.csv", index=False)
    hill.to_csv(a.out / "hill.csv", index=False)
    rescue.to_csv(a.out / "rescue.csv", index=False)
    rounds.to_csv(a.out / "by_round.csv", index=False)
    (a.out / "summary.json").write_text(json.dumps(verdict | dict(rule=plan["rule"], plan=str(a.plan), runs={str(s): str(r) for s, (r, _) in cfgs.items()}), indent=1))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cmd = " ".join([".venv/bin/python scripts/read_swarm_control.py", *map(str, a.runs), "--plan", str(a.plan), "--out", str(a.out)])
    (a.out / "config.json").write_text(json.dumps(dict(kind="swarm_control_reading", plan=str(a.plan), runs=[str(r) for r in a.runs],
        published=dict(machine="the project's 2-core CPU machine (reads tables only)", date=datetime.now(timezone.utc).date().isoformat(),
                       commit=commit, command=cmd), user_command=cmd), indent=1))
    (a.out / "README.md").write_text(readme(plan, verdict, primary, hill, rounds, cfgs))
    print(json.dumps(verdict, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
