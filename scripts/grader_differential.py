#!/usr/bin/env python
"""Differential check of the grader (issue 35): every reference solution is graded correct and every known-wrong
mutation wrong, on the embedded tasks and HumanEval, serially and 8-way with identical verdicts; and the grader before
the change (a checkout given by --before) and after it are compared on the same programs, model completions included,
potential by potential, with every difference listed and its reason.

Programs per task: the reference solution; three mutations that are wrong by construction (the entry point returns
None, returns a constant that no test expects, or is renamed away); and, with --draws, the embedded model's own
completions (drawn here on the CPU with --generate N, or read from a parquet with prompt_id and text columns).

Usage: .venv/bin/python scripts/grader_differential.py --out published/grader_differential [--before /tmp/old]
       [--generate 4 | --draws FILE] [--workers 8]"""
import argparse, datetime, json, os, platform, subprocess, sys, time
from pathlib import Path

import numpy as np
import pandas as pd

KINDS = ('no_error', 'strict', 'tiered', 'correctness')
SENTINEL = 'object()'  # a constant no test expects: a fresh object equals nothing


def mutations(task) -> dict:
    "Known-wrong programs for `task` (a function task with an entry point): name -> completion."
    ep = task.entry_point
    return {'returns_none': f'def {ep}(*args, **kwargs):\n    return None\n',
            'returns_object': f'def {ep}(*args, **kwargs):\n    return {SENTINEL}\n',
            'renamed': task.solution.replace(f'def {ep}(', f'def {ep}_renamed(')}


def programs(tasks, draws: pd.DataFrame | None) -> pd.DataFrame:
    "One row per (task, program): task_id, program kind, completion."
    rows = []
    for t in tasks:
        rows.append((t.id, 'reference', t.solution))
        for k, c in mutations(t).items(): rows.append((t.id, k, c))
    if draws is not None:
        ids = {t.id for t in tasks}
        for pid, n, text in zip(draws.prompt_id, draws.groupby('prompt_id').cumcount(), draws.text):
            if pid in ids: rows.append((pid, f'draw_{n}', text))
    return pd.DataFrame(rows, columns=['task_id', 'program', 'completion'])


GRADE = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from proposal_nb.programs.tasks import load_embedded, load_humaneval
from proposal_nb.programs.potentials import make_potential
from proposal_nb.programs.sandbox import Executor
todo = json.load(open(sys.argv[2]))
tasks = {t.id: t for t in load_embedded() + load_humaneval()}
out = {}
with Executor(workers=int(sys.argv[4]), cache=False) as ex:
    for k in json.loads(sys.argv[5]):
        pot = make_potential(k, ex)
        ts = [tasks[i] for i in todo['task_id']]
        vs = pot.grade(ts, todo['completion'])
        out[k] = dict(score=[pot.score(t, v) for t, v in zip(ts, vs)], reason=[v.reason for v in vs])
    out['isolation'] = ex.isolation
json.dump(out, open(sys.argv[3], 'w'))
'''


def grade(code_root: Path, table: pd.DataFrame, workers: int, tmp: Path, tag: str) -> dict:
    "Scores and reasons of every program under every potential, graded by the package found in `code_root`."
    src, dst = tmp / f'todo-{tag}.json', tmp / f'graded-{tag}.json'
    src.write_text(json.dumps(dict(task_id=list(table.task_id), completion=list(table.completion))))
    t0 = time.time()
    r = subprocess.run([sys.executable, '-B', '-c', GRADE, str(code_root), str(src), str(dst), str(workers), json.dumps(KINDS)],
                       capture_output=True, text=True, cwd=tmp)
    if r.returncode: raise RuntimeError(f'grading with {code_root} failed:\n{r.stderr[-3000:]}')
    out = json.loads(dst.read_text()); out['seconds'] = time.time() - t0
    return out


def generate(tasks, n: int, max_new_tokens: int, seed: int) -> pd.DataFrame:
    "n completions per task from the embedded model on this machine (texts kept)."
    from proposal_nb.lm.models import load_model
    from proposal_nb.lm.rollouts import keyed_generations
    model, tok = load_model()
    draws = keyed_generations(model, tok, tasks, n, seed, 'grader-differential', engine='hf', max_new_tokens=max_new_tokens,
                              batch_size=32, progress=True)
    return pd.DataFrame([dict(prompt_id=t.id, draw=k, text=g.text) for t, d in zip(tasks, draws) for k, g in enumerate(d)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--before", type=Path, help='a checkout (its folder holding proposal_nb/) of the grader before the change')
    ap.add_argument("--draws", type=Path, help='a parquet of completions (prompt_id, text)')
    ap.add_argument("--generate", type=int, default=0, help='draw this many completions per task here (embedded model)')
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--workers", type=int, default=8)
    a = ap.parse_args()
    a.out = a.out.resolve()  # the graders run with the work folder as cwd: paths must not be relative
    a.before, a.draws = (x.resolve() if x else None for x in (a.before, a.draws))
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    from proposal_nb.programs.tasks import load_embedded, load_humaneval
    tasks = load_embedded() + load_humaneval()
    a.out.mkdir(parents=True, exist_ok=True)
    draws = None
    if a.generate:
        draws = generate(tasks, a.generate, a.max_new_tokens, a.seed); draws.to_parquet(a.out / 'completions.parquet', index=False)
    elif a.draws: draws = pd.read_parquet(a.draws)
    table = programs(tasks, draws)
    tmp = a.out / '.work'; tmp.mkdir(exist_ok=True)
    after = {w: grade(root, table, w, tmp, f'after{w}') for w in (1, a.workers)}
    for k in KINDS:
        table[f'{k}'] = after[1][k]['score']; table[f'{k}_reason'] = after[1][k]['reason']
    flips = sum(after[1][k]['reason'][i] != after[a.workers][k]['reason'][i] for k in KINDS for i in range(len(table)))
    diffs = []
    if a.before:
        before = grade(a.before, table, a.workers, tmp, 'before')
        for k in KINDS:
            table[f'{k}_before'] = before[k]['score']; table[f'{k}_before_reason'] = before[k]['reason']
            for i in np.flatnonzero(np.array(before[k]['score']) != np.array(after[1][k]['score'])):
                r = table.iloc[i]
                diffs.append(dict(task_id=r.task_id, program=r.program, potential=k, before=before[k]['score'][i], after=r[k],
                                  before_reason=before[k]['reason'][i], after_reason=r[f'{k}_reason']))
    for f in tmp.iterdir(): f.unlink()
    tmp.rmdir()
    table.drop(columns='completion').to_csv(a.out / 'verdicts.csv', index=False)
    pd.DataFrame(diffs).to_csv(a.out / 'differences.csv', index=False)
    kind = table.program.where(~table.program.str.startswith('draw_'), 'model draw')
    summary = dict(tasks=len(tasks), programs=len(table), flips_1_vs_n=int(flips), workers=a.workers,
                   reference_all_correct={k: bool((table[k][kind == 'reference'] == 1).all()) for k in KINDS},
                   mutants_ever_correct=int(((table.correctness == 1) & kind.isin(list(mutations(tasks[0])))).sum()),
                   mutants_ever_strict=int(((table.strict == 1) & kind.isin(list(mutations(tasks[0])))).sum()),
                   renamed_no_error=int(table.no_error[kind == 'renamed'].sum()),
                   mean_after={str(g): {k: float(x[k].mean()) for k in KINDS} for g, x in table.groupby(kind)},
                   mean_before=({str(g): {k: float(x[f'{k}_before'].mean()) for k in KINDS} for g, x in table.groupby(kind)}
                                if a.before else None),
                   differences=len(diffs), seconds={str(w): round(after[w]['seconds'], 1) for w in after},
                   isolation=after[1]['isolation'])
    (a.out / 'summary.json').write_text(json.dumps(summary, indent=1))
    head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True, cwd=root).stdout.strip()
    (a.out / 'config.json').write_text(json.dumps(dict(
        kind='grader_differential', machine=f'{platform.node()}: {os.cpu_count()} CPUs, {platform.machine()}',
        date=datetime.date.today().isoformat(), commit=head, command=' '.join(['scripts/grader_differential.py'] + sys.argv[1:]),
        before=str(a.before) if a.before else None, draws=str(a.draws) if a.draws else None, generate=a.generate, seed=a.seed, max_new_tokens=a.max_new_tokens), indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != 'isolation'}, indent=1))
    bad = flips or not all(summary['reference_all_correct'].values()) or summary['mutants_ever_correct'] or summary['renamed_no_error']
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
