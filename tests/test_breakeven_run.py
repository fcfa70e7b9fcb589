"""The break-even run notebook on saved tables (file inputs, the route the pipeline uses): nbs/runs/31_breakeven."""
import json

import numpy as np
import pandas as pd
import pytest
from papermill.exceptions import PapermillExecutionError

from proposal_nb.analysis.breakeven import Costs, synthetic_breakeven_inputs
from proposal_nb.pipeline.notebooks import REPO, run_notebook


def test_run_from_files(tmp_path):
    rng = np.random.default_rng(5)
    rates, trained, log = synthetic_breakeven_inputs(60, steps=(50, 200, 800), costs=Costs(0.5, 0.2, 0.1, 0.3), rng=rng)
    # base rollouts (20 per prompt) in place of the rates table; per-prompt pass@1 with checkpoint names carrying the step
    rows = []
    for p, z, s in zip(rates.prompt_id, rates.Z, rates.s):
        v = rng.random(20) < z
        rows.append(pd.DataFrame(dict(prompt_id=p, draw=np.arange(20), valid=v.astype(float), correct=(v & (rng.random(20) < s)).astype(int))))
    pd.concat(rows).to_csv(tmp_path / "base.csv", index=False)
    trained.drop(columns="step").assign(checkpoint=lambda d: "iguana/step" + d.checkpoint.str[4:]).to_parquet(tmp_path / "eval.parquet")
    log.to_parquet(tmp_path / "log.parquet")
    out = tmp_path / "run"
    run_notebook(REPO / "nbs" / "runs" / "31_breakeven.ipynb", out,
                 dict(out_dir=str(out), arm="iguana", rates_path=str(tmp_path / "base.csv"), trained_path=str(tmp_path / "eval.parquet"),
                      log_path=str(tmp_path / "log.parquet"), n_boot=200), progress=False)
    pc = pd.read_csv(out / "per_checkpoint.csv")
    assert pc.step.tolist() == [50, 200, 800]
    np.testing.assert_allclose(pc.train_wall_s, [s * 10 * 1.1 for s in (50, 200, 800)])   # 10 samples per step x 1.1 s
    assert len(pd.read_csv(out / "prompt_breakeven.csv")) == 60 * 3
    t = json.loads((out / "timing.json").read_text())
    assert t["seconds_per_sample"] == dict(generation=0.5, potential=0.2, scoring=0.1, update=0.3)
    assert json.loads((out / "config.json").read_text())["arm"] == "iguana"


def test_run_on_an_evaluation_table(tmp_path):
    "The default pipeline's route: one evaluation draw table (draw numbers repeat in every run) gives both the base rates and the trained pass@1; the checkpoint's step comes from `checkpoints`."
    rng = np.random.default_rng(9)
    rows = []
    for ck, shift in (("base", 0.0), ("iguana", 0.2), ("msc", 0.1)):
        for p in range(12):
            for run in range(2):
                v = rng.random(3) < 0.4 + shift
                rows.append(pd.DataFrame(dict(prompt_id=f"p{p}", checkpoint=ck, run=run, draw=np.arange(3), valid=v.astype(float),
                                              correct=(v & (rng.random(3) < 0.6)).astype(float))))
    draws = pd.concat(rows, ignore_index=True); draws.to_parquet(tmp_path / "draws.parquet")
    log = pd.DataFrame(dict(step=np.arange(1, 9), n_samples=10, t_generation=2.0, t_potential=0.1, t_scoring=0.5, t_update=0.4))
    log.to_parquet(tmp_path / "log.parquet")
    out = tmp_path / "run"
    params = dict(out_dir=str(out), arm="iguana", rates_path=str(tmp_path / "draws.parquet"), trained_path=str(tmp_path / "draws.parquet"),
                  checkpoints={"iguana": 8}, log_path=str(tmp_path / "log.parquet"), n_boot=200)
    run_notebook(REPO / "nbs" / "runs" / "31_breakeven.ipynb", out, params, progress=False)
    pc = pd.read_csv(out / "per_checkpoint.csv")
    assert pc.checkpoint.tolist() == ["iguana"] and pc.step.tolist() == [8]                 # msc left out, step from the map
    base = draws[draws.checkpoint == "base"].groupby("prompt_id")
    pp = pd.read_csv(out / "prompt_breakeven.csv").set_index("prompt_id")
    np.testing.assert_allclose(pp.loc[[f"p{i}" for i in range(12)], "Z"], base.valid.mean().loc[[f"p{i}" for i in range(12)]])  # all 6 draws
    ig = draws[draws.checkpoint == "iguana"].groupby("prompt_id").correct.mean()
    np.testing.assert_allclose(pp.loc[ig.index, "pass1_trained"], ig)
    with pytest.raises(PapermillExecutionError, match="no rows of checkpoint"):
        run_notebook(REPO / "nbs" / "runs" / "31_breakeven.ipynb", tmp_path / "bad", {**params, "out_dir": str(tmp_path / "bad"), "checkpoints": {"ppo": 8}}, progress=False)
