#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS]: builds every parser's libFuzzer target with clang
# (-fsanitize=fuzzer,address,undefined; build/fuzz), seeds each corpus with the
# project's own writers (stoke_fuzz_seeds, stoke synth, GNU tar), and fuzzes each
# target for SECONDS (default 8; FUZZ_SECONDS overrides; STOKE_SLOW=1: 300).
# A crash, leak, timeout (-timeout), sanitizer report or an allocation beyond
# -malloc_limit_mb / -rss_limit_mb fails it. Prints each target's executions.
# Inputs that once failed stay in tests/fuzz/regressions/TARGET and run first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${FUZZ_SECONDS:-${1:-8}}
if [ "${STOKE_SLOW:-0}" = 1 ] && [ -z "${FUZZ_SECONDS:-}" ]; then seconds=300; fi
build=$root/build/fuzz
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}  # as build.sh
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DSTOKE_SANITIZE=fuzzer -DSTOKE_WITH_CUDA=OFF -DSTOKE_BUILD_TESTS=OFF -DSTOKE_BUILD_TOOLS=OFF \
  -DSTOKE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target stoke_fuzz_targets

# Seeds: from the release build's writers, once.
corpus=$build/corpus
release=$root/build/release
if [ ! -d "$corpus/idx" ]; then
  "$release/tests/stoke_fuzz_seeds" "$corpus"
  # JPEGs behind 4 option bytes (baseline, progressive, restart markers).
  "$release/tools/stoke" synth "$build/seeds" --count 12 --classes 1 --min-side 8 \
    --max-side 48 --progressive 50 --quality 75 >/dev/null
  "$release/tools/stoke" synth "$build/seeds/restart" --count 6 --classes 1 \
    --min-side 16 --max-side 64 --restart 1 --quality 75 --seed 2 >/dev/null
  mkdir -p "$corpus/jpeg_decoder" "$corpus/tar"
  i=0
  for f in "$build"/seeds/*/*.jpg "$build"/seeds/restart/*/*.jpg; do
    mode=$(printf '\\x%02x' $((i % 16)))
    { printf "$mode"'\x20\x18\x07'; cat "$f"; } > "$corpus/jpeg_decoder/seed$i"
    i=$((i + 1))
  done
  # WebDataset tars made by GNU tar: key.jpg + key.cls, a long name, pax.
  web=$build/seeds/web
  mkdir -p "$web/a/$(printf 'n%.0s' {1..120})"
  j=0
  for f in "$build"/seeds/class_000/*.jpg; do
    [ $j -lt 3 ] || break
    cp "$f" "$web/a/s$j.jpg"; echo $j > "$web/a/s$j.cls"; j=$((j + 1))
  done
  cp "$f" "$web/a/$(printf 'n%.0s' {1..120})/long.jpg"; echo 4 > "$web/a/$(printf 'n%.0s' {1..120})/long.cls"
  tar --format=gnu -cf "$corpus/tar/gnu" -C "$web" a
  tar --format=pax -cf "$corpus/tar/pax" -C "$web" a
  tar --format=ustar -cf "$corpus/tar/ustar" -C "$web/a" s0.jpg s0.cls s1.jpg s1.cls
fi

status=0
for target in jpeg_decoder idx cifar npy_list tar shards restart_layout ceilings_cache \
  remote_parsers; do
  mkdir -p "$corpus/$target"
  log=$build/$target.log
  if ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/${target}_fuzz" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=512 -print_final_stats=1 \
      "$corpus/$target" $(ls -d "$root/tests/fuzz/regressions/$target" 2>/dev/null) >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz $target: $runs executions in ${seconds}s, nothing found"
  else
    echo "fuzz $target: FAILED (log: $log)"; tail -40 "$log"; status=1
  fi
done
rm -rf /tmp/stoke-fuzz-*
exit $status
