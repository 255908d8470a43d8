"""minijit.compile: every stage's text, kernels, options and named dimensions."""
import pytest

import minijit
from conftest import sample

SOFTMAX = """graph softmax(%x: f32[64, 256]) {
  %m = max %x axes=[1] keepdim=true
  %d = sub %x, %m
  %e = exp %d
  %s = sum %e axes=[1] keepdim=true
  %y = div %e, %s
  return %y
}
"""


def test_every_stage_has_its_text():
    c = minijit.compile(SOFTMAX)
    assert "graph softmax(%x: f32[64, 256])" in c.emit("graph")
    assert "kernel k0" in c.emit("fused")
    assert 'extern "C" __global__' in c.emit("cuda")
    assert ".entry" in c.emit("ptx")
    resources = c.emit("resources")
    assert "regs" in resources and "spill" in resources
    assert "digraph" in c.emit("dot")
    assert "load x[row * 256 + k]" in c.emit("lowered")


def test_softmax_is_one_kernel_with_fusion_and_more_without():
    assert minijit.compile(SOFTMAX).num_kernels == 1
    assert minijit.compile(SOFTMAX, fusion=False).num_kernels > 1


def test_kernel_summaries():
    (k,) = minijit.compile(SOFTMAX).kernels
    assert k["name"].startswith("softmax")
    assert k["bytes_read"] == 64 * 256 * 4 and k["bytes_written"] == 64 * 256 * 4
    assert "row" in k["schedule"]


def test_compile_from_a_path_and_by_name():
    c = minijit.compile(sample("softmax.mj"))
    assert c.graph.name == "softmax"
    assert c.num_kernels == 1
    g = minijit.Graph.load(sample("mlp.mj"), name="mlp_layer")
    assert [n for n, _, _ in g.inputs] == ["x", "w"]


SQUARE = """graph mm(%a: f32[2048, 2048], %b: f32[2048, 2048]) {
  %c = matmul %a, %b
  return %c
}
"""


def test_large_f32_products_are_three_tf32_products_unless_exact():
    def fused(**options):
        return minijit.compile(SQUARE, **options).emit("fused")
    assert "three TF32 products" in fused()
    assert "added to the sum by the CUDA cores" in fused()
    assert "three TF32 products" in fused(tf32x3=True)
    for exact in ({"exact_f32": True}, {"tf32x3": False}):
        text = fused(**exact)
        assert "three TF32 products" not in text and "matmul on CUDA cores" in text
    with pytest.raises(ValueError, match="contradict"):
        minijit.compile(SQUARE, tf32x3=True, exact_f32=True)


def test_arch_option_reaches_nvrtc():
    ptx = minijit.compile(SOFTMAX, arch="sm_80").emit("ptx")
    assert ".target sm_80" in ptx


def test_arch_that_is_not_a_target_is_refused():
    with pytest.raises(minijit.CompileError, match="'sm80' is not a GPU target"):
        minijit.compile(SOFTMAX, arch="sm80")


def test_unknown_stage_is_a_value_error():
    with pytest.raises(ValueError, match="unknown stage 'cubin'"):
        minijit.compile(SOFTMAX).emit("cubin")


def test_named_dims_need_sizes_to_show_stages():
    text = "graph rows(%x: f32[B, 128]) {\n  %s = sum %x axes=[1]\n  return %s\n}\n"
    c = minijit.compile(text)
    with pytest.raises(minijit.GraphError, match="named dimensions \\(B\\)"):
        c.emit("cuda")
    assert minijit.compile(text, dims={"B": 32}).num_kernels == 1


def test_builder_graph_compiles_and_prints():
    g = minijit.Graph("built")
    x = g.input("x", "f32", (16, 32))
    w = g.input("w", "f32", (32, 8))
    h = g.op("matmul", x, w)
    y = g.op("relu", g.op("add", h, 1.0))
    g.output(g.op("sum", y, axes=[1], keepdim=True), "y")
    text = str(g)
    assert "graph built(%x: f32[16, 32], %w: f32[32, 8])" in text
    assert "matmul %x, %w" in text
    assert g.outputs == [("y", "f32", (16, 1))]
    assert minijit.compile(g).num_kernels >= 1
