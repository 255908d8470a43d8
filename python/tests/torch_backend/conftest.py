"""Shared setup of the torch backend's tests (CPU mode, no GPU needed).

They need torch, numpy and the minijit package with its library
(libminijit_c.so: $MINIJIT_LIBRARY or build/lib of this checkout). Without
them every test says SKIPPED and why.
"""

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

torch = pytest.importorskip("torch", reason="torch is not installed: the backend's tests need it")
pytest.importorskip("numpy", reason="numpy is not installed")

try:
    import minijit.torch as mt  # noqa: E402,F401
except ImportError as e:  # the package cannot find libminijit_c.so
    pytest.skip(f"minijit's Python package is not importable: {e}", allow_module_level=True)


@pytest.fixture(autouse=True)
def freshDynamo():
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
