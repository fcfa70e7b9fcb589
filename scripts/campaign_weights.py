"""Are the campaign's importance weights right? An exact identity checked on the published draws (issue 16), CPU only.

    python scripts/campaign_weights.py PUBLISHED [--rescore RUNS/base/heldout_draws.parquet] [--n 160] [--seed 0]

For draws y ~ q, E_q[p(y)/q(y)] = 1 exactly when p and q are the densities the draws were sampled from: the same outcome
set (a completion that stops, or its first max_new_tokens tokens), full support at T = 1. The draws carry log p and log q
as the run scored them (bf16 on the GPU). The mean of p/q over a run's draws, with its standard error, should therefore
sit at 1; a mean above 1 says the scored ratio carries noise that the sampler did not. By Jensen, zero-mean noise e in
log(p/q) inflates the mean by about exp(var(e) / 2). Step 1 is left out: there the adapter is zero, so log p = log q
exactly, whatever the precision. The reverse identity, E_p[q/p] = 1, is checked on the reference's draws (y ~ p) as each
evaluation scored them under every checkpoint (prior.parquet): the same adapter, other draws.

With --rescore, n base draws (with token ids; the published tables have none) are rescored on this CPU in fp32 and in
bf16, so the size of bf16's per-sequence error in log p is measured directly. The rescoring is stored in the folder,
and a later run without --rescore reuses it. Writes PUBLISHED/campaign_weight_check.

The checks are proposal_nb.analysis.weight_check (nbs/37a_weight_check.ipynb), the model-side draws
proposal_nb.lm.weight_identity (nbs/26a_weight_identity.ipynb); this file is their command line."""
import argparse
from datetime import datetime, timezone
from pathlib import Path
import pandas as pd
from proposal_nb.analysis.weight_check import write_weight_check
from proposal_nb.lm.weight_identity import IDENTITY_SIGMA, identity_draws, perturbed_adapter, rescore


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path)
    ap.add_argument("--rescore", type=Path, default=None, help="a draws table with token ids (RUNS/base/heldout_draws.parquet) to rescore on CPU")
    ap.add_argument("--n", type=int, default=160, help="draws to rescore")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--identity", type=int, nargs=3, default=None, metavar=("PROMPTS", "DRAWS", "TOKENS"),
                    help="also draw from a perturbed-adapter embedded model on this CPU, in fp32 and in bf16, and check the identity there")
    ap.add_argument("--dtype-runs", type=Path, default=None,
                    help="RUNS/weight_check from the GPU (campaign_job.sh's arm weightcheck): store its draws and check the identity per dtype")
    a = ap.parse_args(argv)
    rescored = rs_src = identity = id_src = None
    if a.rescore is not None:
        rescored = rescore(a.rescore, a.n, a.seed)
        rs_src = dict(file=str(a.rescore), n=a.n, seed=a.seed, date=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    if a.identity is not None:
        from campaign import _tasks       # the campaign's split (scripts/campaign.py, beside this file)
        from proposal_nb.lm.models import embedded_model_path
        tasks = _tasks()[0][:a.identity[0]]
        parts = []
        for dt in ("float32", "bfloat16"):
            m, tok = perturbed_adapter(embedded_model_path(), dt, IDENTITY_SIGMA, a.seed)
            parts.append(identity_draws(m, tok, tasks, a.identity[1], a.identity[2], a.seed).assign(dtype=dt))
        identity = pd.concat(parts, ignore_index=True)
        id_src = dict(prompts=a.identity[0], draws=a.identity[1], max_new_tokens=a.identity[2], sigma=IDENTITY_SIGMA, seed=a.seed,
                      date=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    write_weight_check(a.published, rescored, rs_src, identity, id_src, a.dtype_runs)


if __name__ == "__main__":
    main()
