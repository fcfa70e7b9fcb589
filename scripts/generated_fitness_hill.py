"""The calibration's hill on saved programs, bucketed by the one visible test and by the share of generated tests
passed (programs.generated_tests). Reads published/h200_calibration_v2/records.parquet (bundle size 1: one function
a program); grades each completion on its task's generated tests in the sandbox (~35 s on 2 cores).
Usage: .venv/bin/python scripts/generated_fitness_hill.py [records.parquet]"""
import ast, sys
import pandas as pd
from proposal_nb.programs.generated_tests import GeneratedFitness, load_tests
from proposal_nb.programs.sandbox import Executor
from proposal_nb.programs.tasks import load_embedded
from proposal_nb.analysis.calibration import hill_table


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


def main(path="published/h200_calibration_v2/records.parquet"):
    d, gen = pd.read_parquet(path), load_tests()
    if (d.visible_total != 1).any(): sys.exit("this reading is for bundles of one function (visible_total 1)")
    bt = bundle_tasks(d, gen)
    d = d[d.bundle.map(lambda b: bt[b] is not None)].reset_index(drop=True)
    ts = [bt[b] for b in d.bundle]
    with Executor(workers=2, warm_imports=(), cpu_seconds=5) as ex:
        passed, total, _ = GeneratedFitness(ex, gen).counts(ts, list(d.completion), progress=True)
    one = pd.DataFrame(dict(task_id=[t.id for t in ts], visible_passed=d.fitness, visible_total=d.visible_total, hidden_pass=d.passed))
    for name, g in [("one visible test", one), ("generated tests", one.assign(visible_passed=passed, visible_total=total))]:
        print(name); print(hill_table(g)[["bucket", "programs", "tasks", "hidden_passes", "pass_rate"]].to_string(index=False))


if __name__ == "__main__": main(*sys.argv[1:])
