"""The break-even run notebook on saved tables (file inputs, the route the pipeline uses): nbs/runs/31_breakeven."""
import json

import numpy as np
import pandas as pd

from proposal_nb.breakeven import Costs, synthetic_breakeven_inputs
from proposal_nb.pipeline import REPO, run_notebook


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
    assert len(pd.read_csv(out / "per_prompt.csv")) == 60 * 3
    t = json.loads((out / "timing.json").read_text())
    assert t["seconds_per_sample"] == dict(generation=0.5, potential=0.2, scoring=0.1, update=0.3)
    assert json.loads((out / "config.json").read_text())["arm"] == "iguana"
