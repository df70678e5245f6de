#!/usr/bin/env bash
# tools/gpu/check.sh [STEP...]: what one call on a lent GPU machine runs, from the
# repository root, with the binaries bundled by ../shared/gpu/bundle.sh in .gpu
# (see the README's "GPU" section). Logs go to $OUT (or /tmp/gpu-out); a short
# table is printed last. Steps: tests sanitize bench (default: all three).
#   tests     stoke_gpu_tests
#   sanitize  compute-sanitizer memcheck and racecheck on the device tests
#   bench     gpu_bench, alternating with .gpu/baseline/gpu_bench when present
set -uo pipefail
. .gpu/setup.sh
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
steps=${*:-tests sanitize bench}
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
        summary+=("$(grep -E '^(peak|device|loader|convert|overlap)' "$out/gpu_bench_new_$round.log")")
        if [ -x .gpu/baseline/gpu_bench ]; then
          .gpu/baseline/gpu_bench 256 3000 200 >"$out/gpu_bench_base_$round.log" 2>&1
          summary+=("gpu_bench (baseline) round $round: rc $?")
          summary+=("$(grep -E '^(peak|loader|overlap)' "$out/gpu_bench_base_$round.log")")
        fi
      done
      ;;
  esac
done
printf '%s\n' "${summary[@]}"
