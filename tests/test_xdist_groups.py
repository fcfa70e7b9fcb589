"""scripts/test.sh runs the suite with `--dist loadgroup`, and several modules rely on their `xdist_group` mark: the torchrun
tests one job at a time, module fixtures built once. pytest-xdist keeps a group on one worker by renaming its items
`...@group`; under pytest 9.2 with pytest-xdist 3.8 the rename did not take (2026-12-06: a module's fixture was built on both
workers), hence pytest < 9 in the dev extra. This test fails whenever the rename does not take."""
import pytest

pytestmark = pytest.mark.xdist_group("xdist_check")


def test_a_marked_test_carries_its_group(request):
    if not getattr(request.config.option, "loadgroup", False): pytest.skip("not a worker of --dist loadgroup")
    assert request.node.nodeid.endswith("@xdist_check"), request.node.nodeid
