#!/usr/bin/env bash
# tools/build.sh DIR [cmake args...]: configures (once) and builds stoke in DIR
# with ninja and ccache. CUDA is built when the toolkit is found, unless
# -DSTOKE_WITH_CUDA=OFF is passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
shift
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.ccache}
# Paths inside the checkout are hashed relative to it (and the build folder's
# own path not at all), so that another clone of the same sources, a CI
# checkout in a new folder, hits the cache: the objects are the same.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if [ -d /usr/local/cuda/bin ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DSTOKE_WERROR=ON "$@" >/dev/null
cmake --build "$dir"
