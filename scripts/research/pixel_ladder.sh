#!/usr/bin/env bash
# The headroom ladder on rendered pixels, on one GPU: plain, oracle and the model's hardest
# of 8 retrieved captions (add TAGS with METHODS="plain oracle mined istm"), seeds 0-2, all
# runs side by side, at 20x the CPU budget (5000 steps of 64 captions; the CPU gate is read
# at 250), then the gate's verdict over them (scripts/research/headroom.py --judge).
#
#   bash scripts/research/pixel_ladder.sh runs/pixel-ladder     # about 8 minutes on one GPU
#   STEPS=4 EVAL_EVERY=2 EVAL_SCENES=8 DEVICE=cpu WORKERS=0 SEEDS=0 bash \
#       scripts/research/pixel_ladder.sh /tmp/pl                # the same path, tiny, on CPU
#
# Regions are a frozen CNN's features of each object's crop (EfficientNet-Lite0 when its
# weights package is installed, else a seeded random CNN): which words name which region
# must be learned from pixels. Every run stops at STEPS or after MAX_SECONDS.
set -euo pipefail
OUT=${1:-runs/pixel-ladder}
STEPS=${STEPS:-5000}
EVAL_EVERY=${EVAL_EVERY:-250}
EVAL_SCENES=${EVAL_SCENES:-200}
MAX_SECONDS=${MAX_SECONDS:-400}
DEVICE=${DEVICE:-cuda}
WORKERS=${WORKERS:-1}
SEEDS=${SEEDS:-"0 1 2"}
METHODS=${METHODS:-"plain oracle mined"}
PYTHON=${PYTHON:-python}
read -r -a EXTRA <<< "${EXTRA:-}"  # more headroom.py options, e.g. "--featurizer random-conv"
HERE=$(cd "$(dirname "$0")" && pwd)
BF16=()
[[ $DEVICE == cuda ]] && BF16=(--bf16)
mkdir -p "$OUT"
pids=()
for method in $METHODS; do
  for seed in $SEEDS; do
    "$PYTHON" "$HERE/headroom.py" --perception pixels --negatives "$method" --seed "$seed" \
      --variant tags-bind --pool gate --steps "$STEPS" --eval-every "$EVAL_EVERY" \
      --eval-scenes "$EVAL_SCENES" --max-seconds "$MAX_SECONDS" --device "$DEVICE" \
      --workers "$WORKERS" --rsum "${BF16[@]}" "${EXTRA[@]}" --out "$OUT/$method-seed$seed.json" \
      > "$OUT/$method-seed$seed.log" 2>&1 &
    pids+=($!)
  done
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
if [[ $status != 0 ]]; then
  echo "a run failed: see $OUT/*.log" >&2
  tail -n 5 "$OUT"/*.log >&2
  exit 1
fi
"$PYTHON" "$HERE/headroom.py" --judge "$OUT"
