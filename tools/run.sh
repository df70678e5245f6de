#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the main job: `stoke synth` writes
# a sample ImageFolder of 2,000 JPEGs in 10 classes (build/sample-images, once),
# and `stoke profile` reads it as a training job would (random-resized 224x224
# crops, shuffled, 5 epochs), names the stage that limits it, predicts what each
# fix would give, and ends with what the run showed and what to try next. A JSON
# report goes to build/profile.json. Extra arguments go to stoke profile (for
# example --device cuda --dtype float16 --normalize imagenet on a GPU machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tools/install_deps.sh
tools/build.sh build/release
stoke=build/release/tools/stoke
images=build/sample-images
if [ ! -d "$images" ]; then
  "$stoke" synth "$images" --count 2000 --classes 10 --min-side 256 --max-side 500
fi
"$stoke" profile "$images" --size 224x224 --crop random --batch 64 --shuffle full --epochs 5 \
  --json build/profile.json "$@"
