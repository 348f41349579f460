"""One argument check for kernels and VM functions (``minitvm.runtime.arguments``): the full
check runs once per combination of shapes; later calls with the same ones take the fast path
-- and anything different still gets the full check and its error, the same from a built
PrimFunc as from a VM function."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.runtime.vm import ExecBuilder, ParamInfo, VirtualMachine
from minitvm.script import tir as T


@T.prim_func
def scale(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (4, n), "float32")
    B = T.match_buffer(b, (4, n), "float32")
    for i, j in T.grid(4, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def _vm_scale() -> VirtualMachine:
    """A VM function with the parameters of ``scale``: same names, dtypes and shapes."""
    eb = ExecBuilder()
    info = [ParamInfo.tensor((4, "n"), "float32"), ParamInfo.tensor((4, "n"), "float32")]
    with eb.function("scale", ["A", "B"], info):
        eb.emit_ret(0)
    return VirtualMachine(eb.get())


def _mistakes(rng):
    good = rng.standard_normal((4, 8)).astype("float32")
    return [
        (good,),                                                   # count
        (good.astype("float64"), good),                            # dtype
        (good, np.zeros((4, 9), "float32")),                       # symbolic dimension disagrees
        (good, np.zeros((3, 8), "float32")),                       # static dimension
        (good.reshape(-1), good),                                  # rank
        ([1.0, 2.0], good),                                        # not an array
        (good, 3),
    ]


def test_vm_and_built_prim_func_give_the_same_message_for_the_same_mistake():
    kernel = minitvm.build(scale, target="llvm")["scale"]
    vm = _vm_scale()
    rng = np.random.default_rng(3)
    for args in _mistakes(rng):
        with pytest.raises((TypeError, ValueError)) as from_kernel:
            kernel(*args)
        with pytest.raises((TypeError, ValueError)) as from_vm:
            vm["scale"](*args)
        assert type(from_kernel.value) is type(from_vm.value)
        assert str(from_kernel.value) == str(from_vm.value)
        assert str(from_kernel.value).startswith("scale: ")


def test_second_call_with_the_same_shapes_takes_the_fast_path():
    f = minitvm.build(scale, target="llvm")["scale"]
    check = f._fn.signature.check
    rng = np.random.default_rng(0)
    a = minitvm.nd.array(rng.standard_normal((4, 8)).astype("float32"))
    b = minitvm.nd.empty((4, 8), "float32")
    f(a, b)
    assert check.fast_calls == 0
    a2 = rng.standard_normal((4, 8)).astype("float32")  # a numpy array of the same shape: fast too
    f(a2, b)
    assert check.fast_calls == 1
    np.testing.assert_array_equal(b.numpy(), a2 * 2)
    f(minitvm.nd.array(np.ones((4, 5), "float32")), minitvm.nd.empty((4, 5), "float32"))  # new shape: full
    assert check.fast_calls == 1
    f(a, b)  # both shapes are remembered
    assert check.fast_calls == 2
    with pytest.raises(ValueError, match=r"argument 'A'.*\(3, 8\)"):
        f(minitvm.nd.array(np.ones((3, 8), "float32")), b)
    with pytest.raises(TypeError, match="expects dtype float32, got float64"):
        f(minitvm.nd.array(np.ones((4, 8), "float64")), b)
    frozen = np.zeros((4, 8), "float32")
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):  # same shapes, but the output cannot be written
        f(a, minitvm.nd.NDArray(frozen))
    assert check.fast_calls == 2


def test_vm_entry_takes_the_fast_path_after_the_first_call():
    vm = _vm_scale()
    check = vm._checks["scale"]
    a = np.ones((4, 8), "float32")
    vm["scale"](a, a)
    vm["scale"](a, a)
    vm.invoke("scale", minitvm.nd.array(a), a)
    assert check.fast_calls == 2
    with pytest.raises(ValueError, match=r"^scale: argument 'B' expects shape \(4, n\), got \(4, 7\): "
                                         r"dimension 1 is n = 7, but n = 8 from argument 'A'$"):
        vm["scale"](a, np.ones((4, 7), "float32"))


def test_a_strided_input_is_copied_by_the_vm_but_refused_by_a_kernel():
    strided = np.ones((4, 16), "float32")[:, ::2]
    out = _vm_scale()["scale"](strided, np.ones((4, 8), "float32"))
    assert out.shape == (4, 8)
    with pytest.raises(ValueError, match="argument 'A' must be C-contiguous"):
        minitvm.build(scale, target="llvm")["scale"](strided, np.zeros((4, 8), "float32"))
