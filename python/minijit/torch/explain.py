"""explain(model, *inputs): what minijit takes from a model, and what it leaves.

Compiles the model with the backend (it resets Dynamo's state before and
after), runs it once on the inputs (and, with backward=True, a backward pass
from the sum of its outputs, so that the backward graph is explained too), and
prints, per graph AOTAutograd made, each island minijit runs (its ATen ops and
its kernel count) and each op left to PyTorch with the reason. Returns the text
as well.
"""

import collections

import torch

from . import compiler as backendModule
from . import library
from .support import qualifiedName


def kernelCount(island):
    """Kernels of the island's fused graph, None where it cannot be had."""
    try:
        if island.compiled is not None and not island.translation.hintDims:
            return island.compiled.num_kernels
        return library.kernelCount(island.text, island.lastDims or island.translation.hintDims)
    except Exception:
        return None


def summarize(reports):
    """The reports of some compiles in numbers, for harnesses: graphs, islands,
    kernels, the ops left to PyTorch with their reasons ("op: reason", xN where
    counted more than once) and the messages of the islands that fell back."""
    left = collections.Counter(item for r in reports for item in r.leftOut)
    islands = [island for r in reports for island in r.islands]
    counts = [kernelCount(island) for island in islands]
    return {
        "graphs": len(reports),
        "islands": len(islands),
        "kernels": sum(k or 0 for k in counts) if all(k is not None for k in counts) else None,
        "left": [f"{op}: {reason}" + (f" x{n}" if n > 1 else "") for (op, reason), n in sorted(left.items())],
        "failed": [message for r in reports for _, message in r.failed],
    }


def explain(model, *inputs, backward=False, options=None, file=None):
    torch._dynamo.reset()
    start = backendModule.reportCount()
    compiled = torch.compile(model, backend=backendModule.backend, options=dict(options or {}))
    out = compiled(*inputs)
    if backward:
        outs = out if isinstance(out, (tuple, list)) else (out,)
        grads = [o.float().sum() for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
        if grads:
            sum(grads).backward()
    reports = backendModule.reportsSince(start)
    lines = []
    totalIslands = totalKernels = 0
    for r in reports:
        lines.append(f"{r.kind} graph: {len(r.islands)} minijit subgraph(s), {len(r.failed)} fallen back")
        for island in r.islands:
            ops = collections.Counter(qualifiedName(op) for op in island.ops())
            kernels = kernelCount(island)
            totalIslands += 1
            totalKernels += kernels or 0
            k = f"{kernels} kernel(s)" if kernels is not None else "kernels unknown (no compiler)"
            lines.append(f"  {island.name}: {sum(ops.values())} ops, {k}: "
                         + ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(ops.items())))
        for ops, message in r.failed:
            lines.append(f"  fell back: {message}")
        left = collections.Counter(r.leftOut)
        for (op, reason), count in sorted(left.items()):
            lines.append(f"  left to PyTorch: {op}" + (f" x{count}" if count > 1 else "") + f": {reason}")
    lines.append(f"total: {totalIslands} minijit subgraph(s), {totalKernels} kernel(s)")
    text = "\n".join(lines)
    print(text, file=file)
    torch._dynamo.reset()
    return text
