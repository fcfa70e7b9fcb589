"""The calibration's hill on saved programs, bucketed by the one visible test and by the share of generated tests
passed (programs.generated_tests). Reads published/h200_calibration_v2/records.parquet (bundle size 1: one function
a program); grades each completion on its task's generated tests in the sandbox (~35 s on 2 cores).
Writes hill.csv (both fitnesses' buckets), programs.csv (each program's counts), config.json and README.md into OUT.
Usage: .venv/bin/python scripts/generated_fitness_hill.py [OUT [records.parquet]]   (OUT default: published/cpu_generated_fitness_hill)"""
import argparse, ast, sys
from pathlib import Path
import pandas as pd
from proposal_nb.programs.generated_tests import GeneratedFitness, load_tests
from proposal_nb.programs.sandbox import Executor
from proposal_nb.programs.tasks import load_embedded
from proposal_nb.analysis.calibration import hill_table
from proposal_nb.results import write_bench_config


def bundle_tasks(d: pd.DataFrame, gen: dict) -> dict:
    "Bundle -> its task: the entry point most of its programs define (only tasks with generated tests)."
    tasks = {t.entry_point: t for t in load_embedded() if t.id in gen}
    def task_of(prog):
        try: names = [n.name for n in ast.parse(prog).body if isinstance(n, ast.FunctionDef)]
        except SyntaxError: return None
        return next((tasks[n] for n in names if n in tasks), None)
    out = {}
    for b, g in d.groupby("bundle"):
        ts = [t for t in map(task_of, g.program) if t is not None]
        out[b] = max(set(ts), key=ts.count) if ts else None
    return out


def main(out="published/cpu_generated_fitness_hill", path="published/h200_calibration_v2/records.parquet"):
    d, gen = pd.read_parquet(path), load_tests()
    if (d.visible_total != 1).any(): sys.exit("this reading is for bundles of one function (visible_total 1)")
    bt = bundle_tasks(d, gen)
    d = d[d.bundle.map(lambda b: bt[b] is not None)].reset_index(drop=True)
    ts = [bt[b] for b in d.bundle]
    with Executor(workers=2, warm_imports=(), cpu_seconds=5) as ex:
        passed, total, _ = GeneratedFitness(ex, gen).counts(ts, list(d.completion), progress=True)
    one = pd.DataFrame(dict(task_id=[t.id for t in ts], visible_passed=d.fitness, visible_total=d.visible_total, hidden_pass=d.passed))
    gen_t = one.assign(visible_passed=passed, visible_total=total)
    cols = ["bucket", "programs", "tasks", "hidden_passes", "pass_rate"]
    hill = pd.concat([hill_table(g)[cols].assign(fitness=name) for name, g in [("one visible test", one), ("generated tests", gen_t)]])
    out = Path(out); out.mkdir(parents=True, exist_ok=True)
    hill[["fitness", *cols]].to_csv(out / "hill.csv", index=False, float_format="%.4f")
    one.assign(generated_passed=passed, generated_total=total).to_csv(out / "programs.csv", index=False)
    write_bench_config(["scripts/generated_fitness_hill.py", str(out), str(path)],
                       "the project's 2-core x86_64 CPU machine (sandbox workers 2), shared with other work",
                       kind="generated_fitness_hill", records=str(path), programs=len(one), tasks=int(one.task_id.nunique()))
    mid = hill[(hill.fitness == "generated tests") & ~hill.bucket.isin(["0", "all"])].programs.sum()
    table = "\n".join(f"| {r.fitness} | {r.bucket} | {r.programs} | {r.pass_rate:.3f} |" if r.programs else f"| {r.fitness} | {r.bucket} | 0 | – |"
                      for r in hill.itertuples())
    (out / "README.md").write_text(f"""# The calibration hill with generated tests as the visible fitness (issue 39 item 6)

The {len(one):,} saved programs of `published/h200_calibration_v2` (bundles of one function, {one.task_id.nunique()} easy tasks),
bucketed by the share of visible tests passed: the task's one public test, then its generated tests
(`data/tasks/generated_tests.jsonl`, `programs.generated_tests`, graded by the judge), against how often each bucket passes
the hidden tests. With one visible test only the buckets "0" and "all" can fill; with generated tests {mid} programs land
between them. `hill.csv` holds the table, `programs.csv` each program's counts.

| fitness | bucket | programs | hidden pass rate |
|---|---|---|---|
{table}
""")
    print(hill.to_string(index=False))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="The calibration hill on saved programs with generated tests as the visible fitness.")
    ap.add_argument("out", nargs="?", default="published/cpu_generated_fitness_hill", help="output folder")
    ap.add_argument("records", nargs="?", default="published/h200_calibration_v2/records.parquet", help="saved programs (bundle size 1)")
    a = ap.parse_args()
    main(a.out, a.records)
