"""Plain tests of the evaluation band on saved tables: schema errors, parquet round trip, invariances,
paired differences, tiered potentials in the report card. Seeds and sizes are stated in each test."""
import time

import numpy as np
import pandas as pd
import pytest

from proposal_nb.analysis.evaluation import DRAW_COLUMNS, validate_draws, evaluate, prompt_rates, skyline
from proposal_nb.analysis.synthetic import synthetic_draws, SyntheticSpec, bench_evaluation
from proposal_nb.analysis.report_card import report_card
from proposal_nb.analysis.zbins import with_zbin, bin_trajectories, up_down


@pytest.fixture(scope="module")
def syn():
    return synthetic_draws(60, runs=3, draws=8, n_base=40, seed=11)


BAD = [  # column, bad value, words the error must contain
    ("valid", 1.2, "must lie in [0, 1]"),
    ("correct", 0.5, "must be 0 or 1"),
    ("logq", -np.inf, "must be finite"),
    ("logq", 0.5, "must be <= 0"),
    ("logp", np.nan, "NaN"),
    ("run", 1.5, "non-negative integer"),
    ("length", -3, "non-negative integer"),
    ("logr", -0.5, "exp(logr) differs"),
]


@pytest.mark.parametrize("col,value,words", BAD, ids=[f"{c}={v}" for c, v, _ in BAD])
def test_validate_names_column_and_row(syn, col, value, words):
    df = syn.draws.copy()
    df[col] = df[col].astype(float)
    row = df.index[17]
    df.loc[row, col] = value
    with pytest.raises(ValueError) as e:
        validate_draws(df)
    assert f"'{col}' row {row!r}" in str(e.value) and words in str(e.value), str(e.value)


def test_validate_missing_column_and_dtype(syn):
    for col in DRAW_COLUMNS:
        with pytest.raises(ValueError, match=rf"lacks column\(s\) \['{col}'\]"):
            validate_draws(syn.draws.drop(columns=col))
    with pytest.raises(ValueError, match="'valid' must be numeric"):
        validate_draws(syn.draws.assign(valid="yes"))


def test_incomplete_grid_is_named(syn):
    df = syn.draws.drop(index=syn.draws.index[5])
    with pytest.raises(ValueError, match="not a full grid: no row for prompt 'p0000', checkpoint 'base', run 0, draw 5"):
        evaluate(df, n_boot=10)


def test_parquet_round_trip_and_row_order(syn, tmp_path):
    """The table read back from parquet, and the same rows shuffled, give identical results (seed 0, 200 resamples)."""
    path = tmp_path / "draws.parquet"
    syn.draws.to_parquet(path)
    a = evaluate(syn.draws, n_boot=200)
    b = evaluate(pd.read_parquet(path), n_boot=200)
    c = evaluate(syn.draws.sample(frac=1.0, random_state=3), n_boot=200, checkpoints=list(SyntheticSpec().names))
    pd.testing.assert_frame_equal(a.summary, b.summary)
    key = ["prompt_id", "checkpoint"]
    pa = a.per_prompt.sort_values(key).reset_index(drop=True)
    pc = c.per_prompt.sort_values(key).reset_index(drop=True)[pa.columns]
    pd.testing.assert_frame_equal(pa, pc)
    # estimates do not depend on the row order; the bootstrap does only through the prompt order
    np.testing.assert_allclose(a.summary.estimate, c.summary.estimate)


def test_paired_difference_is_difference_of_means_and_sharper(syn):
    """diff = mean(b) - mean(a) exactly; with the same prompts in both arms the paired CI is narrower than
    the naive sum of the two marginal half-widths (60 prompts, 2,000 resamples)."""
    ev = evaluate(syn.draws, n_boot=2000)
    s = ev.summary.set_index(["checkpoint", "metric"]).estimate
    for _, r in ev.paired.iterrows():
        assert abs(r["diff"] - (s[(r.b, r.metric)] - s[(r.a, r.metric)])) < 1e-12
    p = ev.paired[(ev.paired.a == "base") & (ev.paired.b == "step750") & (ev.paired.metric == "validity")].iloc[0]
    m = ev.summary.set_index(["checkpoint", "metric"])
    naive = sum((m.loc[(c, "validity"), "hi"] - m.loc[(c, "validity"), "lo"]) / 2 for c in ("base", "step750"))
    assert (p.hi - p.lo) / 2 < 0.75 * naive
    assert p.excludes_zero and p["diff"] > 0


def test_skyline_from_table(syn):
    rates = prompt_rates(syn.prior[syn.prior.checkpoint == "base"])
    sk = skyline(rates, n_boot=500)
    s = np.where(rates.n_valid > 0, rates.n_correct / rates.n_valid.clip(lower=1), 0)
    assert abs(sk.macro - s.mean()) < 1e-12
    assert abs(sk.pooled - rates.n_correct.sum() / rates.n_valid.sum()) < 1e-12


def test_zbins_on_table(syn):
    ev = evaluate(syn.draws, n_boot=100)
    rates = with_zbin(prompt_rates(syn.prior, checkpoints=["base"]))
    bt = bin_trajectories(ev.per_prompt, rates, "validity", n_boot=100)
    assert bt.groupby("checkpoint").prompts.sum().eq(60).all()
    d, counts = up_down(ev.per_prompt, rates, "base", "step750", "validity")
    assert counts.set_index("zbin").loc["all", ["up", "flat", "down"]].sum() == 60


def test_report_card_tiered_potential(syn):
    """A tiered potential r in {0, 0.5, 1}: the card accepts prior draws with probability r (seeded uniforms)."""
    def tier(df):
        half = (df.valid == 0) & (df.length % 2 == 0)
        out = df.copy()
        out.loc[half, "valid"] = 0.5
        out["logr"] = np.log(out.valid.where(out.valid > 0, 1.0)).where(out.valid > 0, -np.inf)
        return out
    card = report_card(tier(syn.draws), tier(syn.prior), split=None, n_boot=100)
    card2 = report_card(tier(syn.draws), tier(syn.prior), split=None, n_boot=100)
    pd.testing.assert_frame_equal(card.table, card2.table)           # seeded
    assert (card.table.kl_prompts > 0).all() and np.isfinite(card.table.kl).all()
    with pytest.raises(ValueError, match="no prompt has split == 'nope'"):
        report_card(syn.draws, syn.prior, split="nope")
    with pytest.raises(ValueError, match="prior table has no rollouts of prompt 'p0003'"):
        report_card(syn.draws, syn.prior[syn.prior.prompt_id != "p0003"], split=None)


def test_benchmark_size_runs_fast():
    """The benchmark size (301 x 10 x 5 x 10, 2,000 resamples, 45 pairs); target 2 s, asserted loosely at 10 s."""
    secs, ev = bench_evaluation()
    print(f"evaluate at benchmark size: {secs:.2f}s")
    assert ev.values.shape == (301, 10, len(ev.names)) and len(ev.paired) == 45 * len(ev.names)
    assert secs < 10


def test_report_card_prior_checkpoints(syn):
    """Extra checkpoints in the prior table are ignored; a missing one is named."""
    draws = syn.draws[syn.draws.checkpoint.isin(["base", "step500"])]
    card = report_card(draws, syn.prior, split=None, n_boot=50)
    assert card.table.checkpoint.tolist() == ["base", "step500"]
    with pytest.raises(ValueError, match="prior table: draw table has no rows of checkpoint 'step500'"):
        report_card(draws, syn.prior[syn.prior.checkpoint != "step500"], split=None, n_boot=50)
