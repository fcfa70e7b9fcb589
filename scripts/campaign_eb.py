"""The normaliser's empirical-Bayes interval for Z(x) on the campaign's real runs (issue 16), CPU only: is it calibrated?

    python scripts/campaign_eb.py PUBLISHED [--level 0.9]

For each online arm with training draws (PUBLISHED/campaign_<arm>/draws.parquet), every training prompt's interval
comes from all of the run's importance weights uw = r p / q on that prompt: `normalizer.eb_interval` on the raw sums
(n draws, S = Σ uw), a Beta(a + S, b + n − S) posterior under a Beta prior fitted to the pool. The check is against
data the run never saw: the base model's independent draws of the same prompt in PUBLISHED/h200_z_embedded (m = 20,
graded with the arm's potential). If the posterior is right, their valid count k follows the Beta-binomial(m, A, B)
predictive, so k falls in its central `level` set with a probability computed exactly per prompt; the number of prompts
inside is then Poisson-binomial, and its exact lower tail says whether the intervals are too narrow. The interval treats
S as S successes in n Bernoulli trials; importance weights spread more than that (ESS < n), which would make it too narrow.
Writes PUBLISHED/campaign_eb_intervals (per-prompt table, summary, chart, config, README).

The check is proposal_nb.analysis.eb_check (nbs/37b_eb_check.ipynb); this file is its command line."""
import argparse
from pathlib import Path
from proposal_nb.analysis.eb_check import write_eb_intervals


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path, help="the folder of published run folders")
    ap.add_argument("--level", type=float, default=0.9, help="central posterior probability of the interval")
    a = ap.parse_args(argv)
    write_eb_intervals(a.published, a.level)


if __name__ == "__main__":
    main()
