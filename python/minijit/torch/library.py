"""The two calls the backend needs from minijit: the CPU reference and a compile.

Both go through the `minijit` package (ctypes over libminijit_c.so). Where that
package lacks `evaluate` (a checkout without the C library built), evaluate()
runs the `minijit eval` command instead, found through $MINIJIT_CLI or PATH: the
same CPU reference, reached through .npy files.
"""

import os
import shutil
import subprocess
import tempfile

import numpy as np


def _package():
    try:
        import minijit
    except ImportError:
        return None
    return minijit


def haveEvaluate():
    pkg = _package()
    return (pkg is not None and hasattr(pkg, "evaluate")) or _cli() is not None


def _cli():
    path = os.environ.get("MINIJIT_CLI") or shutil.which("minijit")
    return path if path and os.access(path, os.X_OK) else None


def evaluate(text, arrays, dims):
    """Runs the CPU reference on numpy arrays; returns a list of numpy arrays."""
    pkg = _package()
    if pkg is not None and hasattr(pkg, "evaluate"):
        return list(pkg.evaluate(text, *arrays, dims=dims))
    return _evaluateWithCli(text, arrays, dims)


class CliError(RuntimeError):
    pass


def _evaluateWithCli(text, arrays, dims):
    cli = _cli()
    if cli is None:
        raise CliError("minijit's Python package has no evaluate() and no minijit command was "
                       "found (set MINIJIT_CLI)")
    with tempfile.TemporaryDirectory(prefix="minijit_torch_") as tmp:
        graphPath = os.path.join(tmp, "graph.mj")
        with open(graphPath, "w") as f:
            f.write(text)
        cmd = [cli, "eval", graphPath, "--save", os.path.join(tmp, "out")]
        for i, a in enumerate(arrays):
            path = os.path.join(tmp, f"a{i}.npy")
            np.save(path, np.array(a, order="C", copy=True))
            cmd += ["--input", f"a{i}={path}"]
        for name, size in dims.items():
            cmd += ["--dim", f"{name}={size}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CliError(proc.stderr.strip() or proc.stdout.strip())
        returned = text.rsplit("return", 1)[1].split("\n")[0]
        names = [n.strip().lstrip("%") for n in returned.split(",")]
        return [np.load(os.path.join(tmp, "out", f"{n}.npy")) for n in names]


def compile(text, **options):
    """minijit.compile from the package (the GPU path)."""
    pkg = _package()
    if pkg is None or not hasattr(pkg, "compile"):
        raise RuntimeError("minijit's Python package (minijit.compile) is not importable")
    return pkg.compile(text, **options)


def fusedText(text, dims):
    """The fused stage's text (--emit=fused: no NVRTC, no GPU needed)."""
    pkg = _package()
    if pkg is not None and hasattr(pkg, "compile"):
        try:
            return pkg.compile(text, dims=dims).emit("fused")
        except TypeError:
            return pkg.compile(text).emit("fused")
    cli = _cli()
    if cli is None:
        raise CliError("no minijit package and no minijit command")
    with tempfile.TemporaryDirectory(prefix="minijit_torch_") as tmp:
        graphPath = os.path.join(tmp, "graph.mj")
        with open(graphPath, "w") as f:
            f.write(text)
        cmd = [cli, "compile", graphPath, "--emit=fused"]
        for name, size in dims.items():
            cmd += ["--dim", f"{name}={size}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CliError(proc.stderr.strip())
        return proc.stdout


def check(text):
    """Parses and verifies a graph; raises with minijit's message (FILE:LINE:COL)."""
    pkg = _package()
    if pkg is not None and hasattr(pkg, "compile"):
        pkg.compile(text).emit("graph")
        return
    cli = _cli()
    if cli is None:
        raise CliError("no minijit package and no minijit command")
    with tempfile.TemporaryDirectory(prefix="minijit_torch_") as tmp:
        graphPath = os.path.join(tmp, "graph.mj")
        with open(graphPath, "w") as f:
            f.write(text)
        proc = subprocess.run([cli, "check", graphPath], capture_output=True, text=True)
        if proc.returncode != 0:
            raise CliError(proc.stderr.strip())
