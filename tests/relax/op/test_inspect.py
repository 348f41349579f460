"""relax.inspect: a tensor's DLPack fields read at run time (``A.dtype.bits``, ``A.shape[i]``,
``A.strides[i]``, ``A.elem_offset`` ...), against numpy's view of the same array; folded to
constants when the struct info knows them; DataType's fields are TVM's."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Fields:
    @R.function
    def main(A: R.Tensor, axis: R.Prim("int64")):
        return (A.dtype.type_code, A.dtype.bits, A.dtype.lanes, A.ndim, A.shape[axis], A.strides[axis],
                A.byte_offset, A.elem_offset)


@pytest.fixture(scope="module")
def fields_vm():
    return relax.VirtualMachine(minitvm.compile(Fields, "llvm"), minitvm.cpu())


@pytest.mark.parametrize("dtype, fields", [("bfloat", (4, 16, 1)), ("float32x4", (2, 32, 4)),
                                           ("float8_e4m3fn", (10, 8, 1))])
def test_fields_of_dtypes_numpy_cannot_name(fields_vm, dtype, fields):
    # TVM's type codes, bits and lanes of bfloat16, a vector dtype and float8, and the element
    # offset of a view counted in whole (vector) elements
    base = minitvm.runtime.empty([8, 8], dtype)
    nbytes = fields[1] * fields[2] // 8
    view = base._create_view([2, 3], dtype, relative_byte_offset=5 * nbytes)
    got = fields_vm["main"](view, 1)
    assert tuple(int(v) for v in got) == (*fields, 2, 3, 1, 5 * nbytes, 5)


@pytest.mark.parametrize("dtype, code", [("int32", 0), ("uint8", 1), ("float64", 2)])
def test_fields_of_a_view_match_numpy(fields_vm, dtype, code):
    rng = np.random.default_rng(0)
    base = minitvm.nd.array(rng.integers(0, 100, (8, 8)).astype(dtype))
    itemsize = np.dtype(dtype).itemsize
    view = base._create_view([3, 5], dtype, relative_byte_offset=6 * itemsize)
    np.testing.assert_array_equal(view.numpy().reshape(-1), base.numpy().reshape(-1)[6:21])
    for axis in (0, 1):
        got = fields_vm["main"](view, axis)
        assert tuple(int(v) for v in got) == (code, itemsize * 8, 1, 2, (3, 5)[axis], (5, 1)[axis],
                                              6 * itemsize, 6)


def test_known_fields_fold_to_constants():
    @R.function
    def f(A: R.Tensor((4, 6), "float16")):
        return (A.dtype.bits, A.ndim, A.shape[1])

    assert [int(si.value.value) for si in f.ret_struct_info.fields] == [16, 2, 6]
    mod = relax.transform.LegalizeOps()(minitvm.IRModule({"f": f}))
    values = [b.value for b in mod["f"].body.blocks[0].bindings]
    assert all(isinstance(v, relax.PrimValue) for v in values)  # no run-time read left
    assert [int(v.value.value) for v in values] == [16, 2, 6]
    assert minitvm.script.from_source(f.script()).script() == f.script()  # R.inspect.* parses back


def test_accessors_refuse_a_tuple():
    v = relax.Var("t", relax.TupleStructInfo([relax.TensorStructInfo((2,), "float32")]))
    with pytest.raises(TypeError, match="reads a tensor's DLTensor"):
        v.shape[0]
    assert not hasattr(v, "dtype")


def test_data_type_fields_are_tvms():
    dt = minitvm.DataType("float32x4")
    assert (dt.type_code, dt.bits, dt.lanes) == (minitvm.DataTypeCode.FLOAT, 32, 4)
    assert minitvm.runtime.DataType("uint16").type_code == 1 and minitvm.DataType("bfloat16").type_code == 4
