#!/usr/bin/env bash
# tools/bench/core_share.sh SHARDS [SECONDS] [ROUNDS]: does stoke's JPEG decoding
# slow a GPU training step in another process, and what does leaving it a core
# cost stoke? On a machine with a CUDA GPU and PyTorch, with stoke on PATH:
#   1. stoke alone: `stoke profile` of SHARDS to cuda:0 as float16 224x224 random
#      crops, with one decode thread per core and with one fewer (the default
#      with a CUDA device): images/s;
#   2. paired runs, ROUNDS times in turn: tools/bench/torch_step.py (ResNet-50,
#      batch 128, data resident) alone, beside stoke decoding with every core,
#      and beside stoke leaving one: the step's images/s (stoke running
#      throughout), then stoke's images/s (the step running throughout).
# Prints each figure as it is measured; JSON per run goes to $OUT (or
# /tmp/core-share). STOKE_DEVICE=cpu tries the stoke half without a GPU;
# STEP_ONLY=1 measures only the step's rates.
set -euo pipefail
shards=$1
secs=${2:-15}
rounds=${3:-2}
cores=$(nproc)
out=${OUT:-/tmp/core-share}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
field() { grep -o "\"$2\": *[0-9.e+-]*" "$1" | head -1 | cut -d: -f2 | tr -d ' '; }
profile() {  # THREADS EPOCHS JSON
  stoke profile "$shards" --device "${STOKE_DEVICE:-cuda}" --dtype float16 --normalize imagenet --size 224x224 \
    --crop random --batch 256 --shuffle full --decode-threads "$1" --epochs "$2" \
    --quiet --json "$3" >/dev/null 2>&1
}
# Epochs of the N-sample dataset that last about SECONDS at RATE images/s.
epochs_for() { python3 -c "import math; print(max(1, math.ceil($1 * $2 / $n)))"; }
# 1. Alone (the first run also measures and caches the profile's ceilings).
profile "$cores" 1 "$out/warm.json"
n=$(field "$out/warm.json" samples)
rate=$(field "$out/warm.json" steady_samples_per_second)
declare -A alone
for t in "$cores" $((cores - 1)); do
  if [ -n "${STEP_ONLY:-}" ]; then alone[$t]=$rate && continue; fi
  profile "$t" "$(epochs_for "$rate" 15)" "$out/alone_$t.json"
  alone[$t]=$(field "$out/alone_$t.json" steady_samples_per_second)
  echo "stoke alone, $t decode threads: ${alone[$t]} img/s"
done
# 2. Paired: batches enough for stoke to outlast the step's run.
for r in $(seq "$rounds"); do
  python3 "$here/torch_step.py" "$secs" >"$out/step_alone_$r.json"
  echo "$r alone: step $(field "$out/step_alone_$r.json" images_per_second) img/s"
  for t in "$cores" $((cores - 1)); do
    profile "$t" "$(epochs_for "${alone[$t]}" $((secs + 30)))" "$out/beside_${t}_$r.json" &
    pid=$!
    sleep 5  # stoke's threads running
    python3 "$here/torch_step.py" "$secs" >"$out/step_beside_${t}_$r.json"
    pkill -P "$pid" 2>/dev/null || true  # stoke, the background function's child
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "$r beside $t decode threads: step $(field "$out/step_beside_${t}_$r.json" images_per_second) img/s"
    [ -n "${STEP_ONLY:-}" ] && continue
    # And stoke's rate beside a step that runs throughout.
    python3 "$here/torch_step.py" $((secs * 4)) >/dev/null &
    pid=$!
    sleep 8  # the step warmed up
    profile "$t" "$(epochs_for "${alone[$t]}" "$secs")" "$out/stoke_beside_${t}_$r.json"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "$r beside a step, $t decode threads: stoke $(field "$out/stoke_beside_${t}_$r.json" steady_samples_per_second) img/s"
  done
done
