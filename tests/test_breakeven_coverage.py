"""Coverage of break-even's prompt-bootstrap CI on synthetic runs whose truth is known (see nbs/33_breakeven)."""
import numpy as np

from proposal_nb.analysis.breakeven import (breakeven, per_sample_costs, population_breakeven, synthetic_breakeven_inputs,
                                   training_bill)


def test_saving_ci_covers_truth():
    # seeds 100-199, 150 prompts, R = 20 draws per prompt, 400 resamples; the truth from 20,000 exact prompts (seed 12345).
    # Nominal 95%: expect ~95 of 100 (binomial SE ~2.2); require 86-100.
    step, truth = 400, population_breakeven(400)
    hits, k_hits = 0, 0
    for seed in range(100, 200):
        rates, trained, log = synthetic_breakeven_inputs(150, steps=(step,), rng=np.random.default_rng(seed))
        row = breakeven(rates, trained, training_bill([step], log=log), per_sample_costs(log), n_boot=400, seed=seed).per_checkpoint.iloc[0]
        hits += row.saving_wall_s_lo <= truth["saving_wall_s"] <= row.saving_wall_s_hi
        k_hits += row.k_eq_lo <= truth["k_eq"] <= row.k_eq_hi
    assert 86 <= hits <= 100, hits
    assert 86 <= k_hits <= 100, k_hits


def test_nstar_interval_is_the_saving_interval_inverted():
    rates, trained, log = synthetic_breakeven_inputs(80, steps=(100, 800), rng=np.random.default_rng(3))
    pc = breakeven(rates, trained, training_bill([100, 800], log=log), per_sample_costs(log), n_boot=300).per_checkpoint
    for cur in ("checker_calls", "wall_s", "gpu_h"):
        np.testing.assert_allclose(pc[f"nstar_{cur}_lo"], pc[f"train_{cur}"] / pc[f"saving_{cur}_hi"])
        assert (pc[f"nstar_{cur}_lo"] <= pc[f"nstar_{cur}"]).all() and (pc[f"nstar_{cur}"] <= pc[f"nstar_{cur}_hi"]).all()
