"""What a user meets on the console and in `--help`: run notebooks whose parameters papermill can list, and (below)
the main job's quiet runner, progress lines and closing summary."""
import logging
from pathlib import Path

import nbformat
import pytest

from proposal_nb.pipeline import RUNS, declared_parameters, parameter_types, parameters_index

RUN_NOTEBOOKS = sorted(RUNS.glob("*.ipynb"))


@pytest.mark.parametrize("nb_path", RUN_NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_lists_every_parameter(nb_path, caplog):
    """papermill skips a parameters line holding two '=' (a comment like `name=folder`) with only a logged warning, and
    `papermill --help-notebook` then omits that parameter (13_evaluate's `checkpoints`, 30_calibration's `model`)."""
    from papermill.translators import PythonTranslator
    nb = nbformat.read(nb_path, as_version=4)
    with caplog.at_level(logging.WARNING, logger="papermill"):
        listed = {p.name: p for p in PythonTranslator.inspect(nb.cells[parameters_index(nb)])}
    assert not [r.getMessage() for r in caplog.records], f"{nb_path.name}: papermill warned"
    assert set(listed) == declared_parameters(nb_path), f"{nb_path.name}: papermill lists {sorted(listed)}"
    untyped = declared_parameters(nb_path) - set(parameter_types(nb_path))
    assert not untyped, f"{nb_path.name}: parameters without a type annotation {sorted(untyped)}"
    undocumented = [k for k, p in listed.items() if not p.help]
    assert not undocumented, f"{nb_path.name}: parameters without a help comment {undocumented}"
