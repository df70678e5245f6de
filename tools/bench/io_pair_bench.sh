#!/usr/bin/env bash
# tools/bench/io_pair_bench.sh OLD_STOKE NEW_STOKE [RUNS]: the default read backend's
# speed from the page cache, two builds of `stoke` run alternately on the same data,
# cores and settings (full shuffle, batch 256), RUNS pairs (default 5); prints each
# dataset's median steady samples/s and NEW/OLD. Data (made once under
# $STOKE_BENCH_DIR, default /tmp/stoke_bench/io): Fashion-MNIST's train IDX
# uncompressed, a CIFAR-10 layout of 50,000 random records, packed shards of the IDX,
# packed shards of 2,000 synthetic JPEGs (256-500 px). Every file is read once first,
# so that it is in the page cache.
set -euo pipefail
old=$1 new=$2 runs=${3:-5}
dir=${STOKE_BENCH_DIR:-/tmp/stoke_bench/io}
mkdir -p "$dir"
if [ ! -f "$dir/ready" ]; then
  mkdir -p "$dir/idx" "$dir/cifar"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte; do
    gunzip -c "/usr/share/datasets/fashion-mnist/$f.gz" >"$dir/idx/$f"
  done
  for b in 1 2 3 4 5; do
    python3 -c "import os,sys; sys.stdout.buffer.write(b''.join(bytes([i % 10]) + os.urandom(3072) for i in range(10000)))" >"$dir/cifar/data_batch_$b.bin"
  done
  python3 -c "import os,sys; sys.stdout.buffer.write(bytes([0]) + os.urandom(3072))" >"$dir/cifar/test_batch.bin"
  "$new" synth "$dir/jpegs" --count 2000 --classes 10 --min-side 256 --max-side 500 >/dev/null
  "$new" pack "$dir/jpegs" "$dir/jshards" >/dev/null
  "$new" pack "$dir/idx" "$dir/ishards" >/dev/null
  touch "$dir/ready"
fi
cat "$dir"/idx/* "$dir"/cifar/* "$dir"/ishards/* "$dir"/jshards/* >/dev/null
for spec in idx:100 cifar:60 ishards:40 jshards:2; do
  data=${spec%%:*} epochs=${spec##*:}
  for ((i = 0; i < runs; ++i)); do
    for which in old new; do
      bin=$old; [ "$which" = new ] && bin=$new
      "$bin" profile "$dir/$data" --shuffle full --batch 256 --epochs "$epochs" --quiet \
        --no-ceilings --json "$dir/$which.json" >/dev/null
      python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], int(j['steady_samples_per_second']), j['io_backend'])" \
        "$dir/$which.json" "$data" "$which"
    done
  done
done | python3 -c '
import collections, statistics, sys
rates = collections.defaultdict(list); backends = collections.defaultdict(set)
for line in sys.stdin:
    data, which, rate, io = line.split()
    rates[data, which].append(int(rate)); backends[data, which].add(io)
for data in ["idx", "cifar", "ishards", "jshards"]:
    o, n = (statistics.median(rates[data, w]) for w in ("old", "new"))
    print(f"{data:8s} old {o:>10.0f}/s ({",".join(sorted(backends[data, "old"]))})  "
          f"new {n:>10.0f}/s ({",".join(sorted(backends[data, "new"]))})  new/old {n / o:.3f}")
'
