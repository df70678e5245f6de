#!/usr/bin/env bash
# tools/gpu/check.sh [STEP...]: every GPU check, from the repository root. On a
# GPU machine with this project's dependencies, build there (tools/build.sh
# build/release) and run it: it takes the binaries from build/release. On a lent
# machine without them (no package registry), the binaries come built elsewhere
# in .gpu, a bundle of the build and the libraries it links, which the lending
# workplace's own script makes (../shared/gpu/bundle.sh BUILD_DIR, outside this
# repository); .gpu/setup.sh then puts them on PATH. Logs go to $OUT (or
# /tmp/gpu-out); a short table is printed last. Steps (default: all):
#   tests     stoke_gpu_tests
#   sanitize  compute-sanitizer memcheck and racecheck on the device tests
#   bench     gpu_bench, alternating with .gpu/baseline/gpu_bench when present
#   train     stoke train of a CNN on a synthetic ImageFolder on cuda:0, from
#             the default uint8 HWC batches and from float16 ones
#   core      tools/bench/core_share.sh: a PyTorch step beside stoke's decoding
set -uo pipefail
if [ -f .gpu/setup.sh ]; then
  . .gpu/setup.sh
elif [ -x build/release/tests/stoke_gpu_tests ]; then
  export PATH=$PWD/build/release/tests:$PWD/build/release/tools:$PATH
else
  echo "tools/gpu/check.sh: no .gpu bundle and no build/release/tests/stoke_gpu_tests: build first" >&2
  exit 2
fi
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
steps=${*:-tests sanitize bench train core}
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
  --format=csv,noheader | tee "$out/gpu.txt"
echo "cores: $(nproc)" | tee -a "$out/gpu.txt"
summary=()
for step in $steps; do
  case $step in
    tests)
      stoke_gpu_tests >"$out/gpu_tests.log" 2>&1
      summary+=("stoke_gpu_tests: rc $? ($(grep -E '^\[  (PASSED|FAILED)  \]' "$out/gpu_tests.log" | tr '\n' ' '))")
      ;;
    sanitize)
      cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      for tool in memcheck racecheck; do
        extra=""; [ $tool = memcheck ] && extra="--leak-check full"
        "$cs" --tool $tool $extra --error-exitcode 9 stoke_gpu_tests \
          --gtest_filter='CudaDevice*:ConvertKernel*:Shapes/*' >"$out/sanitize_$tool.log" 2>&1
        summary+=("compute-sanitizer $tool: rc $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$out/sanitize_$tool.log" | tr '\n' ' '))")
      done
      ;;
    bench)
      for round in 1 2; do
        gpu_bench 256 3000 200 >"$out/gpu_bench_new_$round.log" 2>&1
        summary+=("gpu_bench (this tree) round $round: rc $?")
        summary+=("$(grep -E '^(peak|device|host|pipeline|filled|convert|overlap)' "$out/gpu_bench_new_$round.log")")
        if [ -x .gpu/baseline/gpu_bench ]; then
          .gpu/baseline/gpu_bench 256 3000 200 >"$out/gpu_bench_base_$round.log" 2>&1
          summary+=("gpu_bench (baseline) round $round: rc $?")
          summary+=("$(grep -E '^(peak|loader|overlap)' "$out/gpu_bench_base_$round.log")")
        fi
      done
      ;;
    train)
      work=/tmp/stoke-train
      rm -rf $work && mkdir -p $work
      stoke synth $work/images --count 2000 --classes 10 --min-side 48 --max-side 64 >/dev/null
      for dtype in uint8 float16; do
        stoke train $work/images --model cnn:16-32-64-10 --size 32x32 --device cuda --dtype $dtype \
          --val-split 0.1 --epochs 6 --batch 64 --optimizer adam --lr 0.003 \
          >"$out/train_$dtype.log" 2>&1
        summary+=("stoke train cnn on cuda:0 from $dtype batches: rc $?")
        summary+=("$(grep -E '^(stoke train|epoch)' "$out/train_$dtype.log")")
      done
      ;;
    core)
      work=/tmp/stoke-core
      rm -rf $work && mkdir -p $work
      stoke synth $work/images --count 3000 --classes 10 --min-side 320 --max-side 480 >/dev/null
      stoke pack $work/images $work/shards >/dev/null
      OUT=$out/core bash tools/bench/core_share.sh $work/shards 12 2 >"$out/core_share.log" 2>&1
      summary+=("core_share: rc $?")
      summary+=("$(tail -8 "$out/core_share.log")")
      ;;
  esac
done
printf '%s\n' "${summary[@]}"
