"""A tiny online run for the fault test: `python tests/train_worker.py RUN_DIR ESTIMATOR [SLOW_AFTER]`.
With SLOW_AFTER, each step after that one sleeps 1 s, so the test can kill the process mid-run."""
import sys
import time

import numpy as np
import torch

from proposal_nb.lm.models import add_lora, tiny_model
from proposal_nb.programs.tasks import Task
from proposal_nb.lm.training import online_config, OnlineRun


def has_a(tasks, completions):
    return np.array([float("a" in c) for c in completions])


def main(run_dir, estimator, slow_after=None):
    m, tok = tiny_model(seed=0)
    torch.manual_seed(0)                 # peft draws the LoRA A matrices from the global RNG
    model = add_lora(m, dropout=0.0)
    tasks = [Task(id=f"toy/{i}", prompt=f"task {i}") for i in range(4)]
    cfg = online_config(estimator=estimator, M=4, prompts_per_step=2, steps=8, lr=3e-3, max_new_tokens=8, checkpoint_every=3)
    run = OnlineRun(model, tok, tasks, has_a, cfg, run_dir)
    while run.step < cfg.loop.steps:
        run.train(progress=False, stop_after=1)
        if slow_after is not None and run.step >= int(slow_after):
            print(f"step {run.step}", flush=True)
            time.sleep(1.0)


if __name__ == "__main__":
    main(*sys.argv[1:])
