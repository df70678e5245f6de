#!/usr/bin/env bash
# Installs everything stoke needs to build, test and run on Debian 12.
# Safe to run again; as root or through sudo.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git clang-format clang libclang-rt-14-dev
  libboost1.81-dev liburing-dev libconcurrentqueue-dev zlib1g-dev
  libturbojpeg0-dev libjpeg62-turbo-dev
  libgtest-dev libgmock-dev libbenchmark-dev libdnnl-dev nlohmann-json3-dev
  dataset-fashion-mnist
  python3-dev pybind11-dev python3-pytest python3-numpy python3-torch python3-torchvision
  python3-pip python3-venv python3-setuptools
  libtorch-dev libopenmpi-dev openmpi-bin
  libcurl4-openssl-dev nginx-light
)
# Node.js runs the tests' S3-compatible server; any nodejs that brings npm will do.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The tests' S3-compatible server (s3rver), into a folder of the build, every
# package at the version tools/npm/package-lock.json pins: the tests find it at
# build/npm/node_modules/.bin/s3rver.
root="$(cd "$(dirname "$0")/.." && pwd)"
npm_dir="$root/build/npm"
if ! cmp -s "$root/tools/npm/package-lock.json" "$npm_dir/package-lock.json" ||
  [ ! -x "$npm_dir/node_modules/.bin/s3rver" ]; then
  mkdir -p "$npm_dir"
  cp "$root/tools/npm/package.json" "$root/tools/npm/package-lock.json" "$npm_dir/"
  npm ci --silent --no-audit --no-fund --prefix "$npm_dir"
fi
