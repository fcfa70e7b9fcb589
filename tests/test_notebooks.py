"""Every notebook under nbs/ (not runs/, not scratch `_*`) runs as one pytest case; cells flagged
`gpu` or `slow` are skipped (set PROPOSAL_NB_RUN_SLOW=1 to run the `slow` ones too)."""
import os
from pathlib import Path

import pytest
import nbdev.test as nbdev_test

NBS = Path(__file__).resolve().parents[1] / "nbs"
NOTEBOOKS = sorted(p for p in NBS.glob("*.ipynb") if not p.name.startswith("_"))
SKIP = ["gpu"] + ([] if os.environ.get("PROPOSAL_NB_RUN_SLOW") else ["slow"])


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook(nb):
    import torch
    dtype = torch.get_default_dtype()       # notebooks run in this process, and several set float64: the next test must not inherit it
    try: ok, secs = nbdev_test.test_nb(nb, skip_flags=SKIP, showerr=True)
    finally: torch.set_default_dtype(dtype)
    assert ok, f"{nb.name} failed after {secs:.1f}s (traceback above)"
