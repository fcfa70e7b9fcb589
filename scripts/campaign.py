"""The published experiment on real runs (issue 16): every arm trained on the same split, seed and sample budget,
chained through GPU jobs of at most 10 minutes with exact resume.

    python scripts/campaign.py plan OUT                      # write the pre-registered campaign.json (before any run)
    python scripts/campaign.py base RUNS [--gguf FILE]           # the base arm's held-out draws (once per campaign)
    python scripts/campaign.py train ARM RUNS --deadline-s 480 [--gguf FILE] [--model PATH] [--no-eval]
    python scripts/campaign.py pack RUNS/ARM FILE.tar.gz      # what the next job needs: config, tables, adapters, newest state
    python scripts/campaign.py unpack FILE.tar.gz RUNS
    python scripts/campaign.py pack-runs RUNS FILE.tar.gz     # a whole job's runs for the next job, inside $OUT's 64 MiB
    python scripts/campaign.py rollouts RUNS                  # BC_DRAWS base draws per training prompt (filtered BC's data)
    python scripts/campaign.py train-bc ARM RUNS --deadline-s 480   # filtered BC, one epoch (resumable), then the held-out evaluation
    python scripts/campaign.py finished RUNS/ARM              # exit 0 when the arm's last job reached its last step
    python scripts/campaign.py report RUNS RESULTS          # run folders of every arm and the held-out evaluation (CPU)
    python scripts/campaign.py chain-check DIR --steps 6 --split-at 3 [--gguf FILE]
    python scripts/campaign.py calibration-plan OUT          # the calibration control v2's pre-registration (bundle size, task pool)
    python scripts/campaign.py plan-card OUT                 # the card arms' design alone (campaign_card.json)
    python scripts/campaign.py base-card RUNS                # the card sampler's own held-out draws (the card arms' reference)
    python scripts/campaign.py rollouts-card RUNS --deadline-s 480 [--close]   # card rollouts in resumable chunks
    python scripts/campaign.py train-bc bc_card RUNS         # filtered BC on card rollouts; held-out draws under the card and T = 1 priors
    python scripts/campaign.py report-card RUNS RESULTS      # campaign_card_eval: base_card, bc_card, base, bc_card_t1prior
    python scripts/campaign.py card-waste [--model PATH]     # share of base T = 1 draws outside the card's kept set (weight 0)
    python scripts/campaign.py plan-strict OUT               # the strict pair's pre-registration (campaign_strict.json, finding 3)
    python scripts/campaign.py base-strict RUNS [--model PATH]   # the base arm's held-out draws regraded with strict (CPU, no GPU)
    python scripts/campaign.py train iguana_strict RUNS ...  # (and iguana_kl_strict) trained and evaluated with r = strict
    python scripts/campaign.py plan-fp32 OUT CHECK           # the fp32 arms' pre-registration (campaign_fp32.json), from the weight check
    python scripts/campaign.py base-fp32 RUNS [--model PATH]  # the base arm's held-out draws in fp32 (the fp32 arms' reference)
    python scripts/campaign.py base-card-fp32 RUNS           # the card sampler's own held-out draws in fp32 (row 7's exact-weight reference)
    python scripts/campaign.py eval-card-fp32 RUNS           # bc_card's fitted adapter evaluated in fp32 (needs base_card_fp32, base_fp32)
    python scripts/campaign.py card-untrained RUNS           # the untrained T = 1 proposal weighed with the card prior, fp32, CPU-sized (row 7's control)
    python scripts/campaign.py report-card-untrained RUNS RESULTS   # campaign_card_untrained_control, beside RESULTS/campaign_card_fp32_eval
    python scripts/campaign.py train iguana_fp32 RUNS ...    # (and iguana_kl, msc, rb_msc, msc_m2 _fp32) a bf16 arm's settings in fp32

The code is proposal_nb.pipeline.campaign_job (nbs/39f_campaign_job.ipynb), where each piece is explained; the report and
the plans (report, calibration-plan, plan-strict, plan-fp32) are proposal_nb.pipeline.campaign_report (nbs/39i_campaign_report.ipynb),
the command line proposal_nb.pipeline.campaign_cli (nbs/39j_campaign_cli.ipynb); the card
sampler's arms (plan-card, base-card, rollouts-card, train-bc bc_card, report-card, card-waste, base-card-fp32, eval-card-fp32, card-untrained,
report-card-untrained)
are proposal_nb.pipeline.card_job (nbs/39h_card_job.ipynb)."""
from proposal_nb.pipeline.campaign_cli import main

if __name__ == "__main__":
    main()
