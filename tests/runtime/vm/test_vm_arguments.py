"""Argument checks at function entry: count, kind, dtype, rank, shape, symbolic dimensions."""

from __future__ import annotations

import numpy as np
import pytest
from vm_programs import IN, mlp_inputs

from minitvm.runtime.vm import ExecBuilder, ParamInfo, VirtualMachine


@pytest.fixture
def vm(mlp_exe):
    return VirtualMachine(mlp_exe)


def test_count(vm):
    x, w1, _ = mlp_inputs(1)
    with pytest.raises(ValueError, match=r"^forward: expects 3 arguments \(x, w1, w2\), got 2$"):
        vm["forward"](x, w1)


def test_static_shape(vm):
    x, w1, w2 = mlp_inputs(2)
    with pytest.raises(ValueError, match=r"^forward: argument 'w1' expects shape \(784, 128\), got \(784, 127\)$"):
        vm["forward"](x, w1[:, :127].copy(), w2)


def test_rank(vm):
    x, w1, w2 = mlp_inputs(2)
    with pytest.raises(ValueError, match=r"argument 'x' expects shape \(n, 784\) \(2-D\), got \(1568,\) \(1-D\)"):
        vm["forward"](x.reshape(-1), w1, w2)


def test_dtype(vm):
    x, w1, w2 = mlp_inputs(2)
    with pytest.raises(TypeError, match=r"^forward: argument 'w2' expects dtype float32, got float64$"):
        vm["forward"](x, w1, w2.astype("float64"))


def test_kind(vm):
    _, w1, w2 = mlp_inputs(2)
    with pytest.raises(TypeError, match=r"argument 'x' expects an array .*got list"):
        vm["forward"]([[1.0] * IN], w1, w2)


def test_symbolic_dimension_must_agree():
    eb = ExecBuilder()
    info = [ParamInfo.tensor(("n", 4), "float32"), ParamInfo.tensor(("n", "m"), "float32"),
            ParamInfo.tuple_of(ParamInfo.tensor(("m",), "float32"), ParamInfo("any"))]
    with eb.function("pair", ["x", "y", "t"], info):
        eb.emit_ret(0)
    vm = VirtualMachine(eb.get())
    a, b, c = np.ones((7, 4), "float32"), np.ones((7, 3), "float32"), np.ones(3, "float32")
    assert vm["pair"](a, b, (c, "anything")).shape == (7, 4)
    with pytest.raises(ValueError, match=r"^pair: argument 'y' expects shape \(n, m\), got \(6, 3\): "
                                         r"dimension 0 is n = 6, but n = 7 from argument 'x'$"):
        vm["pair"](a, np.ones((6, 3), "float32"), (c, 0))
    with pytest.raises(ValueError, match=r"argument 't\[0\]' expects shape \(m,\), got \(4,\): "
                                         r"dimension 0 is m = 4, but m = 3 from argument 'y'"):
        vm["pair"](a, b, (np.ones(4, "float32"), 0))
    with pytest.raises(ValueError, match=r"argument 't' expects a tuple of 2 fields, got 1"):
        vm["pair"](a, b, (c,))
    with pytest.raises(TypeError, match=r"argument 't' expects a tuple, got int"):
        vm["pair"](a, b, 5)


def test_unchecked_parameters_still_convert():
    eb = ExecBuilder()
    with eb.function("ident", ["x"]):  # no ParamInfo: anything goes, arrays become NDArrays
        eb.emit_ret(0)
    vm = VirtualMachine(eb.get())
    out = vm["ident"](np.arange(3))
    assert out.shape == (3,) and type(out).__name__ == "NDArray"
    assert vm["ident"]([np.zeros(2), 3]) [1] == 3
    with pytest.raises(TypeError, match="expects a numeric array, got dtype object"):
        vm["ident"](np.array([None]))


def test_param_info_validation():
    with pytest.raises(ValueError, match="kind must be one of"):
        ParamInfo("matrix")
    with pytest.raises(ValueError, match=r"ndim=3 but shape \(1, 2\) has 2 dimensions"):
        ParamInfo("tensor", 3, "float32", (1, 2))
    with pytest.raises(TypeError, match="a dimension is an int, a name or None"):
        ParamInfo.tensor((1.5,))
    assert str(ParamInfo.tensor(("n", None, 3), "int8")) == "Tensor((n, ?, 3), int8)"
    assert ParamInfo.tensor(("n", 2)).ndim == 2
