"""T.call_packed / T.tvm_call_packed: a kernel calling a registered global function (TVM's
tvm_call_packed), parsed, printed and run in native code."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T
from minitvm.script import tirx as Tx

CALLS: list = []


@minitvm.register_global_func("testing.call_packed.scaled_matmul", override=True)
def _scaled_matmul(a, b, c, k):
    CALLS.append((type(a).__name__, a.shape, k))
    c.copyfrom(a.numpy() @ b.numpy() * k)  # writes through to the kernel's buffer


@minitvm.register_global_func("testing.call_packed.halve", override=True)
def _halve(x):
    return x / 2


@minitvm.register_global_func("testing.call_packed.refuse", override=True)
def _refuse(x):
    raise ValueError(f"refused {x}")


@Tx.prim_func
def matmul_by_packed(A: Tx.Buffer((8, 6), "float32"), B: Tx.Buffer((6, 4), "float32"),
                     C: Tx.Buffer((8, 4), "float32")):
    Tx.evaluate(Tx.call_packed("testing.call_packed.scaled_matmul", A, B, C, 3))


@T.prim_func
def halve_each(A: T.Buffer((5,), "float32"), B: T.Buffer((5,), "float32")):
    for i in range(5):
        with T.block("B"):
            vi = T.axis.spatial(5, i)
            B[vi] = T.tvm_call_packed("testing.call_packed.halve", A[vi], dtype="float32") + T.float32(1)


def test_buffers_reach_the_function_as_arrays_over_the_kernels_memory():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 6)).astype("float32"), rng.standard_normal((6, 4)).astype("float32")
    c = minitvm.nd.array(np.full((8, 4), 7.0, "float32"))
    CALLS.clear()
    minitvm.compile(matmul_by_packed, target="llvm")["matmul_by_packed"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b * 3, rtol=1e-5)
    assert CALLS == [("NDArray", (8, 6), 3)]


def test_the_functions_result_is_the_calls_value_in_its_dtype():
    a = np.random.default_rng(1).standard_normal(5).astype("float32")
    b = minitvm.nd.empty((5,), "float32")
    minitvm.compile(halve_each, target="llvm")["halve_each"](minitvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a / 2 + 1, rtol=1e-6)


def test_both_names_parse_and_print_as_tvm_prints_them():
    text = matmul_by_packed.script()
    assert 'T.call_packed("testing.call_packed.scaled_matmul", T.tvm_stack_make_array(A.data, ' in text
    assert_structural_equal(from_source(text), matmul_by_packed)
    assert 'T.call_packed("testing.call_packed.halve", A[vi], dtype="float32")' in halve_each.script()
    assert_structural_equal(from_source(halve_each.script()), halve_each)
    assert T.tvm_call_packed is T.call_packed and tir.call_packed("f", 1).op == "tir.tvm_call_packed"


def test_an_exception_in_the_function_is_raised_by_the_kernel_call():
    @T.prim_func
    def calls_refuse(A: T.Buffer((2,), "int32")):
        for i in range(2):
            with T.block("A"):
                vi = T.axis.spatial(2, i)
                A[vi] = T.call_packed("testing.call_packed.refuse", vi + 40)

    lib = minitvm.compile(calls_refuse, target="llvm")
    with pytest.raises(RuntimeError, match="'testing.call_packed.refuse' it calls .* ValueError: refused 40") as info:
        lib["calls_refuse"](minitvm.nd.array(np.zeros(2, "int32")))
    assert isinstance(info.value.__cause__, ValueError)


def test_refused_where_there_is_no_native_code_and_without_a_name():
    with pytest.raises(NotImplementedError, match="T.call_packed, which runs in native code only"):
        minitvm.build(matmul_by_packed, target="python")
    with pytest.raises(TypeError, match="registered function's name"):
        tir.call_packed(tir.IntImm("int32", 1))
