#!/usr/bin/env bash
# The headroom ladder on rendered pixels, on one GPU: plain, oracle and the model's hardest
# of 8 retrieved captions (add TAGS with METHODS="plain oracle mined istm"), seeds 0-2, all
# runs side by side, at 20x the CPU budget (5000 steps of 64 captions; the CPU gate is read
# at 250), then the gate's verdict over them (scripts/research/headroom.py --judge).
#
#   bash scripts/research/pixel_ladder.sh runs/pixel-ladder     # about 8 minutes on one GPU
#   VARIANTS="tags-bind hf-clip hf-blip" bash scripts/research/pixel_ladder.sh runs/pl
#   STEPS=4 EVAL_EVERY=2 EVAL_SCENES=8 DEVICE=cpu WORKERS=0 SEEDS=0 bash \
#       scripts/research/pixel_ladder.sh /tmp/pl                # the same path, tiny, on CPU
#
# VARIANTS (default tags-bind): the models. tags-bind: the TagsModel cross-encoder on a frozen
# CNN's features of each object's crop (EfficientNet-Lite0 when its weights package is
# installed, else a seeded random CNN): which words name which region must be learned from
# pixels. hf-clip / hf-blip: a Hugging Face CLIP (InfoNCE, the method's negatives as extra
# text columns) or BLIP (binary ITM) on the whole rendered scene (tags/testbed/hf.py), built
# at random (HF_EXTRA, e.g. "--hidden 128 --layers 4 --image-size 64 --patch-size 8
# --lr 5e-4"; mined and istm apart, the methods are the same) or read from HF_CLIP_MODEL /
# HF_BLIP_MODEL (local directories). tags-bind's runs and verdict are written to OUT, the
# others' to OUT/VARIANT. Every run stops at STEPS or after MAX_SECONDS.
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
VARIANTS=${VARIANTS:-"tags-bind"}
PYTHON=${PYTHON:-python}
read -r -a EXTRA <<< "${EXTRA:-}"  # more headroom.py options, e.g. "--featurizer random-conv"
read -r -a HF_EXTRA <<< "${HF_EXTRA:-}"  # hf-clip / hf-blip only, e.g. "--lr 5e-4"
HERE=$(cd "$(dirname "$0")" && pwd)
BF16=()
[[ $DEVICE == cuda ]] && BF16=(--bf16)
pids=()
folders=()
for variant in $VARIANTS; do
  case $variant in
    tags-bind) dir=$OUT; model=(--variant tags-bind --pool gate) ;;
    hf-clip) dir=$OUT/$variant; model=(--variant hf-clip "${HF_EXTRA[@]}") ;;
    hf-blip) dir=$OUT/$variant; model=(--variant hf-blip "${HF_EXTRA[@]}") ;;
    *) echo "unknown variant $variant (tags-bind, hf-clip, hf-blip)" >&2; exit 2 ;;
  esac
  [[ $variant == hf-clip && -n ${HF_CLIP_MODEL:-} ]] && model+=(--hf-model "$HF_CLIP_MODEL")
  [[ $variant == hf-blip && -n ${HF_BLIP_MODEL:-} ]] && model+=(--hf-model "$HF_BLIP_MODEL")
  mkdir -p "$dir"
  folders+=("$dir")
  for method in $METHODS; do
    for seed in $SEEDS; do
      "$PYTHON" "$HERE/headroom.py" --perception pixels --negatives "$method" --seed "$seed" \
        "${model[@]}" --steps "$STEPS" --eval-every "$EVAL_EVERY" \
        --eval-scenes "$EVAL_SCENES" --max-seconds "$MAX_SECONDS" --device "$DEVICE" \
        --workers "$WORKERS" --rsum "${BF16[@]}" "${EXTRA[@]}" --out "$dir/$method-seed$seed.json" \
        > "$dir/$method-seed$seed.log" 2>&1 &
      pids+=($!)
    done
  done
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
if [[ $status != 0 ]]; then
  echo "a run failed: see the logs under $OUT" >&2
  for dir in "${folders[@]}"; do tail -n 5 "$dir"/*.log >&2; done
  exit 1
fi
for dir in "${folders[@]}"; do
  echo "== $dir"
  "$PYTHON" "$HERE/headroom.py" --judge "$dir"
done
