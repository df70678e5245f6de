#!/usr/bin/env bash
# tools/bench/storage_table.sh [STOKE] [DIR]: the README's slow-storage table.
#
# Makes a class-sorted folder of 1856 photo-sized JPEGs in 8 classes (stoke
# synth), packs it twice (records shuffled, the default; and --keep-order), and
# profiles every layout and order under the hdd storage model: batches of 256,
# random-resized crops; six epochs in sequential and quasi order (so that the
# run's second half is long against quasi's 192 MiB of windows read ahead),
# one in full and block order (120 samples/s: 15 s an epoch). Prints a Markdown
# table of the steady rate (the run's second half), the whole run's rate, the
# time to the first batch and the batch label mix. Then `stoke bench` over hdd, sata-ssd and ram
# models, files against shards, full shuffle against quasi-random.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stoke=${1:-$root/build/release/tools/stoke}
dir=${2:-/tmp/stoke_storage_table}
mkdir -p "$dir"
[ -d "$dir/images" ] || "$stoke" synth "$dir/images" --count 1856 --classes 8 >/dev/null
[ -d "$dir/shards" ] || "$stoke" pack "$dir/images" "$dir/shards" >/dev/null
[ -d "$dir/shards-in-order" ] || "$stoke" pack "$dir/images" "$dir/shards-in-order" --keep-order >/dev/null
common=(--storage-model hdd --batch 256 --crop random --no-ceilings --quiet)
# A number field of stoke's one-line JSON (no python needed).
field() { grep -o "\"$2\":[-0-9.e+]*" "$1" | head -1 | cut -d: -f2; }
echo "| layout | order | steady samples/s | whole run | first batch s | label mix |"
echo "|---|---|---|---|---|---|"
for layout in images shards shards-in-order; do
  for order in none full "block --block 256" quasi; do
    json="$dir/run.json"
    epochs=1
    case $order in none | quasi) epochs=6 ;; esac
    if ! "$stoke" profile "$dir/$layout" "${common[@]}" --epochs $epochs --shuffle $order \
        --json "$json" \
        >/dev/null 2>"$dir/err.txt"; then
      echo "| $layout | $order | refused: $(tail -c 160 "$dir/err.txt" | tr '\n' ' ') | | | |"
      continue
    fi
    printf '| %s | %s | %.0f | %.0f | %.2f | %.3f |\n' "$layout" "$order" \
      "$(field "$json" steady_samples_per_second)" "$(field "$json" samples_per_second)" \
      "$(field "$json" first_batch_seconds)" "$(field "$json" batch_label_mix)"
  done
done
echo
"$stoke" bench --data local="$dir/images" --model hdd --model sata-ssd --model ram --pack \
  --batch 256 --crop random --samples 300 --min-seconds 3
