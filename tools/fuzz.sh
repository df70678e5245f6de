#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS]: builds the JPEG decoder's libFuzzer target with
# clang (-fsanitize=fuzzer,address,undefined), seeds a corpus with synthetic
# JPEGs of every encoding, and fuzzes for SECONDS (default 60; FUZZ_SECONDS
# overrides). A crash, leak or sanitizer report fails it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${FUZZ_SECONDS:-${1:-60}}
out=$root/build/fuzz
mkdir -p "$out/corpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/include" -I"$root/src" \
  "$root/tests/fuzz/jpeg_decoder_fuzz.cc" "$root/src/decode/jpeg_decoder.cc" \
  "$root/src/decode/jpeg_restart.cc" \
  "$root/src/decode/resize.cc" "$root/src/decode/crop.cc" "$root/src/util/status.cc" \
  -ljpeg -o "$out/jpeg_decoder_fuzz"
# Seeds: small synthetic JPEGs (baseline, progressive, with restart markers that
# let the decoder cut them), each behind 4 option bytes.
if [ -x "$root/build/release/tools/stoke" ] && [ -z "$(ls -A "$out/corpus")" ]; then
  "$root/build/release/tools/stoke" synth "$out/seeds" --count 12 --classes 1 --min-side 8 \
    --max-side 48 --progressive 50 --quality 75 >/dev/null
  "$root/build/release/tools/stoke" synth "$out/seeds/restart" --count 6 --classes 1 \
    --min-side 16 --max-side 64 --restart 1 --quality 75 --seed 2 >/dev/null
  i=0
  for f in "$out"/seeds/*/*.jpg "$out"/seeds/restart/*/*.jpg; do
    mode=$(printf '\\x%02x' $((i % 16)))
    { printf "$mode"'\x20\x18\x07'; cat "$f"; } > "$out/corpus/seed$i"
    i=$((i + 1))
  done
fi
ASAN_OPTIONS=detect_leaks=1 "$out/jpeg_decoder_fuzz" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 "$out/corpus" 2>&1 | tail -15
