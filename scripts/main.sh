#!/usr/bin/env bash
# Set up, then run the main job: the default pipeline on the embedded model and tasks, into results/.
#   bash scripts/main.sh [proposal-nb options]   e.g. --results DIR, --only theory z, --help
#   bash scripts/main.sh --lab [jupyter options]  set up with JupyterLab, then open the notebooks on the project's
#                                                 kernel (.venv's python), e.g. --no-browser --port 8888
# Paths are the caller's: run from another folder, the job writes into that folder's results/ (or --results DIR).
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."
repo=$PWD
if [ "${1:-}" = "--lab" ]; then
  shift
  bash scripts/setup.sh --lab
  root=(); [ "$(id -u)" -eq 0 ] && root=(--allow-root)     # GPU boxes often run as root; JupyterLab refuses it unless told
  exec .venv/bin/jupyter lab --ServerApp.root_dir="$PWD" "${root[@]}" "$@" nbs/index.ipynb
fi
bash scripts/setup.sh
cd "$here"
exec "$repo/.venv/bin/proposal-nb" "$@"
