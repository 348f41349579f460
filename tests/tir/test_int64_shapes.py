"""Shapes of 2**31 or more keep their value in every shape constructor: an int64 dimension
(TVM's ``T.int64(...)``), printed as TVMScript that parses back to the same function."""

import pytest

import minitvm
from minitvm import te, tir
from minitvm.script import from_source
from minitvm.script import tir as T
from minitvm.tir.expr import IntImm, shape_const

BIG = 4294967300  # 2**32 + 4: wrapped to int32 it was 4
HUGE = 10**12  # wrapped to int32 it was -727379968


def dims(shape):
    return [(d.dtype, d.value) for d in shape]


@pytest.mark.parametrize("value, dtype", [(2**31 - 1, "int32"), (-(2**31), "int32"), (2**31, "int64"),
                                          (BIG, "int64"), (2**63 - 1, "int64")])
def test_shape_const_is_int32_when_it_fits_else_int64(value, dtype):
    assert (shape_const(value).dtype, shape_const(value).value) == (dtype, value)


def test_a_dimension_beyond_int64_is_refused():
    with pytest.raises(ValueError, match="does not fit int64"):
        te.placeholder((2**63,))


def test_te_placeholder_compute_and_decl_buffer_keep_large_dimensions():
    x = te.placeholder((BIG, 3), name="x")
    assert dims(x.shape) == [("int64", BIG), ("int32", 3)]
    y = te.compute((HUGE,), lambda i: x[i % BIG, 0], name="y")
    assert dims(y.shape) == [("int64", HUGE)]
    assert dims(tir.decl_buffer((BIG,)).shape) == [("int64", BIG)]
    assert dims(tir.decl_buffer(HUGE).shape) == [("int64", HUGE)]
    func = te.create_prim_func([x, y])
    assert "T.int64(4294967300)" in func.script() and "T.int64(1000000000000)" in func.script()
    minitvm.ir.assert_structural_equal(from_source(func.script()), func)


@T.prim_func
def big_buffers(a: T.handle, B: T.Buffer((BIG, 2), "float32")):
    A = T.match_buffer(a, (BIG,), "float32")
    C = T.alloc_buffer((HUGE,))
    D = T.decl_buffer((BIG,), "float32", data=A.data)
    for i in range(2):
        with T.block("copy"):
            vi = T.axis.spatial(2, i)
            E = T.alloc_buffer((2 * BIG,))
            E[vi] = D[vi]
            C[vi] = E[vi] + A[vi] + B[vi, 1]


def test_tvmscript_buffers_keep_large_dimensions_and_round_trip():
    func = big_buffers
    params = {b.name: dims(b.shape) for b in func.buffer_map.values()}
    assert params == {"A": [("int64", BIG)], "B": [("int64", BIG), ("int32", 2)]}
    text = func.script()
    for spelled in ("T.alloc_buffer((T.int64(1000000000000),))", "T.alloc_buffer((T.int64(8589934600),))",
                    'D = T.Buffer((T.int64(4294967300),), "float32", data=A.data)'):
        assert spelled in text, text
    assert "-727379968" not in text and "((4,)" not in text
    again = from_source(text)
    minitvm.ir.assert_structural_equal(again, func)
    assert again.script() == text


def test_int32_dimensions_are_unchanged():
    x = te.placeholder((2**31 - 1, 7), name="x")
    assert all(isinstance(d, IntImm) and d.dtype == "int32" for d in x.shape)
    assert "T.int64" not in te.create_prim_func([x]).script()
