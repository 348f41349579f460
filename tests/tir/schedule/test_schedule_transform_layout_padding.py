"""transform_layout and padding: a layout with more elements than the buffer is refused
unless pad_value (of the buffer's type, reading no other buffer) or
assume_injective_transform says what to do with it; without padding, pad_value is moot."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def scale14(A: T.Buffer((14,), "float32"), C: T.Buffer((14,), "float32")):
    B = T.alloc_buffer((14,), "float32")
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(14):
        with T.block("C"):
            vi = T.axis.spatial(14, i)
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def scale16(A: T.Buffer((16,), "int32"), C: T.Buffer((16,), "int32")):
    B = T.alloc_buffer((16,), "int32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * 3
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi] - 1


def split4(i):
    return [i // 4, i % 4]


def test_padding_is_refused_without_pad_value():
    sch = tir.Schedule(scale14)
    with pytest.raises(tir.ScheduleError, match="has padding"):
        sch.transform_layout("B", ("write", 0), split4)


def test_padding_never_read_may_be_assumed():
    sch = tir.Schedule(scale14)
    sch.transform_layout("B", ("write", 0), split4, assume_injective_transform=True)
    assert "T.alloc_buffer((4, 4))" in sch.mod.script()
    a = np.random.default_rng(5).standard_normal(14).astype("float32")
    c = minitvm.nd.array(np.zeros(14, "float32"))
    minitvm.build(sch.mod)["scale14"](minitvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("pad_value, words", [
    (0, "is an integer"),                          # an int for a float buffer
    (tir.IntImm("int8", 0), "has dtype int8"),     # a constant of another type
])
def test_pad_value_of_another_type_is_refused(pad_value, words):
    sch = tir.Schedule(scale14)
    with pytest.raises(tir.ScheduleError, match=words):
        sch.transform_layout("B", ("write", 0), split4, pad_value=pad_value)


def test_pad_value_may_not_read_another_buffer():
    other = tir.decl_buffer((1,), "float32", "other")
    sch = tir.Schedule(scale14)
    with pytest.raises(tir.ScheduleError, match="another buffer"):
        sch.transform_layout("B", ("write", 0), split4, pad_value=lambda i, j: other[0])


def test_pad_value_without_padding_changes_nothing():
    with_value, without = tir.Schedule(scale16), tir.Schedule(scale16)
    with_value.transform_layout("B", ("write", 0), split4, pad_value=42)
    without.transform_layout("B", ("write", 0), split4)
    minitvm.ir.assert_structural_equal(with_value.mod, without.mod)
    a = np.random.default_rng(9).integers(-50, 50, 16).astype("int32")
    c = minitvm.nd.array(np.zeros(16, "int32"))
    minitvm.build(with_value.mod)["scale16"](minitvm.nd.array(a), c)
    np.testing.assert_array_equal(c.numpy(), a * 3 - 1)
