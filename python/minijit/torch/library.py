"""The calls the backend makes into minijit's Python package (ctypes over
libminijit_c.so): the CPU reference, a check of a graph, a compile."""

import minijit

# What every call here raises on minijit's side (with minijit's message).
Error = minijit.Error


def evaluate(text, arrays, dims):
    """Runs the CPU reference on numpy arrays; returns a list of numpy arrays."""
    return list(minijit.evaluate(text, *arrays, dims=dims or None))


def check(text, dims=None):
    """Parses and verifies a graph (named dimensions at `dims`); raises
    minijit.Error with minijit's message (LINE:COL where there is one)."""
    minijit.compile(text, dims=dims or None).emit("graph")


def compile(text, **options):
    """minijit.compile: the GPU path (schedules sized for the device, or an H200)."""
    return minijit.compile(text, **options)


def kernelCount(text, dims=None):
    """Kernels the graph becomes, fused (no NVRTC run, no GPU needed)."""
    return minijit.compile(text, dims=dims or None).num_kernels
