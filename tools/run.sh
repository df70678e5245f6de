#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the main job: `stoke profile` over
# the Fashion-MNIST training set (Debian's dataset-fashion-mnist), shuffled, for
# 3 epochs, with a JSON report in build/profile.json. Extra arguments go to
# stoke profile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tools/install_deps.sh
tools/build.sh build/release
build/release/tools/stoke profile /usr/share/datasets/fashion-mnist --format idx \
  --batch 256 --shuffle full --epochs 3 --json build/profile.json "$@"
