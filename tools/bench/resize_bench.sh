#!/usr/bin/env bash
# Packing at the training resolution (stoke pack --short-side N), as JPEGs and
# as decoded pixels (--store raw), against full-size shards and the files, in
# one run, on the same ImageFolder and cores:
# `stoke profile` with random-resized crops to SIZE, flips, full shuffle,
# batches of 256, the pipeline alone (no step). The layouts alternate, ROUNDS
# times; the table gives each one's median steady rate (the run's second half)
# and its ratio to the full-size shards.
#
# usage: tools/bench/resize_bench.sh [FOLDER] [--short-side N] [--size S] [--epochs N]
#        [--rounds N]
# (FOLDER defaults to build/sample-images, made by tools/run.sh or here with
# `stoke synth`; shards are packed beside it once: FOLDER.shards, FOLDER.sN,
# FOLDER.sN-raw.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stoke=${STOKE:-$root/build/release/tools/stoke}
folder=$root/build/sample-images
side=256
size=224
epochs=3
rounds=3
while (($#)); do
  case $1 in
    --short-side) side=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -*) echo "resize_bench: unknown option $1" >&2; exit 2 ;;
    *) folder=${1%/}; shift ;;
  esac
done
if [ ! -d "$folder" ]; then
  "$stoke" synth "$folder" --count 2000 --classes 10 --min-side 256 --max-side 500 >/dev/null
fi
full=$folder.shards
small=$folder.s$side
raw=$folder.s$side-raw
[ -d "$full" ] || "$stoke" pack "$folder" "$full" >/dev/null
[ -d "$small" ] || "$stoke" pack "$folder" "$small" --short-side "$side" >/dev/null
[ -d "$raw" ] || "$stoke" pack "$folder" "$raw" --short-side "$side" --store raw >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A rates
for round in $(seq "$rounds"); do
  for layout in files shards "s$side" "s$side-raw"; do
    case $layout in
      files) path=$folder ;;
      shards) path=$full ;;
      *-raw) path=$raw ;;
      *) path=$small ;;
    esac
    "$stoke" profile "$path" --size "${size}x$size" --crop random --flip --batch 256 \
      --shuffle full --epochs "$epochs" --no-ceilings --json "$work/run.json" >/dev/null
    rate=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['steady_samples_per_second']))" "$work/run.json")
    rates[$layout]="${rates[$layout]:-} $rate"
    echo "round $round  $layout  $rate samples/s" >&2
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
base=$(echo "${rates[shards]}" | median)
printf '%-34s %12s %8s   %s\n' "layout" "samples/s" "ratio" "runs"
for layout in files shards "s$side" "s$side-raw"; do
  case $layout in
    files) name="files (as synthesised)" ;;
    shards) name="shards, full size" ;;
    *-raw) name="shards, short side $side, pixels" ;;
    *) name="shards, short side $side" ;;
  esac
  m=$(echo "${rates[$layout]}" | median)
  printf '%-34s %12s %7.2fx  %s\n' "$name" "$m" "$(python3 -c "print($m / $base)")" "${rates[$layout]# }"
done
du -sh "$folder" "$full" "$small" "$raw" | sed 's/^/size: /'
