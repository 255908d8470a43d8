#!/usr/bin/env bash
# Installs the Debian packages minijit builds with, when they are missing:
# CMake, g++, LLVM 14 (Support, FileCheck, lit), GoogleTest, zlib, the DLPack
# header, and matplotlib for scripts/plot.py and its test (Debian's
# python3-matplotlib, which is for /usr/bin/python3; the build does not need
# it). With --docs, also Doxygen for the API reference (`--target docs`).
# The CUDA toolkit (headers and libnvrtc) is expected at /usr/local/cuda.
set -euo pipefail
packages=(cmake g++ make python3 python3-matplotlib llvm-14-dev llvm-14-tools libgtest-dev zlib1g-dev
          libdlpack-dev)
for arg in "$@"; do
  case "$arg" in
    --docs) packages+=(doxygen) ;;
    *) echo "usage: $0 [--docs]" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
cuda=${MINIJIT_CUDA_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ] || [ ! -f "$cuda/include/cuda.h" ]; then
  echo "error: the CUDA toolkit (cuda.h, nvrtc.h, libnvrtc) was not found under $cuda;" \
       "install CUDA 13 there or set MINIJIT_CUDA_ROOT" >&2
  exit 1
fi
