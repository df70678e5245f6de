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
)
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
