"""Empty tensors (issue 42) through minijit.evaluate: numpy arrays with a
dimension of 0, named sizes bound to 0 by them, the identities of reductions
over an empty axis (as numpy and PyTorch give them), and the errors."""
import warnings

import numpy as np
import pytest

import minijit


def test_an_empty_batch_gives_empty_outputs_and_zero_sums():
    text = """graph mlp(%x: f32[B, 17], %w: f32[17, 5]) {
  %h = matmul %x, %w
  %y = tanh %h
  %col = sum %h axes=[0]
  return %y, %col
}"""
    x = np.zeros((0, 17), dtype=np.float32)
    w = np.ones((17, 5), dtype=np.float32)
    y, col = minijit.evaluate(text, x, w)
    assert y.shape == (0, 5) and y.dtype == np.float32
    np.testing.assert_array_equal(col, np.zeros(5, dtype=np.float32))
    # dims= may bind the name to 0 too, and the arrays must agree with it.
    y, _ = minijit.evaluate(text, x, w, dims={"B": 0})
    assert y.shape == (0, 5)


@pytest.mark.parametrize("op,fn", [("sum", np.sum), ("prod", np.prod), ("mean", np.mean)])
def test_reductions_over_an_empty_axis_match_numpy(op, fn):
    text = "graph r(%%x: f32[0, 13]) {\n  %%y = %s %%x axes=[0]\n  return %%y\n}" % op
    x = np.zeros((0, 13), dtype=np.float32)
    (y,) = minijit.evaluate(text, x)
    with warnings.catch_warnings():  # numpy warns of a mean of nothing
        warnings.simplefilter("ignore")
        want = fn(x, axis=0)
    assert y.shape == (13,)
    np.testing.assert_array_equal(y, want)  # NaN where numpy's mean is NaN


def test_matmul_with_k_zero_is_zeros_and_odd_sizes_stay():
    text = """graph mm(%a: f32[13, 0], %b: f32[0, 17], %x: f32[13, 17]) {
  %k = matmul %a, %b
  %y = add %k, %x
  return %k, %y
}"""
    x = np.arange(13 * 17, dtype=np.float32).reshape(13, 17)
    k, y = minijit.evaluate(text, np.zeros((13, 0), np.float32), np.zeros((0, 17), np.float32), x)
    np.testing.assert_array_equal(k, np.zeros((13, 17), np.float32))
    np.testing.assert_array_equal(y, x)


def test_empty_slices_concat_and_take():
    text = """graph d(%x: f32[5, 7], %i: i32[0]) {
  %s = slice %x axis=0 start=2 end=2
  %c = concat %s, %x axis=0
  %t = take %x, %i axis=1
  return %s, %c, %t
}"""
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    s, c, t = minijit.evaluate(text, x, np.zeros((0,), np.int32))
    assert s.shape == (0, 7)
    np.testing.assert_array_equal(c, x)
    assert t.shape == (5, 0)


def test_every_dtype_of_no_element():
    for dtype, np_dtype in [("f32", np.float32), ("f16", np.float16), ("i32", np.int32),
                            ("i64", np.int64), ("bool", np.bool_), ("bf16", np.float32)]:
        text = "graph e(%%x: %s[0, 3]) {\n  %%y = cast %%x to=%s\n  return %%y, %%x\n}" \
            % (dtype, dtype)
        y, x = minijit.evaluate(text, np.zeros((0, 3), np_dtype))
        assert y.shape == (0, 3) and x.shape == (0, 3), dtype
        assert y.dtype == np_dtype, dtype


def test_max_over_an_empty_axis_is_a_graph_error():
    with pytest.raises(minijit.Error, match="max: axis 0 of %x .* has size 0"):
        minijit.Graph.parse("graph m(%x: f32[0, 4]) {\n  %y = max %x axes=[0]\n  return %y\n}")
    text = "graph m(%x: f32[B, 4]) {\n  %y = max %x axes=[0]\n  return %y\n}"
    with pytest.raises(minijit.GraphError, match="%y with B=0: max: axis 0"):
        minijit.evaluate(text, np.zeros((0, 4), np.float32))
    (y,) = minijit.evaluate(text, np.ones((2, 4), np.float32))
    np.testing.assert_array_equal(y, np.ones(4, np.float32))


def test_random_inputs_of_an_empty_shape():
    g = minijit.Graph.parse("graph e(%x: f32[B, 3]) {\n  %y = exp %x\n  return %y\n}")
    (x,) = minijit.random_inputs(g, 1, dims={"B": 0})
    assert x.shape == (0, 3)
    (y,) = minijit.evaluate(g, seed=1, dims={"B": 0})
    assert y.shape == (0, 3)
