"""Each translated ATen op against eager, forward, on the CPU reference."""

import pytest
import torch
import torch.nn.functional as F

from torch_helpers import compileCpu, islandOps, reportCount, reportsSince

r = torch.randn


def ri(*shape, high=10):
    return torch.randint(0, high, shape)


# (name, function, inputs, the ATen op that must reach minijit)
CASES = [
    ("add", lambda a, b: a + b, (r(4, 3), r(3)), "aten.add.Tensor"),
    ("add_alpha", lambda a, b: torch.add(a, b, alpha=2.5), (r(4, 3), r(4, 3)), "aten.add.Tensor"),
    ("sub_scalar", lambda a: a - 1.5, (r(5),), "aten.sub.Tensor"),
    ("rsub", lambda a: 2.0 - a, (r(5, 2),), "aten.sub.Tensor"),
    ("rsub_alpha", lambda a, b: torch.rsub(a, b, alpha=3), (r(5, 2), r(5, 2)), "aten.sub.Tensor"),
    ("mul_broadcast", lambda a, b: a * b, (r(2, 1, 3), r(4, 1)), "aten.mul.Tensor"),
    ("div", lambda a, b: a / b, (r(4, 3), r(4, 3).abs() + 0.5), "aten.div.Tensor"),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"), (r(4, 3) * 5, r(4, 3).abs() + 0.5),
     "aten.div.Tensor_mode"),
    ("pow_scalar", lambda a: a.abs() ** 1.7, (r(6),), "aten.pow.Tensor_Scalar"),
    ("pow_tensor", lambda a, b: a.abs() ** b, (r(6), r(6)), "aten.pow.Tensor_Tensor"),
    ("unary_chain", lambda a: torch.exp(a).log() + a.sin() * a.cos() + a.tanh() - a.sigmoid() + a.neg().abs(),
     (r(3, 7),), "aten.exp.default"),
    ("sqrt_rsqrt", lambda a: a.abs().sqrt() + (a.abs() + 1).rsqrt() + (a.abs() + 1).reciprocal(), (r(9),),
     "aten.sqrt.default"),
    ("erf_floor_ceil", lambda a: torch.erf(a) + torch.floor(a) - torch.ceil(a), (r(8) * 3,), "aten.erf.default"),
    ("relu", lambda a: torch.relu(a), (r(4, 4),), "aten.relu.default"),
    ("silu", F.silu, (r(4, 4),), "aten.silu.default"),
    ("gelu_erf", F.gelu, (r(4, 8),), "aten.gelu.default"),
    ("gelu_tanh", lambda a: F.gelu(a, approximate="tanh"), (r(4, 8),), "aten.gelu.default"),
    ("leaky_relu", lambda a: F.leaky_relu(a, 0.2), (r(16),), "aten.leaky_relu.default"),
    ("clamp", lambda a: a.clamp(-0.5, 0.25), (r(16),), "aten.clamp.default"),
    ("hardtanh", F.hardtanh, (r(16) * 2,), "aten.hardtanh.default"),
    ("compare_where", lambda a, b: torch.where(a > b, a, b * 2), (r(4, 3), r(3)), "aten.where.self"),
    ("where_scalar", lambda a: torch.where(a >= 0, a, 0.0), (r(4, 3),), "aten.where.self"),
    ("eq_ne_and_or", lambda a, b: ((a == b) | (a != 0)) & (a < 1) & ~(b <= -1), (ri(8, high=3), ri(8, high=3)),
     "aten.bitwise_and.Tensor"),
    ("maximum_minimum", lambda a, b: torch.maximum(a, b) - torch.minimum(a, b), (r(4, 3), r(4, 3)),
     "aten.maximum.default"),
    ("int_to_float", lambda a: a * 0.5, (ri(4, 3),), "aten.mul.Tensor"),
    ("to_dtype", lambda a: (a.to(torch.float16) * 2).to(torch.float32), (r(5, 5),),
     "aten._to_copy.default"),
    ("sum_dims", lambda a: a.sum(dim=(0, 2), keepdim=True), (r(3, 4, 5),), "aten.sum.dim_IntList"),
    ("sum_all", lambda a: a.sum(), (r(3, 4),), "aten.sum.dim_IntList"),
    ("mean", lambda a: a.mean(-1), (r(3, 4),), "aten.mean.dim"),
    ("amax_amin", lambda a: a.amax(1) - a.amin(0).sum(), (r(3, 4),), "aten.amax.default"),
    ("prod", lambda a: a.prod(1), (r(3, 4),), "aten.prod.dim_int"),
    ("var", lambda a: a.var(1, keepdim=True) + a.var(0, unbiased=False), (r(6, 6),), "aten.var.correction"),
    ("argmax", lambda a: a.argmax(1), (r(5, 7),), "aten.argmax.default"),
    ("int64_arith", lambda a, b: (a * 3000000019 + b).sum(1) - a.amax(0).sum(), (ri(5, 7), ri(5, 7)),
     "aten.mul.Tensor"),
    ("int64_argmax_plus", lambda a, b: a.argmax(1) + b, (r(5, 7), ri(5)), "aten.argmax.default"),
    ("argmin_flat", lambda a: a.argmin(), (r(5, 7),), "aten.argmin.default"),
    ("max_dim", lambda a: a.max(1).values * 2, (r(5, 7),), "aten.max.dim"),
    ("cumsum_cumprod", lambda a: a.cumsum(1) + a.cumprod(0), (r(4, 5),), "aten.cumsum.default"),
    ("softmax", lambda a: torch.softmax(a, -1), (r(4, 10),), "aten._softmax.default"),
    ("log_softmax", lambda a: torch.log_softmax(a, 0), (r(4, 10),), "aten._log_softmax.default"),
    ("layer_norm", lambda a, w, b: F.layer_norm(a, (8,), w, b), (r(3, 4, 8), r(8), r(8)),
     "aten.native_layer_norm.default"),
    ("layer_norm_2d", lambda a: F.layer_norm(a, (4, 8)), (r(3, 4, 8),), "aten.native_layer_norm.default"),
    ("mm", lambda a, b: a @ b, (r(5, 7), r(7, 3)), "aten.mm.default"),
    ("bmm", lambda a, b: torch.bmm(a, b), (r(2, 5, 7), r(2, 7, 3)), "aten.bmm.default"),
    ("linear", lambda x, w, b: F.linear(x, w, b), (r(5, 7), r(3, 7), r(3)), "aten.addmm.default"),
    ("matmul_4d", lambda a, b: a @ b.transpose(-1, -2), (r(2, 3, 5, 4), r(2, 3, 6, 4)), "aten.bmm.default"),
    ("views", lambda a: a.view(6, 4).t().reshape(2, 12).unsqueeze(0).squeeze(0).permute(1, 0) * 2, (r(4, 6),),
     "aten.permute.default"),
    ("expand", lambda a: a.expand(3, 4, 5) + 1, (r(4, 1),), "aten.expand.default"),
    ("slice_select", lambda a: a[1:3, ::2] + a[0, 1:6:2], (r(4, 6),), "aten.slice.Tensor"),
    ("split", lambda a: torch.cat(list(torch.split(a, [2, 4], 1))[::-1], 1) * 3, (r(3, 6),),
     "aten.cat.default"),
    ("cat", lambda a, b: torch.cat([a, b, a], 0) + 1, (r(2, 3), r(4, 3)), "aten.cat.default"),
    ("pad", lambda a: F.pad(a, (1, 2, 0, 1), value=-1.5) * 2, (r(3, 4),), "aten.constant_pad_nd.default"),
    ("pad_negative", lambda a: F.pad(a, (-1, 2)) * 2, (r(3, 4),), "aten.constant_pad_nd.default"),
    ("embedding", lambda w, i: F.embedding(i, w) * 2, (r(10, 4), ri(3, 5)), "aten.embedding.default"),
    ("gather", lambda a, i: torch.gather(a, 1, i) + 1, (r(4, 6), ri(4, 2, high=6)), "aten.gather.default"),
    ("index_select", lambda a, i: a.index_select(0, i) * 2, (r(6, 3), ri(4, high=6)),
     "aten.index_select.default"),
    ("full_arange", lambda a: a + torch.full((4,), 2.5) * torch.arange(4), (r(3, 4),), "aten.arange.start_step"),
    ("causal_mask", lambda s: s.masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf")),
     (r(2, 5, 5),), "aten.where.self"),
    ("bf16", lambda a, b: (a * b + 1).sum(-1), (r(4, 8).bfloat16(), r(4, 8).bfloat16()), "aten.mul.Tensor"),
    ("f16", lambda a: torch.softmax(a, -1), (r(4, 8).half(),), "aten._softmax.default"),
    ("any_all", lambda a: (a > 0).any(1) & (a > -3).all(1), (r(4, 8),), "aten.any.dim"),
    ("scalar_tensor", lambda a: a.sum() / a.numel() + a, (r(3, 3),), "aten.add.Tensor"),
    # The KernelBench trial's gaps: odd sizes throughout.
    ("elu", lambda a: F.elu(a, 0.7), (r(5, 7) * 2,), "aten.elu.default"),
    ("selu", F.selu, (r(5, 7) * 2,), "aten.elu.default"),
    ("celu", lambda a: F.celu(a, 1.3), (r(5, 7) * 2,), "aten.expm1.default"),
    ("elu_f16", F.elu, (r(5, 7).half(),), "aten.elu.default"),
    ("log1p_expm1", lambda a: torch.log1p(a.abs()) + torch.expm1(a), (r(3, 11),), "aten.log1p.default"),
    ("softplus_mish", lambda a: F.softplus(a) + F.mish(a), (r(3, 11) * 4,), "aten.log1p.default"),
    ("isnan_isinf", lambda a: torch.isnan(a.log()) | torch.isinf(1 / a.clamp(min=0)), (r(5, 9),),
     "aten.isnan.default"),
    ("isnan_int", lambda a: torch.isnan(a) | torch.isinf(a), (ri(3, 5),), "aten.isnan.default"),
    ("flip", lambda a: a.flip(1, -1) * 2, (r(3, 5, 7),), "aten.flip.default"),
    ("cumsum_reverse", lambda a: a.flip(1).cumsum(1).flip(1), (r(3, 13),), "aten.flip.default"),
    ("full_like", lambda a: torch.full_like(a, 2.5) * a + torch.zeros_like(a) + torch.ones_like(a),
     (r(3, 7),), "aten.full_like.default"),
    ("new_full", lambda a: a + a.new_full((7,), 3.0) - a.new_zeros(7) + a.new_ones(3, 1), (r(3, 7),),
     "aten.full.default"),
    ("int_full_like", lambda a: a + torch.full_like(a, 3000000019), (ri(3, 5),), "aten.full_like.default"),
    ("cumsum_exclusive", lambda a: torch.cat((torch.zeros_like(a.select(1, 0).unsqueeze(1)), a), 1)[:, :-1]
     .cumsum(1), (r(3, 9),), "aten.full_like.default"),
    ("group_norm", lambda a, w, b: F.group_norm(a, 3, w, b), (r(3, 9, 5, 7), r(9), r(9)),
     "aten.native_group_norm.default"),
    ("group_norm_plain_2d", lambda a: F.group_norm(a, 5), (r(7, 15),), "aten.native_group_norm.default"),
    ("instance_norm", lambda a: F.instance_norm(a), (r(3, 5, 7, 9),), "aten._native_batch_norm_legit.no_stats"),
    ("instance_norm_affine", lambda a, w, b: F.instance_norm(a, weight=w, bias=b, eps=1e-3),
     (r(3, 5, 11), r(5), r(5)), "aten._native_batch_norm_legit.no_stats"),
    ("vector_norms", lambda a: torch.norm(a, p="fro") + a.norm(p=1, dim=1).sum() + a.norm(dim=(1, 2), keepdim=True)
     + torch.linalg.vector_norm(a, float("inf"), dim=0).sum() + torch.linalg.vector_norm(a, 3.0, dim=-1).sum(),
     (r(3, 5, 7),), "aten.linalg_vector_norm.default"),
    ("l2_normalize", lambda a: a / torch.norm(a, p=2, dim=1, keepdim=True), (r(5, 13),),
     "aten.linalg_vector_norm.default"),
    ("max_pool2d", lambda a: F.max_pool2d(a, 2), (r(2, 3, 7, 9),), "aten.max_pool2d_with_indices.default"),
    ("max_pool2d_overlap", lambda a: F.max_pool2d(a, 4, 1, 1), (r(2, 3, 7, 9),),
     "aten.max_pool2d_with_indices.default"),
    ("max_pool2d_indices", lambda a: F.max_pool2d(a, 3, 2, 1, return_indices=True), (r(2, 3, 7, 9),),
     "aten.max_pool2d_with_indices.default"),
    ("max_pool2d_dilated_ceil", lambda a: F.max_pool2d(a, (3, 2), (2, 1), 1, dilation=(2, 3), ceil_mode=True,
                                                       return_indices=True), (r(2, 3, 11, 9),),
     "aten.max_pool2d_with_indices.default"),
    ("max_pool1d", lambda a: F.max_pool1d(a, 5, 2, 2), (r(3, 4, 13),), "aten.max_pool2d_with_indices.default"),
    ("max_pool3d", lambda a: F.max_pool3d(a, 3, 2, 1, dilation=2, return_indices=True), (r(2, 3, 7, 5, 9),),
     "aten.max_pool3d_with_indices.default"),
    ("avg_pool2d", lambda a: F.avg_pool2d(a, 3, 2, 1), (r(2, 3, 7, 9),), "aten.avg_pool2d.default"),
    ("avg_pool2d_exclude_ceil", lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     (r(2, 3, 8, 9),), "aten.avg_pool2d.default"),
    ("avg_pool2d_ceil", lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True), (r(2, 3, 8, 9),),
     "aten.avg_pool2d.default"),
    ("avg_pool2d_divisor", lambda a: F.avg_pool2d(a, (2, 3), divisor_override=5), (r(2, 3, 7, 9),),
     "aten.avg_pool2d.default"),
    ("avg_pool1d", lambda a: F.avg_pool1d(a, 8, 1, 4), (r(3, 4, 21),), "aten.avg_pool2d.default"),
    ("avg_pool3d", lambda a: F.avg_pool3d(a, 3, 2, 1), (r(2, 3, 7, 5, 9),), "aten.avg_pool3d.default"),
    ("avg_pool_bf16", lambda a: F.avg_pool2d(a, 3, 1, 1), (r(2, 3, 7, 9).bfloat16(),), "aten.avg_pool2d.default"),
    ("adaptive_avg_pool2d", lambda a: F.adaptive_avg_pool2d(a, (7, 3)), (r(2, 3, 7, 9),),
     "aten._adaptive_avg_pool2d.default"),
    ("adaptive_max_pool2d", lambda a: F.adaptive_max_pool2d(a, (7, 3), return_indices=True), (r(2, 3, 7, 9),),
     "aten.adaptive_max_pool2d.default"),
    ("repeat", lambda a: a.repeat(2, 1, 3) + 1, (r(3, 5),), "aten.repeat.default"),
    # Level 3's gaps: a ViT's patches (windows that do not overlap), overlapping
    # windows, and windows whose stride reaches past the axis.
    ("unfold_patches", lambda a: a.unfold(2, 4, 4).unfold(3, 4, 4) * 2, (r(2, 3, 8, 12),), "aten.unfold.default"),
    ("unfold_overlap", lambda a: a.unfold(-1, 5, 2) + 1, (r(2, 3, 13),), "aten.unfold.default"),
    ("unfold_gaps", lambda a: a.unfold(1, 3, 5) + 1, (r(2, 14, 3),), "aten.unfold.default"),
]


def tolerance(out):
    if out.dtype == torch.bfloat16:
        return dict(rtol=2e-2, atol=2e-2)
    if out.dtype == torch.float16:
        return dict(rtol=2e-3, atol=2e-3)
    return dict(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,fn,inputs,op", CASES, ids=[c[0] for c in CASES])
def test_op_matches_eager(name, fn, inputs, op):
    expected = fn(*inputs)
    start = reportCount()
    got = compileCpu(fn)(*inputs)
    reports = reportsSince(start)
    assert islandOps(reports) >= {op} or op in islandOps(reports), \
        f"{op} did not reach minijit; islands: {sorted(islandOps(reports))}, left: {[x for r in reports for x in r.leftOut]}"
    assert not any(r.failed for r in reports), [r.failed for r in reports]
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and g.shape == e.shape and g.stride() == e.stride()
        if e.is_floating_point():
            torch.testing.assert_close(g, e, **tolerance(e))
        else:
            assert torch.equal(g, e)


@pytest.mark.parametrize("name,fn,inputs,op", CASES, ids=[c[0] for c in CASES])
def test_op_islands_compile_for_the_gpu(name, fn, inputs, op):
    """Each case's island through minijit.compile down to PTX (NVRTC, no GPU
    needed): what the GPU path would launch compiles."""
    import minijit
    start = reportCount()
    compileCpu(fn)(*inputs)
    islands = [i for r in reportsSince(start) for i in r.islands]
    assert islands
    for island in islands:
        ptx = minijit.compile(island.text, dims=island.translation.hintDims or None).emit("ptx")
        assert ".entry" in ptx


def test_a_transposed_input_is_read_in_place():
    def fn(a, b):
        return torch.tanh(a) @ b

    a, b = r(6, 4).t(), r(6, 3)  # a: [4, 6] with strides (1, 4)
    start = reportCount()
    got = compileCpu(fn)(a, b)
    torch.testing.assert_close(got, fn(a, b), rtol=1e-5, atol=1e-5)
    text = reportsSince(start)[0].islands[0].text
    assert text.startswith("graph minijit_0(%a0: f32[6, 4], %a1: f32[6, 3])"), text
    assert "permute %a0 perm=[1, 0]" in text
