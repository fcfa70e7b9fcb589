#!/usr/bin/env bash
# Set up, then run the main job: the default pipeline on the embedded model and tasks, into results/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/proposal-nb "$@"
