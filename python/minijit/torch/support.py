"""Which ATen nodes minijit takes: the OperatorSupport the partitioner asks.

A node is supported when its lowering succeeds on its own (translate.checkNode)
and its tensors live on the mode's device. Every refusal is recorded with its
reason, for explain().
"""

import operator

import torch
from torch.fx.passes.operator_support import OperatorSupportBase

from .emitter import Unsupported
from .lowerings import LEFT_TO_PYTORCH, LOWERINGS
from .translate import checkNode

# Ops that move no data: an island of these alone is not worth a kernel.
VIEW_OPS = {
    "view", "_unsafe_view", "reshape", "expand", "permute", "t", "transpose", "unsqueeze",
    "squeeze", "slice", "select", "alias", "detach", "clone", "getitem", "split",
    "split_with_sizes",
}


def opName(target):
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return packet.__name__
    return getattr(target, "__name__", str(target))


def qualifiedName(target):
    if isinstance(target, torch._ops.OpOverload):
        name = str(target).removesuffix(".default")
        return name if name.startswith("aten.") or "." in name else f"aten.{name}"
    return getattr(target, "__name__", str(target))


def tensorDevices(node):
    devices = set()
    for n in [node] + list(node.all_input_nodes):
        val = n.meta.get("val")
        vals = val if isinstance(val, (tuple, list)) else (val,)
        for v in vals:
            if isinstance(v, torch.Tensor):
                devices.add(v.device.type)
    return devices


class MinijitSupport(OperatorSupportBase):
    def __init__(self, device):
        super().__init__()
        self.device = device  # "cpu" (any tensor, run on the CPU reference) or "cuda"
        self.reasons = {}
        self.depths = {}  # node -> the depth of the ops its lowering emits (checkNode)

    def is_node_supported(self, submodules, node):
        if node.op != "call_function":
            return False
        reason = self.reason(node)
        if reason is not None:
            self.reasons[node] = reason
            return False
        return True

    def reason(self, node):
        """None when minijit takes `node`, else why not."""
        target = node.target
        if target is operator.getitem:
            source = node.args[0]
            if source.op == "call_function" and self.reason(source) is None:
                return None
            return "a part of a result minijit does not compute"
        if target not in LOWERINGS:
            name = opName(target)
            if name in LEFT_TO_PYTORCH:
                return LEFT_TO_PYTORCH[name]
            if not isinstance(target, torch._ops.OpOverload):
                return "not a tensor op (size arithmetic stays in Python)"
            return "not in minijit's table"
        if self.device == "cuda" and tensorDevices(node) - {"cuda"}:
            return "a tensor not on a CUDA device"
        try:
            self.depths[node] = checkNode(node)
        except Unsupported as e:
            return str(e)
        return None


def isComputeNode(node):
    return node.op == "call_function" and opName(node.target) not in VIEW_OPS
