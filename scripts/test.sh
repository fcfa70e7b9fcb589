#!/usr/bin/env bash
# Set up, then run the whole test suite: every notebook and tests/*.py in .venv, then the vLLM tests in .venv-vllm
# (vLLM's CPU build pins other versions of transformers and numpy, so it lives in its own environment).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_browser.sh          # headless Chromium for the results-site test
bash scripts/setup_vllm.sh             # the optional vLLM engine, in .venv-vllm
.venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" --dist loadgroup "$@"
.venv-vllm/bin/python -m pytest -p no:cacheprovider tests/test_vllm.py
