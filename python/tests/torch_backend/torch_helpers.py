"""Helpers of the backend's tests: compile in CPU mode, read what each compile did."""

import torch


def compileCpu(fn, **options):
    return torch.compile(fn, backend="minijit", options={"device": "cpu", **options})


def reportsSince(start):
    from minijit.torch import compiler
    return compiler.reportsSince(start)


def reportCount():
    from minijit.torch import compiler
    return compiler.reportCount()


def islandOps(reports):
    return {str(op) for r in reports for island in r.islands for op in island.ops()}
