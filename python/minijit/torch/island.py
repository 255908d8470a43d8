"""One island of a partitioned graph, run by minijit in place of its ATen ops.

An Island is an nn.Module that the backend puts where the partitioner left a
fused submodule. In "cpu" mode it runs the translated graph on minijit's CPU
reference (numpy arrays in and out); in "cuda" mode it runs the compiled
kernels on PyTorch's tensors and current stream. Either way its outputs have
the dtypes and strides PyTorch traced (meta["val"]).
"""

import warnings

import numpy as np
import torch

from . import library
from .emitter import Unsupported


def toNumpy(tensor):
    """A tensor as the array minijit.evaluate takes (bf16 as f32)."""
    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.contiguous().numpy()


def evalDim(dim, dims):
    """A dimension of the text (a name or a product such as 2*s0) at `dims`."""
    size = 1
    for factor in str(dim).split("*"):
        size *= int(factor) if factor.isdigit() else dims[factor]
    return size


class Island(torch.nn.Module):
    """One minijit graph standing for a fused submodule; forward() has its signature."""

    # While true, each island keeps the tensors of its latest GPU run (lastInputs),
    # so a benchmark can time the compiled graph alone, without PyTorch around it.
    keepInputs = False

    def __init__(self, translation, mode, options, name, fallback=None):
        super().__init__()
        # The fused submodule's own ATen ops, run by PyTorch where minijit
        # fails at run time (a compile for new sizes, a refused tensor).
        self.fallback = fallback
        # Read on every call: a plain attribute, where the submodule itself is
        # found by nn.Module.__getattr__ (a microsecond a call).
        self.canFallBack = fallback is not None
        self.translation = translation
        self.mode = mode
        self.name = name
        self.text = translation.text
        self.compiled = None
        self.lastDims = None
        self.lastInputs = None
        self.tensorInputs = [(i, spec.order, spec.declared)
                             for i, spec in enumerate(translation.inputs) if spec.kind == "tensor"]
        # The common case, run without the general path's work: no named sizes,
        # every tensor input of rank 1 or more passed as it comes (no permute, no
        # split sizes), on the GPU; then runDirect. None: the general path.
        tensorSpecs = [spec for spec in translation.inputs if spec.kind == "tensor"]
        self.directInputs = None
        self.outputsAsTraced = False  # runDirect's: its outputs need no reshape, cast or permute
        if mode == "cuda" and not translation.bindings and all(
                spec.order is None and spec.declared is None and spec.shape for spec in tensorSpecs):
            self.directInputs = [i for i, _, _ in self.tensorInputs]
        if mode == "cuda":
            if not any(spec.kind == "tensor" for spec in translation.inputs):
                raise Unsupported("a subgraph without tensor inputs")
            # Compiled now for the traced sizes, so that a compile error falls back here;
            # other bindings of named dimensions compile on their first run.
            options = dict(options)
            replay = options.pop("graph_replay", False)
            self.compiled = library.compile(self.text, dims=translation.hintDims or None,
                                            device=translation.deviceIndex, **options)
            self.compiled.num_kernels
            if replay:
                self.compiled.set_graph_replay(True, device=translation.deviceIndex or 0)
        else:
            library.check(self.text, translation.hintDims)

    def ops(self):
        return [n.target for n in self.translation.nodes]

    def bindDims(self, args):
        dims = {}
        products = []
        for name, source in self.translation.bindings.items():
            if source[0] == "tensor":
                dims[name] = int(args[source[1]].shape[source[2]])
            elif source[0] == "symint":
                dims[name] = int(args[source[1]])
            else:
                products.append((name, source))
        for name, (_, index, axis, product, _) in products:
            known = 1
            for factor in product.split("*"):
                if factor != name:
                    known *= int(factor) if factor.isdigit() else dims[factor]
            dims[name] = int(args[index].shape[axis]) // known
        return dims

    # Called as a function: an island has no hooks, and nn.Module.__call__'s
    # checks for them cost microseconds a call.
    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        run = self.runMinijit if self.directInputs is None else self.runDirect
        if not self.canFallBack:
            return run(args)
        try:
            return run(args)
        except library.Error as e:
            warnings.warn(f"minijit: island {self.name} runs in PyTorch this time: {e}",
                          RuntimeWarning, stacklevel=2)
            return tuple(self.fallback(*args))

    def runMinijit(self, args):
        t = self.translation
        dims = self.bindDims(args) if t.bindings else {}
        # Per-call state as plain attributes: nn.Module.__setattr__ costs
        # microseconds a call, a large part of a small graph's host time.
        self.__dict__["lastDims"] = dims
        tensors = []
        for index, order, declared in self.tensorInputs:
            a = args[index]
            if order is not None:
                a = a.permute(order)  # contiguous when the layout is the traced one
            elif a.dim() == 0:
                a = a.reshape(1)  # the package's host arrays do not keep rank 0
            if declared is not None:  # products of sizes split into their factors
                a = a.reshape([d if isinstance(d, int) else dims[d] for d in declared])
            tensors.append(a)
        if self.mode == "cpu":
            results = library.evaluate(self.text, [toNumpy(a) for a in tensors], dims)
            buffers = [torch.from_numpy(np.array(b, order="C", copy=True)) for b in results]
        else:
            buffers = self.runCuda(tensors, dims)
        return tuple(self.shape(b, spec, dims) for b, spec in zip(buffers, t.outputs))

    def runDirect(self, args):
        """runMinijit where directInputs holds: the inputs as they come, no sizes to
        bind, straight to the package's torch path (contiguous inputs; others are
        copied first). The outputs' shapes never change here: once they are seen
        to come out as PyTorch traced them, they are returned as they are."""
        tensors = [args[i] if args[i].is_contiguous() else args[i].contiguous()
                   for i in self.directInputs]
        if Island.keepInputs:
            self.__dict__["lastInputs"] = tensors
        buffers = self.compiled.run_torch(tensors)
        if self.outputsAsTraced:
            return tuple(buffers)
        shaped = tuple(self.shape(b, spec, {}) for b, spec in zip(buffers, self.translation.outputs))
        self.__dict__["outputsAsTraced"] = all(s is b for s, b in zip(shaped, buffers))
        return shaped

    def runCuda(self, tensors, dims):
        """Runs on PyTorch's current stream; the outputs come from PyTorch's allocator.
        Inputs that are not contiguous are copied first (the package copies one
        that starts mid-vector)."""
        tensors = [a if a.is_contiguous() else a.contiguous() for a in tensors]
        if Island.keepInputs:
            self.__dict__["lastInputs"] = tensors
        return self.compiled.run(*tensors, dims=dims or None)

    def shape(self, buffer, spec, dims):
        """The buffer as PyTorch traced the output: rank, dtype, device, strides."""
        out = buffer
        if out.dim() != len(spec.symbolicSize):
            sizes = [d if isinstance(d, int) else evalDim(d, dims) for d in spec.symbolicSize]
            out = out.reshape([sizes[p] for p in spec.perm] if spec.perm is not None else sizes)
        if out.dtype != spec.dtype:
            out = out.to(spec.dtype)
        if self.mode == "cpu" and spec.device.type != "cpu":
            out = out.to(spec.device)
        if spec.perm is not None:
            out = out.permute(spec.inverse)
        return out
