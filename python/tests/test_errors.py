"""Errors arrive as minijit's exceptions carrying minijit's messages."""
import numpy as np
import pytest

import minijit


def test_parse_error_has_line_and_column():
    with pytest.raises(minijit.ParseError) as e:
        minijit.compile("graph f(%x: f32[4]) {\n  %y = exq %x\n  return %y\n}\n")
    assert e.value.line == 2 and e.value.column > 0
    assert "<python>:2:" in str(e.value)
    assert isinstance(e.value, minijit.Error)


def test_missing_file():
    with pytest.raises(minijit.ParseError, match="nothere.mj"):
        minijit.compile("nothere.mj")


def test_unknown_op_in_the_builder_suggests_one():
    g = minijit.Graph()
    x = g.input("x", "f32", (4,))
    with pytest.raises(minijit.InvalidArgumentError, match="did you mean 'exp'"):
        g.op("exq", x)


def test_shapes_that_do_not_broadcast():
    g = minijit.Graph()
    a = g.input("a", "f32", (4, 3))
    b = g.input("b", "f32", (2, 3))
    with pytest.raises(minijit.GraphError, match=r"\[4, 3\] and \[2, 3\] do not broadcast"):
        g.op("add", a, b)


def test_wrong_input_shape_dtype_and_count():
    text = "graph f(%x: f32[4]) {\n  %y = exp %x\n  return %y\n}\n"
    with pytest.raises(minijit.GraphError, match=r"\[3\]"):
        minijit.evaluate(text, np.zeros(3, np.float32))
    with pytest.raises(minijit.GraphError, match="float64 array for an argument of dtype f32"):
        minijit.evaluate(text, np.zeros(4))
    with pytest.raises(minijit.GraphError, match="has 1 inputs, 2 arrays were given"):
        minijit.evaluate(text, np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_bad_dtype_name():
    with pytest.raises(minijit.GraphError, match="dtype f64 is not one of minijit's"):
        minijit.Graph().input("x", "f64", (4,))


def test_no_gpu_is_a_cuda_error():
    if minijit.device_count() > 0:
        pytest.skip("a GPU is present: the no-driver error cannot be seen")
    assert minijit.devices() == []
    with pytest.raises(minijit.CudaError, match="no CUDA driver found"):
        minijit.Device.get(0)
    c = minijit.compile("graph f(%x: f32[4]) {\n  %y = exp %x\n  return %y\n}\n")
    with pytest.raises(minijit.CudaError, match="no GPU"):
        c.run(np.zeros(4, np.float32))
    with pytest.raises(minijit.CudaError, match="no CUDA driver found"):
        minijit.compare(c.graph)
