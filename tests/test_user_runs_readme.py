"""The README's "Your own model and tasks", followed from a folder outside the checkout with the README's commands only
(issue 37's 'done when'): a local checkpoint without a tokenizer is refused at once, the README's tokenizer command
fixes it, then the three commands give one training run folder, one evaluation that reads it, and a site that shows
both, checked in headless Chromium.

The commands are read from README.md, not copied here; the test only names the README's placeholders (BASE_MODEL:
the tiny random model, lm.models.tiny_model) and appends size settings (--set steps=2 ...) so it runs in about a
minute. PATH starts with the venv's bin folder, as `source .venv/bin/activate` leaves it. The overview's screenshot
goes to $USER_RUNS_SCREENSHOT when set (tests/test_user_runs_readme.png, committed beside this file, was made so),
else to the test's tmp folder."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from proposal_nb.lm.models import tiny_model
from proposal_nb.results import find_runs
from proposal_nb.site.browser import Chromium, check_site
from test_site_browser import chromium
from test_user_runs import native_tasks

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"11_train_online": ["--set", "steps=2", "--set", "M=2", "--set", "max_new_tokens=8", "--set", "checkpoint_every=1"],
         "evaluate": ["--set", "R=1", "--set", "M=2", "--set", "max_new_tokens=8", "--set", "n_boot=50"]}


def readme_commands()->list[str]:
    "The shell commands of the README's section 'Your own model and tasks', in order."
    sec = (ROOT / "README.md").read_text().split("## Your own model and tasks")[1].split("\n## ")[0]
    return [l.strip() for b in re.findall(r"```sh\n(.*?)```", sec, re.S) for l in b.splitlines() if l.strip() and not l.startswith("#")]


def sh(cmd:str, cwd:Path)->subprocess.CompletedProcess:
    "One README command in `cwd`, with the venv's bin first on PATH (the README's `source .venv/bin/activate`)."
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(cmd, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_readme_own_model_path_from_another_folder(tmp_path):
    exe = chromium()
    cmds = readme_commands()
    assert len(cmds) == 4 and cmds[0].startswith("python -c") and all(c.startswith("proposal-nb ") for c in cmds[1:]), cmds
    m, tok = tiny_model(seed=0)
    m.save_pretrained(tmp_path / "base"); tok.save_pretrained(tmp_path / "base")
    m.save_pretrained(tmp_path / "my-coder")                                # a fine-tuned checkpoint: weights, no tokenizer
    (tmp_path / "my_tasks.jsonl").write_text(native_tasks())
    train, evaluate, site = cmds[1:]
    sized = lambda c: c + " " + " ".join(shlex.quote(a) for k, v in SIZES.items() if f" {k} " in f"{c} " for a in v)

    p = sh(sized(train), tmp_path)                                          # refused at once: the checkpoint has no tokenizer
    assert p.returncode == 1 and "holds no tokenizer" in p.stderr and "save_pretrained" in p.stderr, p.stderr
    assert not (tmp_path / "runs").exists()
    p = sh(cmds[0].replace("BASE_MODEL", str(tmp_path / "base")), tmp_path)   # the README's tokenizer step
    assert p.returncode == 0, p.stderr
    for c in (train, evaluate, site):
        p = sh(sized(c), tmp_path)
        assert p.returncode == 0, f"{c}\n{p.stdout}\n{p.stderr}"

    runs = {r.name: r for r in find_runs(tmp_path / "runs")}
    assert sorted(runs) == ["my_eval", "my_iguana"], sorted(runs)           # one training run folder, one evaluation
    assert runs["my_eval"].config["runs"] == [str(tmp_path / "runs" / "my_iguana")]
    assert list(runs["my_eval"].config["checkpoints"]) == ["base", "my_iguana/step-2"]
    site_dir = tmp_path / "runs" / "site"
    index = (site_dir / "index.html").read_text()
    assert "Your runs (2)" in index and "Published runs" not in index
    row = next(r for r in index.split("<tr>") if r.strip().startswith("<td><a href='run-my_eval.html'>"))
    assert "<a href='run-my_iguana.html'>my_iguana</a>" in row             # the evaluation names the run it read

    shots = tmp_path / "shots"
    checks = {c.page: c for c in check_site(site_dir, shots, exe)}
    assert {"index.html", "training.html", "heldout.html", "run-my_iguana.html", "run-my_eval.html"} <= set(checks), sorted(checks)
    assert not {p: c.errors for p, c in checks.items() if c.errors}
    assert all(ch["marks"] > 0 for c in checks.values() for ch in c.charts)
    with Chromium(exe) as b:                                                # what the overview shows a reader
        b.goto((site_dir / "index.html").as_uri(), "document.readyState === 'complete'")
        text = b.eval("document.body.innerText")
        assert "my_iguana" in text and "my_eval" in text and "Headline" in text, text
    if out := os.environ.get("USER_RUNS_SCREENSHOT"): shutil.copy(checks["index.html"].screenshot, out)
    print(f"\nscreenshots in {shots}")
