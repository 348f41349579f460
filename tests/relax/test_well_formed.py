"""well_formed: what every pass may assume, and the words used when it does not hold."""

from __future__ import annotations

import logging

import pytest

from minitvm import relax, tir
from minitvm.ir import IRModule
from minitvm.relax.analysis import well_formed, well_formed_errors

from .models import build_linear_relu

T = relax.TensorStructInfo((2, 3), "float32")


def _call(op_name, *args):
    """A normalized call (struct info filled) without a builder's bindings."""
    return relax.BlockBuilder().normalize(relax.Call(relax.Op.get(op_name), list(args)))


def _func(params, blocks, body, name="main"):
    return relax.Function(params, relax.SeqExpr(blocks, body), body.struct_info,
                          attrs={"global_symbol": name})


def test_builder_output_is_well_formed(n):
    assert well_formed(build_linear_relu(batch=n))
    assert well_formed_errors(build_linear_relu()) == []


def test_use_before_definition():
    x = relax.Var("x", T)
    y = relax.Var("y", T)
    lv = relax.Var("lv", T)
    f = _func([x], [relax.BindingBlock([relax.VarBinding(lv, _call("relax.exp", y))])], lv)
    assert not well_formed(f)
    assert well_formed_errors(f) == ["function main: variable y is used before it is defined"]


def test_variable_defined_twice():
    x = relax.Var("x", T)
    lv = relax.Var("lv", T)
    block = relax.BindingBlock([relax.VarBinding(lv, _call("relax.exp", x)),
                                relax.VarBinding(lv, _call("relax.exp", x))])
    assert "variable lv is defined more than once" in well_formed_errors(_func([x], [block], lv))[0]


def test_dataflow_var_outside_its_block():
    x = relax.Var("x", T)
    lv = relax.DataflowVar("lv", T)
    block = relax.DataflowBlock([relax.VarBinding(lv, _call("relax.exp", x))])
    # the function returns the DataflowVar: used outside its dataflow block
    errors = well_formed_errors(_func([x], [block], lv))
    assert errors == ["function main: DataflowVar lv is used outside its dataflow block"]


def test_dataflow_var_defined_outside_dataflow_block():
    x = relax.Var("x", T)
    lv = relax.DataflowVar("lv", T)
    gv = relax.Var("gv", T)
    block = relax.BindingBlock([relax.VarBinding(lv, _call("relax.exp", x)),
                                relax.VarBinding(gv, _call("relax.exp", lv))])
    errors = well_formed_errors(_func([x], [block], gv))
    assert "DataflowVar lv is defined outside a dataflow block" in errors[0]


def test_global_var_must_be_in_module():
    mod = build_linear_relu()
    assert well_formed(mod)
    broken = mod.without("te_relu")
    assert not well_formed(broken)
    assert well_formed_errors(broken) == ["function main: @te_relu is not a function of the module"]
    # a different GlobalVar object with the same name does not count either
    x = relax.Var("x", T)
    lv = relax.Var("lv", T)
    stray = relax.call_tir(relax.GlobalVar("te_matmul"), [x], out_sinfo=T)
    f = _func([x], [relax.BindingBlock([relax.VarBinding(lv, relax.BlockBuilder().normalize(stray))])], lv)
    errors = well_formed_errors(IRModule({"main": f, "te_matmul": mod["te_matmul"]}))
    assert "a different GlobalVar object of that name" in errors[0]


def test_undefined_symbolic_var_and_missing_struct_info():
    n = tir.Var("n", "int64")
    x = relax.Var("x", T)
    lv = relax.Var("lv", relax.TensorStructInfo((n, 3), "float32"))
    cast = relax.MatchCast(lv, x, relax.TensorStructInfo((n, 3), "float32"))
    assert well_formed(_func([x], [relax.BindingBlock([cast])], lv))  # match_cast defines n
    bad = relax.VarBinding(lv, x)  # a plain binding does not
    errors = well_formed_errors(_func([x], [relax.BindingBlock([bad])], lv))
    assert "symbolic variable n used in the struct info of lv is not defined" in errors[0]

    raw = relax.Call(relax.Op.get("relax.exp"), [x])  # never normalized
    gv = relax.Var("gv", T)
    f = relax.Function([x], relax.SeqExpr([relax.BindingBlock([relax.VarBinding(gv, raw)])], gv), T)
    assert any("no struct info" in e for e in well_formed_errors(f))
    assert well_formed(f, check_struct_info=False)


def test_nested_call_is_not_normal_form():
    x = relax.Var("x", T)
    gv = relax.Var("gv", T)
    inner = _call("relax.exp", x)
    outer = relax.BlockBuilder().normalize  # normalizing outside a block keeps the nesting
    nested = outer(relax.op.exp(inner))
    f = _func([x], [relax.BindingBlock([relax.VarBinding(gv, nested)])], gv)
    assert any("nested Call" in e for e in well_formed_errors(f))


def test_failure_is_logged(caplog):
    x, y = relax.Var("x", T), relax.Var("y", T)
    f = _func([x], [], y)
    with caplog.at_level(logging.WARNING, logger="minitvm.relax"):
        assert not well_formed(f)
    assert "variable y is used before it is defined" in caplog.text


def test_rejects_other_objects():
    with pytest.raises(TypeError, match="IRModule or a relax.Function"):
        well_formed(relax.const(1.0))


def test_local_function_with_its_own_symbolic_vars_and_a_capture():
    m = tir.Var("m", "int64")
    x = relax.Var("x", T)
    p = relax.Var("p", relax.TensorStructInfo((m, 3), "float32"))
    inner = relax.Function([p], relax.SeqExpr([], p), relax.TensorStructInfo((m, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        f = bb.emit(inner)
        captured = bb.emit(relax.Function([relax.Var("q", T)], relax.SeqExpr([], x), T))
        bb.emit_func_output(bb.emit(relax.Call(f, [x])))
    assert well_formed_errors(bb.get()) == []
    assert relax.analysis.free_vars(bb.lookup_binding(captured)) == [x]


def test_well_formed_instrument_names_the_pass():
    """TVM's WellFormedInstrument (tvm.relax.ir.instrument): checks around every pass, skipping
    the normalizing passes whose input may be ill formed."""
    from minitvm import transform
    from minitvm.relax.ir.instrument import WellFormedInstrument

    mod = build_linear_relu()
    x = relax.Var("x", T)
    y = relax.Var("y", T)
    lv = relax.Var("lv", T)
    broken = _func([x], [relax.BindingBlock([relax.VarBinding(lv, _call("relax.exp", y))])], lv)

    @transform.module_pass(opt_level=0, name="BreakIt")
    def break_it(m, _ctx):
        return IRModule({"main": broken})

    with transform.PassContext(instruments=[WellFormedInstrument()]):
        assert well_formed(relax.transform.LegalizeOps()(mod))
        with pytest.raises(AssertionError, match="after pass BreakIt: function main: variable y"):
            break_it(mod)
        with pytest.raises(AssertionError, match="before pass LegalizeOps"):
            relax.transform.LegalizeOps()(IRModule({"main": broken}))
    with transform.PassContext(instruments=[WellFormedInstrument(validate_before_transform=False)]):
        with pytest.raises(AssertionError, match="after pass LegalizeOps"):
            relax.transform.LegalizeOps()(IRModule({"main": broken}))
