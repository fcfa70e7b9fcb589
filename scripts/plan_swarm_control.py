"""Pre-register the swarm control on tasks the base model never passes, with generated tests as the fitness (issue 39
item 6, the seed's design): pick the tasks, fix the run's parameters and its verdict rule, and write them into a plan
folder before any draw of the run exists.

Tasks: the embedded tasks with 0 correct of the base model's 20 draws in published/h200_z_embedded (z_table.csv, potential
no_error) that a bundle can hold (programs.grading.eligible_tasks) and that have generated tests
(data/tasks/generated_tests.jsonl). Writes OUT/preregistration.json and OUT/README.md.
Usage: .venv/bin/python scripts/plan_swarm_control.py [OUT]   (default: published/h200_swarm_control_plan)"""
import json, shlex, subprocess, sys
from datetime import datetime, timezone
from pathlib import Path
import pandas as pd
from proposal_nb.programs.generated_tests import load_tests
from proposal_nb.programs.grading import eligible_tasks
from proposal_nb.programs.tasks import load_embedded

SEEDS = (0, 1)
RUN = dict(bundle_size=1, fitness="generated", particles=4, rounds=3, reruns=0, bar=0.0, max_new_tokens=256, judge_items=0,
           n_boot=2000, arms=["resample", "solo", "ring", "star"])


def never_passed(z_table: Path) -> pd.DataFrame:
    "The base model's tasks with no correct draw among its draws (potential no_error: correct = every hidden test passes)."
    z = pd.read_csv(z_table)
    z = z[z.potential == "no_error"]
    return z[z.n_correct == 0]


def main(out="published/h200_swarm_control_plan"):
    out = Path(out); out.mkdir(parents=True, exist_ok=True)
    zero = never_passed(Path("published/h200_z_embedded/z_table.csv"))
    gen, ok = load_tests(), {t.id for t in eligible_tasks(load_embedded())}
    ids = [i for i in zero.prompt_id if i in ok and i in gen and gen[i].cases]
    left = sorted(set(zero.prompt_id) - set(ids))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    params = lambda s: RUN | dict(n_bundles=len(ids), task_ids=ids, seed=s)
    cmd = lambda s: ("python3 scripts/exec_notebook.py nbs/runs/30_calibration.ipynb out_dir=RUNS/swarm_control_s%d model=MODEL " % s
                     + " ".join(shlex.quote(f"{k}={v!r}" if isinstance(v, list) else f"{k}={v}") for k, v in params(s).items() if k != "task_ids")
                     + " task_ids=\"$(python3 -c 'import json; print(json.load(open(\"published/h200_swarm_control_plan/preregistration.json\"))[\"task_ids\"])')\""
                     + " batch_size=192 sandbox_workers=12")
    plan = dict(written=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=commit,
                data=dict(folder="h200_z_embedded", file="z_table.csv", potential="no_error", draws_per_task=int(zero.n.max()) if len(zero) else 0,
                          never_passed=len(zero), kept=len(ids), left_out=left,
                          what="tasks with 0 correct of the base model's draws, a bundle's shape (function, public and >= 2 hidden tests) and generated tests"),
                task_ids=ids, seeds=list(SEEDS), run=RUN | dict(n_bundles=len(ids)),
                rule=("per seed, an arm clears when the 95% CI lower bound of its paired per-sample pass-rate gain over resample exceeds 0.0 "
                      "(the notebook's primary metric); the control is reproduced when ring or star clears at both seeds, not reproduced "
                      "when neither clears at either seed, and inconclusive otherwise"),
                reads=["primary.csv per seed: pass rate and paired gain over resample of solo, ring, star",
                       "hill.csv per seed: programs and hidden pass rate per fitness bucket (the middle buckets fill with generated tests)",
                       "rescue.csv per seed: each arm's rescue rate (no re-run band: reruns=0, so that a seed fits one device call)"],
                commands={f"seed {s}": cmd(s) for s in SEEDS})
    (out / "preregistration.json").write_text(json.dumps(plan, indent=1))
    (out / "README.md").write_text(f"""# Pre-registration: the swarm control on tasks the base never passes (issue 39 item 6)

Written {plan['written']} at {commit}, before any draw of these runs exists (`scripts/plan_swarm_control.py`).

**Tasks.** {len(zero)} embedded tasks have 0 correct of the base model's {plan['data']['draws_per_task']} draws in
`published/h200_z_embedded` (potential no_error); {len(ids)} of them fit a bundle and have generated tests
(`data/tasks/generated_tests.jsonl`), and those are the bundles, one function each. Left out: {', '.join(left) or 'none'}.

**Run** (nbs/runs/30_calibration, once per seed {', '.join(map(str, SEEDS))}): {', '.join(f'{k}={v}' for k, v in RUN.items())},
n_bundles={len(ids)}, task_ids as in `preregistration.json`. With `fitness="generated"` the arms climb the shown assert
plus each function's generated tests (a refinement is told how many it passed, never which); the hidden tests decide a pass.

**Size.** {len(ids)} bundles x 4 arms x 4 particles x 3 rounds = {len(ids) * 48} programs a seed, each graded on its shown,
generated and hidden tests. `h200_calibration_v2` drew 2,280 programs (38 bundles, with one re-run of resample) in 310 s on
a shared H200; a seed here must fit one device call of 10 minutes (the notebook cannot resume), so it runs no re-run of
resample (`reruns=0`) and no judge (`judge_items=0`).

**What the fitness cannot see.** Generated inputs are drawn from the types and alphabets of a task's public examples,
so a full fitness does not imply a pass: a `count_vowels` that counts only lower-case vowels passes its shown assert and
every generated test (drawn from the lower-case letters of 'hello') and fails the hidden `count_vowels('AeIoU xyz') == 5`
(a test in `nbs/22a_grading`; the embedded model wrote such a program in a CPU check of this notebook). The rule reads
hidden passes only.

**Rule.** {plan['rule']}.

**Why.** On these tasks a fresh draw almost never passes, so resampling rescues nearly nothing; with one visible test the
fitness is 0 on nearly every program and a swarm has nothing to climb. The seed's claim is that a graded fitness lets
sharing (ring, star) climb where resampling cannot. The published control (`h200_calibration_v2`) ran on easy tasks with
the one shown assert as the fitness: no arm beat resampling.

`preregistration.json` holds the task ids, the run's parameters and the commands.
""")
    print(json.dumps(dict(never_passed=len(zero), kept=len(ids), left_out=left), indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:2])
