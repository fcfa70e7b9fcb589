#!/usr/bin/env bash
# One GPU-box job of the campaign (scripts/campaign.py): join the embedded model, draw the base arm's held-out set
# once, train two arms side by side (one per GPU; both on GPU 0 when there is one), pack the runs into $OUT.
# Call 1 carries .devmodel/a and copies it to /tmp/m/ (see ../shared/tools/device-model.sh); this call carries
# .devmodel/b and .campaign/src (a source snapshot: git archive <commit> proposal_nb + scripts/campaign.py + COMMIT)
# and, to resume, the packed runs of the last job in .campaign/in/.
# usage: bash scripts/campaign_job.sh ARM0 ARM1 BUDGET_S [RESUME_DIR]
set -uo pipefail
T0=$(date +%s); ARM0=$1; ARM1=$2; BUDGET=$3; RESUME=${4:-}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PROPOSAL_NB_CACHE=/tmp/cache CAMPAIGN_COMMIT=$(cat .campaign/src/COMMIT) TOKENIZERS_PARALLELISM=false
if [ ! -f /tmp/m/smollm2.gguf ]; then
  cat /tmp/m/part_a .devmodel/b/part_b > /tmp/m/smollm2.gguf && echo "$(cat .devmodel/b/md5)  /tmp/m/smollm2.gguf" | md5sum -c - || exit 3
fi
python3 -m pip install -q --no-index --no-deps --target /tmp/site .devmodel/b/gguf-*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD/.campaign/src
C="python3 .campaign/src/campaign.py"; R=/tmp/runs; mkdir -p $R
[ -n "$RESUME" ] && for f in $RESUME/*.tar.gz; do $C unpack $f $R; done
python3 -c "from proposal_nb.lm.models import embedded_model_path as e; print(e(gguf='/tmp/m/smollm2.gguf'))"
MODEL=/tmp/cache/smollm2-135m-instruct-fp32
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader; G1=$(( $(nvidia-smi -L | wc -l) > 1 ? 1 : 0 )); echo "second arm on GPU $G1"
END=$(( T0 + BUDGET - 50 ))
echo "arms stop by $(( END - T0 )) s into the job"
( [ -f $R/base/heldout_draws.parquet ] || CUDA_VISIBLE_DEVICES=0 $C base $R --model $MODEL; \
  CUDA_VISIBLE_DEVICES=0 $C train $ARM0 $R --model $MODEL --deadline-s $(( END - $(date +%s) )) ) > $OUT/$ARM0.log 2>&1 &
CUDA_VISIBLE_DEVICES=$G1 $C train $ARM1 $R --model $MODEL --deadline-s $(( END - $(date +%s) )) > $OUT/$ARM1.log 2>&1 &
wait
for a in base $ARM0 $ARM1; do [ -d $R/$a ] && $C pack $R/$a /tmp/$a.tar.gz && split -b 15000000 -d /tmp/$a.tar.gz $OUT/$a.tgz.; done
tail -3 $OUT/$ARM0.log $OUT/$ARM1.log; cat $R/*/ledger.jsonl; ls -la $OUT; echo "job wall $(( $(date +%s) - T0 )) s"
