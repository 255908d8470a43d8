#!/usr/bin/env bash
# Configures and builds minijit in ./build (Release), installing missing
# Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMINIJIT_CUDA_ROOT="${MINIJIT_CUDA_ROOT:-/usr/local/cuda}"
cmake --build build -j"$(nproc)"
