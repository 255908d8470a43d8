#!/usr/bin/env bash
# Installs PyTorch (the version the GPU machine has), numpy, pytest and
# networkx into .venv-torch, for the torch backend's tests on the CPU: the
# build then runs the Python tests (ctest's `python`) with that venv's python.
# PyPI has no CPU-only Linux wheel: this downloads about 2.7 GB (CUDA's
# libraries included) and installs 4.6 GB; about 2 minutes here. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-torch
version=${MINIJIT_TORCH_VERSION:-2.11.0}
if [ -x "$venv/bin/python" ] &&
   "$venv/bin/python" -c "import torch, numpy, pytest, networkx; assert torch.__version__.startswith('$version')" 2>/dev/null; then
  echo "install-torch: $venv has torch $version"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "torch==$version" numpy pytest networkx
"$venv/bin/python" -c "import torch; print('install-torch: torch', torch.__version__, 'in $venv')"
