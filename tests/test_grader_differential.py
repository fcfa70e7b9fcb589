"""Differential check of the grader (issue 35 item 7), on the embedded tasks and HumanEval: every reference solution is
correct under every potential, every mutation that is wrong by construction (the entry point returns None, returns a
fresh object, or is renamed away) is not, and serial and 8-way grading give identical verdicts (the correctness potential,
every program; 8-way under every potential).
scripts/grader_differential.py runs the same check beside the grader before the change and on model completions.
The three tests share one worker (xdist group), so the module's grading runs once per CI run, not once per worker."""
import pytest

pytestmark = pytest.mark.xdist_group('grader_differential')

from proposal_nb.programs.potentials import make_potential
from proposal_nb.programs.sandbox import Executor
from proposal_nb.programs.tasks import load_embedded, load_humaneval

KINDS = ('no_error', 'strict', 'tiered', 'correctness')


def _mutants(t):
    ep = t.entry_point
    return {'returns_none': f'def {ep}(*args, **kwargs):\n    return None\n',
            'returns_object': f'def {ep}(*args, **kwargs):\n    return object()\n',
            'renamed': t.solution.replace(f'def {ep}(', f'def {ep}_renamed(')}


@pytest.fixture(scope='module')
def graded():
    tasks = load_embedded() + load_humaneval()
    rows = [(t, 'reference', t.solution) for t in tasks] + [(t, k, c) for t in tasks for k, c in _mutants(t).items()]
    out = {}
    for workers, kinds in ((1, ('correctness',)), (8, ('no_error', 'strict', 'correctness'))):
        with Executor(workers=workers, cache=False) as ex:
            out[workers] = {}
            for k in kinds:
                pot = make_potential(k, ex)
                vs = pot.grade([r[0] for r in rows], [r[2] for r in rows])
                out[workers][k] = ([pot.score(r[0], v) for r, v in zip(rows, vs)], [v.reason for v in vs])
    return rows, out


def test_every_reference_solution_is_correct(graded):
    rows, out = graded
    for k, (scores, reasons) in out[8].items():
        bad = [(r[0].id, reasons[i]) for i, r in enumerate(rows) if r[1] == 'reference' and scores[i] != 1]
        assert not bad, (k, bad[:10])


def test_every_known_wrong_mutation_is_wrong(graded):
    rows, out = graded
    scores, reasons = out[8]['correctness']
    bad = [(r[0].id, r[1], reasons[i]) for i, r in enumerate(rows) if r[1] != 'reference' and scores[i] != 0]
    assert not bad, bad[:10]
    no_error = out[8]['no_error'][0]
    assert not [r[0].id for i, r in enumerate(rows) if r[1] == 'renamed' and no_error[i] != 0]  # the entry point is missing


def test_serial_and_8_way_verdicts_are_identical(graded):
    rows, out = graded
    flips = [(rows[i][0].id, rows[i][1], k) for k in out[1] for i in range(len(rows)) if out[1][k][1][i] != out[8][k][1][i]]
    assert not flips, flips[:10]
