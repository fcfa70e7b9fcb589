#!/usr/bin/env bash
# One GPU-box job of the campaign (scripts/campaign.py): join the embedded model, draw the base arm's held-out set
# once, train the named arms side by side (round-robin over the GPUs; all on GPU 0 when there is one), and pack every
# run into $OUT. The arm `bc` is the offline pair: base rollouts (once), then filtered BC with each batching scheme side by
# side (each fit resumable across jobs); the arm
# `card` is the card-sampler arm (its base draws, chunked rollouts resumed job by job, then filtered BC); `calib` is the
# calibration control v2 (published/h200_calibration_v2: needs altair and nbformat in /tmp/site); `chaincheck` trains a
# short case unbroken and chained (campaign.py chain-check); `weightcheck` trains 25 iguana steps in bf16 and in fp32 (E_q[p/q] = 1); ARM_fp32 (iguana_fp32, ...) trains in fp32 beside base_fp32; `card_fp32` evaluates bc_card's adapter in fp32 (row 7); iguana_strict and iguana_kl_strict train through the generic
# branch, with base-strict on the CPU beside them. Logs go to RUNS/_logs, packed with the runs.
# Call 1 carries .devmodel/a and copies it to /tmp/m/ (see ../shared/tools/device-model.sh); this call carries
# .devmodel/b and .campaign/src (a source snapshot: git archive <commit> proposal_nb + scripts/campaign.py (+ scripts/confirm.py and
# nbs/runs/params/confirm for the confirm_* arms) + COMMIT; from 2026-12-03 also
# nbs/runs/params/campaign at the same path under .campaign/src, the design proposal_nb.pipeline.campaign_job reads; an older
# snapshot's .campaign/src/campaign_design is read too).
# Runs live in /tmp/runs, so a later call on the same warm machine resumes them; to resume on a fresh machine, put the
# packed parts of the last job in RESUME_DIR (*.tgz.NN, joined here).
# usage: bash scripts/campaign_job.sh BUDGET_S ARM [ARM ...] [--resume RESUME_DIR]
# (EVAL_RESERVE_S=S in the environment: the seconds a confirm_* run keeps for its evaluation after its last step; LEASE_S=S: the
# device lease left when the call began, so that the printed next call drops the confirm_* runs the rest of the lease cannot finish)
set -uo pipefail
T0=$(date +%s); BUDGET=$1; shift; ARMS=(); RESUME=""
while [ $# -gt 0 ]; do if [ "$1" = --resume ]; then RESUME=$2; shift 2; else ARMS+=("$1"); shift; fi; done
[ -f .campaign/src/COMMIT ] || { echo "no source snapshot in .campaign/src: carry it (the run call's carry names .campaign/src; it is git-ignored)" >&2; exit 2; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PROPOSAL_NB_CACHE=/tmp/cache CAMPAIGN_COMMIT=$(cat .campaign/src/COMMIT) TOKENIZERS_PARALLELISM=false
if [ ! -f /tmp/m/smollm2.gguf ]; then
  cat /tmp/m/part_a .devmodel/b/part_b > /tmp/m/smollm2.gguf && echo "$(cat .devmodel/b/md5)  /tmp/m/smollm2.gguf" | md5sum -c - || exit 3
fi
[ -d /tmp/site/gguf ] || python3 -m pip install -q --no-index --no-deps --target /tmp/site .devmodel/b/gguf-*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site:$PWD/.campaign/src
[ -d .campaign/src/data ] || cp -r data .campaign/src/   # the embedded tasks: the snapshot holds the package only
C="python3 .campaign/src/campaign.py"; R=/tmp/runs; L=$R/_logs/job-$T0; mkdir -p $L
if [ -n "$RESUME" ]; then cat $RESUME/runs.tgz.* > /tmp/resume.tar.gz && tar -xzf /tmp/resume.tar.gz -C $R && echo "resumed: $(ls $R)"; fi
[ -d /tmp/cache/smollm2-135m-instruct-fp32 ] || python3 -c "from proposal_nb.lm.models import embedded_model_path as e; print(e(gguf='/tmp/m/smollm2.gguf'))"
MODEL=/tmp/cache/smollm2-135m-instruct-fp32; NG=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader
END=$(( T0 + BUDGET - 60 )); left() { echo $(( END - $(date +%s) )); }
echo "arms ${ARMS[*]} on $NG GPU(s), stopping by $(( END - T0 )) s into the job"
# the fp32 arms (ARM_fp32: a bf16 arm's settings in fp32) compare against base_fp32, the base arm's held-out draws in fp32;
# every other arm needs base's (bf16) draws
FP32=""; BF16=""; CONFIRM=""; for a in "${ARMS[@]}"; do case $a in confirm_*) CONFIRM=1;; *_fp32) FP32=1;; *) BF16=1;; esac; done
[ -n "$BF16" ] && [ ! -f $R/base/heldout_draws.parquet ] && CUDA_VISIBLE_DEVICES=0 timeout $(left) $C base $R --model $MODEL > $L/base.log 2>&1 &
# the confirmatory runs (confirm_ARM_sSEED, scripts/confirm.py) compare against base_confirm, drawn once on every evaluation set
K="python3 .campaign/src/confirm.py"
[ -n "$CONFIRM" ] && [ ! -f $R/base_confirm/heldout_draws.parquet ] && CUDA_VISIBLE_DEVICES=0 timeout $(left) $K base $R --model $MODEL > $L/base_confirm.log 2>&1 &
[ -n "$FP32" ] && [ ! -f $R/base_fp32/heldout_draws.parquet ] && CUDA_VISIBLE_DEVICES=0 timeout $(left) $C base-fp32 $R --model $MODEL > $L/base_fp32.log 2>&1 &
# the strict arms (iguana_strict, iguana_kl_strict: the generic branch below) compare against base_strict: base's own held-out
# draws regraded with strict on this box's CPU (no GPU), once base's draws exist; their checkpoint evaluations wait for it
STRICT=""; for a in "${ARMS[@]}"; do case $a in *_strict) STRICT=1;; esac; done
[ -n "$STRICT" ] && [ ! -f $R/base_strict/heldout_draws.parquet ] && timeout $(left) bash -c "while [ ! -f $R/base/heldout_draws.parquet ]; do sleep 2; done;
  CUDA_VISIBLE_DEVICES= $C base-strict $R --model $MODEL" > $L/base_strict.log 2>&1 &
i=0
for a in "${ARMS[@]}"; do
  export CUDA_VISIBLE_DEVICES=$(( i % NG )); i=$(( i + 1 ))
  if [ "$a" = bc ]; then
    timeout $(left) bash -c "( [ -f $R/rollouts/base.parquet ] || $C rollouts $R --model $MODEL ) && for b in bc_spread bc_sort bc_sort_shuffled; do
      ( $C finished $R/\$b || $C train-bc \$b $R --model $MODEL --deadline-s \$(( $END - \$(date +%s) )) ) > $L/\$b.log 2>&1 & done; wait" > $L/bc.log 2>&1 &
  elif [ "$a" = card ]; then   # the card-sampler arm: its own base draws, chunked rollouts (resumed job by job), then filtered BC
    timeout $(left) bash -c "( [ -f $R/base_card/heldout_draws.parquet ] || $C base-card $R --model $MODEL ) &&
      $C rollouts-card $R --model $MODEL --deadline-s \$(( $END - \$(date +%s) - 30 )) && [ -f $R/rollouts_card/card.parquet ] &&
      ( $C finished $R/bc_card || $C train-bc bc_card $R --model $MODEL --deadline-s \$(( $END - \$(date +%s) )) )" > $L/card.log 2>&1 &
  elif [ "$a" = card_fp32 ]; then   # row 7 with exact weights: bc_card's fitted adapter (RUNS/bc_card/adapter, carried) evaluated in fp32
    timeout $(left) bash -c "( [ -f $R/base_card_fp32/heldout_draws.parquet ] || $C base-card-fp32 $R --model $MODEL ) &&
      while [ ! -f $R/base_fp32/heldout_draws.parquet ]; do sleep 2; done &&
      ( $C finished $R/bc_card_fp32 || $C eval-card-fp32 $R --model $MODEL )" > $L/card_fp32.log 2>&1 &
  elif [ "$a" = calib ]; then   # one run of the pre-registered control; it cannot resume, so a cut-off run starts again
    [ -f $R/calibration_v2/summary.json ] || { rm -rf $R/calibration_v2; timeout $(left) python3 scripts/exec_notebook.py \
      nbs/runs/30_calibration.ipynb out_dir=$R/calibration_v2 model=$MODEL n_bundles=38 bundle_size=1 "difficulties=['easy']" particles=4 \
      rounds=3 reruns=1 bar=0.0 max_new_tokens=256 batch_size=152 judge_items=400 sandbox_workers=12 seed=0 n_boot=2000 > $L/calib.log 2>&1 & }
  elif [ "$a" = weightcheck ]; then   # E_q[p/q] = 1 on training draws: 25 iguana steps in bf16 and in fp32 side by side, no evaluation
    for d in bfloat16 float32; do
      [ -f $R/weight_check/$d/iguana/draws.parquet ] || timeout $(left) $C train iguana $R/weight_check/$d --model $MODEL --dtype $d --stop-at 25 \
        --no-eval --deadline-s $(left) > $L/wc_$d.log 2>&1 &
    done
  elif [[ $a == confirm_* ]]; then   # a confirmatory run: resumed, evaluated at its last step; a finished or stopped run is left alone
    ( $K finished $R/$a || timeout $(( $(left) + 40 )) $K train $a $R --model $MODEL --deadline-s $(left) ${EVAL_RESERVE_S:+--eval-reserve-s $EVAL_RESERVE_S} ) > $L/$a.log 2>&1 &
  elif [ "$a" = chaincheck ]; then
    [ -f $R/chain_check/chain_check.json ] || timeout $(left) $C chain-check $R/chain_check --steps 6 --split-at 3 --model $MODEL > $L/chaincheck.log 2>&1 &
  else
    timeout $(( $(left) + 40 )) $C train $a $R --model $MODEL --deadline-s $(left) > $L/$a.log 2>&1 &
  fi
done
wait
echo "sizes:"; du -sh $R/* 2>/dev/null | sort -h | tail -25
for f in $L/*.log; do echo "== $f"; tail -4 $f; done; cat $R/*/ledger.jsonl; cat $R/chain_check/chain_check.json 2>/dev/null
# LEASE_S=S: the device lease left when this call began (the last reply's budget_left_s); the next call then keeps to what is
# left after this job (less 20 s for the call's own start and return) and drops the runs it cannot finish
LEASE=${LEASE_S:+$(( LEASE_S - $(date +%s) + T0 - 20 ))}
[ -n "$CONFIRM" ] && { echo "next call (confirm.py next-call: from the ledgers${LEASE:+, about $LEASE s of lease left}; the machine waits 30 s):"
  $K next-call $R $(printf '%s\n' "${ARMS[@]}" | grep '^confirm_') ${LEASE:+--lease $LEASE} || true; }
[ -d $R/weight_check ] && python3 -c "from proposal_nb.analysis.weight_check import dtype_draws, dtype_table; print(dtype_table(dtype_draws('$R/weight_check')).to_string())"
$C pack-runs $R /tmp/runs.tar.gz && split -b 15000000 -d /tmp/runs.tar.gz $OUT/runs.tgz.
ls -la $OUT; echo "job wall $(( $(date +%s) - T0 )) s"
