"""The confirmatory campaign (issue 39): the pre-registered design of nbs/runs/params/confirm/design.yaml, every arm at
three seeds with exact weights, chained through GPU jobs of at most 10 minutes with exact resume (scripts/campaign_job.sh
runs its confirm_* arms through this script).

    python scripts/confirm.py plan OUT                   # write confirm.json: the design and every run's settings
    python scripts/confirm.py names                      # every run's name, seed by seed (confirm_ARM_sSEED)
    python scripts/confirm.py base RUNS [--model PATH]    # the base arm's draws on every evaluation set (once per campaign)
    python scripts/confirm.py train RUN RUNS --deadline-s 480 [--model PATH] [--no-eval]
    python scripts/confirm.py finished RUNS/RUN          # exit 0 when the run reached its last step (or its weight check stopped it)
    python scripts/confirm.py publish RUNS OUT           # copy every run's tables into OUT (published/confirm_runs) with its summary and README
    python scripts/confirm.py readings RUNS OUT          # the design's readings from the published runs (published/confirm_readings)
    python scripts/confirm.py facts RUNS/RUN [...]       # what a session's notes say of a run, from its tables (JSON)
    python scripts/confirm.py next-call RUNS ARM [...]   # the next campaign_job.sh call for these runs, from their ledgers (JSON)

The code is proposal_nb.pipeline.confirm_job (nbs/39g_confirm_job.ipynb), where each piece is explained."""
from proposal_nb.pipeline.confirm_job import main

if __name__ == "__main__":
    main()
