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


def _weights_vm():
    """``pick(x, ws) -> ws[1]``: a tensor and a tuple of two (a model's input and its weights)."""
    eb = ExecBuilder()
    info = [ParamInfo.tensor(("n", 3), "float32"),
            ParamInfo.tuple_of(ParamInfo.tensor((3, "m"), "float32"), ParamInfo.tensor(("m",), "float32"))]
    with eb.function("pick", ["x", "ws"], info):
        eb.emit_ret(eb.emit_call("vm.builtin.tuple_getitem", [eb.r(1), eb.imm(1)]))
    return VirtualMachine(eb.get())


def test_repeated_calls_with_the_same_weights_are_checked_by_what_changed():
    """A call shaped as the last (the same list of weights, a new input of the same shape)
    passes at once; a changed field, shape, dtype or list length is checked again."""
    from minitvm.runtime.ndarray import NDArray

    vm = _weights_vm()
    rng = np.random.default_rng(55)
    w, b = NDArray(rng.standard_normal((3, 4)).astype("float32")), NDArray(rng.standard_normal(4).astype("float32"))
    weights = [w, b]
    for _ in range(3):  # a new input each call, as a decode step's
        x = NDArray(rng.standard_normal((2, 3)).astype("float32"))
        assert vm["pick"](x, weights) is b
    b2 = NDArray(rng.standard_normal(4).astype("float32"))
    weights[1] = b2  # the same list object, a new field
    assert vm["pick"](x, weights) is b2
    weights[1] = NDArray(np.ones(5, "float32"))
    with pytest.raises(ValueError, match=r"argument 'ws\[1\]' expects shape \(m,\), got \(5,\): dimension 0 "
                                         r"is m = 5, but m = 4 from argument 'ws\[0\]'"):
        vm["pick"](x, weights)
    weights[1] = b
    assert vm["pick"](x, weights) is b
    held = b._array
    b._array = held.astype("float64")  # the same NDArray now holding another dtype
    with pytest.raises(TypeError, match=r"argument 'ws\[1\]' expects dtype float32, got float64"):
        vm["pick"](x, weights)
    b._array = held
    weights.append(b2)
    with pytest.raises(ValueError, match=r"argument 'ws' expects a tuple of 2 fields, got 3"):
        vm["pick"](x, weights)
    x_strided = rng.standard_normal((2, 6)).astype("float32")[:, ::2]  # copied by the check: never kept
    assert vm["pick"](x_strided, (w, b)) is b


def test_repeated_call_skips_the_full_check(monkeypatch):
    from minitvm.runtime.ndarray import NDArray

    vm = _weights_vm()
    entry = vm._checks["pick"]
    full = []
    monkeypatch.setattr(entry, "check", lambda args, inner=entry.check: full.append(1) or inner(args))
    weights = [NDArray(np.ones((3, 4), "float32")), NDArray(np.ones(4, "float32"))]
    for n in (2, 2, 2, 5, 5):
        vm["pick"](NDArray(np.ones((n, 3), "float32")), weights)
    assert len(full) == 2  # the first call, and the first with n = 5
    assert entry._repeats == 3  # the three repeats of the last call
