"""minijit.evaluate: the CPU reference against numpy's own computation."""
import math

import numpy as np
import pytest

import minijit
from conftest import sample


def rng(seed=0):
    return np.random.default_rng(seed)


def test_softmax_matches_numpy():
    x = rng().standard_normal((32, 1024), dtype=np.float32)
    (y,) = minijit.evaluate(sample("softmax.mj"),
                            np.ascontiguousarray(np.resize(x, (4096, 1024))))
    x = np.resize(x, (4096, 1024)).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-8)
    assert y.dtype == np.float32 and y.shape == (4096, 1024)


def test_gelu_matches_numpy():
    text = open(sample("gelu.mj")).read()
    g = minijit.Graph.parse(text)
    (name, dtype, shape), = g.inputs
    x = rng(1).standard_normal(shape, dtype=np.float32)
    (y,) = minijit.evaluate(g, x)
    xd = x.astype(np.float64)
    if "erf" in text:
        want = 0.5 * xd * (1 + np.vectorize(math.erf)(xd / math.sqrt(2)))
    else:
        want = 0.5 * xd * (1 + np.tanh(0.7978845608 * (xd + 0.044715 * xd ** 3)))
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=1e-6)


def test_matmul_matches_numpy():
    text = """graph mm(%a: f32[3, 48, 40], %b: f32[40, 24]) {
  %c = matmul %a, %b
  return %c
}"""
    a = rng(2).standard_normal((3, 48, 40), dtype=np.float32)
    b = rng(3).standard_normal((40, 24), dtype=np.float32)
    (c,) = minijit.evaluate(text, a, b)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op,fn", [("sum", np.sum), ("max", np.max), ("min", np.min),
                                   ("mean", np.mean), ("prod", np.prod)])
def test_reductions_match_numpy(op, fn):
    text = "graph r(%%x: f32[6, 5, 4]) {\n  %%y = %s %%x axes=[0, 2]\n  return %%y\n}" % op
    x = rng(4).uniform(0.5, 1.5, (6, 5, 4)).astype(np.float32)
    (y,) = minijit.evaluate(text, x)
    np.testing.assert_allclose(y, fn(x.astype(np.float64), axis=(0, 2)), rtol=1e-5)


def test_argmax_and_integers():
    text = """graph a(%x: f32[7, 9], %i: i32[7]) {
  %m = argmax %x axis=1
  %s = add %m, %i
  return %s
}"""
    x = rng(5).standard_normal((7, 9), dtype=np.float32)
    i = np.arange(7, dtype=np.int32)
    (s,) = minijit.evaluate(text, x, i)
    assert s.dtype == np.int32
    np.testing.assert_array_equal(s, x.argmax(axis=1) + i)


def test_int64_passes_through_exactly():
    text = """graph a(%x: i64[4], %t: f32[5, 2]) {
  %y = mul %x, 3
  %e = take %t, %x axis=0
  return %y, %e
}"""
    x = np.array([2**62 // 3 + 1, 2**53 + 1, 0, 4], dtype=np.int64)
    t = rng(3).standard_normal((5, 2), dtype=np.float32)
    y, e = minijit.evaluate(text, x, t)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, x * 3)  # exact past 2^53
    np.testing.assert_array_equal(e, t[np.clip(x, 0, 4)])


def test_named_dims_follow_the_inputs():
    text = "graph rows(%x: f32[B, 3]) {\n  %s = sum %x axes=[1]\n  return %s\n}\n"
    for b in (1, 5, 17):
        x = rng(b).standard_normal((b, 3), dtype=np.float32)
        (s,) = minijit.evaluate(text, x)
        np.testing.assert_allclose(s, x.astype(np.float64).sum(axis=1), rtol=1e-6)
    (s,) = minijit.evaluate(text, np.ones((4, 3), np.float32), dims={"B": 4})
    np.testing.assert_array_equal(s, [3, 3, 3, 3])
    with pytest.raises(minijit.GraphError, match="B is given as 2 but the inputs make it 4"):
        minijit.evaluate(text, np.ones((4, 3), np.float32), dims={"B": 2})


def test_seeded_inputs_are_reproducible():
    a = minijit.evaluate(sample("softmax.mj"), seed=3)
    b = minijit.evaluate(sample("softmax.mj"), seed=3)
    (x,) = minijit.random_inputs(sample("softmax.mj"), seed=3)
    (c,) = minijit.evaluate(sample("softmax.mj"), x)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[0], c)


def test_builder_graph_evaluates():
    g = minijit.Graph("b")
    x = g.input("x", "f32", (4, 6))
    y = g.op("mul", g.op("exp", x), 2.0)
    g.output(g.op("reshape", y, shape=(6, 4)), "y")
    x_np = rng(6).standard_normal((4, 6), dtype=np.float32)
    (y_np,) = minijit.evaluate(g, x_np)
    np.testing.assert_allclose(y_np, (2 * np.exp(x_np.astype(np.float64))).reshape(6, 4),
                               rtol=1e-6)


def test_builder_takes_every_kind_of_attribute():
    g = minijit.Graph("attrs")
    x = g.input("x", "f32", (4, 6))
    i = g.input("i", "i32", (3,))
    g.output(g.op("argmax", x, axis=1), "am")
    g.output(g.op("cumsum", x, axis=1), "cs")
    g.output(g.op("slice", x, axis=1, start=1, end=6, step=2), "sl")
    g.output(g.op("pad", x, before=[1, 0], after=[0, 2], value=-1.0), "pd")
    g.output(g.op("permute", x, perm=[1, 0]), "pm")
    g.output(g.op("take", x, i, axis=0), "tk")
    g.output(g.op("cast", x, dtype="i32"), "ct")
    g.output(g.op("iota", shape=(2, 3), axis=1, dtype="i32"), "io")
    g.output(g.op("cumsum", x, axis=1, reverse=True), "rcs")
    x_np = rng(7).standard_normal((4, 6), dtype=np.float32) * 4
    i_np = np.array([3, 0, 2], np.int32)
    am, cs, sl, pd, pm, tk, ct, io, rcs = minijit.evaluate(g, x_np, i_np)
    np.testing.assert_array_equal(am, x_np.argmax(axis=1))
    np.testing.assert_allclose(cs, np.cumsum(x_np.astype(np.float64), axis=1), rtol=1e-6)
    np.testing.assert_array_equal(sl, x_np[:, 1:6:2])
    np.testing.assert_array_equal(pd, np.pad(x_np, ((1, 0), (0, 2)), constant_values=-1))
    np.testing.assert_array_equal(pm, x_np.T)
    np.testing.assert_array_equal(tk, x_np[i_np])
    np.testing.assert_array_equal(ct, np.trunc(x_np).astype(np.int32))
    np.testing.assert_array_equal(io, [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_allclose(rcs, np.cumsum(x_np.astype(np.float64)[:, ::-1], axis=1)[:, ::-1], rtol=1e-6)


def test_f16_and_bf16():
    text = """graph h(%x: f16[8], %y: bf16[8]) {
  %a = add %x, %x
  %b = mul %y, %y
  return %a, %b
}"""
    x = np.linspace(-2, 2, 8).astype(np.float16)
    y = np.linspace(-2, 2, 8).astype(np.float32)  # bf16 arguments take float32 values
    a, b = minijit.evaluate(text, x, y)
    assert a.dtype == np.float16 and b.dtype == np.float32
    np.testing.assert_array_equal(a, x + x)
    np.testing.assert_allclose(b, y * y, rtol=1e-2)
