"""What a user meets on the console and in `--help`: run notebooks whose parameters papermill can list, and (below)
the main job's quiet runner, progress lines and closing summary."""
import logging
from pathlib import Path

import nbformat
import pytest

from proposal_nb.pipeline.notebooks import RUNS, declared_parameters, parameter_types, parameters_index

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


def tiny_notebook(path, body):
    "A run notebook with a typed parameters cell (out_dir, x) and one cell of `body`."
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('out_dir: str = ""  # results folder\nx: int = 1  # a number'),
                nbformat.v4.new_code_cell(body)]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nbformat.write(nb, path)
    return path


def cli(*args, cwd):
    import os, subprocess, sys
    return subprocess.run([sys.executable, "-c", "from proposal_nb.pipeline.cli import main; main()", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300, env={**os.environ, "COLUMNS": "200"})


def test_run_is_one_line_on_the_console(tmp_path):
    "The kernel's TCP warning, a cell's prints and a library warning go to OUT/run.log; the console gets two lines."
    nb = tiny_notebook(tmp_path / "noisy.ipynb", "import sys, warnings\nprint('x is', x)\nwarnings.warn('deprecated thing')\n"
                                                 "print('to stderr', file=sys.stderr)")
    p = cli("run", str(nb), "-p", "x", "5", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and " · done in " in lines[0] and lines[1].startswith("[proposal_nb] wrote out/noisy.ipynb"), lines
    log = (tmp_path / "out" / "run.log").read_text()
    for s in ("x is 5", "deprecated thing", "to stderr"): assert s in log, log


def test_run_failure_names_the_error_and_the_files(tmp_path):
    nb = tiny_notebook(tmp_path / "bad.ipynb", "raise ValueError(f'task file row {x}: no prompt')")
    p = cli("run", str(nb), "-p", "x", "3", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert p.returncode == 1
    import re
    assert re.fullmatch(r"\[proposal_nb\] bad.ipynb → out · FAILED after \d+s\n", p.stdout), p.stdout
    assert "bad.ipynb failed: ValueError: task file row 3: no prompt" in p.stderr, p.stderr
    assert "out/run.log" in p.stderr and "out/bad.ipynb" in p.stderr
    assert "Traceback" not in p.stderr


def test_nproc_runs_the_notebook_in_n_processes(tmp_path):
    "`proposal-nb run NB --nproc 2` goes through proposal_nb.lm.launch (torchrun): each rank sees the checked parameters."
    nb = tiny_notebook(tmp_path / "ranks.ipynb", "import os, pathlib\n"
                                                 "pathlib.Path(out_dir, f\"rank{os.environ['RANK']}.txt\").write_text(f\"{x} {os.environ['WORLD_SIZE']}\")")
    (tmp_path / "out").mkdir()
    p = cli("run", str(nb), "--nproc", "2", "-p", "x", "7", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr + (tmp_path / "out" / "run.log").read_text()
    assert [(tmp_path / "out" / f"rank{r}.txt").read_text() for r in (0, 1)] == ["7 2", "7 2"]
    assert p.stdout.splitlines()[-1].startswith("[proposal_nb] wrote out"), p.stdout
    p = cli("run", str(nb), "--nproc", "2", "-p", "x", "seven", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert p.returncode == 1 and "'x' is declared int, got 'seven'" in p.stderr        # checked before any process starts
    p = cli("run", str(nb), "--nnodes", "2", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert p.returncode == 1 and "needs master_addr" in p.stderr, p.stderr
