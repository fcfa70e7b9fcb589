"""The results contract outside an editable install: a copy of the package in a folder outside the repository
(what a normal `pip install` gives) finds the published runs from the working directory or from
$PROPOSAL_NB_PUBLISHED, and says how to set it when neither applies."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import proposal_nb.results as r, sys; print(r.__file__); print(r.published_root())"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    "A copy of proposal_nb/ outside the repository, as a non-editable install leaves it."
    site = tmp_path_factory.mktemp("site-packages")
    shutil.copytree(ROOT / "proposal_nb", site / "proposal_nb", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def probe(site, cwd, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PROPOSAL_NB_PUBLISHED")}
    e.update(PYTHONPATH=str(site), **env)
    # -P: the working directory (the repository root, which holds proposal_nb/) is not put on sys.path; PYTHONPATH
    # comes before site-packages, so the copy wins over the venv's editable install
    return subprocess.run([sys.executable, "-P", "-c", PROBE], cwd=cwd, env=e, capture_output=True, text=True, timeout=120)


def test_copy_outside_repo_finds_published_from_cwd(installed):
    for cwd in (ROOT, ROOT / "nbs", ROOT / "nbs" / "runs"):
        r = probe(installed, cwd)
        assert r.returncode == 0, r.stderr
        mod, root = r.stdout.split()
        assert Path(mod).is_relative_to(installed), mod            # the copy was imported, not the repository
        assert Path(root) == ROOT / "published", root
        assert (Path(root) / "h200_eval" / "config.json").exists()


def test_copy_outside_repo_env_var_and_error(installed, tmp_path):
    r = probe(installed, tmp_path)                                 # nothing above tmp_path holds published runs
    assert r.returncode != 0 and "PROPOSAL_NB_PUBLISHED" in r.stderr and "FileNotFoundError" in r.stderr, r.stderr
    r = probe(installed, tmp_path, PROPOSAL_NB_PUBLISHED=str(ROOT / "published"))
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.split()[1]) == ROOT / "published"
    r = probe(installed, tmp_path, PROPOSAL_NB_PUBLISHED=str(tmp_path / "nope"))
    assert r.returncode != 0 and "is not a folder" in r.stderr, r.stderr
