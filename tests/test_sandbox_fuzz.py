"""Ground-truth fuzz of the sandbox harness (issue 18), a small seeded sample: programs from a grammar of endings
(forks, builtin rebinding, floods, signals, atexit, exits, raises) graded serially and 8-way concurrently, each
verdict checked against the grammar's oracle. The benchmark run (scripts/bench_grader_fuzz.py, >= 1,000 programs)
publishes the large-sample numbers; the grammar and the oracle are proposal_nb.programs.hostile (nbs/21c_hostile).

Why the earlier suites missed the two wrong "valid"s: each adversarial case was one hand-written program, and none
combined a fork with a parent that fails after its child finished, or a rebinding with a later raise. On the
harness before the fix, this sample's seed found both."""

import pytest

pytest.importorskip('hypothesis', reason='the fuzz draws its programs with hypothesis (the dev extra)')

from proposal_nb.programs import hostile as fuzz  # noqa: E402

SEED, N = 18, 120


@pytest.fixture(scope='module')
def result():
    items = fuzz.sample(N, SEED)
    res = fuzz.check(items, workers=(2, 8))
    res.update(seed=SEED, hypothesis=__import__('hypothesis').__version__)
    fuzz.show(res)
    return items, res


def test_the_sample_reaches_every_part_of_the_grammar(result):
    "The sample is only evidence if it holds what the grammar can do: forks of each kind, rebinding, floods, and"
    " true verdicts on both sides of the no-error potential."
    items, res = result
    assert len(items) == N
    cov = res['coverage']
    assert set(cov['fork']) == set(fuzz.FORKS), cov['fork']
    assert set(cov['rebind_route']) == set(fuzz.ROUTES), cov['rebind_route']
    hacks = {'always_equal', 'int_subclass', 'caller_frame', 'patched_abs'}
    assert hacks <= set(cov['func']), cov['func']  # reward hacks the tests call (issue 35), each at least once
    assert sum(1 for s in items if s.func in hacks and fuzz.oracle(s) == 'assertion') >= 5
    assert {'ok', 'assertion', 'early-exit', 'killed', 'output-limit'} <= set(res['oracle']), res['oracle']
    assert any(r.startswith('exception:') for r in res['oracle']), res['oracle']
    invalid_with_fork_or_rebind = sum(1 for s in items if (s.fork or s.rebind) and fuzz.oracle(s) not in fuzz.VALID)
    assert invalid_with_fork_or_rebind >= 30, invalid_with_fork_or_rebind


@pytest.mark.parametrize('workers', [2, 8])
def test_no_wrong_verdicts(result, workers):
    _, res = result
    r = res['runs'][workers]
    assert r['wrong'] == 0, f"{r['wrong']} wrong verdicts ({r['wrong_valid']} wrongly valid) at workers={workers}: {r['examples']}"


def test_concurrency_changes_no_verdict(result):
    assert result[1]['flips'] == 0
