"""TVM 0.27's names for Relax struct info on expressions: ``expr.ty``, ``Var(..., ty=)``,
``MatchCast.ty``, ``Function.ret_ty``, ``Call.ty_args`` -- the same fields as the older names."""

import pytest

import minitvm
from minitvm import relax


def test_ty_is_the_struct_info_field_under_tvm_027s_names():
    t23 = relax.TensorType((2, 3), "float32")
    x = relax.Var("x", ty=t23)
    y = relax.Var(name_hint="y", struct_info=relax.TensorStructInfo((2, 3), "float32"))
    assert x.ty is x.struct_info and y.name == "y" and minitvm.ir.structural_equal(y.ty, t23)
    assert relax.Expr.ty is relax.Expr.struct_info_  # one field, two names (minitvm.eras)
    call = relax.Call(minitvm.ir.Op.get("relax.add"), [x, y])
    assert call.ty is None and call.ty_args == ()  # not normalized yet: no type, as in TVM
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        gv = bb.emit(relax.op.add(x, y))
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    assert minitvm.ir.structural_equal(gv.ty, t23) and func.ret_ty is func.ret_struct_info
    assert isinstance(func.ty, relax.FuncType)
    cast = relax.MatchCast(relax.Var("z"), x, ty=t23)
    assert cast.ty is cast.struct_info
    packed = relax.Call(relax.ExternFunc("f"), [x], ty_args=[t23])
    assert packed.ty_args == packed.sinfo_args == (t23,)
    again = relax.Function(func.params, func.body, ret_ty=func.ret_ty)
    assert again.ret_struct_info is func.ret_struct_info


def test_a_field_given_under_both_names_is_refused():
    with pytest.raises(TypeError, match="ty= or struct_info=, not both"):
        relax.Var("x", ty=relax.TensorType((1,), "float32"), struct_info=relax.TensorType((1,), "float32"))


def test_make_shape():
    from minitvm.relax.expr import make_shape

    assert [int(v) for v in make_shape([1, 2, 3]).values] == [1, 2, 3]
    with pytest.raises(TypeError, match="list or tuple"):
        make_shape(123)
