#!/usr/bin/env bash
# The libtorch example fed by stoke against the same example fed by torch::data,
# in one run, on the same ImageFolder, cores and model step: random-resized
# crops and flips to 224x224, batches of 64, as many decode threads (stoke) as
# workers (torch::data). Also stoke on the folder packed into shards (`stoke
# pack`, once). The runs alternate, ROUNDS times; each prints the images/s of
# every epoch after its first (warm caches, threads started), and the table
# gives the median of those and each ratio to torch::data.
#
# usage: tools/bench/libtorch_bench.sh [FOLDER] [--threads N] [--epochs N] [--rounds N]
# (FOLDER defaults to build/sample-images, made by tools/run.sh or here with
# `stoke synth`; the build is build/release.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build/release}
folder=$root/build/sample-images
threads=$(nproc)
epochs=4
rounds=2
while (($#)); do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -*) echo "libtorch_bench: unknown option $1" >&2; exit 2 ;;
    *) folder=$1; shift ;;
  esac
done
train=$build/torch/bin/libtorch_train
stoke=$build/tools/stoke
[ -x "$train" ] || { echo "libtorch_bench: no $train (build with libtorch-dev installed)" >&2; exit 1; }
if [ ! -d "$folder" ]; then
  "$stoke" synth "$folder" --count 2000 --classes 10 --min-side 256 --max-side 500 >/dev/null
fi
shards=${folder%/}.shards
[ -d "$shards" ] || "$stoke" pack "$folder" "$shards" >/dev/null

declare -A rates
run() {  # name, then the example's arguments
  local name=$1
  shift
  local out
  out=$("$train" "$@" --epochs "$epochs" --threads "$threads")
  # Every epoch but the first: "... N images/s; ..."
  rates[$name]+=$(echo "$out" | awk '/ epoch / && $3 != "0:" { for (i = 1; i < NF; ++i)
    if ($(i + 1) == "images/s;") printf " %s", $i }')
}
for ((r = 0; r < rounds; ++r)); do
  run stoke_folder "$folder" --loader stoke
  run torchdata_folder "$folder" --loader torchdata
  run stoke_shards "$shards" --loader stoke
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END {
  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
base=$(echo "${rates[torchdata_folder]}" | median)
echo "libtorch_train, $threads threads, $(nproc) cores, $epochs epochs x $rounds rounds, $folder"
printf "%-34s %12s %8s\n" "feed" "images/s" "ratio"
for name in torchdata_folder stoke_folder stoke_shards; do
  m=$(echo "${rates[$name]}" | median)
  label=${name/_/ from the }
  printf "%-34s %12.0f %7.2fx   (epochs:%s)\n" "$label" "$m" "$(echo "$m $base" | awk '{ print $1 / $2 }')" "${rates[$name]}"
done
