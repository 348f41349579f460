"""well_formed: what every pass may assume, and the words used when it does not hold."""

from __future__ import annotations

import pytest

import minitvm
from minitvm import relax, tir
from minitvm.ir import IRModule
from minitvm.relax.analysis import well_formed, well_formed_errors
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as S

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
    body = relax.SeqExpr([relax.BindingBlock([cast])], lv)
    assert well_formed(relax.Function([x], body, T))  # match_cast defines n
    # ... inside the body only: the return struct info may not name it (as TVM)
    errors = well_formed_errors(_func([x], [relax.BindingBlock([cast])], lv))
    assert errors == ["function main: symbolic variable n used in the return struct info is not defined "
                      "(define it in a parameter's struct info or with match_cast)"]
    bad = relax.VarBinding(lv, x)  # a plain binding does not
    errors = well_formed_errors(_func([x], [relax.BindingBlock([bad])], lv))
    assert any("symbolic variable n used in the struct info of lv is not defined" in e for e in errors)

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


def test_failure_is_printed_on_stderr(capsys):
    x, y = relax.Var("x", T), relax.Var("y", T)
    f = _func([x], [], y)
    assert not well_formed(f)  # as TVM, which logs its warning there
    assert "variable y is used before it is defined" in capsys.readouterr().err


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


def _errors_of(params, bindings, body, **kw):
    return well_formed_errors(relax.Function(params, relax.SeqExpr([relax.BindingBlock(bindings)], body), **kw))


def test_normal_form_leaves():
    # a call's operands, a tuple's fields, an If's condition and a body must be leaves (as TVM)
    x = relax.Var("x", relax.TensorStructInfo((), "bool"))
    nested = relax.TupleGetItem(relax.Tuple([x]), 0)
    y = relax.Var("y", relax.TensorStructInfo((), "bool"))
    branch = relax.If(nested, relax.SeqExpr([], x), relax.SeqExpr([], x))
    errors = well_formed_errors(relax.Function([x], relax.SeqExpr([relax.BindingBlock([relax.VarBinding(y, branch)])],
                                                                   y)), check_struct_info=False)
    assert any("condition of an If must be a leaf" in e for e in errors)
    raw_add = relax.op.add(x, relax.op.add(x, x))
    assert any("argument 1 of a call is a nested Call" in e
               for e in well_formed_errors(relax.Function([x], relax.SeqExpr([], raw_add)), check_struct_info=False))
    assert any("body of a SeqExpr must be a leaf" in e
               for e in well_formed_errors(relax.Function([x], relax.SeqExpr([], raw_add), T),
                                           check_struct_info=False))


def test_purity_rules(capsys):
    x = relax.Var("x", relax.TensorStructInfo((), "int32"))
    printed = relax.BlockBuilder().normalize(relax.op.print(x, format="{}"))
    y = relax.Var("y", printed.struct_info)
    pure = relax.Function([x], relax.SeqExpr([relax.BindingBlock([relax.VarBinding(y, printed)])], x))
    assert any("annotated as pure but contains an impure call: R.print" in e for e in well_formed_errors(pure))
    forced = pure.with_attr("relax.force_pure", True)
    assert well_formed_errors(forced) == []
    dy = relax.DataflowVar("y", printed.struct_info)
    in_dataflow = relax.Function([x], relax.SeqExpr([relax.DataflowBlock([relax.VarBinding(dy, printed)])], x),
                                 attrs={"relax.force_pure": True})
    assert not well_formed(in_dataflow)
    assert "impure function call R.print" in capsys.readouterr().err
    impure_forced = relax.Function([x], relax.SeqExpr([], x), is_pure=False, attrs={"relax.force_pure": True})
    assert any("force_pure true but is_pure false" in e for e in well_formed_errors(impure_forced))


def test_struct_info_must_agree_with_values():
    a = relax.Var("A", relax.TensorStructInfo((128, 32), "float32"))
    b = relax.Var("B", relax.TensorStructInfo((128, 32), "int32"))
    assert any("cannot be assigned to B" in e for e in _errors_of([a], [relax.VarBinding(b, a)], b))

    @I.ir_module(check_well_formed=False)
    class Module:
        @R.function
        def main(A: R.Tensor((128, 32), "float32"), B: R.Tensor((128, 32), "float32")):
            C: R.Tensor(ndim=3) = R.add(A, B)  # kept as written, unchecked
            return C

    assert Module["main"].body.blocks[0].bindings[0].var.struct_info.ndim == 3
    assert any("annotated as R.Tensor(ndim=3" in e for e in well_formed_errors(Module))


def test_call_tir_must_fit_its_prim_func():
    def module(arg_shape, out_sinfo):
        @I.ir_module(check_well_formed=False)
        class Module:
            @R.function
            def main(A: R.Tensor(arg_shape, "float16")):
                B = R.call_tir(Module.flatten, A, out_sinfo=out_sinfo)
                return B

            @S.prim_func
            def flatten(a: S.handle, b: S.handle):
                M, N = S.int64(), S.int64()
                A = S.match_buffer(a, [M, N], dtype="float16")
                B = S.match_buffer(b, [M * N], dtype="float16")
                for i in S.grid(M * N):
                    with S.block("compute"):
                        vi = S.axis.remap("S", [i])
                        B[vi] = A[vi // N, vi % N]

        return Module

    assert well_formed_errors(module((8, 4), R.Tensor((32,), "float16"))) == []
    # the PrimFunc's signature implies 8 * 4 = 32 outputs
    assert any("implies the output R.Tensor((32,)" in e
               for e in well_formed_errors(module((8, 4), R.Tensor((64,), "float16"))))
    assert any("do not fit the PrimFunc's parameters" in e
               for e in well_formed_errors(module((32,), R.Tensor((32,), "float16"))))
    assert any("implies the output" in e for e in well_formed_errors(module((8, 4), R.Tensor((32,), "float32"))))


def test_parameter_belongs_to_one_function():
    x = relax.Var("x", T)
    mod = IRModule({"f1": relax.Function([x], relax.SeqExpr([], x), T),
                    "f2": relax.Function([x], relax.SeqExpr([], x), T)})
    assert "function f2: Relax variable x is used as a parameter in both function 'f1' and function 'f2'" \
        in well_formed_errors(mod)


def test_inline_prim_func_and_shape_dtype():
    x = relax.Var("x", relax.TensorStructInfo((), "int32"))
    prim = tir.PrimFunc([], tir.Evaluate(0))
    assert any("in-line PrimFunc" in e for e in _errors_of([], [relax.VarBinding(x, prim)], x))
    with pytest.raises(minitvm.TVMError, match="ShapeStructInfo can only have dtype of int64"):
        relax.Var("y", R.Tensor([tir.Var("dim", "float32")], "float32"))


def test_normalize_gives_a_bare_variable_its_struct_info():
    x = relax.Var("x", T)
    gv = relax.Var("gv")  # no struct info, as TVM's tests build it
    f = relax.Function([x], relax.SeqExpr([relax.BindingBlock([relax.VarBinding(gv, relax.op.exp(x))])], gv), T)
    out = relax.transform.Normalize()(IRModule({"main": f}))["main"]
    assert out.body.blocks[0].bindings[0].var.struct_info.shape_values == (2, 3)
