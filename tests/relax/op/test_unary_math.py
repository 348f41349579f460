"""The element-wise math operators TVM registers beyond exp/log: struct info, dtype checks,
and (where they legalize) numbers against numpy on random data."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.tir.op_table import UNARY

# the unary rows of the operator table, by the operand dtypes their struct info accepts
FLOAT_ONLY = [row.name for row in UNARY if row.dtypes == "float"]
ANY_DTYPE = [row.name for row in UNARY if row.dtypes == "any" and row.result is None]
CHECKS = [row.name for row in UNARY if row.result == "bool"]


def _emit(op_name: str, sinfo: relax.StructInfo) -> relax.Expr:
    x = relax.Var("x", sinfo)
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        out = bb.emit(getattr(relax.op, op_name)(x))
        bb.emit_func_output(out)
    return out


@pytest.mark.parametrize("op_name", FLOAT_ONLY + ANY_DTYPE)
def test_math_op_keeps_the_input_struct_info(op_name):
    out = _emit(op_name, relax.TensorStructInfo((3, 5), "float32"))
    assert out.struct_info == relax.TensorStructInfo((3, 5), "float32")


@pytest.mark.parametrize("op_name", FLOAT_ONLY)
def test_trigonometric_ops_refuse_integer_tensors(op_name):
    with pytest.raises(minitvm.TVMError, match=f"relax.{op_name}.*floating-point"):
        _emit(op_name, relax.TensorStructInfo((3,), "int32"))


@pytest.mark.parametrize("op_name", ANY_DTYPE)
def test_rounding_sign_and_square_accept_integer_tensors(op_name):
    out = _emit(op_name, relax.TensorStructInfo((4,), "int64"))
    assert out.struct_info.dtype == "int64"


@pytest.mark.parametrize("op_name", CHECKS)
def test_check_ops_give_bool_tensors_of_the_input_shape(op_name):
    out = _emit(op_name, relax.TensorStructInfo((2, 7), "float16"))
    assert out.struct_info == relax.TensorStructInfo((2, 7), "bool")


def test_unary_op_is_printed_and_named_as_in_tvm():
    call = relax.op.atanh(relax.Var("x", relax.TensorStructInfo((2,), "float32")))
    assert call.op.name == "relax.atanh"
    assert relax.op.round.__name__ == "round"


@pytest.mark.parametrize("op_name", ["floor", "ceil", "round", "sin", "cos"])
def test_legalized_math_op_matches_numpy(op_name):
    rng = np.random.default_rng(13)
    data = rng.uniform(-4.0, 4.0, size=(4, 6)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo((4, 6), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(getattr(relax.op, op_name)(x))
        bb.emit_func_output(out)
    ex = minitvm.compile(bb.get(), target="llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    got = vm["main"](minitvm.nd.array(data)).numpy()
    expected = {"round": np.round}.get(op_name, getattr(np, op_name))(data)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
