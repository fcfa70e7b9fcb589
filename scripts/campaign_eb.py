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
import argparse, json, math
from datetime import datetime, timezone
from pathlib import Path
import pandas as pd
from proposal_nb.analysis.eb_check import *   # noqa: F403 (the check this command runs)
from proposal_nb.analysis.campaign import ZX
from proposal_nb.results import project_commit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path, help="the folder of published run folders")
    ap.add_argument("--level", type=float, default=0.9, help="central posterior probability of the interval")
    a = ap.parse_args(argv)
    from proposal_nb.results import save_chart
    from proposal_nb.results import read_json, read_table, write_json
    root, zx = a.published, a.published / ZX
    arms = [f.parent.name.removeprefix("campaign_") for f in sorted(root.glob("campaign_*/draws.parquet"))
            if (read_json(f.parent, "config") or {}).get("kind") == "train" and "log_uw" in read_table(f.parent, "draws").columns]
    if not arms: raise SystemExit(f"{root}: no campaign_<arm>/draws.parquet with log_uw")
    rows, summary = [], {}
    for arm in arms:
        cfg = read_json(root / f"campaign_{arm}", "config")
        pot = cfg.get("potential", "no_error")
        t = predictive_check(run_interval(read_table(root / f"campaign_{arm}", "draws"), a.level), independent_counts(zx, pot), a.level)
        rows.append(t.assign(arm=arm, potential=pot))
        inside, p = int(t.inside.sum()), t.p_inside.to_numpy()
        summary[arm] = dict(potential=pot, status=cfg.get("status", "complete"), prompts=len(t), inside=inside, expected=round(float(p.sum()), 2),
                            p_lower=round(poisson_binomial_cdf(p, inside), 4), median_width=round(float((t.hi - t.lo).median()), 4),
                            median_n=float(t.n.median()), median_ess=round(float(t.ess.median()), 1),
                            outside_low=int((t.k < t.k_lo).sum()), outside_high=int((t.k > t.k_hi).sum()))
        print(arm, json.dumps(summary[arm]))
    tab = pd.concat(rows, ignore_index=True)
    out = root / "campaign_eb_intervals"
    out.mkdir(parents=True, exist_ok=True)
    tab[["arm", "potential", "prompt_id", "n", "S", "ess", "lo", "mean", "hi", "A", "B", "k", "m", "k_lo", "k_hi", "inside", "p_inside"]].to_csv(out / "intervals.csv", index=False)
    write_json(out, "summary", summary)
    save_chart(chart(tab, a.level), out, "intervals")
    head = project_commit()
    write_json(out, "config", dict(kind="eb_intervals", arms=arms, level=a.level, source=dict(weights="campaign_<arm>/draws.parquet (log_uw)",
               independent=f"{ZX}/base_rollouts.parquet (r_<potential>)"),
               machine="CPU (the project's 2-core machine), from tables the nvidia-h200 device wrote (one NVIDIA H200, "
                       + ("bf16 and fp32 arms)" if any(a.endswith("_fp32") for a in arms) else "bf16)"),
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=head,
               command="python scripts/campaign_eb.py PUBLISHED [--level 0.9] (CPU; reads the published campaign folders only)",
               user_command=USER_COMMAND))
    wc = read_json(root / "campaign_weight_check", "summary") or {}
    f32 = (wc.get("dtype_check") or {}).get("float32", {})
    cause = (f" The H200 check traces it to bf16: the same iguana steps read {f32.get('mean_ratio', math.nan):.3f} ± {f32.get('se', math.nan):.3f} "
             "in fp32, and the fp32 arms of `campaign_fp32_plan` re-measure these intervals with exact weights."
             if (wc.get("dtype_verdict") or "").startswith("bf16") else "")
    pairs = [(a.removesuffix("_fp32"), a) for a in summary if a.endswith("_fp32") and a.removesuffix("_fp32") in summary]
    twins = "".join(f" {b}: {summary[b]['inside']} of {summary[b]['prompts']} inside (P {summary[b]['p_lower']:.2g}) against {a}'s {summary[a]['inside']} (P {summary[a]['p_lower']:.2g})."
                    for a, b in pairs)
    twins = f" With exact weights the intervals hold:{twins}" if twins else ""
    lines = [f"| {arm} | {s['potential']} | {s['status']} | {s['prompts']} | {s['inside']} | {s['expected']:.1f} | {s['p_lower']:.3g} | "
             f"{s['outside_low']} / {s['outside_high']} | {s['median_width']:.3f} | {s['median_n']:.0f} / {s['median_ess']:.1f} |" for arm, s in summary.items()]
    (out / "README.md").write_text(f"""# The normaliser's empirical-Bayes interval on the campaign's real runs

Built on CPU by `scripts/campaign_eb.py` from published tables only. For every online arm and training prompt,
`normalizer.eb_interval` (raw sums, level {a.level:g}) turns all of the run's importance weights on that prompt into a
Beta posterior for Z(x). It is checked against the base model's 20 independent draws of the same prompt in `{ZX}`,
graded with the arm's potential: k of them valid should fall in the central {a.level:.0%} set of the posterior's
Beta-binomial predictive. "Expected" is the sum of those sets' exact probabilities; "P(≤ inside)" is the exact
Poisson-binomial probability of so few prompts inside if the posteriors were right. Small values mean the intervals
are too narrow (or biased); "outside low / high" says on which side k fell.

| arm | potential | status | prompts | inside | expected | P(≤ inside) | outside low / high | median width | median n / ESS of the weights |
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(lines)}

The interval counts the run's n draws as n Bernoulli trials with S = Σ uw successes; weights that spread (ESS below n)
carry less information than that. The bf16 arms' weights are also biased upward: `campaign_weight_check` finds the mean of
p/q over their draws at 1.2-1.4 where it should be 1, which lifts S and would put k below the predictive set.{cause}{twins} Tables: `intervals.csv` (per arm and prompt: n, S, ESS, the interval, its posterior
Beta(A, B), k of m, the predictive set and its probability), `summary.json`, the chart `intervals.svg`.
""")


if __name__ == "__main__":
    main()
