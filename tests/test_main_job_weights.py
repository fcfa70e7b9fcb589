"""scripts/main_job_report.py's weight_diagnostics (the key `weights` of main_job.json) on held-out draws built by hand, run as
its command line (tests load no file as a module: test_project.test_no_code_is_loaded_by_file_path): per arm, E_q[p/q] per
prompt (median and mean over prompts), wacc run by run and with a prompt's runs pooled, and the base's macro skyline, each
against the value worked out below with fractions.

Three prompts, two runs of two draws each. The arm's draws carry p/q ratios chosen so that run by run and pooled differ
(a run with no valid draw counts 0 run by run and vanishes when pooled; a heavy draw in one run outweighs the other run
when pooled), and log q is not 0, so p/q and q/p differ too."""
import json
import math
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-12
NEG = -math.inf

# (prompt, run, p/q, valid, correct) for the arm; valid 0 means r = 0 (log r = -inf)
ARM = [("pA", 0, 2.0, 1, 1), ("pA", 0, 1.0, 1, 0), ("pA", 1, 0.5, 1, 1), ("pA", 1, 0.5, 0, 0),
       ("pB", 0, 0.25, 0, 0), ("pB", 0, 0.75, 0, 0), ("pB", 1, 4.0, 1, 1), ("pB", 1, 1.0, 1, 0),
       ("pC", 0, 8.0, 1, 0), ("pC", 0, 0.5, 1, 1), ("pC", 1, 0.5, 1, 1), ("pC", 1, 3.0, 0, 0)]
# the base samples from p itself: log p = log q
BASE = [("pA", 0, 1.0, 1, 1), ("pA", 0, 1.0, 1, 0), ("pA", 1, 1.0, 1, 1), ("pA", 1, 1.0, 0, 0),
        ("pB", 0, 1.0, 0, 0), ("pB", 0, 1.0, 0, 0), ("pB", 1, 1.0, 0, 0), ("pB", 1, 1.0, 0, 0),
        ("pC", 0, 1.0, 1, 1), ("pC", 0, 1.0, 1, 0), ("pC", 1, 1.0, 1, 0), ("pC", 1, 1.0, 1, 0)]

# By hand. wacc of a set of draws: sum of w * correct over sum of w, w = p/q * r (0 if no valid draw).
# arm, per prompt, E_q[p/q] (all four draws, valid or not): A (2+1+.5+.5)/4 = 1, B (.25+.75+4+1)/4 = 3/2, C (8+.5+.5+3)/4 = 3
ARM_PQ = [F(1), F(3, 2), F(3)]
# arm, run by run: A: run 0 2/(2+1) = 2/3, run 1 .5/.5 = 1 -> 5/6; B: run 0 no valid draw 0, run 1 4/5 -> 2/5;
#                  C: run 0 .5/8.5 = 1/17, run 1 1 -> 9/17
ARM_PER_RUN = (F(5, 6) + F(2, 5) + F(9, 17)) / 3
# arm, pooled: A (2+.5)/(2+1+.5) = 5/7; B 4/5; C (.5+.5)/(8+.5+.5) = 1/9
ARM_POOLED = (F(5, 7) + F(4, 5) + F(1, 9)) / 3
# base (w = r): run by run A (1/2 + 1)/2 = 3/4, B 0, C (1/2 + 0)/2 = 1/4; pooled A 2/3, B 0, C 1/4
BASE_PER_RUN = (F(3, 4) + 0 + F(1, 4)) / 3
BASE_POOLED = (F(2, 3) + 0 + F(1, 4)) / 3
# macro skyline: mean over prompts of correct / valid among the base's draws, a prompt with no valid draw counting 0:
# A 2/3, B 0, C 1/4 (not the micro 3/7, nor 11/24 with B left out)
SKYLINE = (F(2, 3) + 0 + F(1, 4)) / 3


def draws_table()->pd.DataFrame:
    rows = []
    for ck, table in (("base", BASE), ("iguana", ARM)):
        for i, (pid, run, ratio, valid, correct) in enumerate(table):
            logq = -3.0 - 0.7 * i                                  # any log q; log p is log q + log(p/q)
            rows.append(dict(checkpoint=ck, prompt_id=pid, run=run, draw=i % 2, logq=logq, logp=logq + math.log(ratio),
                             logr=0.0 if valid else NEG, valid=float(valid), correct=float(correct)))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def weights(tmp_path_factory)->dict:
    "main_job.json's `weights` for one results folder holding only the evaluation's draws (and an empty paired.csv)."
    tmp = tmp_path_factory.mktemp("main_job")
    (tmp / "results" / "eval").mkdir(parents=True)
    draws_table().to_parquet(tmp / "results" / "eval" / "draws.parquet")
    (tmp / "results" / "eval" / "paired.csv").write_text("a,b,metric,diff,lo,hi\n")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "main_job_report.py"), str(tmp / "out"), "--run", f"x={tmp / 'results'}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp / "out" / "main_job.json").read_text())["x"]["weights"]


def close(got, want): return abs(got - float(want)) <= TOL


def test_keys(weights):
    assert set(weights) == {"base", "iguana", "base_macro_skyline"}
    for ck in ("base", "iguana"):
        # draws_per_prompt: a prompt's draws over all its runs (2 runs x 2 draws), as the published README reads it ("15 draws a prompt" at R=3, M=5)
        assert weights[ck]["draws_per_prompt"] == 4 and weights[ck]["runs"] == 2, weights[ck]


def test_p_over_q(weights):
    a = weights["iguana"]
    assert close(a["mean_p_over_q_median"], F(3, 2)), a
    assert close(a["mean_p_over_q_mean"], sum(ARM_PQ) / 3), a            # 11/6
    b = weights["base"]
    assert close(b["mean_p_over_q_median"], 1) and close(b["mean_p_over_q_mean"], 1), b


def test_wacc_run_by_run_and_pooled(weights):
    a = weights["iguana"]
    assert abs(ARM_PER_RUN - ARM_POOLED) > F(1, 25)                       # the case tells the two apart (0.587 vs 0.542)
    assert close(a["wacc_per_run"], ARM_PER_RUN), (a["wacc_per_run"], float(ARM_PER_RUN))
    assert close(a["wacc_pooled"], ARM_POOLED), (a["wacc_pooled"], float(ARM_POOLED))
    b = weights["base"]
    assert close(b["wacc_per_run"], BASE_PER_RUN), b
    assert close(b["wacc_pooled"], BASE_POOLED), b


def test_base_macro_skyline(weights):
    assert close(weights["base_macro_skyline"], SKYLINE), weights["base_macro_skyline"]
    # the base's own draws (p = q, r = valid): its pooled wacc is the skyline
    assert close(weights["base"]["wacc_pooled"], weights["base_macro_skyline"])
