"""Ours (training.OnlineRun, the fastest engine here) against TRL's GRPOTrainer on the same prompts, side by side in one
run, per sample and per generated token: the embedded model, M draws of <= max-new tokens, LoRA r=8, one prompt per step.

    python scripts/bench_cpu_trl.py OUT_DIR [--steps 4] [--M 8] [--max-new 128] [--engine auto] [--dtype auto] [--compile]

Both sides load the model in the same dtype (--dtype as the run notebooks read it: '' float32 on CPU; 'auto' bf16 on a CPU
that multiplies bf16 in hardware); in bf16 TRL trains with bf16=True and our weights keep the float32 prior's log p.
--compile compiles our fast engine's decode layer (`loop.compile`; in bf16 its products stay on prepacked weights).
TRL runs its default generation (HF generate). Needs `pip install trl==1.16.0 datasets` in the same environment.
The first step of each side (warm-up) is left out. Writes OUT_DIR/bench_cpu_trl.json."""
import argparse, json, platform, subprocess, tempfile, time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from proposal_nb.lm.models import add_lora, chat_prompt, embedded_model_path, load_model, run_dtype
from proposal_nb.programs.potentials import make_potential
from proposal_nb.lm.rollouts import load_task_source
from proposal_nb.programs.sandbox import Executor
from proposal_nb.programs.tasks import split_tasks
from proposal_nb.lm.training import OnlineRun, online_config, step_prompts


def ours(train, potential, a):
    lm, tok = load_model(embedded_model_path(), dtype=run_dtype(a.dtype, "cpu"))
    torch.manual_seed(0)
    peft = add_lora(lm, r=8, alpha=16)
    cfg = online_config(engine=a.engine, M=a.M, prompts_per_step=1, steps=a.steps + 1, lr=1e-5, max_new_tokens=a.max_new,
                        checkpoint_every=10**6, seed=42, compile=a.compile)
    run = OnlineRun(peft, tok, train, potential, cfg, tempfile.mkdtemp(), resume=False, base_path=embedded_model_path())
    log = run.train(progress=True).iloc[1:]
    secs = log[["t_generation", "t_potential", "t_scoring", "t_update"]].sum(1)
    phases = {k.removeprefix("t_"): float(log[k].sum() / log.n_samples.sum()) for k in ("t_generation", "t_potential", "t_scoring", "t_update")}
    return dict(engine=run.engine.name, step_s=secs.tolist(), tokens=log.n_tokens.tolist(), per_phase_s=phases,
                per_sample_s=float(secs.sum() / log.n_samples.sum()), per_token_s=float(secs.sum() / log.n_tokens.sum()),
                mean_length=float(log.mean_length.mean()), validity=float(log.validity.mean()))


def trl(train, potential, a):
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    dtype = run_dtype(a.dtype, "cpu")
    lm, tok = load_model(embedded_model_path(), dtype=dtype)
    order = [step_prompts(len(train), 1, 42, t)[0] for t in range(a.steps + 1)]       # our loop's prompts, in order
    ds = Dataset.from_dict(dict(prompt=[chat_prompt(tok, train[i].prompt) for i in order], task=order))
    def reward(completions, task, **kw): return [float(r) for r in potential([train[i] for i in task], completions)]
    class Times(TrainerCallback):
        t = []
        def on_step_begin(self, *a_, **k): self.t0 = time.perf_counter()
        def on_step_end(self, *a_, **k): self.t.append(time.perf_counter() - self.t0)
    timer = Times()
    args = GRPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=a.M, num_generations=a.M, gradient_accumulation_steps=1,
                      max_completion_length=a.max_new, learning_rate=1e-5, lr_scheduler_type="constant", warmup_steps=0,
                      weight_decay=0.0, max_grad_norm=1.0, beta=0.0, temperature=1.0, top_k=0, top_p=1.0, bf16=dtype == torch.bfloat16,
                      gradient_checkpointing=False, max_steps=a.steps + 1, logging_steps=1, report_to="none", save_strategy="no",
                      seed=42, shuffle_dataset=False, use_cpu=True, dataloader_num_workers=0)
    lcfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], task_type="CAUSAL_LM")
    tr = GRPOTrainer(model=lm, reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok, peft_config=lcfg, callbacks=[timer])
    tr.train()
    lens = [h["completions/mean_length"] for h in tr.state.log_history if "completions/mean_length" in h][1:]
    steps = timer.t[1:]
    tokens = [L * a.M for L in lens]
    return dict(step_s=steps, tokens=tokens, per_sample_s=float(sum(steps) / (len(steps) * a.M)),
                per_token_s=float(sum(steps) / sum(tokens)), mean_length=float(np.mean(lens)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out"); ap.add_argument("--steps", type=int, default=4); ap.add_argument("--M", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=128); ap.add_argument("--engine", default="auto")
    ap.add_argument("--compile", action="store_true", help="compile our fast engine's decode layer (loop.compile)")
    ap.add_argument("--dtype", default="", help="'' (float32 on CPU), 'auto' (bf16 where the CPU multiplies it) or float32/bfloat16")
    a = ap.parse_args()
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    train, _ = split_tasks(load_task_source("embedded", "native", ["easy", "medium"], None), 0.3, 42)
    import trl as _trl
    res = dict(machine=f"{platform.machine()} CPU, {torch.get_num_threads()} threads", date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
               command="python scripts/bench_cpu_trl.py OUT " + " ".join(f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}")
                                                                  for k, v in vars(a).items() if k != "out" and v is not False),
               torch=torch.__version__, trl_version=_trl.__version__, dtype=str(run_dtype(a.dtype, "cpu")).removeprefix("torch."))
    with Executor() as ex:
        pot = make_potential("no_error", ex)
        res["ours"] = ours(train, pot, a); print(json.dumps(res["ours"]), flush=True)
        res["trl"] = trl(train, pot, a); print(json.dumps(res["trl"]), flush=True)
    for k in ("per_sample_s", "per_token_s"): res[f"ours_over_trl_{k}"] = res["ours"][k] / res["trl"][k]
    (out / "bench_cpu_trl.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k.startswith("ours_over")}, indent=1))


if __name__ == "__main__":
    main()
