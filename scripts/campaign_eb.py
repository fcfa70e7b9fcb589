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
Writes PUBLISHED/campaign_eb_intervals (per-prompt table, summary, chart, config, README)."""
import argparse, importlib.util, json, math, subprocess
from datetime import datetime, timezone
from pathlib import Path
import numpy as np, pandas as pd

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("campaign_analysis", ROOT / "scripts" / "campaign_analysis.py")
ca = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(ca)
USER_COMMAND = ".venv/bin/python scripts/campaign_eb.py published"


def run_interval(draws:pd.DataFrame, # training draws: prompt_id, log_uw
                 level:float=0.9)->pd.DataFrame: # per prompt: n, S, ess, lo, mean, hi, A, B
    "The EB interval of every prompt's Z(x) from all of a run's weights (raw sums), with the posterior Beta(A, B) and the weights' ESS."
    import torch
    from scipy.special import logsumexp
    from proposal_nb.estimators import normalizer as nz
    from proposal_nb.estimators.weights import ess_np
    g = draws.groupby("prompt_id", sort=True).log_uw
    lw = g.apply(lambda x: float(logsumexp(x.to_numpy(float))))
    ess = g.apply(lambda x: float(ess_np(x.to_numpy(float)))).to_numpy()   # Kish ESS; 0 for a prompt whose weights are all 0
    n = g.size().astype(float)
    st = nz.init(len(n))
    st = st._replace(count=torch.tensor(n.to_numpy()), log_sum_raw=torch.tensor(lw.to_numpy()))
    iv = nz.eb_interval(st, level=level, raw=True)
    S = np.minimum(np.exp(lw.to_numpy()), n.to_numpy())
    return pd.DataFrame(dict(prompt_id=n.index, n=n.to_numpy(), S=S, ess=ess, lo=iv.lo.numpy(), mean=iv.mean.numpy(), hi=iv.hi.numpy(),
                             A=iv.a + S, B=iv.b + n.to_numpy() - S))

def predictive_check(iv:pd.DataFrame, # run_interval rows
                     indep:pd.DataFrame, # per prompt: prompt_id, k (valid), m (draws) of independent base draws
                     level:float=0.9)->pd.DataFrame: # iv with k, m, k_lo, k_hi, inside, p_inside
    "Whether each prompt's independent valid count lies in the central `level` set of its Beta-binomial predictive, and that set's exact probability."
    from scipy.stats import betabinom
    d = iv.merge(indep, on="prompt_id", how="inner")
    if len(d) < len(iv): raise ValueError(f"{len(iv) - len(d)} prompt(s) have no independent draws")
    dist = betabinom(d.m.to_numpy(int), d.A.to_numpy(), d.B.to_numpy())
    lo, hi = dist.ppf((1 - level) / 2), dist.ppf((1 + level) / 2)
    p = dist.cdf(hi) - dist.cdf(lo - 1)
    return d.assign(k_lo=lo, k_hi=hi, inside=(d.k >= lo) & (d.k <= hi), p_inside=p)

def poisson_binomial_cdf(p:np.ndarray, # success probabilities
                         x:int)->float: # P(Σ Bernoulli(p_i) ≤ x), exactly
    "Lower tail of the Poisson-binomial distribution, by dynamic programming."
    f = np.zeros(len(p) + 1); f[0] = 1.0
    for q in np.asarray(p, float):
        f[1:] = f[1:] * (1 - q) + f[:-1] * q; f[0] *= 1 - q
    return float(f[: x + 1].sum())

def independent_counts(zx:Path, potential:str)->pd.DataFrame:
    "k valid of m independent base draws per prompt, graded with `potential`."
    d = ca.zx_draws(zx, potential)
    g = d.groupby("prompt_id").valid
    return pd.DataFrame(dict(prompt_id=g.size().index, k=g.sum().round().astype(int).to_numpy(), m=g.size().to_numpy()))

def chart(tab:pd.DataFrame, level:float):
    "Per arm: each prompt's EB interval (posterior mean, central interval) against its independent estimate k/m."
    import altair as alt
    d = tab.assign(z_indep=tab.k / tab.m, fits=np.where(tab.inside, "k inside the predictive set", "k outside"))
    base = alt.Chart(d).encode(x=alt.X("z_indep:Q", title="Z(x) from 20 independent base draws (k / m)"),
                               color=alt.Color("fits:N", title=None, scale=alt.Scale(range=["#2a9d8f", "#e76f51"])))
    bars = base.mark_errorbar().encode(y=alt.Y("lo:Q", title=f"EB interval of Z(x) from the run's weights ({level:.0%})"), y2="hi:Q")
    pts = base.mark_point(filled=True, size=25).encode(y="mean:Q", tooltip=["arm", "prompt_id", "n", "ess", "lo", "mean", "hi", "k", "m"])
    diag = alt.Chart(pd.DataFrame(dict(x=[0, 1], y=[0, 1]))).mark_line(color="#999", strokeDash=[4, 4]).encode(x="x:Q", y="y:Q")
    return (bars + pts + diag).properties(width=210, height=210).facet(facet=alt.Facet("arm:N", title=None), columns=3).properties(
        title="The normaliser's empirical-Bayes interval for each training prompt's Z(x), against independent base draws")

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path, help="the folder of published run folders")
    ap.add_argument("--level", type=float, default=0.9, help="central posterior probability of the interval")
    a = ap.parse_args(argv)
    from proposal_nb.pipeline import save_chart
    from proposal_nb.results import read_json, read_table, write_json
    root, zx = a.published, a.published / ca.ZX
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
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip() or None
    write_json(out, "config", dict(kind="eb_intervals", arms=arms, level=a.level, source=dict(weights="campaign_<arm>/draws.parquet (log_uw)",
               independent=f"{ca.ZX}/base_rollouts.parquet (r_<potential>)"),
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
Beta posterior for Z(x). It is checked against the base model's 20 independent draws of the same prompt in `{ca.ZX}`,
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
