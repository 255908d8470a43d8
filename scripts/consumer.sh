#!/usr/bin/env bash
# Installs minijit (built in ./build) into a temporary prefix, then builds and
# runs samples/consumer against it with find_package(minijit): what another
# project does. Compile only without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix" "$prefix-build"' EXIT
cmake --install ${BUILD_DIR:-build} --prefix "$prefix" > /dev/null
cmake -S samples/consumer -B "$prefix-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$prefix-build" -j"$(nproc)" > /dev/null
"$prefix-build/consumer" | tail -3
echo "consumer: built and ran against the minijit installed in $prefix"
