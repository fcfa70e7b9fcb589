"""Tiny online run for the distributed tests. One process: `python tests/dist_worker.py RUN_DIR [ESTIMATOR] [STEPS]`;
several: `python -m torch.distributed.run --nproc_per_node=2 tests/dist_worker.py RUN_DIR [ESTIMATOR] [STEPS]`.
Environment: ENGINE (auto), STRATEGY (ddp or fsdp), DEVICE (cpu, or cuda: one process on cuda:0; ranks take their
LOCAL_RANK's GPU), DTYPE (float32 or bfloat16), LORA_R (8), PROMPTS (prompts per step, 2), SCORE_ROWS (rows per
backward chunk; unset: the whole step at once)."""
import os
import sys

import numpy as np
import torch

from proposal_nb.lm.models import add_lora, tiny_model
from proposal_nb.programs.tasks import Task
from proposal_nb.lm.training import online_config, OnlineRun


def has_a(tasks, completions):
    return np.array([float("a" in c) for c in completions])


def main(run_dir, estimator="iguana", steps=4):
    torch.set_num_threads(1)
    env = os.environ.get
    m, tok = tiny_model(seed=0)
    m = m.to(getattr(torch, env("DTYPE", "float32")))
    torch.manual_seed(0)                 # peft draws the LoRA A matrices from the global RNG
    model = add_lora(m, r=int(env("LORA_R", "8")), dropout=0.0)
    tasks = [Task(id=f"toy/{i}", prompt=f"task {i}") for i in range(6)]
    cfg = online_config(estimator=estimator, M=4, prompts_per_step=int(env("PROMPTS", "2")), steps=int(steps), lr=3e-3, max_new_tokens=8,
                        checkpoint_every=2, engine=env("ENGINE", "auto"),
                        score_rows=int(env("SCORE_ROWS")) if env("SCORE_ROWS") else None)
    if "WORLD_SIZE" in os.environ:
        from proposal_nb.lm.distributed import init_from_env, strategy_class
        init_from_env()
        run = strategy_class(env("STRATEGY", "ddp"))(model, tok, tasks, has_a, cfg, run_dir)
        run.train(progress=False)
        torch.distributed.barrier()      # every rank done before any tears down (a rank once aborted in teardown: gloo's
        del run                          # "terminate called without an active exception"); DDP's reducer goes before the group
        torch.distributed.destroy_process_group()
    else:
        run = OnlineRun(model.to(env("DEVICE", "cpu")), tok, tasks, has_a, cfg, run_dir)
        if env("PREFIX") == "0": run.prefix_scoring = False     # the packed scorer, as FSDP ranks score
        run.train(progress=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
