"""Shared setup of the torch backend's tests (CPU mode, no GPU needed).

They need torch, numpy and minijit's CPU reference: the minijit package's
evaluate(), or else the minijit command ($MINIJIT_CLI, PATH, or build/bin of
this checkout). Without them every test says SKIPPED and why.
"""

import os
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

torch = pytest.importorskip("torch", reason="torch is not installed: the backend's tests need it")
pytest.importorskip("numpy", reason="numpy is not installed")

if not os.environ.get("MINIJIT_CLI") and not shutil.which("minijit"):
    for candidate in (ROOT / "build" / "bin" / "minijit",):
        if candidate.exists():
            os.environ["MINIJIT_CLI"] = str(candidate)

import minijit.torch as mt  # noqa: E402
from minijit.torch import library  # noqa: E402

if not library.haveEvaluate():
    pytest.skip("neither minijit.evaluate nor the minijit command is available "
                "(build the project or set MINIJIT_CLI)", allow_module_level=True)


@pytest.fixture(autouse=True)
def freshDynamo():
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


def compileCpu(fn, **options):
    return torch.compile(fn, backend="minijit", options={"device": "cpu", **options})


def reportsSince(start):
    from minijit.torch import compiler
    return compiler.REPORTS[start:]


def reportCount():
    from minijit.torch import compiler
    return len(compiler.REPORTS)


def islandOps(reports):
    return {str(op) for r in reports for island in r.islands for op in island.ops()}
