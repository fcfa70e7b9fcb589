"""published/h200_exact_weights (issue 36) re-derived from its raw draws: the identity windows with the sampler's density, the
bias with the scorer's, the reverse checks, the spread of the default scoring mode, and the README rebuilt to the byte."""
import json, shutil
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "published" / "h200_exact_weights"
from proposal_nb.analysis.exact_weights import exact_report, exact_windows


def test_windows_from_the_draws():
    w = exact_windows(RUN)
    sam, sc = w[w.q.str.startswith("sampler")], w[w.q.str.startswith("scorer")]
    assert len(sam) == len(sc) == 10 and (sam.draws == 2000).all()                  # 250 steps x 8 prompts x M = 10, windows of 25 steps
    assert sam.within_2se.mean() >= 0.9                                              # the target
    assert not sc.within_2se.any() and (sc["mean"] > 1.2).all()                      # the bf16 scorer's density: the old inflation
    log = pd.read_parquet(RUN / "log.parquet")
    assert (log.pq_window_out.dropna() == 0).all() and log.pq_n.sum() == 20000       # the run's own check never marked a window


def test_reverse_and_spread():
    rev = [json.loads(l) for l in (RUN / "reverse.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rev] == [0, 4, 16, 63, 250] and all(abs(r["mean"] - 1) <= 2 * r["se"] for r in rev)
    s = json.loads((RUN / "summary.json").read_text())
    assert s["exact"] == dict(dtype="bfloat16", scoring="fp32_prior", weights="sampler", engine="fast")
    assert s["spread"]["modes"][s["exact"]["scoring"]]["spread_max"] <= 0.01 < s["spread"]["modes"]["model"]["spread_max"]


def test_readme_rebuilds(tmp_path):
    d = tmp_path / "run"; shutil.copytree(RUN, d)
    for f in ("README.md", "windows.csv", "reverse.csv", "identity.svg"): (d / f).unlink()
    exact_report(d)
    assert (d / "README.md").read_text() == (RUN / "README.md").read_text()
    pd.testing.assert_frame_equal(pd.read_csv(d / "windows.csv"), pd.read_csv(RUN / "windows.csv"))


def test_the_project_readme_quotes_this_folder():
    "The README's GPU paragraph: its counts, range and time are this folder's."
    w = exact_windows(RUN)
    sam, sc = w[w.q.str.startswith("sampler")], w[w.q.str.startswith("scorer")]
    r = json.loads((RUN / "summary.json").read_text())["result"]
    text = " ".join((ROOT / "README.md").read_text().split())
    claim = (f"within 2 SE of 1 in {int(sam.within_2se.sum())} of {len(sam)} windows, against {int(sc.within_2se.sum())} of {len(sc)} "
             f"({sc['mean'].min():.2f}–{sc['mean'].max():.2f}) with the trainer's bf16 q on the same draws, at {r['per_sample_s']:.3f} s a sample")
    assert claim in text, claim
