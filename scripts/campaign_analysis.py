"""The campaign's analyses on its published tables (issue 16), CPU only: break-even per arm on the real timings, Z/C-bin
trajectories and per-prompt up/down counts (held-out and training prompts), the skyline next to wacc, and the
distinct-program share next to pass@k.

    python scripts/campaign_analysis.py PUBLISHED [--n-boot 2000] [--seed 0]

Reads PUBLISHED/campaign_eval (the held-out evaluation), PUBLISHED/campaign_<arm> (training logs, training draws,
the jobs' ledgers) and PUBLISHED/h200_z_embedded (20 base draws per training prompt); writes
PUBLISHED/campaign_breakeven_<arm> (one per arm with a training log) and PUBLISHED/campaign_zbins.

GPU time: the arms trained side by side on one GPU, so a log's stage seconds are wall-clock seconds of a shared device.
Each job's seconds are split among the jobs that shared the GPU (scripts/campaign.py's `gpu_minutes`, applied per
job), and the device stages' seconds of each step are multiplied by its job's share; the checker's seconds (CPU) are
kept as measured. N* is a ratio of seconds measured under the same sharing, so a common factor cancels from it."""
import argparse, importlib.util, json, math, subprocess
from typing import NamedTuple
from datetime import datetime, timezone
from pathlib import Path
import numpy as np, pandas as pd

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("campaign", ROOT / "scripts" / "campaign.py")
campaign = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(campaign)

WINDOW = 25          # training steps per window of the training-prompt trajectories (~34 draws per prompt at 8 x 10 per step)
WINDOW_M = 10        # the M that WINDOW is for: an arm with M draws per prompt and step gets WINDOW x WINDOW_M / M steps (equal draws)
THRESHOLD = 0.2      # |change| above it is an up / down move (MISSION §5)
K_MAX = 50           # largest K of the base's best-of-K (closed form from Z, s)
NS = (1000, 10000, 100000)  # prompts served, for the amortized marks
ZX = "h200_z_embedded"      # the base model's Z(x) run: 20 draws per prompt, training and held-out split
USER_COMMAND = ".venv/bin/python scripts/campaign_analysis.py published"


# ---- GPU time of arms that shared one GPU ------------------------------------------------------------------------
def job_shares(configs:dict, # {arm: its campaign_<arm>/config.json} (jobs: start_step, end_step, wall_s, date, gpu)
               others:dict|None=None, # {name: ledger lines} of the other jobs that shared the GPU (base, rollouts, ...)
              )->pd.DataFrame: # one row per job: arm (other:NAME for `others`), job, start_step, end_step, wall_s, attributed_s, share
    "Each job's attributed seconds (campaign.gpu_minutes over every job of every arm and of `others`) and share = attributed / wall."
    ledgers = {f"{a}#{i}": [j] for a, c in configs.items() for i, j in enumerate(c.get("jobs", []))}
    if not ledgers: raise ValueError(f"no jobs in the configs of arms {sorted(configs)}")
    ledgers |= {f"other:{a}#{i}": [j] for a, js in (others or {}).items() if a not in configs for i, j in enumerate(js)}
    m = campaign.gpu_minutes(ledgers)
    rows = [dict(arm=a, job=i, start_step=int(j["start_step"]), end_step=int(j["end_step"]), wall_s=float(j["wall_s"]),
                 attributed_s=60 * m[f"{a}#{i}"]["attributed"]) for a, c in configs.items() for i, j in enumerate(c.get("jobs", []))]
    rows += [dict(arm=f"other:{a}", job=i, start_step=0, end_step=0, wall_s=float(j["wall_s"]), attributed_s=60 * m[f"other:{a}#{i}"]["attributed"])
             for a, js in (others or {}).items() if a not in configs for i, j in enumerate(js)]
    d = pd.DataFrame(rows)
    return d.assign(share=(d.attributed_s / d.wall_s).clip(upper=1.0))

def attributed_log(log:pd.DataFrame, # a training log: step, n_samples, t_<stage>
                   shares:pd.DataFrame, # job_shares rows of this arm
                   device_stages=("generation", "scoring", "update"), # stages timed on the GPU
                  )->pd.DataFrame: # the log with each device stage's seconds times its step's job share, and gpu_share
    "The log's device-stage seconds scaled by the share of the job that ran each step (step in (start_step, end_step])."
    s = shares.sort_values("start_step")
    idx = np.searchsorted(s.end_step.to_numpy(), log.step.to_numpy(), side="left")   # first job whose end_step >= step
    bad = (idx >= len(s)) | (log.step.to_numpy() <= s.start_step.to_numpy()[np.minimum(idx, len(s) - 1)])
    if bad.any(): raise ValueError(f"log step {int(log.step.to_numpy()[bad][0])} lies in no job of {s[['start_step', 'end_step']].values.tolist()}")
    share = s.share.to_numpy()[idx]
    out = log.copy()
    for st in device_stages: out[f"t_{st}"] = out[f"t_{st}"].to_numpy(float) * share
    return out.assign(gpu_share=share)


# ---- break-even ----------------------------------------------------------------------------------------------------
def breakeven_arm(arm:str, # the arm
                  ev:Path, # campaign_eval
                  train:Path, # campaign_<arm>
                  shares:pd.DataFrame, # job_shares of every arm
                  n_boot:int=2000, seed:int=0,
                  ref:str="base", # the evaluation's reference checkpoint (campaign_fp32_eval: base_fp32)
                 )->tuple:
    "BreakEven of one arm: base Z, s from the evaluation's reference draws, its checkpoints' per-prompt pass@1, attributed log."
    from proposal_nb.analysis.breakeven import breakeven, per_sample_costs, rates_from_table, training_bill, trained_from_table
    from proposal_nb.results import read_table
    pp = read_table(ev, "per_prompt")
    rates = rates_from_table(read_table(ev, "draws"), [ref])
    trained = trained_from_table(pp[pp.arm == arm][["prompt_id", "checkpoint", "step", "pass1"]])
    if trained.empty: raise ValueError(f"{ev}: no checkpoints of arm {arm!r} in per_prompt")
    log = read_table(train, "log")
    alog = attributed_log(log, shares[shares.arm == arm])
    costs = per_sample_costs(alog)
    bill = training_bill(sorted(trained.step.unique()), log=alog)
    be = breakeven(rates, trained, bill, costs, K_max=K_MAX, n_boot=n_boot, seed=seed)
    return be, dict(measured=per_sample_costs(log)._asdict(), attributed=costs._asdict(), rates=rates, log=alog, ev=Path(ev).name, ref=ref)

def is_online(log:pd.DataFrame)->bool:
    "A training log of the online loop (a t_<stage> column per stage) rather than a filtered-BC fit (t_update only)."
    from proposal_nb.analysis.breakeven import STAGES
    return all(f"t_{st}" in log.columns for st in STAGES)

def pooled_costs(logs:list)->object:
    "Per-sample seconds of each stage pooled over attributed online logs (Σ seconds / Σ samples): this model's serving costs."
    from proposal_nb.analysis.breakeven import per_sample_costs
    if not logs: raise ValueError("no online log to take the serving costs from")
    return per_sample_costs(pd.concat(logs, ignore_index=True))

def offline_bill(arm:str, # an offline (filtered-BC) arm
                 steps:int, # its batches (the one checkpoint)
                 shares:pd.DataFrame, # job_shares rows, the rollouts job among them (arm other:rollouts)
                 draws:int, # rollouts drawn (each checked once)
                 costs, # serving costs (pooled_costs): the checker's seconds per sample
                 rollouts:str="rollouts", # the rollout job's ledger name
                )->pd.DataFrame: # one row: step, samples, checker_calls, wall_s, gpu_h
    """The training bill of a filtered-BC fit: its rollouts (every draw checked once) and its fit. The rollout job's seconds
    less its checker seconds (draws x the checker's measured seconds per sample) are generation on the GPU, scaled by the job's
    share; the fit's seconds (train_s of each job) by their jobs' shares; the checker as measured."""
    r, f = shares[shares.arm == f"other:{rollouts}"], shares[shares.arm == arm]
    if r.empty: raise ValueError(f"no {rollouts} job among the shared jobs: the bill of {arm} needs it")
    if f.empty: raise ValueError(f"no job of {arm}")
    check_s, wall = draws * costs.potential, float(r.wall_s.sum())
    gen_s = max(wall - check_s, 0.0) * float(r.attributed_s.sum()) / wall       # the rollout job's GPU seconds at its share
    fit_s = float((f.train_s * f.share).sum())
    return pd.DataFrame(dict(step=[steps], samples=[float(draws)], checker_calls=[float(draws)], wall_s=[gen_s + check_s + fit_s],
                             gpu_h=[(gen_s + fit_s) / 3600]))

def breakeven_offline(arm:str, ev:Path, train:Path, shares:pd.DataFrame, costs, n_boot:int=2000, seed:int=0)->tuple:
    "BreakEven of a filtered-BC arm: the base's Z, s, its checkpoint's per-prompt pass@1, and offline_bill (rollouts + fit)."
    from proposal_nb.analysis.breakeven import breakeven, rates_from_table, trained_from_table
    from proposal_nb.results import read_json, read_table
    pp = read_table(ev, "per_prompt")
    trained = trained_from_table(pp[pp.arm == arm][["prompt_id", "checkpoint", "step", "pass1"]])
    if trained.empty: raise ValueError(f"{ev}: no checkpoint of arm {arm!r} in per_prompt")
    jobs = read_json(train, "config")["jobs"]
    sh = shares.merge(pd.DataFrame([dict(arm=arm, job=i, train_s=float(j["train_s"])) for i, j in enumerate(jobs)]), on=["arm", "job"], how="left")
    bill = offline_bill(arm, int(trained.step.max()), sh.fillna(dict(train_s=0.0)), int(jobs[-1]["samples"]), costs)
    rates = rates_from_table(read_table(ev, "draws"), ["base"])
    be = breakeven(rates, trained, bill, costs, K_max=K_MAX, n_boot=n_boot, seed=seed)
    note = (f"bill: the {int(bill.samples.iloc[0]):,} base rollouts (each checked once; the rollout job's seconds less its checker "
            f"seconds are GPU generation, at the job's share) and the fit's train_s at its jobs' shares; serving: seconds per sample "
            f"pooled over the online arms' attributed logs (the same model and engine)")
    return be, dict(measured=costs._asdict(), attributed=costs._asdict(), rates=rates,
                    source=f"campaign_eval jobs (rollouts) + campaign_{arm}/config.json jobs (train_s)", bill_note=note)

def u_statement(pc:pd.DataFrame, # per_checkpoint, in step order
                n:int, # prompts behind the CIs
               )->dict: # per currency: the step of the smallest N*, whether it is interior, the U rule's verdict and note
    "Where N* is smallest over the checkpoints, per currency, and the findings table's U rule on it."
    from proposal_nb.analysis.breakeven import CURRENCIES
    from proposal_nb.analysis.findings import rule_u_shape
    out = {}
    for c in CURRENCIES:
        cur = pd.DataFrame(dict(nstar=pc[f"nstar_{c}"], lo=pc[f"nstar_{c}_lo"], hi=pc[f"nstar_{c}_hi"])).astype(float).reset_index(drop=True)
        call = rule_u_shape(cur, n)
        j = int(np.argmin(cur.nstar)) if np.isfinite(cur.nstar).any() else None
        out[c] = dict(steps=[int(s) for s in pc.step], nstar=[None if not math.isfinite(x) else round(x, 1) for x in cur.nstar],
                      min_step=None if j is None else int(pc.step.iloc[j]), interior=j is not None and 0 < j < len(cur) - 1,
                      verdict=call.verdict, need_prompts=call.need, note=call.note)
    return out

def provenance(sources:dict, # {folder name: its config.json}
               what:str, # what the folder holds
              )->dict:
    "machine, date, commit, command and user_command of a folder built here from published tables."
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip() or None
    dtype = "fp32" if any("fp32" in str((v or {}).get("machine", "")) for v in sources.values()) else "bf16"   # the sources' model dtype
    return dict(what=what, machine=f"CPU (the project's 2-core machine), from tables the nvidia-h200 device wrote (one NVIDIA H200, {dtype})",
                date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=head,
                command="python scripts/campaign_analysis.py PUBLISHED (CPU; reads the published campaign folders only)",
                user_command=USER_COMMAND,
                sources={k: dict(date=v.get("date"), commit=v.get("commit"), status=v.get("status", "complete"))
                         for k, v in sources.items()})

def write_breakeven(out:Path, # the folder campaign_breakeven_<arm>
                    arm:str, be, extra:dict, shares:pd.DataFrame, sources:dict, n_boot:int, seed:int)->dict:
    "The break-even folder of one arm through the results contract: tables, timing.json, summary.json, charts, config.json."
    from proposal_nb.analysis.breakeven import amortized_marks, export_breakeven, plot_curve, plot_nstar
    from proposal_nb.pipeline import save_chart
    from proposal_nb.results import read_json, write_json, write_table
    export_breakeven(be, out, source=extra.get("source", f"campaign_{arm}/log.parquet, device stages x job share"))
    write_table(out, "amortized", amortized_marks(be, NS))
    timing = read_json(out, "timing")
    timing |= dict(seconds_per_sample_measured=extra["measured"], seconds_per_sample_attributed=extra["attributed"],
                   **({"bill_note": extra["bill_note"]} if "bill_note" in extra else {}),
                   jobs=shares[shares.arm == arm].drop(columns="arm").to_dict("records"),
                   note=extra.get("bill_note", "measured: the log's stage seconds on a GPU shared by 2-5 jobs; attributed: device stages x "
                                                 "the job's share (seconds_per_sample = attributed, used for every currency)"))
    write_json(out, "timing", timing)
    for cur in ("wall_s", "checker_calls", "gpu_h"): save_chart(plot_curve(be, cur, NS), out, f"curve_{cur}")
    save_chart(plot_nstar(be), out, "nstar")
    pc, n = be.per_checkpoint, len(extra["rates"])
    evn, ref = extra.get("ev", "campaign_eval"), extra.get("ref", "base")   # the evaluation and its reference checkpoint
    summary = dict(arm=arm, prompts=n, base_draws_per_prompt=int(extra["n_base"]), checkpoints=[str(c) for c in pc.checkpoint],
                   base_pass1=float(be.curve.pass1.iloc[0]), pass1={str(c): round(float(p), 4) for c, p in zip(pc.checkpoint, pc.pass1)},
                   k_eq={str(c): round(float(k), 3) for c, k in zip(pc.checkpoint, pc.k_eq)},
                   bill_gpu_h={str(c): round(float(b), 5) for c, b in zip(pc.checkpoint, pc.train_gpu_h)},
                   u_shape=u_statement(pc, n), n_boot=n_boot, eval=evn, ref=ref, status=sources[f"campaign_{arm}"].get("status", "complete"))
    write_json(out, "summary", summary)
    (out / "README.md").write_text(readme_breakeven(arm, pc, summary, timing))
    cfg = dict(kind="breakeven", arm=arm, out_dir=str(out), source=dict(rates=f"{evn}/draws.parquet (checkpoint {ref})",
               trained=f"{evn}/per_prompt.csv (arm {arm}: pass1)", log=extra.get("source", f"campaign_{arm}/log.parquet"),
               shares="campaign_<arm>/config.json jobs (every arm), scripts/campaign.py gpu_minutes"),
               base_checkpoints=[ref], checkpoints={str(c): int(s) for c, s in zip(pc.checkpoint, pc.step)}, K_max=K_MAX, Ns=list(NS),
               device_stages=list(be.device_stages), n_boot=n_boot, seed=seed,
               **provenance(sources, f"break-even of {arm} on the campaign's real timings (MISSION §7)"))
    write_json(out, "config", cfg)
    return summary


# ---- Z/C bins: held-out and training prompts -------------------------------------------------------------------------
class View(NamedTuple):
    "Which held-out evaluation the bins read, its reference checkpoint, and the potential that grades validity."
    ev: str = "campaign_eval"        # the evaluation folder
    ref: str = "base"                # its reference checkpoint (the base model's own draws)
    potential: str = "no_error"      # the potential of validity (a column r_<potential> of the Z(x) run's base_rollouts)

CAMPAIGN, STRICT, FP32 = View(), View("campaign_strict_eval", "base_strict", "strict"), View("campaign_fp32_eval", "base_fp32")

def zx_draws(zx:Path, potential:str="no_error")->pd.DataFrame:
    "The Z(x) run's base draws graded with `potential` (valid = r_<potential>; correct = correctness and valid)."
    from proposal_nb.results import read_table
    d = read_table(zx, "base_rollouts")
    if f"r_{potential}" not in d.columns: raise ValueError(f"{zx.name}/base_rollouts has no column r_{potential}; has {list(d.columns)}")
    v = d[f"r_{potential}"].to_numpy(float)
    return d.assign(valid=v, correct=d.r_correctness.to_numpy(float) * (v > 0))

def binned(rates:pd.DataFrame, # prompt_rates rows (prompt_id, Z, C, ...)
           by:str="Z", # the rate that bins: Z or C (the same edges)
          )->pd.DataFrame: # prompt_id, zbin (the bin of `by`), Z, C
    "Per prompt: the bin of its Z (or of its C, with the same edges) in the column zbin that analysis.zbins reads."
    from proposal_nb.analysis.zbins import z_bin
    if by not in ("Z", "C"): raise ValueError(f"by must be 'Z' or 'C', got {by!r}")
    return rates[["prompt_id", "Z", "C"]].assign(zbin=z_bin(rates[by]))

def bin_labels(zbin:pd.Series, # bin labels of analysis.zbins (named after Z)
               binning:str, # what binned: a name starting with 'C' relabels them after C
              )->pd.Series:
    "Bin labels as strings, named after the rate that binned (C=0, 0<C≤.1, ... for C bins)."
    z = zbin.astype(str)
    return z.str.replace("Z", "C", regex=False) if binning.startswith("C") else z


def arm_window(config:dict, # campaign_<arm>/config.json (training.loop.M)
              )->int: # steps per window
    "Steps per training window that hold as many draws as WINDOW steps at M = WINDOW_M (msc_m2, M = 2: 125 steps)."
    M = int(config["training"]["loop"]["M"])
    if M < 1: raise ValueError(f"M must be >= 1, got {M}")
    return max(1, round(WINDOW * WINDOW_M / M))

def window_rates(draws:pd.DataFrame, # training draws: step, prompt_id, valid
                 window:int=WINDOW, # steps per window
                 last_step:int|None=None, # the last step trained (default: the table's); only whole windows are kept
                )->pd.DataFrame: # prompt_id, checkpoint ('steps a-b'), step (b), n, validity
    "Per training prompt and whole window of `window` steps: draws and validity."
    if window < 1: raise ValueError(f"window must be >= 1, got {window}")
    last = int(draws.step.max() if last_step is None else last_step)
    d = draws[draws.step <= last - last % window]
    if d.empty: raise ValueError(f"no whole window of {window} steps up to step {last}")
    w = (d.step.to_numpy() - 1) // window
    g = d.assign(w=w).groupby(["w", "prompt_id"], sort=True).valid.agg(["size", "mean"]).reset_index()
    return pd.DataFrame(dict(prompt_id=g.prompt_id, checkpoint=[f"steps {k * window + 1}-{(k + 1) * window}" for k in g.w],
                             step=(g.w + 1) * window, n=g["size"], validity=g["mean"]))

def move_counts(pp:pd.DataFrame, # per prompt x checkpoint: metric and n (draws behind it)
                rates:pd.DataFrame, # binned()
                a:str, b:str, # checkpoints compared (b − a)
                metric:str, # a binomial rate column
                threshold:float=THRESHOLD)->tuple[pd.DataFrame, pd.DataFrame]:
    "up_down's per-prompt moves and counts per bin, with the expected counts under no change (null_up, null_down)."
    from proposal_nb.analysis.zbins import null_moves, up_down
    moves, counts = up_down(pp, rates, a, b, metric, threshold)
    moves = moves.rename(columns=dict(a="value_a", b="value_b"))
    n = pp.pivot(index="prompt_id", columns="checkpoint", values="n")
    na, nb = n.loc[moves.prompt_id, a].to_numpy(), n.loc[moves.prompt_id, b].to_numpy()
    pool = (moves.value_a.to_numpy() * na + moves.value_b.to_numpy() * nb) / (na + nb)       # the rate under no change (its MLE)
    moves["null_up"], moves["null_down"] = null_moves(na, nb, pool, threshold)
    nul = moves.groupby(moves.zbin.astype(str))[["null_up", "null_down"]].sum()
    nul.loc["all"] = nul.sum()
    counts = counts.assign(zbin=counts.zbin.astype(str)).merge(nul, left_on="zbin", right_index=True, how="left")
    counts[["null_up", "null_down"]] = counts[["null_up", "null_down"]].fillna(0.0)
    return moves, counts.assign(prompts=counts[["up", "flat", "down"]].sum(axis=1))

def heldout_bins(ev:Path, zx:Path, n_boot:int=2000, seed:int=0, view:View=CAMPAIGN)->tuple:
    "Held-out trajectories per bin (validity, wacc, pass1 by Z; pass1 by C; validity by an independent Z) and up/down vs the reference."
    from proposal_nb.analysis.evaluation import prompt_rates
    from proposal_nb.analysis.zbins import bin_trajectories
    from proposal_nb.results import read_table
    pp, draws = read_table(ev, "per_prompt"), read_table(ev, "draws")
    rates = prompt_rates(draws, checkpoints=[view.ref])
    indep = prompt_rates(zx_draws(zx, view.potential))
    indep = indep[indep.prompt_id.isin(rates.prompt_id)]
    if len(indep) != len(rates): raise ValueError(f"{zx.name} lacks held-out prompt(s) {sorted(set(rates.prompt_id) - set(indep.prompt_id))[:3]}")
    meta = pp[["checkpoint", "arm", "step"]].drop_duplicates()
    combos = [("Z", "validity", binned(rates)), ("Z", "wacc", binned(rates)), ("Z", "pass1", binned(rates)), ("C", "pass1", binned(rates, "C")),
              (f"Z ({zx.name}, 20 other draws)", "validity", binned(indep))]
    traj = pd.concat([bin_trajectories(pp, r, m, n_boot=n_boot, seed=seed).assign(binning=b, metric=m) for b, m, r in combos])
    traj = traj.merge(meta, on="checkpoint").assign(split="heldout")
    traj["zbin"] = [z.replace("Z", "C") if b.startswith("C") else z for z, b in zip(traj.zbin.astype(str), traj.binning)]
    n = draws.groupby(["prompt_id", "checkpoint"]).size().rename("n").reset_index()
    ppn = pp.merge(n, on=["prompt_id", "checkpoint"])
    moves, counts = [], []
    for ck, arm in meta[meta.arm != view.ref][["checkpoint", "arm"]].itertuples(index=False):
        for b, m, r in combos[:1] + combos[3:4]:
            mv, ct = move_counts(ppn, r, view.ref, ck, m)
            mv["zbin"], ct["zbin"] = bin_labels(mv.zbin, b), bin_labels(ct.zbin, b)
            moves.append(mv.assign(split="heldout", arm=arm, a=view.ref, b=ck, metric=m, binning=b))
            counts.append(ct.assign(split="heldout", arm=arm, a=view.ref, b=ck, metric=m, binning=b))
    return rates, traj, pd.concat(moves, ignore_index=True), pd.concat(counts, ignore_index=True)

def training_bins(root:Path, arms:list, zx:Path, n_boot:int=2000, seed:int=0, potential:str="no_error")->tuple:
    "Training-prompt validity per window of steps and Z bin (Z from the base draws of `zx`), and first vs last window up/down."
    from proposal_nb.analysis.evaluation import prompt_rates
    from proposal_nb.analysis.zbins import bin_trajectories
    from proposal_nb.results import read_json, read_table
    z = prompt_rates(zx_draws(zx, potential))
    traj, moves, counts = [], [], []
    for arm in arms:
        d = read_table(root / f"campaign_{arm}", "draws")
        miss = sorted(set(d.prompt_id) - set(z.prompt_id))
        if miss: raise ValueError(f"campaign_{arm}: training prompt(s) {miss[:3]} have no base draws in {zx.name}")
        r = binned(z[z.prompt_id.isin(set(d.prompt_id))])
        win = window_rates(d, arm_window(read_json(root / f"campaign_{arm}", "config")), int(d.step.max()))
        base = pd.DataFrame(dict(prompt_id=r.prompt_id, checkpoint=f"base ({zx.name})", step=0,
                                 n=z.set_index("prompt_id").n.reindex(r.prompt_id).to_numpy(), validity=r.Z))
        pp = pd.concat([base, win], ignore_index=True)
        t = bin_trajectories(pp, r, "validity", n_boot=n_boot, seed=seed)
        traj.append(t.merge(pp[["checkpoint", "step"]].drop_duplicates(), on="checkpoint").assign(arm=arm, split="training", binning="Z", metric="validity"))
        first, last = win.checkpoint.iloc[0], win.sort_values("step").checkpoint.iloc[-1]
        mv, ct = move_counts(pp, r, first, last, "validity")
        moves.append(mv.assign(split="training", arm=arm, a=first, b=last, metric="validity", binning="Z"))
        counts.append(ct.assign(split="training", arm=arm, a=first, b=last, metric="validity", binning="Z"))
    cat = lambda x: pd.concat(x, ignore_index=True)
    return cat(traj).assign(zbin=lambda d: d.zbin.astype(str)), cat(moves), cat(counts)


# ---- skyline next to wacc; distinct share next to pass@k --------------------------------------------------------
def skyline_table(rates:pd.DataFrame, # prompt_rates of the base's held-out draws
                  summary:pd.DataFrame, # campaign_eval summary
                  paired:pd.DataFrame, # campaign_eval paired
                  n_boot:int=2000, seed:int=0, ref:str="base")->pd.DataFrame:
    "Per checkpoint: wacc and pass@1 (CIs), the macro and pooled skyline (CIs) and wacc − macro skyline; paired wacc − base."
    from proposal_nb.analysis.evaluation import skyline
    sky = skyline(rates, n_boot, seed=seed)
    w = summary[summary.metric.isin(["wacc", "pass1"])].pivot(index=["arm", "checkpoint", "step"], columns="metric", values=["estimate", "lo", "hi"])
    w.columns = [m if s == "estimate" else f"{m}_{s}" for s, m in w.columns]
    w = w.reset_index().sort_values(["arm", "step"], key=lambda c: c.map({ref: ""}).fillna(c) if c.name == "arm" else c)
    pw = paired[(paired.a == ref) & (paired.metric == "wacc")][["b", "diff", "lo", "hi"]]
    w = w.merge(pw.rename(columns=dict(b="checkpoint", diff="dwacc_base", lo="dwacc_base_lo", hi="dwacc_base_hi")), on="checkpoint", how="left")
    return w.assign(**sky._asdict(), gap_macro=lambda d: d.wacc - sky.macro, prompts=len(rates), base_draws_per_prompt=int(rates.n.min()))

def coverage_table(summary:pd.DataFrame, # campaign_eval summary
                  )->pd.DataFrame: # per checkpoint: pass@k for every k, distinct (with CIs)
    "pass@1 … pass@40 and the distinct-program share among valid draws, side by side per checkpoint."
    ks = [m for m in summary.metric.unique() if m == "pass1" or m.startswith("pass@")]
    s = summary[summary.metric.isin(ks + ["distinct"])]
    w = s.pivot(index=["arm", "checkpoint", "step"], columns="metric", values="estimate")[ks + ["distinct"]]
    ci = s[s.metric.isin(["distinct", ks[-1]])].pivot(index=["arm", "checkpoint", "step"], columns="metric", values=["lo", "hi"])
    ci.columns = [f"{m}_{x}" for x, m in ci.columns]
    return w.join(ci).reset_index()


# ---- charts ------------------------------------------------------------------------------------------------------
def _alt():
    import altair as alt
    return alt

def chart_bins(traj:pd.DataFrame, # trajectories (zbin, step, arm, estimate, lo, hi, prompts)
               title:str, # the chart's title
               xtitle:str="training step (0: base)", # the step axis' title
              )->object:
    "Per arm (facet): one line per bin over training steps (symlog axis; base at 0) with its 95% CI band."
    alt = _alt()
    from proposal_nb.analysis.zbins import Z_BIN_LABELS
    d = traj.dropna(subset=["estimate"])
    x = alt.X("step:Q", scale=alt.Scale(type="symlog"), title=xtitle)
    col = alt.Color("zbin:N", sort=list(Z_BIN_LABELS) + [z.replace("Z", "C") for z in Z_BIN_LABELS], title="bin")
    base = alt.Chart(d).encode(x=x, color=col)
    ch = (base.mark_area(opacity=0.12).encode(y=alt.Y("lo:Q", title="mean over the bin's prompts (95% CI)"), y2="hi:Q")
          + base.mark_line(point=True).encode(y="estimate:Q", tooltip=["arm", "checkpoint", "zbin", "prompts", "estimate", "lo", "hi"]))
    return ch.properties(width=190, height=170).facet(column=alt.Column("arm:N", title=None)).properties(title=title)

def chart_moves(counts:pd.DataFrame, # move_counts rows of one split and metric (zbin, up, down, null_up, null_down, arm)
                title:str)->object:
    "Per arm: prompts per bin that moved up (+) / down (−), with the count noise alone would give (black ticks)."
    alt = _alt()
    from proposal_nb.analysis.zbins import Z_BIN_LABELS
    c = counts[counts.zbin != "all"].drop(columns="prompts", errors="ignore")
    obs = c.melt(id_vars=["arm", "zbin"], value_vars=["up", "down"], var_name="move", value_name="prompts").assign(kind="observed")
    nul = c.rename(columns=dict(null_up="up_", null_down="down_")).melt(id_vars=["arm", "zbin"], value_vars=["up_", "down_"],
                                                                        var_name="move", value_name="prompts")
    d = pd.concat([obs, nul.assign(move=nul.move.str.rstrip("_"), kind="expected under no change")], ignore_index=True)
    d["signed"] = np.where(d.move == "down", -d.prompts, d.prompts)
    x = alt.X("zbin:N", sort=list(Z_BIN_LABELS) + [z.replace("Z", "C") for z in Z_BIN_LABELS], title="bin")
    base = alt.Chart(d).encode(x=x, tooltip=["arm", "zbin", "move", "kind", alt.Tooltip("prompts:Q", format=".2f")])
    bars = base.transform_filter(alt.datum.kind == "observed").mark_bar().encode(
        y=alt.Y("signed:Q", title="prompts up (+) / down (−)"),
        color=alt.Color("move:N", scale=alt.Scale(domain=["up", "down"], range=["#2a9d8f", "#e76f51"])))
    ticks = base.transform_filter(alt.datum.kind != "observed").mark_tick(color="black", thickness=2).encode(y="signed:Q")
    return (bars + ticks).properties(width=150, height=160).facet(column=alt.Column("arm:N", title=None)).properties(title=title)

def chart_skyline(sk:pd.DataFrame)->object:
    "wacc per checkpoint (95% CI) against training step, one colour per arm; the macro (solid) and pooled (dashed) skyline."
    alt = _alt()
    x = alt.X("step:Q", scale=alt.Scale(type="symlog"), title="training step (0: base)")
    pts = alt.Chart(sk).encode(x=x, color=alt.Color("arm:N"))
    rules = alt.Chart(pd.DataFrame(dict(y=[sk.macro.iloc[0], sk.pooled.iloc[0]], what=["skyline, macro", "skyline, pooled"]))).mark_rule().encode(
        y="y:Q", strokeDash=alt.StrokeDash("what:N", title=None), tooltip=["what", "y"])
    return (pts.mark_errorbar().encode(y=alt.Y("wacc_lo:Q", title="wacc (95% CI)"), y2="wacc_hi:Q")
            + pts.mark_line(point=True).encode(y="wacc:Q", tooltip=["checkpoint", "wacc", "wacc_lo", "wacc_hi", "gap_macro"]) + rules
           ).properties(width=420, height=260, title="wacc against the skyline of the base's held-out draws")

def chart_coverage(cov:pd.DataFrame, # coverage_table
                   last:list, # the checkpoints drawn in the pass@k panel (with the reference)
                   ref:str="base", # the reference checkpoint
                  )->object:
    "Left: pass@k against k for base and each arm's last checkpoint; right: distinct share among valid draws against step."
    alt = _alt()
    ks = [c for c in cov.columns if c == "pass1" or (c.startswith("pass@") and not c.endswith(("_lo", "_hi")))]
    long = cov[cov.checkpoint.isin([ref, *last])].melt(id_vars=["arm", "checkpoint", "step"], value_vars=ks, var_name="metric", value_name="pass_at_k")
    long["k"] = long.metric.map(lambda m: 1 if m == "pass1" else int(m.split("@")[1]))
    left = alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("k:Q", scale=alt.Scale(type="log"), title="k (draws)"), y=alt.Y("pass_at_k:Q", title="pass@k"),
        color=alt.Color("checkpoint:N"), tooltip=["checkpoint", "k", "pass_at_k"]).properties(width=300, height=240,
                                                                                     title="pass@k (base and each arm's last checkpoint)")
    right = alt.Chart(cov).encode(x=alt.X("step:Q", scale=alt.Scale(type="symlog"), title="training step (0: base)"), color="arm:N")
    right = (right.mark_errorbar().encode(y=alt.Y("distinct_lo:Q", title="distinct programs among valid draws"), y2="distinct_hi:Q")
             + right.mark_line(point=True).encode(y="distinct:Q", tooltip=["checkpoint", "distinct", "distinct_lo", "distinct_hi"])
             ).properties(width=260, height=240, title="distinct share")
    return alt.hconcat(left, right)


# ---- README of each folder: the numbers it holds, with their sample sizes ------------------------------------------
def _ci(e, lo, hi, d=3)->str:
    f = lambda x: "∞" if not math.isfinite(x) else (f"{x:,.0f}" if abs(x) >= 100 else f"{x:.{d}f}")
    return f"{f(e)} [{f(lo)}, {f(hi)}]"

def readme_breakeven(arm:str, pc:pd.DataFrame, summary:dict, timing:dict)->str:
    "README.md of a break-even folder."
    rows = ["| checkpoint | pass@1 | K_eq | N* checker calls | N* wall-clock | N* GPU-hours | bill (GPU-h) |", "|---|---|---|---|---|---|---|"]
    for _, r in pc.iterrows():
        rows.append(f"| {r.checkpoint} | {_ci(r.pass1, r.pass1_lo, r.pass1_hi)} | {_ci(r.k_eq, r.k_eq_lo, r.k_eq_hi, 2)} | "
                    + " | ".join(_ci(r[f"nstar_{c}"], r[f"nstar_{c}_lo"], r[f"nstar_{c}_hi"]) for c in ("checker_calls", "wall_s", "gpu_h"))
                    + f" | {r.train_gpu_h:.4f} |")
    u = summary["u_shape"]
    us = "; ".join(f"{c}: smallest N* at step {v['min_step']} ({'interior' if v['interior'] else 'an end'}), U rule: {v['verdict']}"
                   + (f" ({v['note']})" if v["note"] else "") + (f", decided at about {v['need_prompts']} prompts" if v["need_prompts"] else "")
                   for c, v in u.items())
    sp, sm = timing["seconds_per_sample_attributed"], timing["seconds_per_sample_measured"]
    secs = (f"""Seconds per sample (attributed: device stages x the job's share of the shared GPU; the checker as measured): generation
{sp['generation']:.4f}, checker {sp['potential']:.4f}, scoring {sp['scoring']:.4f}, update {sp['update']:.4f}
(as measured on the shared GPU: {sm['generation']:.4f}, {sm['potential']:.4f}, {sm['scoring']:.4f}, {sm['update']:.4f}).""" if "bill_note" not in timing else
            f"""This arm trains offline: {timing['bill_note']}. Serving seconds per sample: generation {sp['generation']:.4f}, checker
{sp['potential']:.4f}.""")
    return f"""# Break-even of {arm} on the campaign's real timings (MISSION §7)

Built on CPU by `scripts/campaign_analysis.py` from published tables only: the base's Z(x), s(x) from its
{summary['base_draws_per_prompt']} held-out draws per prompt ({summary['prompts']} held-out prompts, `{summary.get('eval', 'campaign_eval')}`, checkpoint `{summary.get('ref', 'base')}`), each checkpoint's
per-prompt pass@1 from its own {summary['base_draws_per_prompt']} draws per prompt, and the training cost of `campaign_{arm}`
(status: {summary['status']}). 95% prompt-bootstrap CIs ({summary['n_boot']:,} resamples, the base curve and the checkpoint resampled together).
Base pass@1 {summary['base_pass1']:.3f}; best-of-K in closed form from Z, s up to K = {K_MAX}.

{chr(10).join(rows)}

Where N* is smallest, per currency: {us}. N* = ∞: the checkpoint's pass@1 does not exceed the base's, so it never pays.

{secs}
N* is a ratio of seconds measured the same way, so a common sharing factor cancels from it; the bills' levels depend on it.
"""

def readme_zbins(s:dict, updown:pd.DataFrame)->str:
    "README.md of the Z/C-bin folder."
    ph, pt = s["prompts_per_zbin"]["heldout"], s["prompts_per_zbin"]["training"]
    ud = updown[updown.zbin == "all"]
    lines = [f"| {r.split} | {r.arm} | {r.a} → {r.b} | {r.metric} | {int(r.up)} | {int(r.down)} | {r.null_up:.2f} / {r.null_down:.2f} |"
             for r in ud.itertuples() if r.split == "training" or r.b in s["last_checkpoints"].values()]
    hw = s["median_ci_half_width"]
    low = sum(v for k, v in ph.items() if k in ("Z=0", "0<Z≤.1"))
    empty = (f"The Z bins below Z = 0.1 are empty, so the anchor's question about Z ≈ 0 prompts cannot be asked of validity here; "
             f"correctness has {s['prompts_per_cbin_heldout'].get('C=0', 0)} prompts at C = 0.") if low == 0 else \
            f"{low} held-out prompts lie at Z ≤ 0.1."
    z0 = ph.get("Z=0", 0)
    zero = (f" {z0} held-out prompts have no valid draw among the reference's: their s(x) counts as 0, so the macro skyline is no "
            f"ceiling for an arm that finds valid programs there, and a wacc above it is possible.") if z0 else ""
    return f"""# Z/C bins, up/down counts, skyline and coverage: {s['evaluation']}, validity {s['potential']} (MISSION §5)

Built on CPU by `scripts/campaign_analysis.py` from published tables only.

- **Held-out:** {s['heldout_prompts']} prompts; Z(x), C(x) from the reference `{s['reference']}`'s {s['base_draws_per_prompt']} draws per prompt (`{s['evaluation']}`). Prompts per Z bin:
  {', '.join(f'{k}: {v}' for k, v in ph.items())}; per C bin (pass@1 is read by C bin): {', '.join(f'{k}: {v}' for k, v in s['prompts_per_cbin_heldout'].items())}.
  {empty}
  The base point of each bin is made of the draws that define the bin (regression to the mean lifts the low bins a little);
  `bins.csv` also bins the held-out prompts by {ZX}'s 20 other base draws per prompt.
- **Training:** {s['training_prompts']} prompts; Z(x) under {s['potential']} from {ZX} ({s['training_base_draws_per_prompt']} base draws per prompt). Prompts per Z bin:
  {', '.join(f'{k}: {v}' for k, v in pt.items())}. Validity per whole window of {s['window_steps']} steps at M = {s.get('window_m', 10)} (8 prompts x 10 draws a step: 10 to 40
  draws per prompt and window; an arm with another M gets as many draws a window, msc_m2's windows are 125 steps); training draws are not graded for correctness, so training prompts have Z bins and validity only.
- **CIs:** 95% prompt bootstrap within each bin. With 25 held-out prompts the median CI half-width over checkpoints is
  wacc {hw['wacc']:.3f}, pass@1 {hw['pass1']:.3f}, validity {hw['validity']:.3f}, pass@40 {hw['pass@40']:.3f}, distinct {hw['distinct']:.3f}: a macro difference
  smaller than about that is not resolved by one checkpoint's CI (the paired CIs in `{s['evaluation']}/paired.csv` are sharper).

## Up/down (|change| > {s['threshold']}), all bins, with the count expected if no prompt's rate changed

An expected count is exact: each prompt's two rates are binomial with the pooled rate (`zbins.null_moves`).

| split | arm | from → to | metric | up | down | expected up / down |
|---|---|---|---|---|---|---|
{chr(10).join(lines)}

## Skyline

Macro skyline (mean over prompts of s(x) = correct / valid) {_ci(*s['skyline']['macro'])}, pooled {_ci(*s['skyline']['pooled'])}, from the base's
{s['base_draws_per_prompt']} draws per prompt. wacc of {s['reference']} and each arm's last checkpoint: {', '.join(f'{k} {_ci(*v)}' for k, v in s['wacc_last'].items())}.
`skyline.csv` has every checkpoint with its paired wacc − {s['reference']}.{zero}

Files: `z_table.csv` (per prompt: Z, C, s, bins, split), `bins.csv` (trajectories), `moves.csv` (per prompt), `updown.csv`
(counts per bin), `skyline.csv`, `coverage.csv` (pass@k and distinct share per checkpoint), and the charts.
"""


# ---- the folders ---------------------------------------------------------------------------------------------------
def half_width(summary:pd.DataFrame, metric:str)->float:
    "Median CI half-width of `metric` over the checkpoints of a summary table."
    s = summary[summary.metric == metric]
    return float(((s.hi - s.lo) / 2).median())

def write_zbins(out:Path, root:Path, arms:list, sources:dict, n_boot:int=2000, seed:int=0,
                offline:list=(), # arms without training draws (filtered BC): held-out tables and charts only
                view:View=CAMPAIGN, # the evaluation, its reference and the potential of validity
               )->dict:
    "campaign_zbins: bin trajectories, up/down counts with their no-change expectation, skyline, coverage, charts, config."
    from proposal_nb.pipeline import save_chart
    from proposal_nb.results import read_table, write_json, write_table
    ev, zx, ref = root / view.ev, root / ZX, view.ref
    rates, traj_h, moves_h, counts_h = heldout_bins(ev, zx, n_boot, seed, view)
    traj_t, moves_t, counts_t = training_bins(root, arms, zx, n_boot, seed, view.potential)
    from proposal_nb.analysis.evaluation import prompt_rates
    from proposal_nb.analysis.zbins import Z_BIN_LABELS, z_bin
    zt = prompt_rates(zx_draws(zx, view.potential))
    zt = zt[zt.prompt_id.isin(set(moves_t.prompt_id))]
    z_table = pd.concat([rates.assign(split="heldout", source=f"{view.ev} {ref} ({int(rates.n.min())} draws)"),
                         zt.assign(split="training", source=f"{ZX} (20 draws)")], ignore_index=True)
    z_table = z_table.assign(zbin=z_bin(z_table.Z).astype(str), cbin=z_bin(z_table.C).astype(str))
    write_table(out, "z_table", z_table)
    bins = pd.concat([traj_h, traj_t], ignore_index=True)
    bins = bins[["split", "binning", "metric", "arm", "checkpoint", "step", "zbin", "prompts", "estimate", "lo", "hi"]]
    bins.to_csv(out / "bins.csv", index=False)
    moves = pd.concat([moves_h, moves_t], ignore_index=True)
    moves[["split", "arm", "a", "b", "metric", "binning", "prompt_id", "zbin", "value_a", "value_b", "diff", "move", "null_up", "null_down"]].to_csv(out / "moves.csv", index=False)
    updown = pd.concat([counts_h, counts_t], ignore_index=True)
    updown = updown[["split", "arm", "a", "b", "metric", "binning", "zbin", "prompts", "up", "flat", "down", "null_up", "null_down"]]
    updown.round(3).to_csv(out / "updown.csv", index=False)
    summary_t, paired = read_table(ev, "summary"), read_table(ev, "paired")
    sk = skyline_table(rates, summary_t, paired, n_boot, seed, ref)
    sk.to_csv(out / "skyline.csv", index=False)
    cov = coverage_table(summary_t)
    cov.to_csv(out / "coverage.csv", index=False)
    last = {a: str(summary_t[summary_t.arm == a].sort_values("step").checkpoint.iloc[-1]) for a in [*arms, *offline]}
    hv = bins[(bins.split == "heldout") & (bins.binning == "Z") & (bins.metric == "validity")]
    pot = "" if view == CAMPAIGN else f" ({view.potential})"
    save_chart(chart_bins(hv[hv.arm != ref].pipe(lambda d: pd.concat([hv[hv.arm == ref].assign(arm=a) for a in [*arms, *offline]] + [d])),
                          f"Held-out validity{pot} by the base's Z bin ({len(rates)} prompts; bins from the base's own {int(rates.n.min())} draws)"),
               out, "bins_heldout_validity")
    hc = bins[(bins.split == "heldout") & (bins.binning == "C") & (bins.metric == "pass1")]
    save_chart(chart_bins(hc[hc.arm != ref].pipe(lambda d: pd.concat([hc[hc.arm == ref].assign(arm=a) for a in [*arms, *offline]] + [d])),
                          f"Held-out pass@1 by the base's C bin ({len(rates)} prompts)"), out, "bins_heldout_pass1_by_C")
    save_chart(chart_bins(bins[bins.split == "training"], f"Training-prompt validity{pot} by Z bin (windows of {WINDOW} steps at M = {WINDOW_M}, {WINDOW} x {WINDOW_M} / M at other M; step 0: {ZX})",
                          "last step of the window (0: base)"),
               out, "bins_training_validity")
    uh = updown[(updown.split == "heldout") & (updown.metric == "validity") & updown.b.isin(last.values())]
    save_chart(chart_moves(uh, f"Held-out validity{pot}, {ref} → each arm's last checkpoint: prompts moved by more than 0.2"), out, "updown_heldout_validity")
    save_chart(chart_moves(updown[updown.split == "training"], f"Training-prompt validity{pot}, first → last training window"), out, "updown_training_validity")
    save_chart(chart_skyline(sk), out, "skyline")
    save_chart(chart_coverage(cov, list(last.values()), ref), out, "coverage")
    tot = updown[updown.zbin == "all"].set_index(["split", "arm", "a", "b", "metric"])[["up", "down", "null_up", "null_down"]]
    summary = dict(evaluation=view.ev, reference=ref, potential=view.potential, heldout_prompts=len(rates), base_draws_per_prompt=int(rates.n.min()), training_prompts=int(len(zt)),
                   training_base_draws_per_prompt=int(zt.n.min()), window_steps=WINDOW, window_m=WINDOW_M, threshold=THRESHOLD,
                   prompts_per_zbin={s: z_table[z_table.split == s].zbin.value_counts().reindex(list(Z_BIN_LABELS), fill_value=0).astype(int).to_dict() for s in ("heldout", "training")},
                   prompts_per_cbin_heldout={k.replace("Z", "C"): int(v) for k, v in z_table[z_table.split == "heldout"].cbin.value_counts()
                                             .reindex(list(Z_BIN_LABELS), fill_value=0).items()},
                   skyline=dict(macro=[round(float(sk[c].iloc[0]), 4) for c in ("macro", "macro_lo", "macro_hi")],
                                pooled=[round(float(sk[c].iloc[0]), 4) for c in ("pooled", "pooled_lo", "pooled_hi")]),
                   last_checkpoints=last,
                   wacc_last={ck: [round(float(x), 4) for x in sk.set_index("checkpoint").loc[ck, ["wacc", "wacc_lo", "wacc_hi"]]] for ck in [ref, *last.values()]},
                   median_ci_half_width={m: round(half_width(summary_t, m), 4) for m in ("wacc", "pass1", "validity", "pass@40", "distinct")},
                   updown_all={f"{s} {arm} {a_} → {b} {m}": {k: round(float(v), 2) for k, v in r.items()} for (s, arm, a_, b, m), r in tot.iterrows()
                               if b in last.values() or s == "training"})
    write_json(out, "summary", summary)
    (out / "README.md").write_text(readme_zbins(summary, updown))
    write_json(out, "config", dict(kind="zbins", arms=arms, offline_arms=list(offline), view=view._asdict(), window=WINDOW, window_m=WINDOW_M, threshold=THRESHOLD,
                                   n_boot=n_boot, seed=seed,
                                   source=dict(heldout=f"{view.ev} (per_prompt, draws, summary, paired)", training="campaign_<arm>/draws.parquet",
                                               base_z=f"{ZX}/base_rollouts.parquet (r_{view.potential})"),
                                   **provenance(sources, "Z/C-bin trajectories and up/down counts (held-out and training prompts), the "
                                                "skyline next to wacc, the distinct share next to pass@k (MISSION §5)")))
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path, help="the folder of published run folders")
    ap.add_argument("--n-boot", type=int, default=2000, help="prompt-bootstrap resamples")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    a = ap.parse_args(argv)
    from proposal_nb.results import read_json, read_table
    root = a.published
    ev = root / "campaign_eval"
    if read_json(ev, "config") is None: raise SystemExit(f"{ev}: no config.json (run scripts/campaign.py report first)")
    eval_arms = list(dict.fromkeys(read_table(ev, "per_prompt").arm))
    trained = [x for x in eval_arms if x != "base" and (root / f"campaign_{x}" / "log.parquet").exists()]
    if not trained: raise SystemExit(f"{root}: no arm of {eval_arms} has a campaign_<arm>/log.parquet")
    arms = [x for x in trained if is_online(read_table(root / f"campaign_{x}", "log"))]          # the online loop: training draws
    offline = [x for x in trained if x not in arms]                                            # filtered BC: a fit on rollouts
    fev = root / FP32.ev                                                  # the fp32 arms: their own evaluation against base_fp32
    fp32 = [x for x in dict.fromkeys(read_table(fev, "per_prompt").arm) if x != FP32.ref and (root / f"campaign_{x}" / "log.parquet").exists()] \
        if read_json(fev, "config") else []
    configs = {x: read_json(root / f"campaign_{x}", "config") for x in [*trained, *fp32]}
    sources = {f"campaign_{x}": configs[x] for x in trained} | {"campaign_eval": read_json(ev, "config"), ZX: read_json(root / ZX, "config") or {}}
    others = {}                                # the other jobs on the GPU (rollouts, base, the strict pair's, the fp32 side's) share it too
    for e in (ev, root / STRICT.ev, fev): others |= (read_json(e, "config") or {}).get("jobs") or {}
    shares = job_shares(configs, others)
    n_base = int(read_table(ev, "draws").query("checkpoint == 'base'").groupby("prompt_id").size().min())
    logs = []
    for x in arms:
        be, extra = breakeven_arm(x, ev, root / f"campaign_{x}", shares, a.n_boot, a.seed)
        logs.append(extra["log"])
        s = write_breakeven(root / f"campaign_breakeven_{x}", x, be, extra | dict(n_base=n_base), shares, sources, a.n_boot, a.seed)
        print(x, json.dumps(dict(k_eq=s["k_eq"], nstar=s["u_shape"]["checker_calls"]["nstar"], u=s["u_shape"]["checker_calls"]["verdict"])))
    serving = pooled_costs(logs)
    for x in offline:
        be, extra = breakeven_offline(x, ev, root / f"campaign_{x}", shares, serving, a.n_boot, a.seed)
        s = write_breakeven(root / f"campaign_breakeven_{x}", x, be, extra | dict(n_base=n_base), shares, sources, a.n_boot, a.seed)
        print(x, json.dumps(dict(k_eq=s["k_eq"], nstar=s["u_shape"]["checker_calls"]["nstar"])))
    s = write_zbins(root / "campaign_zbins", root, arms, sources, a.n_boot, a.seed, offline)
    sev = root / STRICT.ev
    if read_json(sev, "config"):                     # the strict pair: its own evaluation, reference and potential, never mixed
        strict = [x for x in dict.fromkeys(read_table(sev, "per_prompt").arm) if x != STRICT.ref and (root / f"campaign_{x}" / "log.parquet").exists()]
        src = {f"campaign_{x}": read_json(root / f"campaign_{x}", "config") for x in strict} | {STRICT.ev: read_json(sev, "config"), ZX: sources[ZX]}
        st = write_zbins(root / "campaign_strict_zbins", root, strict, src, a.n_boot, a.seed, view=STRICT)
        print(json.dumps(dict(strict_wacc_last=st["wacc_last"])))
    if fp32:                                         # the fp32 arms: break-even and bins against base_fp32, never mixed with bf16
        src = {f"campaign_{x}": configs[x] for x in fp32} | {FP32.ev: read_json(fev, "config"), ZX: sources[ZX]}
        n32 = int(read_table(fev, "draws").query(f"checkpoint == '{FP32.ref}'").groupby("prompt_id").size().min())
        for x in fp32:
            be, extra = breakeven_arm(x, fev, root / f"campaign_{x}", shares, a.n_boot, a.seed, ref=FP32.ref)
            b = write_breakeven(root / f"campaign_breakeven_{x}", x, be, extra | dict(n_base=n32), shares, src, a.n_boot, a.seed)
            print(x, json.dumps(dict(k_eq=b["k_eq"], nstar=b["u_shape"]["checker_calls"]["nstar"])))
        f32 = write_zbins(root / "campaign_fp32_zbins", root, fp32, src, a.n_boot, a.seed, view=FP32)
        print(json.dumps(dict(fp32_wacc_last=f32["wacc_last"])))
    print(json.dumps(dict(skyline=s["skyline"], wacc_last=s["wacc_last"]), indent=1))


if __name__ == "__main__":
    main()
