"""launch_notebook runs a run notebook under torchrun (gloo on CPU here): every rank runs it with the parameters, joins
the process group, and the exit code of a failing notebook comes back; scripts/exec_notebook.py still runs one process."""
import json
import subprocess
import sys
from pathlib import Path

from proposal_nb.lm.launch import launch_notebook, torchrun_argv
import pytest

pytestmark = pytest.mark.xdist_group("torchrun")   # one torchrun job at a time: two gloo jobs side by side once aborted a rank in CI

ROOT = Path(__file__).resolve().parents[1]


def notebook(d, body):
    cells = [dict(cell_type="code", metadata={"tags": ["parameters"]}, source="steps: int = 2\nout: str = ''"),
             dict(cell_type="code", metadata={}, source=body)]
    p = Path(d) / "nb.ipynb"
    p.write_text(json.dumps(dict(cells=cells, metadata={}, nbformat=4, nbformat_minor=5)))
    return p


SUM = ("import torch, torch.distributed as dist\nfrom proposal_nb.lm.distributed import init_from_env\n"
       "r, w, dev = init_from_env('gloo'); t = torch.tensor([r + 1.0]); dist.all_reduce(t)\n"
       "open(f'{out}/rank{r}.txt', 'w').write(f'{w} {t.item()} {steps} {dev}')")


def test_two_gloo_ranks_run_the_notebook(tmp_path):
    assert launch_notebook(notebook(tmp_path, SUM), dict(steps=5, out=str(tmp_path)), nproc=2) == 0
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)] == ["2 3.0 5 cpu"] * 2     # 1 + 2 summed on both ranks


def test_a_failing_notebook_returns_its_exit_code(tmp_path):
    p = notebook(tmp_path, "raise RuntimeError('cell failed on purpose')")
    assert launch_notebook(p, {}, nproc=2) != 0
    bad = subprocess.run(torchrun_argv(p, dict(stpes=3), nproc=1), capture_output=True, text=True)
    assert bad.returncode != 0 and "no parameter(s) ['stpes']" in bad.stderr


def test_exec_notebook_script_is_the_package_executor(tmp_path):
    p = notebook(tmp_path, "open(f'{out}/done.txt', 'w').write(str(steps * 2))")
    r = subprocess.run([sys.executable, str(ROOT / "scripts/exec_notebook.py"), str(p), "steps=21", f"out={tmp_path}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "done.txt").read_text() == "42"


def test_train_online_notebook_on_two_gloo_ranks(tmp_path):
    """nbs/runs/11_train_online under torchrun with 2 CPU ranks on the tiny model (saved as a local model folder), chunked
    scoring, DDP: both ranks train, rank 0 alone writes the run folder, and the log holds every rank's draws."""
    import pandas as pd
    from proposal_nb.lm.models import tiny_model
    m, tok = tiny_model(seed=0)
    m.save_pretrained(tmp_path / "tiny"); tok.save_pretrained(tmp_path / "tiny")
    out = tmp_path / "run"
    params = dict(out_dir=str(out), model=str(tmp_path / "tiny"), limit=8, heldout_frac=0.25, engine="fast", M=2, prompts_per_step=2,
                  steps=2, lr=1e-3, max_new_tokens=8, checkpoint_every=1, score_rows=3, strategy="ddp")
    assert launch_notebook(ROOT / "nbs/runs/11_train_online.ipynb", params, nproc=2) == 0
    config = json.loads((out / "config.json").read_text())
    assert (config["kind"], config["processes"], config["strategy"], config["training"]["loop"]["score_rows"]) == ("train", 2, "ddp", 3)
    log, draws = pd.read_parquet(out / "log.parquet"), pd.read_parquet(out / "draws.parquet")
    assert log.step.tolist() == [1, 2] and (log.n_samples == 4).all()          # 2 prompts × 2 draws per step, from both ranks
    assert len(draws) == 8 and draws.groupby("step").prompt_id.nunique().tolist() == [2, 2]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-1", "step-2"]
    assert (out / "timing.json").exists()


def test_each_rank_leaves_the_process_group_after_its_notebook(tmp_path):
    "launch.main destroys the group a notebook joined (after a barrier), so no rank exits while gloo's threads still run."
    code = ("import os, sys; sys.argv = ['launch']\n"
            "os.environ.update(RANK='0', WORLD_SIZE='1', LOCAL_RANK='0', MASTER_ADDR='127.0.0.1', MASTER_PORT='29531')\n"
            "import torch.distributed as dist\nfrom proposal_nb.lm.launch import main\n"
            f"main([{str(notebook(tmp_path, SUM))!r}, 'out={tmp_path}'])\n"
            "print('initialized after main:', dist.is_initialized())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "initialized after main: False" in r.stdout
    assert (tmp_path / "rank0.txt").read_text() == "1 1.0 2 cpu"
