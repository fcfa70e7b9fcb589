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
    python scripts/campaign.py train iguana_fp32 RUNS ...    # (and iguana_kl, msc, rb_msc, msc_m2 _fp32) a bf16 arm's settings in fp32

At each log-spaced checkpoint, `train` also draws the held-out split (R x M = 4 x 10 per prompt, the same keys as
every other arm) and re-scores the base arm's draws under the checkpoint (the report card's prior table), restoring
the RNG states so that training does not see it. Only these tables and the newest state travel between jobs.
`train` resumes ARM from RUNS/ARM (exact: adapter, optimizer, estimator state, references, RNG), trains until the step
budget or until the deadline, saves a checkpoint at every log-spaced step and at the deadline, and appends the job's
wall-clock seconds to RUNS/ARM/ledger.jsonl (training and evaluation apart), so that the GPU minutes an arm costs are the sum over its jobs.
`chain-check` trains one short case unbroken and the same case in two processes (pack / unpack between them, as on
the box) and asserts they are identical (`training.same_run`)."""
import argparse, json, math, os, subprocess, sys, tarfile, time
from datetime import datetime, timezone
from pathlib import Path
from proposal_nb.results import gpu_minutes

DESIGN_DIR = next(d for d in (Path(__file__).resolve().parent / "campaign_design",        # in a source snapshot (campaign_job.sh)
                            Path(__file__).resolve().parents[1] / "nbs" / "runs" / "params" / "campaign") if d.is_dir())
DESIGN_FILES = ("design.yaml", "strict.yaml", "fp32.yaml", "card.yaml")   # the design, then its overlays (each adds keys)


def load_design(folder:Path=DESIGN_DIR)->dict:
    "The campaign's pre-registered design: the YAML files of `folder` merged (an overlay may not redefine a key), with their sha256."
    import hashlib, yaml
    out, hashes = {}, {}
    for name in DESIGN_FILES:
        raw = (folder / name).read_bytes()
        doc = yaml.safe_load(raw) or {}
        if twice := sorted(set(doc) & set(out)): raise ValueError(f"{folder / name} redefines {twice}, already set by an earlier design file")
        out |= doc; hashes[name] = hashlib.sha256(raw).hexdigest()
    return out | dict(files=hashes)


# The pre-registered design, from nbs/runs/params/campaign/*.yaml (read there for the reasons each value was fixed).
DESIGN = load_design()
SHARED, SPLIT, EVAL = DESIGN["shared"], DESIGN["split"], DESIGN["eval"]
PASS_KS = tuple(DESIGN["pass_ks"])
ARMS = {a: (v["settings"], v["what"]) for a, v in DESIGN["arms"].items()}             # arm: (settings over SHARED, why)
OFFLINE = {a: (v["scheme"], v["what"]) for a, v in DESIGN["offline"].items()}         # filtered-BC arms: (batching scheme, why)
BC_ORDER = {a: v["order"] for a, v in DESIGN["offline"].items() if "order" in v}     # an offline arm's batch order when not its scheme's
BC_DRAWS = DESIGN["bc_draws"]
WHY = DESIGN["why"]
STRICT = DESIGN["strict"]
STRICT_ARMS = {a: (v["copies"], v["what"]) for a, v in DESIGN["strict_arms"].items()}  # arm: (the arm whose settings it copies, why)
FP32_ARMS = {f"{a}_fp32": (a, f"{ARMS[a][1]}, in fp32") for a in DESIGN["fp32_copies"]}  # arm: (copies, why)
CAMPAIGN_LOOP, CAMPAIGN_EVAL = DESIGN["loop"], DESIGN["eval_loop"]
STRICT_COMMAND = ("bash scripts/campaign_job.sh 560 iguana_strict iguana_kl_strict "     # chained jobs; base-strict runs on the box CPU
                  "&& .venv/bin/python scripts/campaign.py report RUNS published")
CARD_COMMAND = "bash scripts/campaign_job.sh 575 card && .venv/bin/python scripts/campaign.py report-card RUNS published"
CARD_FP32_COMMAND = "bash scripts/campaign_job.sh 575 card_fp32 && .venv/bin/python scripts/campaign.py report-card RUNS published"
FP32_COMMAND = ("bash scripts/campaign_job.sh 575 iguana_fp32 iguana_kl_fp32 msc_fp32 rb_msc_fp32 "
                "&& .venv/bin/python scripts/campaign.py report RUNS published")


def log_steps(steps:int, per:int=4)->list[int]:
    "Checkpoint steps spaced evenly in log(step): round(steps^(k/per)), k = 1..per."
    return sorted({max(1, round(steps ** (k / per))) for k in range(1, per + 1)})


def arm_settings(arm:str)->dict:
    "SHARED with an online arm's settings over it (a strict arm: the arm it copies, then STRICT's mu0)."
    if arm in ARMS: return SHARED | ARMS[arm][0]
    if arm in STRICT_ARMS: return SHARED | ARMS[STRICT_ARMS[arm][0]][0] | dict(mu0=STRICT["mu0"])
    if arm in FP32_ARMS: return SHARED | ARMS[FP32_ARMS[arm][0]][0]
    raise SystemExit(f"unknown arm {arm!r}; arms: {', '.join([*ARMS, *STRICT_ARMS, *FP32_ARMS])}")


def arm_dtype(arm:str)->str|None:
    "The model dtype an arm runs in: float32 for the fp32 arms and references (ARM_fp32), else None (the default: bf16 on CUDA, fp32 on CPU)."
    return "float32" if arm.endswith("_fp32") else None


def train_potential(arm:str)->str:
    "The potential r an arm trains with; its held-out validity is graded with the same one."
    return STRICT["potential"] if arm in STRICT_ARMS else "no_error"


def reference(arm:str)->str:
    "The arm whose held-out draws an arm's report card re-scores and its evaluation compares against."
    return "base_strict" if arm in STRICT_ARMS else "base_fp32" if arm in FP32_ARMS else "base"




def arm_config(arm:str, overrides:dict|None=None):
    "The OnlineConfig of one arm (`overrides`: for smoke tests off the box only; they are recorded in the ledger)."
    from proposal_nb.lm.training import online_config
    s = CAMPAIGN_LOOP | arm_settings(arm) | (overrides or {})
    return online_config(**s, checkpoint_every=s["steps"] + 1)  # checkpoints are saved here, at log-spaced steps


def plan(out:Path):
    "Write campaign.json: the design, fixed before any run."
    out.mkdir(parents=True, exist_ok=True)
    doc = dict(written=datetime.now(timezone.utc).isoformat(timespec="seconds"), shared=SHARED, split=SPLIT,
               arms={a: dict(settings=ARMS[a][0], what=ARMS[a][1], checkpoints=log_steps((SHARED | ARMS[a][0])["steps"]),
                             draws=(SHARED | ARMS[a][0])["steps"] * (SHARED | ARMS[a][0])["M"] * SHARED["prompts_per_step"])
                         for a in ARMS}, offline={a: dict(scheme=v[0], what=v[1], rollouts=BC_DRAWS * 59, epochs=1, batch_size=8)
                                                  for a, v in OFFLINE.items()},
               card_arms=card_plan(),  # built: rollouts-card, base-card, train-bc bc_card, report-card (plan-card writes it alone)
               why=WHY, design=dict(folder="nbs/runs/params/campaign", sha256=DESIGN["files"]), commit=_commit())
    (out / "campaign.json").write_text(json.dumps(doc, indent=1))
    print(json.dumps(doc, indent=1))


def _commit()->str|None:
    if os.environ.get("CAMPAIGN_COMMIT"): return os.environ["CAMPAIGN_COMMIT"]   # a source snapshot without .git (the GPU box)
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or None


def _model_path(a)->str:
    from proposal_nb.lm.models import embedded_model_path
    return a.model or str(embedded_model_path(gguf=a.gguf or None))


def _tasks():
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.programs.tasks import split_tasks
    tasks = load_task_source(SPLIT["tasks"], "native", list(SPLIT["difficulties"]), None)
    return split_tasks(tasks, SPLIT["heldout_frac"], SPLIT["split_seed"])


def open_run(arm:str, run_dir:Path, model_path:str, config=None, dtype:str|None=None):
    "The arm's OnlineRun in run_dir, resumed from its newest checkpoint (`dtype`: the model's; None: bf16 on CUDA, fp32 on CPU)."
    import torch
    from proposal_nb.lm.models import add_lora, load_model
    from proposal_nb.lm.training import OnlineRun
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    cfg = config or arm_config(arm)
    train, _ = _tasks()
    lm, tok = load_model(model_path, dtype=dtype)
    torch.manual_seed(cfg.loop.seed)              # peft draws the LoRA A matrices from the global RNG
    peft = add_lora(lm, r=8, alpha=16)
    ex = Executor().__enter__()
    return OnlineRun(peft, tok, train, make_potential(train_potential(arm), ex), cfg, run_dir, base_path=model_path), ex




def heldout_draws(model, tok, name:str, state, ex, keep_tokens:bool=False, valid:str="no_error"):
    "The held-out split's R x M draws of one checkpoint (the same keys for every arm), with both densities and grades (`valid`: r's name)."
    from proposal_nb.lm.rollouts import evaluation_draws
    from proposal_nb.programs.potentials import make_potential
    _, heldout = _tasks()
    return evaluation_draws(model, tok, heldout, name, state, EVAL["R"], EVAL["M"], make_potential(valid, ex),
                            make_potential("correctness", ex), seed=EVAL["seed"], max_new_tokens=SHARED["max_new_tokens"],
                            batch_size=EVAL["batch_size"], keep_tokens=keep_tokens, progress=False, engine="auto", **CAMPAIGN_EVAL)


def base_eval(runs:Path, model_path:str, name:str="base")->Path:
    "The base arm's held-out draws, with token ids (re-scored under every checkpoint for the report card); base_fp32: in fp32."
    import torch
    from proposal_nb.lm.models import add_lora, load_model, model_dtype
    from proposal_nb.programs.sandbox import Executor
    t0, out = time.time(), runs / name; out.mkdir(parents=True, exist_ok=True)
    lm, tok = load_model(model_path, dtype=arm_dtype(name)); torch.manual_seed(0); peft = add_lora(lm, r=8, alpha=16)
    with Executor() as ex: d = heldout_draws(peft, tok, "base", None, ex, keep_tokens=True)
    d.to_parquet(out / "heldout_draws.tmp.parquet"); (out / "heldout_draws.tmp.parquet").rename(out / "heldout_draws.parquet")
    job = dict(arm=name, wall_s=round(time.time() - t0, 1), draws=len(d), validity=float(d.valid.mean()), dtype=model_dtype(lm), gpu=_gpu(),
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit())
    with open(out / "ledger.jsonl", "a") as f: f.write(json.dumps(job) + "\n")
    print(json.dumps(job), flush=True)
    return out / "heldout_draws.parquet"


def base_strict(runs:Path, model_path:str, valid:str="strict")->Path:
    """The strict arms' reference on CPU: the base arm's own held-out draws (same rows, keys, tokens and densities) regraded with
    `valid` (correct: correctness, counted only where valid, as `evaluation_draws` does). Each text is rebuilt from its token ids
    (the engines' decode: special tokens skipped) and must hash to the stored text_hash; the ledger line says how many rows the
    regrade with no_error and correctness reproduces."""
    import numpy as np, pandas as pd
    from transformers import AutoTokenizer
    from proposal_nb.lm.rollouts import grade, text_hash
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    src, t0, out = runs / "base" / "heldout_draws.parquet", time.time(), runs / "base_strict"
    if not src.exists(): raise SystemExit(f"{src} is missing: run `base` first (base-strict regrades its draws)")
    d = pd.read_parquet(src)
    if "token_ids" not in d: raise SystemExit(f"{src} has no token_ids column: its texts cannot be rebuilt")
    tok = AutoTokenizer.from_pretrained(model_path)
    texts = tok.batch_decode([list(t) for t in d.token_ids], skip_special_tokens=True)
    bad = [i for i, (x, h) in enumerate(zip(texts, d.text_hash)) if text_hash(x) != h]
    if bad: raise SystemExit(f"{src}: {len(bad)} rebuilt texts do not match their text_hash (first: row {bad[0]}, {d.prompt_id.iloc[bad[0]]}); "
                             f"is {model_path} the tokenizer that drew them?")
    by_id = {t.id: t for t in _tasks()[1]}
    miss = sorted(set(d.prompt_id) - set(by_id))
    if miss: raise SystemExit(f"{src}: prompt {miss[0]!r} is not in the held-out split ({len(miss)} such)")
    with Executor() as ex:
        r = grade({k: make_potential(k, ex) for k in dict.fromkeys([valid, "no_error", "correctness"])}, [by_id[i] for i in d.prompt_id], texts)
    v = r[valid]
    logr = np.log(np.where(v > 0, v, 1.0)); logr[v <= 0] = -np.inf
    res = d.assign(checkpoint="base_strict", valid=v, correct=r["correctness"] * (v > 0), logr=logr)
    out.mkdir(parents=True, exist_ok=True)
    res.to_parquet(out / "heldout_draws.tmp.parquet"); (out / "heldout_draws.tmp.parquet").rename(out / "heldout_draws.parquet")
    _ledger(out, dict(arm="base_strict", source=str(src.relative_to(runs)), regraded=dict(valid=valid, correct="correctness"), draws=len(res),
                      validity=float(v.mean()), base_validity=float(d.valid.mean()), wall_s=round(time.time() - t0, 1),
                      no_error_reproduced=int((r["no_error"] == d.valid.to_numpy()).sum()),
                      correct_reproduced=int((r["correctness"] * (r["no_error"] > 0) == d.correct.to_numpy()).sum())))
    return out / "heldout_draws.parquet"


def checkpoint_eval(run, base_file:Path, ex, valid:str="no_error")->dict:
    "Evaluate the run's current adapter on the held-out split (validity: `valid`), invisibly to training (RNG states and mode restored)."
    import pandas as pd, torch
    from proposal_nb.lm.rollouts import adapter_state, prior_table
    t0 = time.time()
    for _ in range(600):                           # the base arm is drawn by another process of the same job
        if base_file.exists(): break
        time.sleep(1)
    rng, cuda_rng, training = torch.get_rng_state(), torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None, run.model.training
    name, state = f"step-{run.step}", {k: v.clone() for k, v in adapter_state(run.model).items()}
    d = heldout_draws(run.model, run.tok, name, state, ex, valid=valid)
    prior = prior_table(run.model, pd.read_parquet(base_file), name, state)
    out = run.dir / "heldout"; out.mkdir(exist_ok=True)
    d.to_parquet(out / f"{name}_draws.parquet"); prior.to_parquet(out / f"{name}_prior.parquet")
    torch.set_rng_state(rng); run.model.train(training)
    if cuda_rng is not None: torch.cuda.set_rng_state_all(cuda_rng)
    res = dict(checkpoint=name, eval_s=round(time.time() - t0, 1), validity=float(d.valid.mean()), correct=float(d.correct.mean()))
    print(json.dumps(res), flush=True)
    return res


def train(arm:str, run_dir:Path, model_path:str, deadline_s:float, config=None, stop_at:int|None=None, overrides=None,
          base_file:Path|None=None, dtype:str|None=None)->dict:
    "Train until the arm's step budget, `stop_at`, or the deadline; checkpoint (and evaluate) at log-spaced steps."
    from proposal_nb.lm.models import model_dtype
    t0 = time.time()
    run, ex = open_run(arm, run_dir, model_path, config, dtype)
    start, L = run.step, run.cfg.loop
    marks, end = set(log_steps(L.steps)), min(L.steps, stop_at or L.steps)
    t_steps, evals = [], []
    try:
        while run.step < end:
            ts = time.time()
            run.train(progress=False, stop_after=1)
            t_steps.append(time.time() - ts)
            if run.step in marks:
                run.save()
                if base_file is not None: evals.append(checkpoint_eval(run, base_file, ex, train_potential(arm)))
            if time.time() - t0 + 1.5 * max(t_steps[-3:]) + (60 if (run.step + 1) in marks else 0) > deadline_s: break
        if not run.checkpoint_dirs() or run.checkpoint_dirs()[-1].name != f"step-{run.step}": run.save()
    finally:
        ex.__exit__(None, None, None)
    job = dict(arm=arm, start_step=start, end_step=run.step, steps=L.steps, wall_s=round(time.time() - t0, 1),
               step_s_mean=round(sum(t_steps) / max(1, len(t_steps)), 3), train_s=round(sum(t_steps), 1),
               eval_s=round(sum(e["eval_s"] for e in evals), 1), samples=(run.step - start) * L.M * L.prompts_per_step,
               overrides=overrides or {}, potential=run.potential.kind, dtype=model_dtype(run.model), gpu=_gpu(),
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit())
    with open(run_dir / "ledger.jsonl", "a") as f: f.write(json.dumps(job) + "\n")
    print(json.dumps(job), flush=True)
    return job


def _cast(default, v:str):
    if isinstance(default, bool): return v == "True"
    return type(default)(v) if default is not None else v


def _gpu()->str:
    import torch
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def pack(run_dir:Path, dest:Path):
    "Tar what resuming and the analysis need: config, tables, ledger, held-out tables, and the newest checkpoint only."
    ck = sorted((run_dir / "checkpoints").glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
    ck = [c for c in ck if not c.name.endswith(".tmp")]
    with tarfile.open(dest, "w:gz") as t:
        for f in sorted(run_dir.iterdir()):
            if f.is_file(): t.add(f, arcname=f"{run_dir.name}/{f.name}")
        if (run_dir / "heldout").is_dir(): t.add(run_dir / "heldout", arcname=f"{run_dir.name}/heldout")
        if ck: t.add(ck[-1], arcname=f"{run_dir.name}/checkpoints/{ck[-1].name}")
    print(f"{dest}: {dest.stat().st_size / 2**20:.2f} MiB, newest state {ck[-1].name if ck else None}")


def _finished(arm_dir:Path)->bool:
    "The arm's last ledger line reached its last step (end_step >= steps; an older line without end_step counts as finished)."
    led = arm_dir / "ledger.jsonl"
    if not led.exists(): return False
    last = json.loads(led.read_text().splitlines()[-1])
    return "end_step" not in last or last["end_step"] >= last["steps"]


def pack_runs(runs:Path, dest:Path, limit_mb:float=58)->dict:
    """Tar a job's runs so that the next job resumes them on a fresh machine, inside $OUT's 64 MiB: first every table, log
    and ledger (never a checkpoint or rollout file), then the rollouts an unfinished BC arm still needs (a few MB, and its
    state is useless without them), then the newest checkpoint of each unfinished arm, each while the raw total stays
    under `limit_mb`. Returns what was left out."""
    ck = lambda d: sorted((c for c in (d / "checkpoints").glob("step-*") if not c.name.endswith(".tmp")), key=lambda c: int(c.name.split("-")[1]))
    data = {"rollouts": ["bc_spread", "bc_sort"], "rollouts_card": ["bc_card"]}   # rollout folder: the BC arms that fit it
    small, big = [], []
    for f in sorted(runs.rglob("*")):
        rel = f.relative_to(runs)
        if not f.is_file() or "checkpoints" in rel.parts or f.name.endswith((".tar.gz", ".tmp.parquet")): continue
        if rel.parts[0] in data and f.suffix == ".parquet":
            if f.name == "card.parquet" or all(_finished(runs / a) for a in data[rel.parts[0]]): continue
            big.append(f); continue
        small.append(f)
    states = [ck(d)[-1] for d in sorted(runs.iterdir()) if d.is_dir() and ck(d) and not _finished(d)]
    size = lambda p: sum(x.stat().st_size for x in ([p] if p.is_file() else p.rglob("*")) if x.is_file())
    total, kept, left = sum(map(size, small)), [], []
    for p in big + states:
        if total + size(p) <= limit_mb * 2**20: kept.append(p); total += size(p)
        else: left.append(p)
    with tarfile.open(dest, "w:gz") as t:
        for p in small + kept: t.add(p, arcname=str(p.relative_to(runs)))
    res = dict(raw_mb=round(total / 2**20, 1), packed_mb=round(dest.stat().st_size / 2**20, 1), states=[str(p.relative_to(runs)) for p in states],
               left_out=[str(p.relative_to(runs)) for p in left])
    print(json.dumps(res), flush=True)
    return res


def unpack(src:Path, runs:Path):
    runs.mkdir(parents=True, exist_ok=True)
    with tarfile.open(src) as t: t.extractall(runs, filter="data")


def chain_check(d:Path, model_path:str, steps:int, split_at:int, arm:str="iguana", sets=(), deterministic:bool=True)->bool:
    """A short case trained unbroken and in two processes with pack/unpack between them: identical adapters and logs.
    On a GPU the equality needs deterministic kernels (`deterministic`): cuDNN's attention backward is not, so two unbroken
    runs differ from the first step's gradient on (measured on the H200, 2026-12-01)."""
    from proposal_nb.lm.training import same_run
    d.mkdir(parents=True, exist_ok=True)
    job = lambda run_dir, stop: subprocess.run([sys.executable, __file__, "_train_small", arm, str(run_dir), "--steps", str(steps),
                                                "--model", model_path, "--stop-at", str(stop), *(f"--set={x}" for x in sets),
                                                *(["--deterministic"] if deterministic else [])], check=True)
    job(d / "unbroken", steps)
    job(d / "part1" / arm, split_at)
    pack(d / "part1" / arm, d / "part1.tar.gz"); unpack(d / "part1.tar.gz", d / "part2")
    job(d / "part2" / arm, steps)
    ok = same_run(d / "unbroken", d / "part2" / arm, steps)
    res = dict(arm=arm, steps=steps, split_at=split_at, identical=bool(ok), deterministic=deterministic, gpu=_gpu())
    (d / "chain_check.json").write_text(json.dumps(res, indent=1)); print(json.dumps(res), flush=True)
    return ok


def rollouts(runs:Path, model_path:str)->Path:
    "BC_DRAWS keyed base draws per training prompt, graded, with token ids (what filtered BC fits)."
    import pandas as pd, torch
    from proposal_nb.lm.models import add_lora, load_model
    from proposal_nb.lm.rollouts import grade, keyed_generations
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    t0, out = time.time(), runs / "rollouts"; out.mkdir(parents=True, exist_ok=True)
    train_tasks, _ = _tasks()
    lm, tok = load_model(model_path); torch.manual_seed(0); peft = add_lora(lm, r=8, alpha=16)
    draws = keyed_generations(peft, tok, train_tasks, BC_DRAWS, SHARED["seed"], "bc-rollouts", "auto", SHARED["max_new_tokens"],
                              EVAL["batch_size"], adapter=False, progress=True)
    flat_t, flat_g = [t for t, d in zip(train_tasks, draws) for _ in d], [g for d in draws for g in d]
    with Executor() as ex:
        r = grade({"valid": make_potential("no_error", ex), "correct": make_potential("correctness", ex)}, flat_t, [g.text for g in flat_g])
    df = pd.DataFrame(dict(prompt_id=[t.id for t in flat_t], draw=[m for d in draws for m in range(len(d))], valid=r["valid"],
                           correct=r["correct"] * (r["valid"] > 0), logp=[g.logprob for g in flat_g],
                           length=[len(g.token_ids) for g in flat_g], prompt_ids=[list(g.prompt_ids) for g in flat_g],
                           token_ids=[list(g.token_ids) for g in flat_g]))
    df.to_parquet(out / "base.parquet")
    job = dict(arm="rollouts", wall_s=round(time.time() - t0, 1), draws=len(df), validity=float(df.valid.mean()), gpu=_gpu(),
               date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit())
    with open(out / "ledger.jsonl", "a") as f: f.write(json.dumps(job) + "\n")
    print(json.dumps(job), flush=True)
    return out / "base.parquet"


EVAL_RESERVE_S = 150  # seconds a BC call keeps for its held-out evaluation (55-100 s measured while the GPU is shared)


def _bc_config(scheme:str, overrides:dict|None=None, order:str="scheme"):
    from proposal_nb.lm.filtered_bc import OfflineConfig
    return OfflineConfig(**(dict(epochs=1, batch_size=8, lr=SHARED["lr"], grad_clip=SHARED["grad_clip"], cap=SHARED["max_new_tokens"],
                                 scheme=scheme, seed=SHARED["seed"], order=order) | (overrides or {})))


def skipped_since(log, start:int)->dict:
    "Batches this call skipped, by reason: the log's rows after the `start` it resumed from (a ledger line counts its own job)."
    new = log.iloc[start:] if len(log) else log
    return new.skipped[new.skipped != ""].value_counts().to_dict() if len(new) else {}


def fit_bc(arm:str, out:Path, samples, peft, cfg, deadline_s:float)->tuple:
    """One call's share of a filtered-BC fit (resumed from out/checkpoints): (log so far, batches in all, ledger fields).
    The fit is complete when len(log) == batches; a batch this call skipped by a guard is counted by its reason."""
    from proposal_nb.lm.filtered_bc import offline_data, train_offline
    t0 = time.time()
    ck = [int(c.name.split("-")[1]) for c in (out / "checkpoints").glob("step-*") if not c.name.endswith(".tmp")]
    log = train_offline(peft, samples, cfg, out, progress=True, deadline_s=deadline_s - EVAL_RESERVE_S)
    total, start = len(offline_data(samples, cfg).batches), max(ck, default=0)
    return log, total, dict(arm=arm, start_step=start, end_step=len(log), steps=total, skipped=skipped_since(log, start),
                            train_s=round(time.time() - t0, 1), valid_rollouts=int((samples.valid > 0).sum()), samples=len(samples))


def train_bc(arm:str, runs:Path, model_path:str, overrides:dict|None=None, deadline_s:float=math.inf)->dict:
    "Filtered BC (one epoch) on the base rollouts with the arm's batching scheme, resumable across jobs; then the held-out evaluation."
    import pandas as pd, torch
    from types import SimpleNamespace
    from proposal_nb.lm.models import add_lora, load_model
    from proposal_nb.programs.sandbox import Executor
    if arm not in OFFLINE: raise SystemExit(f"unknown offline arm {arm!r}; arms: {', '.join(OFFLINE)}")
    t0, out = time.time(), runs / arm
    samples = pd.read_parquet(runs / "rollouts" / "base.parquet")
    lm, tok = load_model(model_path); torch.manual_seed(SHARED["seed"]); peft = add_lora(lm, r=8, alpha=16)
    log, total, job = fit_bc(arm, out, samples, peft, _bc_config(OFFLINE[arm][0], overrides, BC_ORDER.get(arm, "scheme")), deadline_s)
    ev = dict(eval_s=0)
    if len(log) == total:
        with Executor() as ex:
            ev = checkpoint_eval(SimpleNamespace(model=peft, tok=tok, step=total, dir=out), runs / "base" / "heldout_draws.parquet", ex)
    return _ledger(out, job | dict(wall_s=round(time.time() - t0, 1), eval_s=ev["eval_s"], overrides=overrides or {}))


def heldout_tables(runs:Path, ref:str="base", arms=None):
    "The reference arm's and every arm's held-out draws and prior tables (`ref` first), checkpoints named ARM-step-N, in step order."
    import pandas as pd
    from proposal_nb.results import checkpoint_parts
    base = pd.read_parquet(runs / ref / "heldout_draws.parquet")
    draws, prior = [base.drop(columns=["prompt_ids", "token_ids"]).assign(arm=ref, checkpoint=ref)], []
    prior.append(draws[0].assign(logq=draws[0].logp))
    for arm in [a for a in (arms if arms is not None else [*ARMS, *OFFLINE]) if (runs / a / "heldout").is_dir()]:
        files = sorted((runs / arm / "heldout").glob("step-*_draws.parquet"), key=lambda f: checkpoint_parts(f.name.split("_")[0])[1])
        for f in files:
            name = f"{arm}-{f.name.split('_')[0]}"
            draws.append(pd.read_parquet(f).assign(arm=arm, checkpoint=name))
            prior.append(pd.read_parquet(f.with_name(f.name.replace("_draws", "_prior"))).assign(checkpoint=name))
    cat = lambda ts: pd.concat(ts, ignore_index=True).assign(split="heldout")
    return cat(draws), cat(prior)


USER_COMMAND = "bash scripts/campaign_job.sh 560 iguana msc iguana_kl rb_msc && .venv/bin/python scripts/campaign.py report RUNS published"


def provenance(ledgers:dict, runs_note:str="", user_command:str=USER_COMMAND, dtype:str="bf16")->dict:
    "machine, date, commit and command of a campaign folder, read from the jobs' ledgers (`dtype`: the model's, as run)."
    jobs = [j for js in ledgers.values() for j in js]
    return dict(machine=f"{sorted({j.get('gpu') for j in jobs} - {None})} (nvidia-h200 device, {dtype}; arms side by side on one GPU)",
                date=max(j["date"] for j in jobs), commit=sorted({str(j.get("commit")) for j in jobs}),
                command="bash scripts/campaign_job.sh BUDGET_S ARM [ARM ...] (chained jobs, runs resumed from /tmp/runs or packed parts); "
                        "then python scripts/campaign.py report RUNS published" + runs_note,
                user_command=user_command)


def report(runs:Path, out:Path, n_boot:int=2000):
    """Write the campaign's results folders through the results contract: one train run per arm, the held-out evaluation
    campaign_eval (validity: no_error, against base) and, once base-strict has run, campaign_strict_eval (the strict pair:
    validity strict, against base_strict), never mixed."""
    import pandas as pd
    from proposal_nb.results import write_json, write_table
    plan_doc = json.loads((runs / "campaign.json").read_text()) if (runs / "campaign.json").exists() else {}
    read = lambda f: [json.loads(l) for l in f.read_text().splitlines() if l.strip()]
    ledgers = {a.name: read(a / "ledger.jsonl") for a in sorted(runs.iterdir()) if (a / "ledger.jsonl").exists()}
    ledgers |= {f"weight_check_{f.parents[1].name}": read(f) for f in sorted(runs.glob("weight_check/*/iguana/ledger.jsonl"))}  # GPU sharers too
    minutes = gpu_minutes(ledgers)
    what = {a: v[1] for a, v in [*ARMS.items(), *OFFLINE.items(), *STRICT_ARMS.items(), *FP32_ARMS.items()]}
    for arm in [a for a in what if (runs / a / "log.parquet").exists()]:
        d = out / f"campaign_{arm}"
        write_table(d, "log", pd.read_parquet(runs / arm / "log.parquet"))
        if (runs / arm / "draws.parquet").exists(): write_table(d, "draws", pd.read_parquet(runs / arm / "draws.parquet"))
        cfg = json.loads((runs / arm / "config.json").read_text())
        steps = cfg.get("loop", {}).get("steps")
        reached = max((j.get("end_step", j.get("steps", 0)) for j in ledgers.get(arm, [])), default=0)
        write_json(d, "config", dict(kind="train", arm=arm, what=what[arm], training=cfg, potential=train_potential(arm), split=SPLIT,
                                     jobs=ledgers.get(arm, []),
                                     status="complete" if arm in OFFLINE or reached == steps else f"PARTIAL: step {reached} of {steps}",
                                     gpu_minutes=minutes[arm], **provenance({arm: ledgers.get(arm, [])},
                                                                            user_command=STRICT_COMMAND if arm in STRICT_ARMS else FP32_COMMAND
                                                                            if arm in FP32_ARMS else USER_COMMAND,
                                                                            dtype="fp32" if arm in FP32_ARMS else "bf16")))
    strict_side = {*STRICT_ARMS, "base_strict"}
    main = {a: js for a, js in ledgers.items() if a not in strict_side and not a.endswith("_fp32")}   # the card's fp32 side too
    e = write_heldout(out / "campaign_eval", *heldout_tables(runs), n_boot,
                      dict(campaign=plan_doc, gpu_minutes={a: minutes[a] for a in main}, jobs=main), provenance(main))
    if (runs / "base_strict" / "heldout_draws.parquet").exists():
        side = {a: js for a, js in ledgers.items() if a in strict_side}
        write_heldout(out / "campaign_strict_eval", *heldout_tables(runs, "base_strict", list(STRICT_ARMS)), n_boot,
                      dict(potentials=dict(valid=STRICT["potential"], correct="correctness"), strict=strict_design(),
                           gpu_minutes={a: minutes[a] for a in side}, jobs=side), provenance(side, user_command=STRICT_COMMAND))
    if (runs / "base_fp32" / "heldout_draws.parquet").exists():   # the fp32 arms against base_fp32: their own folder, never mixed
        side = {a: js for a, js in ledgers.items() if a.endswith("_fp32")}   # every fp32 job's minutes, the card's re-evaluation too
        write_heldout(out / "campaign_fp32_eval", *heldout_tables(runs, "base_fp32", list(FP32_ARMS)), n_boot,
                      dict(dtype="float32", gpu_minutes={a: minutes[a] for a in side}, jobs=side),
                      provenance(side, user_command=FP32_COMMAND, dtype="fp32"))
    return e


def write_heldout(e:Path, draws, prior, n_boot:int, meta:dict, prov:dict)->Path:
    "One held-out evaluation folder: summary, paired (every pair, the reference first), per_prompt, draws, prior, report card, config."
    from proposal_nb.analysis.evaluation import evaluation_tables, write_evaluation
    from proposal_nb.analysis.report_card import report_card
    from proposal_nb.results import write_json, write_table
    names = list(dict.fromkeys(draws.checkpoint))
    n = int(draws.groupby(["checkpoint", "prompt_id"]).size().min())                                  # R x M draws per prompt
    ev = evaluation_tables(draws, checkpoints=names, ks=[k for k in PASS_KS if k <= n], n_boot=n_boot)   # pass@k up to R x M
    write_evaluation(e, ev)
    write_table(e, "draws", draws); write_table(e, "prior", prior)
    card = report_card(draws, prior, split="heldout", n_boot=n_boot, checkpoints=names)
    write_table(e, "report_card", ev.summary[["checkpoint", "arm", "step"]].drop_duplicates().merge(card.table, on="checkpoint"))
    write_json(e, "config", dict(kind="evaluate", model="embedded:SmolLM2-135M-Instruct", split=SPLIT, eval=EVAL, **meta,
                                 checkpoints=names, **prov))
    print(ev.summary[ev.summary.metric.isin(["validity", "pass1", "wacc"])].pivot(index="checkpoint", columns="metric", values="estimate").round(3))
    return e


# The calibration control at a measurable difficulty (issue 16): the bundle size and the task pool are chosen here, before
# the control runs, from the base draws of published/h200_z_embedded (never from the control's outcome).
CALIBRATION_V2 = dict(band=(0.10, 0.50), target=0.25, sizes=(1, 2, 3, 4, 5), min_bundles=16, bar=0.0, particles=4, rounds=3,
                      reruns=1, judge_items=400, seed=0, n_boot=2000,
                      pools={"all": [], "easy+medium": ["easy", "medium"], "easy": ["easy"]})  # difficulty tags: set by the task authors


def calibration_plan(out:Path, z_dir:Path|None=None, n_boot:int=2000, seed:int=0)->dict:
    "Predict the resample arm's pass rate per (task pool, bundle size) from per-function pass rates; pick one; write preregistration.json."
    import numpy as np, pandas as pd
    from proposal_nb.analysis.calibration import bundle_pass_rate, choose_bundle_size
    from proposal_nb.programs.grading import eligible_tasks
    from proposal_nb.programs.tasks import load_embedded
    z_dir = z_dir or Path(__file__).resolve().parents[1] / "published" / "h200_z_embedded"
    d = pd.read_parquet(z_dir / "base_rollouts.parquet")
    per = d.groupby("prompt_id").agg(n=("correct", "size"), k=("correct", "sum"))
    C, rng, rows = CALIBRATION_V2, np.random.default_rng(seed), []
    for pool, diffs in C["pools"].items():
        elig = [t for t in eligible_tasks(load_embedded()) if not diffs or t.tags.get("difficulty") in diffs]
        miss = [t.id for t in elig if t.id not in per.index]
        if miss: raise SystemExit(f"{z_dir}: no base draws of eligible task {miss[0]!r} ({len(miss)} missing)")
        n, k = per.loc[[t.id for t in elig], "n"].to_numpy(), per.loc[[t.id for t in elig], "k"].to_numpy()
        for s in C["sizes"]:
            boot = []                                   # tasks resampled, and each rate redrawn from its own n draws
            for _ in range(n_boot // 10):
                i = rng.integers(0, len(n), len(n))
                boot.append(bundle_pass_rate(rng.binomial(n[i], k[i] / n[i]) / n[i], s))
            lo, hi = np.quantile(boot, [0.025, 0.975])
            rows.append(dict(pool=pool, difficulties=diffs, eligible=len(elig), size=s, n_bundles=len(elig) // s,
                             predicted=bundle_pass_rate(k / n, s), lo=float(lo), hi=float(hi)))
    t = pd.DataFrame(rows)
    ok = t[t.n_bundles >= C["min_bundles"]]
    pick = {(r.pool, r.size): r.predicted for r in ok.itertuples()}
    (pool, size), in_band = choose_bundle_size(pick, C["band"], C["target"])
    ch = t[(t.pool == pool) & (t["size"] == size)].iloc[0]
    B, P, R, p = int(ch.n_bundles), C["particles"], C["rounds"], float(ch.predicted)
    run = dict(n_bundles=B, bundle_size=int(size), difficulties=C["pools"][pool], particles=P, rounds=R, reruns=C["reruns"], bar=C["bar"],
               max_new_tokens=min(512, 256 * int(size)), batch_size=min(192, B * P), judge_items=C["judge_items"], sandbox_workers=12,
               seed=C["seed"], n_boot=C["n_boot"])
    half = 1.959964 * math.sqrt(2 * p * (1 - p) / (P * R * B))   # binomial null at the predicted rate: >= the heterogeneous truth
    cmd = ("python scripts/exec_notebook.py nbs/runs/30_calibration.ipynb out_dir=$OUT/h200_calibration_v2 "
           "model=/tmp/cache/smollm2-135m-instruct-fp32 " + " ".join(f"{k}={v}" if not isinstance(v, list) else f'"{k}={v!r}"' for k, v in run.items()))
    doc = dict(written=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit(), design=C,
               data=dict(folder=str(z_dir.name), file="base_rollouts.parquet", draws=len(d), prompts=int(len(per)),
                         what="per-function pass rates c_i = correct draws / 20 of the embedded model's base draws, one task asked alone"),
               model=("a bundle of s functions passes a fresh draw when each function passes, independently: the resample arm's "
                      "per-sample pass rate is the mean over random s-subsets of prod c_i = e_s(c) / C(n, s) (bundle_pass_rate); "
                      "interval: 95% over tasks resampled and each c_i redrawn from its own 20 draws"),
               predictions=t.to_dict("records"), chosen=dict(pool=pool, difficulties=C["pools"][pool], size=int(size),
                                                              n_bundles=B, predicted=p, lo=float(ch.lo), hi=float(ch.hi), in_band=bool(in_band)),
               rule=(f"among (pool, size) with at least {C['min_bundles']} disjoint bundles, the prediction inside {C['band']} closest to "
                     f"{C['target']}; none inside: the closest to the band (in_band false)"),
               run=run, primary=("unchanged from published/h200_calibration: per-sample pass rate per arm, paired by bundle, gain over "
                                 f"resample with a 95% bundle-bootstrap CI; an arm clears when the CI lower bound exceeds bar = {C['bar']}"),
               device_command=cmd, planned_halfwidth=round(half, 4), samples=dict(per_bundle_and_arm=P * R, control=B * P * R * 4, reruns=B * P * R * C["reruns"]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "preregistration.json").write_text(json.dumps(doc, indent=1))
    print(t.round(4).to_string(index=False)); print(json.dumps(doc["chosen"]))
    return doc


# The card-sampler arms (nbs/runs/params/campaign/card.yaml), fixed before any of them ran.
CARD = DESIGN["card"]                                                  # the truncated "card" sampler (a DecodingConfig)
CARD_DRAWS, CARD_CHUNK, CARD_BATCH = BC_DRAWS, DESIGN["card_chunk"], DESIGN["card_batch"]   # 340 x 59 = 20,060 rollouts (bc_spread's)
OFFLINE_CARD = {a: (v["scheme"], v["what"]) for a, v in DESIGN["offline_card"].items()}      # filtered-BC arms on card rollouts
CARD_CONTROL = (DESIGN["card_control"]["arm"], DESIGN["card_control"]["what"])
HF_S_PER_SAMPLE = 0.372  # published/h200_fast_loop/bench_loop.json: hf engine generation seconds per sample at 80 rows, 256 new tokens
FAST_S_PER_SAMPLE = 0.015  # the same file: the fast engine's generation seconds per sample (T = 1)


def card_config():
    "The card sampler as a DecodingConfig."
    from proposal_nb.lm.densities import DecodingConfig
    return DecodingConfig(**CARD)


def card_plan()->dict:
    "The card arms' pre-registered design: sampler, budget and its GPU-time bound, evaluation, the control and why."
    n = CARD_DRAWS * 59
    return dict(sampler=CARD, engine="auto: the fast engine on a GPU (it samples the card config since 72eeb14, the same tokens as "
                                     "HF generate from the same keys), else hf", rollouts=n, draws_per_prompt=CARD_DRAWS,
                chunk=CARD_CHUNK, batch_rows=CARD_BATCH, keys="(seed 42, 'bc-rollouts', prompt, draw): bc_spread's keys, shared randomness",
                budget_why=(f"bc_spread's {n:,} rollouts, so the card and T = 1 BC arms fit equal data. At the hf engine's measured "
                            f"{HF_S_PER_SAMPLE} s per sample (80 rows) that is at most {n * HF_S_PER_SAMPLE / 60:.0f} GPU-minutes; the fast "
                            f"engine's plain T = 1 draws cost {FAST_S_PER_SAMPLE} s per sample (about {n * FAST_S_PER_SAMPLE / 60:.0f} "
                            f"GPU-minutes), and its card draws add a top-k / top-p pass over the vocabulary per token (not measured). Chunks of {CARD_CHUNK} draws per "
                            f"prompt ({CARD_CHUNK * 59:,} rollouts) resume across 10-minute jobs and their seconds go to the ledger. If the "
                            "device time runs out first, bc_card fits the whole chunks made (equal draws per prompt) and the ledger says "
                            "how many: a stop decided on timings only, never on a bc_card result"),
                arms={a: dict(scheme=v[0], what=v[1], epochs=1, batch_size=8) for a, v in OFFLINE_CARD.items()},
                evaluation=(f"held-out split, R x M = {EVAL['R']} x {EVAL['M']} per prompt with EVAL's keys; the proposal is sampled at "
                            "T = 1 (exact log q) and every weight uses the card density renormalised over its kept set (a draw with a "
                            "token outside it weighs 0); the reference base_card is the card sampler's own draws (rejection sampling "
                            "from p_card), made with the same keys"),
                control=dict(name=CARD_CONTROL[0], what=CARD_CONTROL[1],
                             why=("§8.7 contrasts arms that differ in both their rollouts and their prior. Holding the proposal and its "
                                  "draws fixed and changing only the prior in the weight isolates the prior; BC on T = 1 rollouts "
                                  "(bc_spread, already an arm) differs from bc_card in its data as well")),
                primary=("per checkpoint, paired wacc differences bc_card - base_card and bc_card_t1prior - base with 95% prompt-bootstrap "
                         "CIs; beside them the proposal's own pass@1 against base_card's and the share of zero-weight draws"),
                pre_run=dict(zero_weight_share=0.9167, outside_per_token=0.2416, draws=24, prompts=6, mean_length=100.2,
                             what=("base-model T = 1 draws (the untrained proposal) scored under the card prior: 22 of 24 have a token "
                                   "outside its kept set, so they weigh 0; a T = 1 proposal near the base wastes most draws here"),
                             provenance="`campaign.py card-waste` on CPU, fp32 embedded model, first 6 held-out prompts x 4 draws, EVAL keys, 2026-12-01"))


def _card_tasks(split:str, limit:int|None=None):
    train_tasks, heldout = _tasks()
    ts = train_tasks if split == "train" else heldout
    return ts[:limit] if limit else ts


def _card_model(model_path:str, seed:int, dtype:str|None=None):
    import torch
    from proposal_nb.lm.models import add_lora, load_model
    lm, tok = load_model(model_path, dtype=dtype); torch.manual_seed(seed)
    return add_lora(lm, r=8, alpha=16), tok


def _ledger(folder:Path, job:dict):
    job = job | dict(gpu=_gpu(), date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit())
    with open(folder / "ledger.jsonl", "a") as f: f.write(json.dumps(job) + "\n")
    print(json.dumps(job), flush=True)
    return job


def rollouts_card(runs:Path, model_path:str, deadline_s:float=480, draws:int=CARD_DRAWS, chunk:int=CARD_CHUNK,
                  batch_size:int=CARD_BATCH, max_new_tokens:int=SHARED["max_new_tokens"], limit:int|None=None, valid=None,
                  close:bool=False)->Path|None:
    "Card-sampler rollouts of the training prompts in resumable chunks; card.parquet once all `draws` exist (or, with close, the chunks made)."
    import pandas as pd
    from proposal_nb.lm.rollouts import grade, keyed_generations
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    if draws % chunk: raise SystemExit(f"draws={draws} is not a multiple of chunk={chunk}")
    t0, out = time.time(), runs / "rollouts_card"; out.mkdir(parents=True, exist_ok=True)
    tasks, cfg, peft, t_chunks, made = _card_tasks("train", limit), card_config(), None, [], []
    todo = [] if close else [k for k in range(0, draws, chunk) if not (out / f"part-{k:05d}.parquet").exists()]
    with Executor() as ex:
        pots = {"valid": valid or make_potential("no_error", ex), "correct": make_potential("correctness", ex)}
        for k in todo:
            if t_chunks and time.time() - t0 + 1.2 * max(t_chunks) > deadline_s: break
            if peft is None: peft, tok = _card_model(model_path, 0)
            tc = time.time()
            d = keyed_generations(peft, tok, tasks, chunk, SHARED["seed"], "bc-rollouts", "auto", max_new_tokens, batch_size,
                                  adapter=False, progress=True, config=cfg, start=k)
            ft, fg = [t for t, x in zip(tasks, d) for _ in x], [g for x in d for g in x]
            r = grade(pots, ft, [g.text for g in fg])
            df = pd.DataFrame(dict(prompt_id=[t.id for t in ft], draw=[k + m for x in d for m in range(len(x))], valid=r["valid"],
                                   correct=r["correct"] * (r["valid"] > 0), logp=[g.logprob for g in fg], length=[len(g.token_ids) for g in fg],
                                   stop_reason=[g.stop_reason for g in fg], prompt_ids=[list(g.prompt_ids) for g in fg],
                                   token_ids=[list(g.token_ids) for g in fg]))
            df.to_parquet(out / "part.tmp.parquet"); (out / "part.tmp.parquet").rename(out / f"part-{k:05d}.parquet")
            t_chunks.append(time.time() - tc); made.append(k)
    parts = sorted(out.glob("part-[0-9]*.parquet"))
    if (close or len(parts) == draws // chunk) and parts and not (out / "card.parquet").exists():
        if [p.name for p in parts] != [f"part-{k:05d}.parquet" for k in range(0, chunk * len(parts), chunk)]:
            raise SystemExit(f"{out}: the chunks made are not draws 0..{chunk * len(parts) - 1}: {[p.name for p in parts]}")
        order = {t.id: i for i, t in enumerate(tasks)}
        allp = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
        allp = allp.assign(_o=allp.prompt_id.map(order)).sort_values(["_o", "draw"], kind="stable").drop(columns="_o").reset_index(drop=True)
        allp.to_parquet(out / "card.tmp.parquet"); (out / "card.tmp.parquet").rename(out / "card.parquet")
    n_new = len(made) * chunk * len(tasks)
    _ledger(out, dict(arm="rollouts_card", chunks=made, chunks_done=len(parts), chunks_total=draws // chunk, rollouts=n_new,
                      wall_s=round(time.time() - t0, 1), gen_s_per_sample=round(sum(t_chunks) / max(1, n_new), 4),
                      complete=(out / "card.parquet").exists(), closed_early=close and len(parts) < draws // chunk,
                      sampler=CARD, batch_rows=batch_size))
    return out / "card.parquet" if (out / "card.parquet").exists() else None


def base_prior_eval(runs:Path, model_path:str, name:str="base_card", prior=None, eval_kw:dict|None=None, valid=None)->Path:
    "The reference arm of a prior: its own held-out draws (q = p_gen) with token ids, in RUNS/name/heldout_draws.parquet."
    from proposal_nb.lm.rollouts import evaluation_draws
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    prior = card_config() if prior is None else prior
    kw = dict(R=EVAL["R"], M=EVAL["M"], seed=EVAL["seed"], max_new_tokens=SHARED["max_new_tokens"], limit=None,
              batch_size=EVAL["batch_size"] if prior.is_plain else CARD_BATCH) | (eval_kw or {})
    t0, out = time.time(), runs / name; out.mkdir(parents=True, exist_ok=True)
    peft, tok = _card_model(model_path, 0, arm_dtype(name))
    with Executor() as ex:
        d = evaluation_draws(peft, tok, _card_tasks("heldout", kw["limit"]), name, None, kw["R"], kw["M"], valid or make_potential("no_error", ex),
                             make_potential("correctness", ex), seed=kw["seed"], max_new_tokens=kw["max_new_tokens"], batch_size=kw["batch_size"],
                             progress=False, keep_tokens=True, engine="auto", prior=prior)
    d.to_parquet(out / "heldout_draws.tmp.parquet"); (out / "heldout_draws.tmp.parquet").rename(out / "heldout_draws.parquet")
    _ledger(out, dict(arm=name, prior=__import__("dataclasses").asdict(prior), wall_s=round(time.time() - t0, 1), draws=len(d), validity=float(d.valid.mean()),
                      scorer_outside=int(d["outside_kept"].sum()) if "outside_kept" in d else 0))
    return out / "heldout_draws.parquet"


def card_checkpoint_eval(model, tok, name:str, out:Path, runs:Path, ex, eval_kw:dict|None=None, valid=None, suffix:str="")->dict:
    """Held-out draws of the adapter now in `model`, weighed with the card prior (heldout/NAME_*) and, the same draws, with T = 1
    (heldout/t1-NAME_*); re-scored references base_card and base (`suffix` _fp32: base_card_fp32 and base_fp32)."""
    import pandas as pd
    from proposal_nb.lm.densities import DecodingConfig
    from proposal_nb.lm.rollouts import adapter_state, evaluation_draws, prior_logps, prior_table
    from proposal_nb.programs.potentials import make_potential
    kw = dict(R=EVAL["R"], M=EVAL["M"], seed=EVAL["seed"], max_new_tokens=SHARED["max_new_tokens"], batch_size=EVAL["batch_size"],
              limit=None) | (eval_kw or {})
    refs = {k: runs / f"{k}{suffix}" / "heldout_draws.parquet" for k in ("base_card", "base")}
    for k, f in refs.items():
        if not f.exists(): raise SystemExit(f"{f} is missing: run `{'base-card' if k == 'base_card' else 'base'}{suffix.replace('_', '-')}` first")
    t0, state = time.time(), {k: v.clone() for k, v in adapter_state(model).items()}
    d = evaluation_draws(model, tok, _card_tasks("heldout", kw["limit"]), name, state, kw["R"], kw["M"], valid or make_potential("no_error", ex),
                         make_potential("correctness", ex), seed=kw["seed"], max_new_tokens=kw["max_new_tokens"], batch_size=kw["batch_size"],
                         progress=False, keep_tokens=True, engine="auto", prior=card_config(), **CAMPAIGN_EVAL)
    t1 = d.drop(columns=["outside_kept"]).assign(logp=prior_logps(model, d, DecodingConfig()))
    (out / "heldout").mkdir(parents=True, exist_ok=True)   # one folder, so that `pack` carries both
    for pre, draws, base in (("", d, refs["base_card"]), ("t1-", t1, refs["base"])):
        draws.drop(columns=["prompt_ids", "token_ids"]).to_parquet(out / "heldout" / f"{pre}{name}_draws.parquet")
        prior_table(model, pd.read_parquet(base), name, state).to_parquet(out / "heldout" / f"{pre}{name}_prior.parquet")
    res = dict(checkpoint=name, eval_s=round(time.time() - t0, 1), validity=float(d.valid.mean()), correct=float(d.correct.mean()),
               zero_weight=float(d.outside_kept.mean()))
    print(json.dumps(res), flush=True)
    return res


def train_bc_card(arm:str, runs:Path, model_path:str, overrides:dict|None=None, eval_kw:dict|None=None, valid=None,
                  deadline_s:float=math.inf)->dict:
    "Filtered BC (one epoch) on the card rollouts with the arm's batching scheme, resumable; then the held-out evaluation under both priors."
    import pandas as pd
    from proposal_nb.programs.sandbox import Executor
    if arm not in OFFLINE_CARD: raise SystemExit(f"unknown card arm {arm!r}; arms: {', '.join(OFFLINE_CARD)}")
    src = runs / "rollouts_card" / "card.parquet"
    if not src.exists(): raise SystemExit(f"{src} is missing: `rollouts-card` has not finished all its chunks")
    t0, out = time.time(), runs / arm
    samples = pd.read_parquet(src)
    peft, tok = _card_model(model_path, SHARED["seed"])
    log, total, job = fit_bc(arm, out, samples, peft, _bc_config(OFFLINE_CARD[arm][0], overrides), deadline_s)
    ev = dict(eval_s=0, zero_weight=None)
    if len(log) == total:
        with Executor() as ex: ev = card_checkpoint_eval(peft, tok, f"step-{total}", out, runs, ex, eval_kw, valid)
    return _ledger(out, job | dict(draws_per_prompt=int(samples.groupby("prompt_id").size().min()), wall_s=round(time.time() - t0, 1),
                                   eval_s=ev["eval_s"], zero_weight=ev["zero_weight"], overrides=overrides or {}))


def eval_card_fp32(runs:Path, model_path:str, arm:str="bc_card", eval_kw:dict|None=None, valid=None)->dict:
    """Row 7 with exact weights: the card arm's fitted adapter (RUNS/ARM/adapter; its fit uses no weights) loaded into the model in
    fp32 and evaluated as card_checkpoint_eval does, against base_card_fp32 and base_fp32, into RUNS/ARM_fp32."""
    from proposal_nb.lm.models import model_dtype
    from proposal_nb.lm.rollouts import load_adapter_folder
    from proposal_nb.programs.sandbox import Executor
    jobs = [json.loads(l) for l in (runs / arm / "ledger.jsonl").read_text().splitlines()] if (runs / arm / "ledger.jsonl").exists() else []
    if not jobs or jobs[-1]["end_step"] < jobs[-1]["steps"] or not (runs / arm / "adapter").is_dir():
        raise SystemExit(f"{runs / arm}: no finished fit with its adapter (train-bc {arm} first)")
    t0, out, name = time.time(), runs / f"{arm}_fp32", f"step-{jobs[-1]['steps']}"
    peft, tok = _card_model(model_path, SHARED["seed"], "float32")
    load_adapter_folder(peft, runs / arm / "adapter")
    with Executor() as ex: ev = card_checkpoint_eval(peft, tok, name, out, runs, ex, eval_kw, valid, suffix="_fp32")
    return _ledger(out, dict(arm=f"{arm}_fp32", source=f"{arm}/adapter ({name})", dtype=model_dtype(peft), wall_s=round(time.time() - t0, 1),
                             eval_s=ev["eval_s"], zero_weight=ev["zero_weight"]))


def report_card_arms(runs:Path, out:Path, n_boot:int=2000, suffix:str="")->Path:
    """campaign_card_eval: base_card, the card arms under the card prior, base and the control under T = 1; the pre-registered pairs.
    `suffix` _fp32: the same from the fp32 re-evaluation (eval-card-fp32), every name suffixed, into campaign_card_fp32_eval."""
    import pandas as pd
    from proposal_nb.analysis.evaluation import evaluation_tables, write_evaluation
    from proposal_nb.analysis.report_card import report_card
    from proposal_nb.results import checkpoint_parts, write_json, write_table
    own = lambda a: pd.read_parquet(runs / a / "heldout_draws.parquet").drop(columns=["prompt_ids", "token_ids"]).assign(arm=a, checkpoint=a)
    draws, prior, pairs = [own(f"base_card{suffix}"), own(f"base{suffix}")], [], []
    prior += [d.assign(logq=d.logp) for d in draws]
    for arm in [a for a in OFFLINE_CARD if (runs / f"{a}{suffix}" / "heldout").is_dir()]:
        for pre, name, ref in (("", f"{arm}{suffix}", f"base_card{suffix}"), ("t1-", f"{CARD_CONTROL[0]}{suffix}", f"base{suffix}")):
            fs = sorted((runs / f"{arm}{suffix}" / "heldout").glob(f"{pre}step-*_draws.parquet"), key=lambda f: checkpoint_parts(f.name[len(pre):].split("_")[0])[1])
            for f in fs:
                ck = f"{name}-{f.name[len(pre):].split('_')[0]}"
                draws.append(pd.read_parquet(f).assign(arm=name, checkpoint=ck))
                prior.append(pd.read_parquet(f.with_name(f.name.replace("_draws", "_prior"))).assign(checkpoint=ck))
                pairs.append((ref, ck))
        if not suffix and (runs / arm / "log.parquet").exists():
            d = out / f"campaign_{arm}"
            write_table(d, "log", pd.read_parquet(runs / arm / "log.parquet"))
            jobs = [json.loads(l) for l in (runs / arm / "ledger.jsonl").read_text().splitlines()] if (runs / arm / "ledger.jsonl").exists() else []
            write_json(d, "config", dict(kind="train", arm=arm, what=OFFLINE_CARD[arm][1], sampler=CARD, training=json.loads((runs / arm / "config.json").read_text()),
                                         split=SPLIT, jobs=jobs, gpu_minutes=round(sum(j["wall_s"] for j in jobs) / 60, 2),
                                         **provenance({arm: jobs}, user_command=CARD_COMMAND)))
    cat = lambda ts: pd.concat(ts, ignore_index=True).assign(split="heldout")
    draws, prior = cat(draws), cat(prior)
    names = list(dict.fromkeys(draws.checkpoint))
    n = int(draws.groupby(["checkpoint", "prompt_id"]).size().min())                                  # R x M draws per prompt
    ev = evaluation_tables(draws, checkpoints=names, ks=[k for k in PASS_KS if k <= n], n_boot=n_boot)   # pass@k up to R x M, as `report`
    e = out / f"campaign_card{suffix}_eval"
    write_evaluation(e, ev); write_table(e, "draws", draws); write_table(e, "prior", prior)
    card = report_card(draws, prior, split="heldout", n_boot=n_boot, checkpoints=names)
    write_table(e, "report_card", ev.summary[["checkpoint", "arm", "step"]].drop_duplicates().merge(card.table, on="checkpoint"))
    key = ev.paired.set_index(["a", "b"]).loc[pairs].reset_index() if pairs else ev.paired.iloc[:0]
    zero = draws.groupby("checkpoint").apply(lambda g: float((g.logp == -float("inf")).mean()), include_groups=False).rename("zero_weight_share")
    key = key[key.metric.isin(["wacc", "pass1", "validity", "wacc_reject"])].merge(zero, left_on="b", right_index=True, how="left")
    flat = {f"{r.metric} {r.b} - {r.a}{sfx}": float(v) for r in key.itertuples() for sfx, v in (("", r.diff), (" lo", r.lo), (" hi", r.hi))}
    write_json(e, "summary", flat | {f"zero_weight_share {k}": float(v) for k, v in zero.items()})   # the pre-registered pairs, flat
    ledgers = {a.name: [json.loads(l) for l in (a / "ledger.jsonl").read_text().splitlines()]
               for a in sorted(runs.iterdir()) if (a / "ledger.jsonl").exists()}
    side = {a: js for a, js in ledgers.items() if a in {f"{x}{suffix}" for x in ("base", "base_card", *OFFLINE_CARD)} | ({"rollouts_card"} if not suffix else set())}
    write_json(e, "config", dict(kind="evaluate", model="embedded:SmolLM2-135M-Instruct", split=SPLIT, eval=EVAL, card=card_plan(),
                                 pairs=[list(p) for p in pairs], gpu_minutes={a: round(sum(j["wall_s"] for j in js) / 60, 2) for a, js in ledgers.items()},
                                 **({"dtype": "float32"} if suffix else {}),
                                 **provenance(side, user_command=CARD_FP32_COMMAND if suffix else CARD_COMMAND, dtype="fp32" if suffix else "bf16")))
    print(key[key.metric == "wacc"].round(3).to_string(index=False))
    return e


def card_waste(model_path:str, n_prompts:int=6, draws:int=4, batch_size:int=24)->dict:
    "How often a T = 1 draw of the base model leaves the card sampler's kept set (weight 0 under the card prior): a pre-run fact."
    import torch
    from proposal_nb.lm.densities import completion_token_logprobs
    from proposal_nb.lm.models import load_model
    from proposal_nb.lm.rollouts import keyed_generations
    t0, (lm, tok) = time.time(), load_model(model_path)
    d = keyed_generations(lm, tok, _card_tasks("heldout", n_prompts), draws, EVAL["seed"], "eval", "hf", SHARED["max_new_tokens"], batch_size, adapter=False)
    flat = [g for x in d for g in x]
    with torch.no_grad():
        tl, tm = completion_token_logprobs(lm, [g.prompt_ids for g in flat], [g.token_ids for g in flat], config=card_config())
    out = torch.isinf(tl) & tm
    res = dict(draws=len(flat), prompts=n_prompts, mean_length=round(sum(len(g.token_ids) for g in flat) / len(flat), 1),
               zero_weight_share=round(float(out.any(-1).float().mean()), 4), outside_per_token=round(float(out.sum() / tm.sum()), 4),
               seconds=round(time.time() - t0, 1), device=_gpu())
    print(json.dumps(res), flush=True)
    return res


def plan_card(out:Path)->dict:
    "Write campaign_card.json: the card arms' design, fixed before they run."
    out.mkdir(parents=True, exist_ok=True)
    doc = dict(written=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit(), **card_plan())
    (out / "campaign_card.json").write_text(json.dumps(doc, indent=1)); print(json.dumps(doc, indent=1))
    return doc


def strict_design()->dict:
    "The strict pair's design: arms, training potential, evaluation, reference and the folders the report writes."
    arms = {}
    for a, (src, why) in STRICT_ARMS.items():
        st = arm_settings(a)
        arms[a] = dict(copies=src, what=why, potential=STRICT["potential"], settings=st, checkpoints=log_steps(st["steps"]),
                       draws=st["steps"] * st["M"] * st["prompts_per_step"])
    return dict(arms=arms, split=SPLIT, potential=STRICT["potential"], mu0=STRICT["mu0"], mu0_why=WHY["mu0_strict"],
                same_as=("iguana / iguana_kl: the same split, seed, step and sample budget, estimator, clips, anchor and held-out "
                         "keys; only r (no_error -> strict) and mu0 (0.48 -> 0.16, the prior mean of Z under the new r) differ"),
                evaluation=(f"held-out split, R x M = {EVAL['R']} x {EVAL['M']} per prompt and checkpoint with EVAL's keys (every "
                            "arm's); valid graded with strict, correct with correctness (counted where valid), so wacc and validity "
                            "mean the strict target"),
                reference=("base_strict: the base arm's same held-out draws (runs/base/heldout_draws.parquet) regraded with strict on "
                           "CPU (`campaign.py base-strict`), texts rebuilt from their token ids and checked against text_hash"),
                folders=dict(train=[f"campaign_{a}" for a in STRICT_ARMS], evaluate="campaign_strict_eval (base_strict first; never "
                             "mixed into campaign_eval, whose validity means no_error)"),
                command=STRICT_COMMAND)


def strict_zcounts(z_dir:Path|None=None)->dict:
    "The training prompts' base-model Z(x) under strict and no_error (published/h200_z_embedded/z_table.csv): hard counts and means."
    import pandas as pd
    from proposal_nb.analysis.findings import HARD_Z
    z_dir = z_dir or Path(__file__).resolve().parents[1] / "published" / "h200_z_embedded"
    z, ids = pd.read_csv(z_dir / "z_table.csv"), [t.id for t in _tasks()[0]]
    res = {}
    for pot in (STRICT["potential"], "no_error"):
        zp = z[z.potential == pot].set_index("prompt_id")
        miss = [i for i in ids if i not in zp.index]
        if miss: raise SystemExit(f"{z_dir}/z_table.csv: no {pot} row for training prompt {miss[0]!r} ({len(miss)} missing)")
        t = zp.loc[ids]
        res[pot] = dict(prompts=len(t), draws=int(t.n.sum()), mean_Z=round(float(t.Z.mean()), 4), hard=int((t.Z <= HARD_Z).sum()),
                        zero=int((t.Z == 0).sum()), hard_prompts=sorted(t.index[t.Z <= HARD_Z]))
    return dict(folder=z_dir.name, file="z_table.csv", hard_z=HARD_Z, by_potential=res)


def plan_strict(out:Path, z_dir:Path|None=None)->dict:
    "Write campaign_strict.json: the strict pair's design, the Z(x) counts that make finding 3 testable, the finding and its rule."
    from proposal_nb.analysis.findings import HARD_Z, MIN_HARD
    z = strict_zcounts(z_dir)
    mean = z["by_potential"][STRICT["potential"]]["mean_Z"]
    if round(mean, 2) != STRICT["mu0"]: raise SystemExit(f"mu0 = {STRICT['mu0']} but the training prompts' mean strict Z is {mean}")
    doc = dict(written=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit(),
               finding="MISSION finding 3: anchor-free training drifts on Z = 0 prompts while the KL anchor holds",
               why=(f"under the campaign's no_error potential {z['by_potential']['no_error']['hard']} of 59 training prompts have "
                    f"Z <= {HARD_Z} (fewer than {MIN_HARD}: untestable); under strict {z['by_potential']['strict']['hard']} do, "
                    f"{z['by_potential']['strict']['zero']} at Z = 0"),
               rule=dict(function="proposal_nb.analysis.findings.rule_anchor (read by find_anchor)", hard_z=HARD_Z, min_hard=MIN_HARD,
                         statistic=("per training prompt, training_change = mean strict validity of its training draws over the last "
                                    "quarter of the steps minus over the first quarter (campaign_<arm>/draws); hard prompts: base Z <= "
                                    f"{HARD_Z} under strict; the mean over hard prompts of (iguana_kl_strict - iguana_strict), with a "
                                    "95% prompt-bootstrap CI (2,000 resamples, seed 0)"),
                         decides=(f"with >= {MIN_HARD} hard prompts: CI above 0 reproduces the finding, CI below 0 does not reproduce "
                                  f"it, a CI across 0 is inconclusive; fewer than {MIN_HARD}: inconclusive")),
               design=strict_design(), z=z)
    out.mkdir(parents=True, exist_ok=True)
    (out / "campaign_strict.json").write_text(json.dumps(doc, indent=1)); print(json.dumps(doc, indent=1))
    return doc


def plan_fp32(out:Path, check:Path)->dict:
    """Write campaign_fp32.json: the fp32 arms' design, the weight check that calls for them (`check`: the published
    campaign_weight_check, whose verdict must name bf16), and what they decide. Refuses a check that does not call for them."""
    summary = json.loads((check / "summary.json").read_text())
    verdict = summary.get("dtype_verdict") or ""
    if not verdict.startswith("bf16"): raise SystemExit(f"{check}: the weight check does not call for fp32 re-runs (verdict: {verdict or 'none'})")
    doc = dict(written=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit(),
               why=dict(verdict=verdict, check={dt: {k: v[k] for k in ("n", "mean_ratio", "se", "z")} for dt, v in summary["dtype_check"].items()},
                        rule=("fixed in campaign_eval/NEXT.md before the check ran: if fp32 reads 1 within 2 SE and bf16 does not, the "
                              "campaign's IS-weighted numbers need fp32 re-runs")),
               arms={a: dict(copies=src, what=why, dtype="float32", reference="base_fp32", settings=ARMS[src][0],
                             checkpoints=log_steps(arm_settings(a)["steps"])) for a, (src, why) in FP32_ARMS.items()},
               reference="base_fp32: the base arm's held-out draws drawn in fp32 with the same keys (campaign.py base-fp32)",
               decides=("the numbers weighed by p/q, re-measured with exact weights: wacc, ESS/M, PSIS k-hat, log-Z bounds and KL "
                        "(campaign_fp32_eval/report_card.csv), the normaliser's EB intervals (campaign_eb_intervals), the weight check "
                        "itself on every fp32 arm's draws (campaign_weight_check), and findings 4 and 5 read on iguana_fp32; "
                        "validity, pass@k and the distinct share beside the bf16 arms' say whether exact weights also train differently"),
               card=dict(arm="bc_card_fp32", what=("row 7 with exact weights: bc_card's fitted adapter (its fit uses no weights) evaluated "
                                                    "in fp32 under the card and T = 1 priors (campaign.py eval-card-fp32)"),
                         references=["base_card_fp32", "base_fp32"], folder="campaign_card_fp32_eval", job="campaign_job.sh arm card_fp32"),
               order="iguana_fp32 and iguana_kl_fp32 first (findings 4, 5), with card_fp32 (row 7, a few minutes); then msc_fp32 and rb_msc_fp32, then msc_m2_fp32",
               split=SPLIT, eval=EVAL, shared=SHARED)
    out.mkdir(parents=True, exist_ok=True)
    (out / "campaign_fp32.json").write_text(json.dumps(doc, indent=1)); print(json.dumps(doc, indent=1))
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=["plan", "base", "base-fp32", "train", "rollouts", "train-bc", "pack", "pack-runs", "unpack", "finished", "chain-check", "report", "_train_small", "calibration-plan",
                                     "plan-card", "rollouts-card", "base-card", "report-card", "card-waste", "plan-strict", "base-strict", "plan-fp32",
                                     "base-card-fp32", "eval-card-fp32"])
    ap.add_argument("--no-eval", action="store_true", help="train: skip the held-out evaluation at checkpoints")
    ap.add_argument("--close", action="store_true", help="rollouts-card: no new chunk; card.parquet from the chunks made (device time ran out)")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--deadline-s", type=float, default=480); ap.add_argument("--gguf", default="")
    ap.add_argument("--model", default=""); ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--dtype", default="", help="train: the model's dtype (float32, bfloat16); default bf16 on CUDA, fp32 on CPU")
    ap.add_argument("--split-at", type=int, default=3); ap.add_argument("--stop-at", type=int, default=None)
    ap.add_argument("--set", action="append", default=[], help="key=value over the arm's settings (smoke tests only)")
    ap.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=True,
                    help="chain-check: deterministic torch kernels (needed for bitwise equality on a GPU)")
    a = ap.parse_args(argv)
    over = {k: _cast(SHARED.get(k), v) for k, v in (x.split("=", 1) for x in a.set)}
    if a.cmd == "plan": return plan(Path(a.args[0]))
    if a.cmd == "calibration-plan": return calibration_plan(Path(a.args[0]))
    if a.cmd == "plan-card": return plan_card(Path(a.args[0]))
    if a.cmd == "plan-strict": return plan_strict(Path(a.args[0]))
    if a.cmd == "plan-fp32": return plan_fp32(Path(a.args[0]), Path(a.args[1]))
    if a.cmd == "base-strict": return base_strict(Path(a.args[0]), _model_path(a))
    if a.cmd == "card-waste": return card_waste(_model_path(a))
    if a.cmd == "rollouts-card": return rollouts_card(Path(a.args[0]), _model_path(a), a.deadline_s, close=a.close)
    if a.cmd == "base-card": return base_prior_eval(Path(a.args[0]), _model_path(a))
    if a.cmd == "base-card-fp32": return base_prior_eval(Path(a.args[0]), _model_path(a), "base_card_fp32")
    if a.cmd == "eval-card-fp32": return eval_card_fp32(Path(a.args[0]), _model_path(a))
    if a.cmd == "report-card":
        runs, res = Path(a.args[0]), Path(a.args[1])
        if (runs / "bc_card_fp32" / "heldout").is_dir(): report_card_arms(runs, res, suffix="_fp32")
        return report_card_arms(runs, res)
    if a.cmd == "train-bc" and a.args and a.args[0] in OFFLINE_CARD:
        return train_bc_card(a.args[0], Path(a.args[1]), _model_path(a), over, deadline_s=a.deadline_s)
    if a.cmd == "finished": return sys.exit(0 if _finished(Path(a.args[0])) else 1)
    if a.cmd == "report": return report(Path(a.args[0]), Path(a.args[1]))
    if a.cmd == "pack": return pack(Path(a.args[0]), Path(a.args[1]))
    if a.cmd == "pack-runs": return pack_runs(Path(a.args[0]), Path(a.args[1]))
    if a.cmd == "unpack": return unpack(Path(a.args[0]), Path(a.args[1]))
    if a.cmd == "train":
        arm, runs = a.args
        return train(arm, Path(runs) / arm, _model_path(a), a.deadline_s, config=arm_config(arm, over), overrides=over,
                     base_file=None if a.no_eval else Path(runs) / reference(arm) / "heldout_draws.parquet", dtype=a.dtype or arm_dtype(arm),
                     stop_at=a.stop_at)
    if a.cmd == "base": return base_eval(Path(a.args[0]), _model_path(a))
    if a.cmd == "base-fp32": return base_eval(Path(a.args[0]), _model_path(a), "base_fp32")
    if a.cmd == "rollouts": return rollouts(Path(a.args[0]), _model_path(a))
    if a.cmd == "train-bc": return train_bc(a.args[0], Path(a.args[1]), _model_path(a), over, deadline_s=a.deadline_s)
    if a.cmd == "chain-check":
        return sys.exit(0 if chain_check(Path(a.args[0]), _model_path(a), a.steps, a.split_at, sets=a.set, deterministic=a.deterministic) else 1)
    if a.cmd == "_train_small":  # one process of the chain check
        from dataclasses import replace
        if a.deterministic:  # before CUDA starts: cuBLAS reads its workspace setting once
            import torch
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8"); torch.use_deterministic_algorithms(True)
        arm, run_dir = a.args
        cfg = arm_config(arm, over)
        cfg = replace(cfg, loop=replace(cfg.loop, steps=a.steps, checkpoint_every=a.steps + 1))
        return train(arm, Path(run_dir), a.model, math.inf, config=cfg, stop_at=a.stop_at, overrides=over)


if __name__ == "__main__":
    main()
