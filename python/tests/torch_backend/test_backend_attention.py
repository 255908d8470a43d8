"""F.scaled_dot_product_attention through the backend (CPU mode): in f16 and
bf16, without a gradient or dropout, it is traced as plain ops
(compiler.sdpaAsOps), and minijit makes of them one attention kernel, its mask
and grouped heads included; in f32 or with a gradient it stays PyTorch's fused
kernel, and says why."""

import pytest
import torch
import torch.nn.functional as F

import minijit
from torch_helpers import compileCpu, reportCount, reportsSince


def fusedText(reports):
    """The --emit=fused text of each island of the reports."""
    return [minijit.compile(island.text, dims=island.lastDims or island.translation.hintDims or None)
            .emit("fused") for r in reports for island in r.islands]


def qkv(batch, heads, queries, keys, dim, kvHeads=None, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(7)
    return (torch.randn(batch, heads, queries, dim, generator=g, dtype=dtype),
            torch.randn(batch, kvHeads or heads, keys, dim, generator=g, dtype=dtype),
            torch.randn(batch, kvHeads or heads, keys, dim, generator=g, dtype=dtype))


CASES = [
    # name, the call, inputs, what --emit=fused names in the one attention kernel
    ("plain", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
     qkv(2, 3, 17, 17, 32), "scale, softmax over 17 keys"),
    ("causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     qkv(2, 3, 33, 33, 32), "causal mask"),
    ("causal_cross", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     qkv(1, 2, 9, 20, 32), "causal mask"),
    ("scale", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
     qkv(1, 2, 10, 20, 32), "scale"),
    ("grouped", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
     qkv(2, 8, 24, 24, 32, kvHeads=2), "K/V heads broadcast"),
    ("bool_mask", lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.arange(21).view(1, 21) < torch.arange(11).view(11, 1) + 5),
     qkv(2, 2, 11, 21, 32), "mask"),
    ("float_mask", lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.linspace(-2.0, 1.0, 11 * 21, dtype=torch.bfloat16).view(11, 21)),
     qkv(2, 2, 11, 21, 32), "bias"),
    ("f16", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     qkv(2, 3, 40, 40, 64, dtype=torch.float16), "causal mask"),
    ("three_dims", lambda q, k, v: F.scaled_dot_product_attention(q[0], k[0], v[0], is_causal=True),
     qkv(1, 4, 19, 19, 32), "causal mask"),
]


@pytest.mark.parametrize("name,fn,inputs,holds", CASES, ids=[c[0] for c in CASES])
def test_sdpa_without_gradient_is_one_attention_kernel(name, fn, inputs, holds):
    expected = fn(*inputs)
    start = reportCount()
    with torch.no_grad():
        got = compileCpu(fn)(*inputs)
    # minijit's probabilities are rounded to 16 bits for P V, PyTorch's CPU kernel's too
    torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-2)
    reports = reportsSince(start)
    assert not any(r.leftOut for r in reports), [r.leftOut for r in reports]
    texts = fusedText(reports)
    assert len(texts) == 1 and texts[0].startswith(texts[0].split(":")[0] + ": 1 kernel"), texts
    assert "attention %" in texts[0] and holds in texts[0], texts[0]


def test_sdpa_in_f32_stays_in_pytorch_and_says_why():
    q, k, v = qkv(2, 2, 20, 20, 32, dtype=torch.float32)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).sin()

    start = reportCount()
    with torch.no_grad():
        got = compileCpu(fn)(q, k, v)
    torch.testing.assert_close(got, fn(q, k, v), rtol=1e-5, atol=1e-5)
    left = {op: reason for r in reportsSince(start) for op, reason in r.leftOut}
    assert "in f32" in left.get("aten._scaled_dot_product_flash_attention_for_cpu", ""), left


def test_sdpa_with_gradient_stays_in_pytorch_and_trains_like_eager():
    q, k, v = (t.requires_grad_() for t in qkv(2, 2, 13, 13, 32, dtype=torch.float32))
    qe, ke, ve = (t.detach().clone().requires_grad_() for t in (q, k, v))

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).sin()

    start = reportCount()
    got = compileCpu(fn)(q, k, v)
    expected = fn(qe, ke, ve)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    got.square().sum().backward()
    expected.square().sum().backward()
    for a, b in ((q, qe), (k, ke), (v, ve)):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    left = {op for r in reportsSince(start) for op, _ in r.leftOut}
    # the CPU's fused kernel and its backward, both left whole
    assert {"aten._scaled_dot_product_flash_attention_for_cpu",
            "aten._scaled_dot_product_flash_attention_for_cpu_backward"} <= left, left


def test_sdpa_with_dropout_is_not_decomposed():
    from minijit.torch import compiler
    q, k, v = qkv(1, 1, 4, 4, 8, dtype=torch.float32)
    torch.manual_seed(0)
    with compiler.sdpaAsOpsWhileTracing():
        # outside a trace the Python kernel is not consulted: the op runs as it always does
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    torch.manual_seed(0)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    torch.testing.assert_close(a, b)
    assert torch.ops.aten.scaled_dot_product_attention.default.py_kernels.get(
        torch._C.DispatchKey.CompositeImplicitAutograd) is None
