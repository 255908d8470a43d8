#!/usr/bin/env bash
# Installs the Debian packages minijit builds with, when they are missing:
# CMake, g++, LLVM 14 (Support, FileCheck, lit), GoogleTest, zlib, the DLPack
# header, and matplotlib for scripts/plot.py and its test (Debian's
# python3-matplotlib, which is for /usr/bin/python3; the build does not need
# it), and numpy and pytest for the Python package's tests. With --docs, also Doxygen for the API reference (`--target docs`).
# The CUDA toolkit (headers and libnvrtc) is expected at /usr/local/cuda.
set -euo pipefail
packages=(cmake g++ make python3 python3-matplotlib llvm-14-dev llvm-14-tools libgtest-dev zlib1g-dev
          libdlpack-dev python3-numpy python3-pytest)
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
# The Python package's tests (ctest's `python`) need numpy and pytest in the
# python3 first on PATH, which may be another than Debian's.
if ! python3 -c "import numpy, pytest" >/dev/null 2>&1; then
  echo "installing numpy and pytest for $(command -v python3)"
  python3 -m pip install --quiet numpy pytest
fi
cuda=${MINIJIT_CUDA_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ] || [ ! -f "$cuda/include/cuda.h" ]; then
  echo "error: the CUDA toolkit (cuda.h, nvrtc.h, libnvrtc) was not found under $cuda;" \
       "install CUDA 13 there or set MINIJIT_CUDA_ROOT" >&2
  exit 1
fi
