"""A grading fault stops the calibration run; it never grades zeros (programs.grading, nbs/22a_grading)."""
import pytest

from proposal_nb.programs.grading import grade_programs
from proposal_nb.programs.sandbox import InfrastructureError, Verdict


class _ShortExecutor:
    "Returns verdicts with fewer test results than requested: an implausible answer from the grader."
    def run(self, programs, tests, **judge):  # judge: contexts and entry points, as the real Executor takes them
        return [Verdict(True, "ok", 0.01, tests=("ok",)) for _ in programs]


class _DeadExecutor:
    def run(self, programs, tests, **judge):  # judge: contexts and entry points, as the real Executor takes them
        raise InfrastructureError("sandbox server died (exit status -9)")


def test_short_result_raises_naming_the_program():
    with pytest.raises(InfrastructureError, match="bundle/7: the sandbox returned 1 test results for 3 tests"):
        grade_programs(_ShortExecutor(), ["x = 1"], [["assert x"]], [["assert x", "assert x"]], names=["bundle/7"])


def test_dead_sandbox_propagates():
    with pytest.raises(InfrastructureError, match="died"):
        grade_programs(_DeadExecutor(), ["x = 1"], [["assert x"]], [["assert x"]])


def test_real_sandbox_grades_visible_and_hidden_separately():
    from proposal_nb.programs.sandbox import Executor
    with Executor(workers=1, warm_imports=()) as ex:
        g, = grade_programs(ex, ["def f(x):\n    return 2 * x\n"], [["assert f(1) == 2", "assert f(2) == 5"]],
                            [["assert f(3) == 6", "assert f(0) == 0"]])
    assert g.visible == (True, False) and g.hidden == (True, True) and g.fitness == 1 and g.passed
