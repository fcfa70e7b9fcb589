#!/usr/bin/env bash
# Set up, then run the whole test suite (every notebook plus tests/*.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" "$@"
