"""The torch.compile backend: AOTAutograd, then islands of ATen ops to minijit.

backend(gm, example_inputs, **options) is what torch.compile(backend="minijit")
calls. AOTAutograd turns Dynamo's graph into functional ATen graphs (forward,
backward, inference) after the decompositions below; compileAten() partitions
each one: the nodes minijit takes become islands run by minijit, the others stay
ATen calls in the same GraphModule. An island that fails to translate or to
compile stays in PyTorch too, with a warning that names the op.
"""

import collections
import contextlib
import math
import warnings

import torch
from torch._dynamo.backends.common import aot_autograd
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from .emitter import MAX_DEPTH, Unsupported
from .island import Island
from .support import MinijitSupport, isComputeNode, qualifiedName

aten = torch.ops.aten

# Ops minijit lowers itself, kept whole even where a decomposition exists.
NATIVE = [
    aten._softmax.default, aten._log_softmax.default, aten.native_layer_norm.default,
    aten.gelu.default, aten.addmm.default, aten.constant_pad_nd.default, aten.embedding.default,
    aten.silu.default, aten.var.correction, aten.leaky_relu.default, aten.hardtanh.default,
    aten.clamp_min.default, aten.clamp_max.default,
]

# Ops split into primitives minijit has, beyond the core table.
EXTRA = [aten.native_dropout.default, aten.t.default, aten.transpose.int, aten.var_mean.correction]


def lstmShapesFixed(input, hx, params, *args):
    """torch's own aten.lstm.input decomposition, its final states given the shape
    of the states passed in: where oneDNN is not used (on a GPU, or traced with it
    off), torch 2.11's decomposition returns h_n and c_n as [layers, 1, batch,
    hidden] (one_layer_lstm squeezes axis 1, not 0; pytorch/pytorch#151200). The
    elements are in the right order, so a reshape mends it."""
    from torch._decomp.decompositions import lstm_impl
    out, h, c = lstm_impl(input, hx, params, *args)
    return out, h.reshape(hx[0].shape), c.reshape(hx[1].shape)


@contextlib.contextmanager
def oneDnnOff():
    """oneDNN (mkldnn) off, and only that flag (torch.backends.mkldnn.flags sets the
    others to their defaults too)."""
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)


@contextlib.contextmanager
def pythonKernels(op, keys, fn):
    """op's Python kernels for the dispatch `keys` set to fn while AOTAutograd
    traces (the Python dispatcher runs them before any decomposition table is
    read), and put back after: those it had, or none."""
    saved = {k: op.py_kernels[k] for k in keys if k in op.py_kernels}
    try:
        for k in keys:
            op.py_kernels[k] = fn
        op._dispatch_cache.clear()
        yield
    finally:
        for k in keys:
            op.py_kernels.pop(k, None)
        op.py_kernels.update(saved)
        op._dispatch_cache.clear()


@contextlib.contextmanager
def lstmMended():
    """aten.lstm.input decomposed by lstmShapesFixed while AOTAutograd traces:
    torch's decomposition is the op's own Python kernel (CompositeImplicitAutograd
    and Autograd), swapped for the trace."""
    op = aten.lstm.input
    keys = (torch._C.DispatchKey.CompositeImplicitAutograd, torch._C.DispatchKey.Autograd)
    if not all(k in op.py_kernels for k in keys):  # another torch: leave it as it is
        yield
        return
    with pythonKernels(op, keys, lstmShapesFixed):
        yield


def sdpaAsOps(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
              enable_gqa=False):
    """F.scaled_dot_product_attention written as the ops minijit fuses into one
    attention kernel: the product Q K^T, the scale, the causal mask (key <= query,
    top-left, as PyTorch's) or the given one (a bool mask keeps its true keys, a
    float mask is added), the softmax and the product with V; grouped K/V heads
    (enable_gqa) broadcast, never copied. For f16 and bf16 only, whose kernel
    runs on the tensor cores: minijit's f32 attention (the CUDA cores) takes
    about twice the time of PyTorch's (docs/PERFORMANCE.md). Where a gradient
    is asked of it, dropout is on, or the inputs are f32, PyTorch's own
    composite runs instead (its flash, memory-efficient or cuDNN kernel, whose
    backward reads the kernel's own statistics), and so it does for what
    PyTorch refuses or converts itself (a causal mask beside attn_mask, a
    float mask of another type than the query's)."""
    op = aten.scaled_dot_product_attention.default
    grads = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    sixteen = all(t.dtype in (torch.float16, torch.bfloat16) for t in (query, key, value))
    maskOk = attn_mask is None or attn_mask.dtype in (torch.bool, query.dtype)
    if (dropout_p != 0.0 or grads or not sixteen or not maskOk
            or (is_causal and attn_mask is not None) or query.dim() < 2):
        return op._op_dk(torch._C.DispatchKey.CompositeImplicitAutograd, query, key, value,
                         attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    queries, keys = query.size(-2), key.size(-2)
    factor = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        group = query.size(-3) // key.size(-3)

        def repeated(t):  # heads h * group ... h * group + group - 1 read head h
            wide = t.unsqueeze(-3).expand(*t.shape[:-2], group, *t.shape[-2:])
            return wide.reshape(*t.shape[:-3], t.size(-3) * group, *t.shape[-2:])
        key, value = repeated(key), repeated(value)
    scores = torch.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        qpos = torch.arange(queries, dtype=torch.int32, device=query.device).view(queries, 1)
        kpos = torch.arange(keys, dtype=torch.int32, device=query.device).view(1, keys)
        scores = torch.where(kpos <= qpos, scores, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    return torch.matmul(torch.softmax(scores, dim=-1), value)


@contextlib.contextmanager
def sdpaAsOpsWhileTracing():
    """aten.scaled_dot_product_attention traced as sdpaAsOps: the op is
    CompositeImplicitAutograd, whose kernel picks one of PyTorch's fused
    kernels before any decomposition table is read (on a GPU
    _scaled_dot_product_{flash,efficient,cudnn}_attention, which minijit does
    not take), so its Python kernel is set for the trace and taken back after."""
    op = aten.scaled_dot_product_attention.default
    key = torch._C.DispatchKey.CompositeImplicitAutograd
    if key in op.py_kernels:  # someone else's: leave it
        yield
        return
    with pythonKernels(op, (key,), sdpaAsOps):
        yield


def decompositions():
    from torch._decomp import core_aten_decompositions, get_decompositions
    core = core_aten_decompositions()  # a CustomDecompTable: read through its keys()
    table = {op: core[op] for op in core.keys()}
    table.update(get_decompositions(EXTRA))
    for op in NATIVE:
        table.pop(op, None)
    # The CPU's fused attention stays whole, as it does on a GPU: its
    # backward (_scaled_dot_product_flash_attention_for_cpu_backward, which
    # has no decomposition) reads the forward's log-sum-exp, and the core
    # table's decomposition of the forward makes one it does not read
    # right: the gradients come out wrong (torch 2.11; so they do through
    # aot_autograd with the core table alone, minijit out of it). Without a
    # gradient sdpaAsOps traces the attention as plain ops before this op is
    # reached.
    table.pop(aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    return table


class Report:
    """What one compile did, for explain(): the islands and the nodes left out."""

    def __init__(self, kind):
        self.kind = kind
        self.islands = []  # Island modules
        self.failed = []  # (ops, message) of islands that fell back
        self.leftOut = []  # (op name, reason)


# The latest compiles' reports (bounded: they hold the islands), and how many there were.
REPORTS = collections.deque(maxlen=64)
_reportTotal = 0


def reportCount():
    """How many compiles have made a report so far."""
    return _reportTotal


def reportsSince(start):
    """The reports of the compiles after the first `start` (the latest 64 at most)."""
    count = min(_reportTotal - start, len(REPORTS))
    return list(REPORTS)[len(REPORTS) - count:] if count > 0 else []


def resolveDevice(options, example_inputs):
    device = options.get("device")
    if device is not None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"minijit backend: device must be 'cpu' or 'cuda', not {device!r}")
        return device
    for a in example_inputs:
        if isinstance(a, torch.Tensor) and a.device.type == "cuda":
            return "cuda"
    return "cpu"


# Graphs of more call nodes than this are partitioned by partitionByBarriers: the
# CapabilityBasedPartitioner keeps every node's set of downstream nodes, memory that
# grows with the square of a long chain's length (an LSTM of 512 steps and 6 layers
# unrolled: tens of GB).
LARGE_GRAPH = 3000


def partitionByBarriers(gm, support):
    """The nodes minijit takes, grouped by their barrier count: the most nodes left
    to PyTorch on any path from the graph's inputs to them. Along a path the count
    never falls and rises past each node left to PyTorch, so no path leaves a group
    and comes back to it, and the groups fuse without a cycle; memory and time
    linear in the graph."""
    barrier, groups = {}, collections.defaultdict(dict)
    for n in gm.graph.nodes:
        count = max((barrier[i] for i in n.all_input_nodes), default=0)
        if n.op == "call_function":
            if support.is_node_supported(None, n):
                groups[count][n] = None
            else:
                count += 1
        barrier[n] = count
    return [groups[k] for k in sorted(groups)]


def splitByDepth(nodes, graphOrder, depths):
    """A partition's nodes as dicts (node -> None) of pieces whose minijit graphs
    stay within MAX_DEPTH ops deep: a recurrent network unrolled over its steps
    is one chain thousands of ops long. A node's depth is its deepest operand's
    in the partition plus the depth of its own lowering (support.depths), and
    the pieces are bands of it: along any path of the partition depth never
    falls, and no path leaves it and comes back, so the pieces fuse without a
    cycle; a node's depth within its band is at most the band's width plus its
    own lowering's."""
    inside = dict.fromkeys(n for n in graphOrder if n in nodes)  # in graph order
    own = max((depths.get(n, 0) for n in inside), default=0)
    # Half the bound: minijit's own rewrites may deepen a chain (a concat becomes pads
    # and adds), and room for the reshapes and permutes of inputs and outputs.
    width = (MAX_DEPTH - own - 8) // 2
    depth = {}
    for n in inside:
        depth[n] = depths.get(n, 0) + max((depth[i] for i in n.all_input_nodes if i in inside), default=0)
    if width < 1 or max(depth.values(), default=0) <= width:
        return [inside]
    bands = collections.defaultdict(dict)
    for n in inside:
        bands[depth[n] // width][n] = None
    return [bands[k] for k in sorted(bands)]


def compileAten(gm, example_inputs, options, kind):
    """Partitions one ATen graph; returns it with its islands run by minijit."""
    device = resolveDevice(options, example_inputs)
    minOps = int(options.get("min_ops", 1))
    compileOptions = {k: v for k, v in options.items()
                      if k not in ("device", "min_ops", "graph_replay")}
    if options.get("graph_replay"):
        compileOptions["graph_replay"] = True
    support = MinijitSupport(device)
    if sum(n.op == "call_function" for n in gm.graph.nodes) > LARGE_GRAPH:
        partitions = partitionByBarriers(gm, support)
    else:
        partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
        partitions = [p.nodes for p in partitioner.propose_partitions()]
    pieces = [piece for p in partitions for piece in splitByDepth(p, gm.graph.nodes, support.depths)]
    chosen = [p for p in pieces if sum(isComputeNode(n) for n in p) >= max(minOps, 1)]
    report = Report(kind)
    inIsland = {n for p in chosen for n in p}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node not in inIsland:
            reason = support.reasons.get(node)
            if reason is None and not support.is_node_supported(None, node):
                reason = support.reasons.get(node)
            if reason is None:
                reason = "an island too small to be worth a kernel" if isComputeNode(node) else None
            if reason is not None and not reason.startswith("not a tensor op") \
                    and "sym_" not in qualifiedName(node.target):
                report.leftOut.append((qualifiedName(node.target), reason))
    if chosen:
        fuse_by_partitions(gm, chosen,
                           prefix="minijit_", always_return_tuple=True)
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and node.target.startswith("minijit_"):
            sub = getattr(gm, node.target)
            island = buildIsland(sub, node.target, device, compileOptions, report)
            if island is not None:
                setattr(gm, node.target, island)
                # Also an instance attribute, which the generated forward's
                # `self.minijit_0` finds at once; a submodule alone is found by
                # nn.Module.__getattr__, a microsecond a call.
                gm.__dict__[node.target] = island
    gm.recompile()
    global _reportTotal
    REPORTS.append(report)
    _reportTotal += 1
    return gm


def buildIsland(sub, name, device, compileOptions, report):
    from .translate import translateIsland
    translation = None
    try:
        translation = translateIsland(sub, name)
        island = Island(translation, device, compileOptions, name, fallback=sub)
    except Exception as e:  # any failure leaves the island to PyTorch
        ops = sorted({qualifiedName(n.target) for n in sub.graph.nodes if n.op == "call_function"})
        culprit = None
        if translation is not None:
            node = translation.nodeOfError(str(e))
            culprit = qualifiedName(node.target) if node is not None else None
        where = f"at {culprit}" if culprit else f"in its ops {', '.join(ops)}"
        message = f"minijit: a subgraph falls back to PyTorch: {type(e).__name__} {where}: {e}"
        if not isinstance(e, Unsupported):
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        report.failed.append((ops, message))
        return None
    report.islands.append(island)
    return island


def _compiler(options, kind):
    from functorch.compile import make_boxed_func

    def compiler(gm, example_inputs):
        gm = compileAten(gm, example_inputs, options, kind)
        # The generated forward itself, not the lazy module's first-call hook,
        # which would go through nn.Module.__call__ on every call.
        realRecompile = getattr(gm, "real_recompile", None)
        if realRecompile is not None:
            realRecompile()
        return make_boxed_func(gm.forward)
    return compiler


def _partitioner():
    try:
        import networkx  # noqa: F401
        from torch._functorch.partitioners import min_cut_rematerialization_partition
        return min_cut_rematerialization_partition
    except ImportError:
        from torch._functorch.partitioners import default_partition
        return default_partition


def backend(gm, example_inputs, **kwargs):
    """The compiler function of torch.compile(backend="minijit").

    options (torch.compile(..., options={...})): device="cpu" runs every island
    on minijit's CPU reference (the default when the inputs are on the CPU);
    min_ops=N keeps islands of N compute ops or more (default 1); graph_replay=True
    replays each island's launches as a CUDA graph (captured per set of buffer
    addresses; GPU only); other keys go to minijit.compile (fusion=..., and the
    other compile options)."""
    options = dict(kwargs.get("options") or {})
    # Traced with oneDNN off: on the CPU the LSTM's decomposition otherwise keeps
    # each layer whole as mkldnn_rnn_layer, which minijit lacks; off, it is the
    # products and pointwise ops the GPU gets (the CPU mode checks those).
    with oneDnnOff(), lstmMended(), sdpaAsOpsWhileTracing():
        return aot_autograd(
            fw_compiler=_compiler(options, "forward"),
            bw_compiler=_compiler(options, "backward"),
            inference_compiler=_compiler(options, "inference"),
            decompositions=decompositions(),
            partition_fn=_partitioner(),
        )(gm, example_inputs)
