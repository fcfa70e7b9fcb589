"""The campaign's analyses on its published tables (issue 16), CPU only: break-even per arm on the real timings, Z/C-bin
trajectories and per-prompt up/down counts (held-out and training prompts), the skyline next to wacc, and the
distinct-program share next to pass@k.

    python scripts/campaign_analysis.py PUBLISHED [--n-boot 2000] [--seed 0]

Reads PUBLISHED/campaign_eval (the held-out evaluation), PUBLISHED/campaign_<arm> (training logs, training draws,
the jobs' ledgers) and PUBLISHED/h200_z_embedded (20 base draws per training prompt); writes
PUBLISHED/campaign_breakeven_<arm> (one per arm with a training log), PUBLISHED/campaign_zbins (and its strict and fp32
twins) and PUBLISHED/campaign_interval_coverage (the coverage of the paired 95% intervals, simulated on the per-prompt
tables of campaign_eval and campaign_fp32_eval, and the interval method chosen per metric class: issue 39).

GPU time: the arms trained side by side on one GPU, so a log's stage seconds are wall-clock seconds of a shared device.
Each job's seconds are split among the jobs that shared the GPU (scripts/campaign.py's `gpu_minutes`, applied per
job), and the device stages' seconds of each step are multiplied by its job's share; the checker's seconds (CPU) are
kept as measured. N* is a ratio of seconds measured under the same sharing, so a common factor cancels from it.

The analyses are proposal_nb.analysis.campaign (nbs/37_campaign.ipynb: run_analyses), campaign_breakeven (37c) and
campaign_zbins (37d); this file is their command line, and
`proposal-nb run 37_campaign_analyses -p published published` the same call as a run notebook whose executed copy
shows the tables and charts."""
import argparse
from pathlib import Path
from proposal_nb.analysis.campaign import run_analyses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path, help="the folder of published run folders")
    ap.add_argument("--n-boot", type=int, default=2000, help="prompt-bootstrap resamples")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    a = ap.parse_args(argv)
    run_analyses(a.published, a.n_boot, a.seed)


if __name__ == "__main__":
    main()
