"""Impure calls survive every pass that drops or merges bindings (TVM's ``contains_impure_call``).

Regression: an unused ``R.call_packed`` into a registered function that writes its output
argument was dropped by DeadCodeElimination when it stood in a dataflow block, so the VM
never wrote the output."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.analysis import contains_impure_call, remove_all_unused
from minitvm.relax.transform import DeadCodeElimination, EliminateCommonSubexpr, FoldConstant
from minitvm.script import ir as I
from minitvm.script import relax as R

RNG = np.random.default_rng(13)
T4 = relax.TensorStructInfo((4,), "float32")


@pytest.fixture(scope="module", autouse=True)
def _scale_into():
    """``test.impure.scale_into(x, out)``: writes ``3 * x`` into ``out``, returns nothing."""
    def scale_into(x, out):
        out.copyfrom(x.numpy() * 3)

    minitvm.register_func("test.impure.scale_into", scale_into, override=True)


def _write_out_call(src, out):
    return relax.Call(relax.extern("test.impure.scale_into"), [src, out], sinfo_args=[relax.TupleStructInfo([])])


def _module_with_unused_impure_call(in_dataflow: bool):
    """main(x, out): writes 3 * (x + x) into ``out`` through the packed function, returns x + x."""
    x, out = relax.Var("x", T4), relax.Var("out", T4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, out], pure=False):
        if in_dataflow:
            with bb.dataflow():
                y = bb.emit(relax.op.add(x, x))
                bb.emit(_write_out_call(y, out))  # result unused: kept for its effect
                gv = bb.emit_output(y)
        else:
            gv = bb.emit(relax.op.add(x, x))
            bb.emit(_write_out_call(gv, out))
        bb.emit_func_output(gv)
    return bb.get()


def _run(mod, pipeline):
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm", relax_pipeline=pipeline), minitvm.cpu())
    x = RNG.standard_normal(4).astype("float32")
    out = minitvm.nd.array(RNG.standard_normal(4).astype("float32"))
    result = vm["main"](minitvm.nd.array(x), out)
    return x, result.numpy(), out.numpy()


@pytest.mark.parametrize("in_dataflow", [True, False])
@pytest.mark.parametrize("pipeline", ["default", "zero"])
def test_unused_packed_call_writes_its_output_end_to_end(in_dataflow, pipeline):
    x, result, out = _run(_module_with_unused_impure_call(in_dataflow), pipeline)
    np.testing.assert_allclose(result, x + x, rtol=1e-6)
    np.testing.assert_allclose(out, 3 * (x + x), rtol=1e-6)


def test_unused_packed_call_in_tvmscript_end_to_end():
    @I.ir_module
    class Module:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32"), out: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.multiply(x, x)
            _ = R.call_packed("test.impure.scale_into", y, out, sinfo_args=R.Tuple())
            return x

    x, result, out = _run(Module, "default")
    np.testing.assert_allclose(result, x)
    np.testing.assert_allclose(out, 3 * x * x, rtol=1e-6)


def test_dead_code_elimination_keeps_impure_call_and_what_it_reads():
    mod = _module_with_unused_impure_call(in_dataflow=True)
    x, out = mod["main"].params
    bb = relax.BlockBuilder()
    with bb.function("main", [x, out], pure=False):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x))
            bb.emit(relax.op.exp(y))  # unused and pure: goes
            bb.emit(_write_out_call(y, out))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    after = DeadCodeElimination()(bb.get())
    minitvm.ir.assert_structural_equal(after, mod)


def test_remove_all_unused_keeps_impure_calls_drops_pure_ones():
    x, out = relax.Var("x", T4), relax.Var("out", T4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, out], pure=False):
        doubled = bb.emit(relax.op.add(x, x))          # read only by the impure call: stays
        bb.emit(relax.op.multiply(x, x))               # pure, unused: goes
        bb.emit(relax.call_dps_packed("test.impure.scale_into", [x], T4))  # pure per TVM: goes
        bb.emit(_write_out_call(doubled, out))         # impure: stays
        bb.emit_func_output(x)
    func = bb.get()["main"]
    kept = remove_all_unused(func)
    values = [b.value for b in kept.body.blocks[0].bindings]
    assert [getattr(v.op, "name", getattr(v.op, "global_symbol", None)) for v in values] == \
        ["relax.add", "test.impure.scale_into"]
    assert remove_all_unused(kept) is kept


def test_remove_all_unused_keeps_match_cast_even_unused():
    """A match_cast is a run-time check and defines its symbolic variables: it stays (TVM)."""
    n = minitvm.tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            bb.match_cast(x, relax.TensorStructInfo((n,), "float32"))  # unused
            gv = bb.emit_output(relax.op.add(x, x))
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    assert remove_all_unused(func) is func


def test_contains_impure_call():
    @I.ir_module
    class Module:
        @R.function
        def pure_func(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.add(x, x)
            return R.multiply(y, x)

        @R.function(pure=False)
        def impure_func(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            _ = R.call_packed("test.impure.scale_into", x, x, sinfo_args=R.Tuple())
            return x

        @R.function(pure=False)
        def calls_impure(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Module
            y = cls.impure_func(x)
            return y

    assert not contains_impure_call(Module["pure_func"])
    assert contains_impure_call(Module["impure_func"])
    assert contains_impure_call(Module["calls_impure"], mod=Module)
    # a local impure function that is only defined, never called, has no effect
    x = relax.Var("x", T4)
    inner_x = relax.Var("a", T4)
    inner = relax.Function([inner_x], relax.SeqExpr([relax.BindingBlock(
        [relax.VarBinding(relax.Var("e", relax.TupleStructInfo([])), _write_out_call(inner_x, inner_x))])], inner_x),
        T4, is_pure=False)
    outer = relax.Function([x], relax.SeqExpr([relax.BindingBlock(
        [relax.VarBinding(relax.Var("f", relax.FuncStructInfo([T4], T4, purity=False)), inner)])], x), T4)
    assert not contains_impure_call(outer)
    assert contains_impure_call(inner)


def test_contains_impure_call_ignores_own_recursive_calls():
    gv = minitvm.ir.GlobalVar("loop")
    x = relax.Var("x", T4)
    call = relax.Call(gv, [x])
    relax.expr._set_struct_info(gv, relax.FuncStructInfo([T4], T4, purity=False))
    relax.expr._set_struct_info(call, T4)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(relax.Var("y", T4), call)])], x)
    assert contains_impure_call(body)
    assert not contains_impure_call(body, own_name=gv)


def test_cse_and_fold_constant_leave_impure_calls_alone():
    x, out = relax.Var("x", T4), relax.Var("out", T4)
    c = relax.const(RNG.standard_normal(4).astype("float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, out], pure=False):
        bb.emit(_write_out_call(c, out))
        bb.emit(_write_out_call(c, out))  # the same call twice: two effects
        bb.emit_func_output(x)
    mod = bb.get()
    assert len(FoldConstant()(mod)["main"].body.blocks[0].bindings) == 2
    assert len(EliminateCommonSubexpr()(mod)["main"].body.blocks[0].bindings) == 2


def test_extern_names_a_packed_function():
    f = relax.extern("test.impure.scale_into")
    assert isinstance(f, relax.ExternFunc) and f.global_symbol == "test.impure.scale_into"
    assert not relax.expr.struct_info_of(f).purity   # an extern function may have effects
    with pytest.raises(TypeError, match="FuncStructInfo"):
        relax.extern("f", T4)
