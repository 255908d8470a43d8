#!/usr/bin/env bash
# The test command: builds, then runs every test with ctest (unit tests, the
# GPU tests, which only compile their kernels when there is no GPU, and the
# lit/FileCheck golden tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
