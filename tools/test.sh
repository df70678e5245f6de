#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test suite: the full CPU
# suite (plus the consumer-project and format checks) in a release build, then
# the CPU suite again under ASan+UBSan and under TSan. GPU tests (label gpu) skip
# themselves without a GPU; then a bounded libFuzzer run of every parser's target
# (FUZZ_SECONDS each, default 8). STOKE_SLOW=1 adds the slow soak runs and
# fuzzes each target for 300 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tools/install_deps.sh

jobs=$(nproc)
failed=0
step() { echo; echo "=== $* ==="; }

step "format (clang-format, .clang-format)"
if ! git ls-files '*.h' '*.cc' '*.cu' | xargs clang-format --dry-run -Werror; then
  echo "clang-format: files above need formatting"; failed=1
fi

step "structure: stage order of includes; thread-safety analysis (clang -Wthread-safety)"
tools/check_layers.sh || failed=1
tools/check_threads.sh || failed=1

step "python package: the README's pip install into a fresh venv, then import stoke"
# The README's block itself (tools/check_docs.py runs the blocks marked `by
# tools/test.sh`), into build/venv-check, with Debian's python3 (which sees
# python3-torch), not whatever python3 comes first on PATH.
rm -rf build/venv-check
/usr/bin/python3 tools/check_docs.py --root . --build build/release --by tools/test.sh \
  --venv build/venv-check || failed=1

step "release build"
tools/build.sh build/release
step "release tests"
(cd build/release && ctest --output-on-failure -j "$jobs") || failed=1

step "ASan+UBSan build (CPU suite)"
# The libtorch example too: its tests (stoke/torch.h, and the example under
# mpirun) run under both sanitizers.
tools/build.sh build/asan -DSTOKE_SANITIZE=address -DSTOKE_WITH_CUDA=OFF -DSTOKE_BUILD_EXAMPLES=OFF \
  -DSTOKE_BUILD_TORCH_EXAMPLE=ON
step "ASan+UBSan tests"
(cd build/asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -LE consumer) || failed=1

step "TSan build (CPU suite)"
tools/build.sh build/tsan -DSTOKE_SANITIZE=thread -DSTOKE_WITH_CUDA=OFF -DSTOKE_BUILD_EXAMPLES=OFF \
  -DSTOKE_BUILD_TORCH_EXAMPLE=ON
step "TSan tests"
# OMP_NUM_THREADS=1: oneDNN's OpenMP runtime (libgomp) is not built for TSan, which
# cannot see its barriers and reports its workers' writes as races; one thread has none.
(cd build/tsan && OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 suppressions=$root/tests/tsan.supp" ctest --output-on-failure -j "$jobs" -LE consumer) || failed=1

step "fuzz: every parser (libFuzzer + ASan/UBSan), bounded"
tools/fuzz.sh || failed=1

if [ "${STOKE_SLOW:-0}" = 1 ]; then
  step "soak: a loader over JPEGs with bad files, seeks, resumes and early destruction; RSS sampled"
  STOKE_SLOW=1 build/release/tests/stoke_tests --gtest_filter='SoakTest.*' || failed=1
  step "soak: stress tests x200 under TSan"
  TSAN_OPTIONS="halt_on_error=1 suppressions=$root/tests/tsan.supp" build/tsan/tests/stoke_tests --gtest_filter='StressTest.*' --gtest_repeat=200 --gtest_brief=1 || failed=1
fi

echo
if [ "$failed" = 0 ]; then echo "all suites passed"; else echo "SOME SUITES FAILED"; fi
exit "$failed"
