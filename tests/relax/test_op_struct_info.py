"""Struct-info inference of the first operators, and the errors they raise."""

from __future__ import annotations

import pytest

from minitvm import relax, tir
from minitvm.ir import Op, register_op_attr, structural_equal
from minitvm.relax import StructInfoError


def T(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


def infer(call):
    """The struct info a BlockBuilder gives ``call``."""
    return relax.BlockBuilder().normalize(call).struct_info


def var(name, sinfo):
    return relax.Var(name, sinfo)


def dims(sinfo):
    return [v.value if isinstance(v, tir.IntImm) else v for v in sinfo.shape.values]


@pytest.mark.parametrize("op", [relax.op.add, relax.op.subtract, relax.op.multiply, relax.op.divide])
def test_binary_broadcasting(op):
    x, y = var("x", T((2, 1, 4))), var("y", T((3, 1)))
    assert dims(infer(op(x, y))) == [2, 3, 4]
    assert infer(op(x, y)).dtype == "float32"


def test_binary_symbolic_dims(n):
    x, y = var("x", T((n, 4))), var("y", T((4,)))
    assert dims(infer(relax.op.add(x, y))) == [n, 4]
    ones = var("o", T((1, 4)))
    assert dims(infer(relax.op.add(ones, x))) == [n, 4]
    # n against m cannot be decided statically: rank only
    m = tir.Var("m", "int64")
    s = infer(relax.op.add(x, var("z", T((m, 4)))))
    assert s.shape is None and s.ndim == 2
    # unknown shapes keep what is known
    s = infer(relax.op.multiply(var("a", relax.TensorStructInfo(ndim=3, dtype="float32")), x))
    assert s.shape is None and s.ndim == 3


def test_binary_errors_name_the_op_and_both_shapes():
    x, y = var("x", T((2, 3))), var("y", T((4, 3)))
    with pytest.raises(StructInfoError, match=r"relax\.add: cannot broadcast shapes \(2, 3\) and \(4, 3\)"):
        infer(relax.op.add(x, y))
    with pytest.raises(StructInfoError, match="relax.multiply: operands have different dtypes float32 and int32"):
        infer(relax.op.multiply(x, var("i", T((2, 3), "int32"))))
    with pytest.raises(TypeError, match=r"relax.subtract expects a tensor or a scalar \(R.Prim\) for x2"):
        infer(relax.op.subtract(x, relax.Tuple([x])))


def test_operators_on_exprs_build_calls():
    x = var("x", T((2, 3)))
    assert (x + x).op is Op.get("relax.add")
    assert (x * x).op is Op.get("relax.multiply")
    assert (x - x).op is Op.get("relax.subtract")
    assert (x / x).op is Op.get("relax.divide")


def test_unary():
    x = var("x", T((2, 3)))
    assert structural_equal(infer(relax.op.exp(x)), T((2, 3)))
    assert structural_equal(infer(relax.op.nn.relu(x)), T((2, 3)))
    with pytest.raises(StructInfoError, match="relax.exp needs a floating-point tensor, got dtype int32"):
        infer(relax.op.exp(var("i", T((2,), "int32"))))
    with pytest.raises(StructInfoError, match="relax.nn.relu takes 1 argument, got 2"):
        infer(relax.Call(Op.get("relax.nn.relu"), [x, x]))


def test_matmul_shapes(n):
    assert dims(infer(relax.op.matmul(var("a", T((2, 3))), var("b", T((3, 5)))))) == [2, 5]
    # batched with broadcast batch dimensions, symbolic batch
    a, b = var("a", T((n, 1, 2, 3))), var("b", T((4, 3, 5)))
    assert dims(infer(relax.op.matmul(a, b))) == [n, 4, 2, 5]
    # 1-D operands as in numpy
    assert dims(infer(relax.op.matmul(var("v", T((3,))), var("m", T((3, 5)))))) == [5]
    assert dims(infer(relax.op.matmul(var("m", T((2, 3))), var("v", T((3,)))))) == [2]
    assert infer(relax.op.matmul(var("v", T((3,))), var("w", T((3,))))).ndim == 0
    # out_dtype
    s = infer(relax.op.matmul(var("a", T((2, 3), "int8")), var("b", T((3, 5), "int8")), out_dtype="int32"))
    assert s.dtype == "int32"
    # rank only when shapes are unknown
    s = infer(relax.op.matmul(var("a", relax.TensorStructInfo(ndim=3, dtype="float32")), var("b", T((3, 5)))))
    assert s.shape is None and s.ndim == 3


def test_matmul_errors():
    with pytest.raises(StructInfoError) as err:
        infer(relax.op.matmul(var("a", T((2, 3))), var("b", T((4, 5)))))
    assert str(err.value) == "relax.matmul: cannot multiply shapes (2, 3) and (4, 5): inner dimensions 3 and 4 differ"
    with pytest.raises(StructInfoError, match=r"relax\.matmul: cannot broadcast shapes \(2,\) and \(3,\)"):
        infer(relax.op.matmul(var("a", T((2, 4, 3))), var("b", T((3, 3, 5)))))
    with pytest.raises(StructInfoError, match="different dtypes float32 and float16"):
        infer(relax.op.matmul(var("a", T((2, 3))), var("b", T((3, 5), "float16"))))
    with pytest.raises(StructInfoError, match="scalar"):
        infer(relax.op.matmul(var("a", T(())), var("b", T((3, 5)))))


def test_matmul_symbolic_inner_dims_are_checked_when_provable(n):
    a, b = var("a", T((2, n))), var("b", T((n, 5)))
    assert dims(infer(relax.op.matmul(a, b))) == [2, 5]
    with pytest.raises(StructInfoError, match=r"\(2, n\) and \(n \+ 1, 5\)|inner dimensions"):
        infer(relax.op.matmul(a, var("c", T((n + 1, 5)))))


def test_ewise_fma():
    x = var("x", T((2, 3)))
    assert structural_equal(infer(relax.op.ewise_fma(x, x, x)), T((2, 3)))
    with pytest.raises(StructInfoError, match=r"relax.ewise_fma: operands must have equal shapes"):
        infer(relax.op.ewise_fma(x, x, var("y", T((3, 2)))))


def test_call_tir_and_packed():
    x = var("x", T((2, 3)))
    gv = relax.GlobalVar("kernel")
    call = relax.call_tir(gv, [x], out_sinfo=T((2, 3)))
    assert structural_equal(infer(call), T((2, 3)))
    two = relax.call_tir(gv, [x], out_sinfo=[T((2, 3)), T((3,))])
    assert isinstance(infer(two), relax.TupleStructInfo)
    assert structural_equal(infer(relax.call_tir(gv, x, out_ty=T((1,)))), T((1,)))
    dps = relax.call_dps_packed("my_func", [x], T((2, 3)))
    assert dps.args[0].global_symbol == "my_func" and structural_equal(infer(dps), T((2, 3)))
    pure = relax.call_pure_packed("my_func", x, sinfo_args=T((2, 3)))
    assert structural_equal(infer(pure), T((2, 3)))
    with pytest.raises(TypeError, match="GlobalVar of a PrimFunc"):
        relax.call_tir("kernel", [x], T((2, 3)))


def test_op_registry():
    add = Op.get("relax.add")
    assert add is Op.get("relax.add") and add.name == "relax.add"
    assert add.get_attr("TOpPattern") == relax.op.OpPattern.BROADCAST
    assert callable(add.get_attr("FInferStructInfo"))
    assert add.get_attr("FPurity") is True
    assert callable(add.get_attr("FLegalize"))  # registered by relax.transform.legalize_ops
    with pytest.raises(KeyError, match="operator 'relax.no_such_op' is not registered"):
        Op.get("relax.no_such_op")
    assert "relax.matmul" in Op.list_op_names()


def test_registering_a_new_op_is_one_function_and_a_decorator():
    @relax.op.register("relax.test_square", pattern=relax.op.OpPattern.ELEMWISE)
    def _infer(call, ctx):
        return call.args[0].struct_info

    @register_op_attr("relax.test_square", "FLegalize")
    def _legalize(bb, call):
        return call

    x = var("x", T((2, 3)))
    call = relax.Call(Op.get("relax.test_square"), [x])
    assert structural_equal(infer(call), T((2, 3)))
    assert Op.get("relax.test_square").get_attr("FLegalize") is _legalize
    with pytest.raises(ValueError, match="already set"):
        register_op_attr("relax.test_square", "FLegalize", lambda bb, c: c)
    register_op_attr("relax.test_square", "FLegalize", _legalize, level=11)  # overriding is explicit


def test_register_op_attr_defines_a_custom_operator():
    # TVM registers an operator on its first attribute: a custom op is its attributes
    name = "custom_op.first_argument_only"
    register_op_attr(name, "FInferStructInfo", lambda call, ctx: call.args[0].struct_info)
    try:
        x = var("x", T((4,)))
        call = relax.Call(Op.get(name), [x, x])
        assert structural_equal(infer(call), T((4,)))
    finally:
        Op.get(name).reset_attr("FInferStructInfo")
