"""A function a BlockBuilder normalized is marked so (``relax.expr.is_normalized``): normalizing
it again, an ExprMutator that changes nothing, CanonicalizeBindings and EliminateCommonSubexpr
with nothing to do return it as it is, without rebuilding its bindings; the rewrites that do
change something still do it (numbers checked against numpy)."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.relax.analysis import remove_all_unused
from minitvm.relax.expr import is_normalized
from minitvm.relax.expr_functor import ExprMutator
from minitvm.relax.transform.canonicalize_bindings import canonicalize_bindings
from minitvm.relax.transform.eliminate_common_subexpr import eliminate_common_subexpr
from minitvm.script import relax as R


def _module(repeat: bool, alias: bool, unused: bool) -> minitvm.IRModule:
    """exp(x) + exp(x) (the second exp only when ``repeat``), an alias of the sum (``alias``) and
    an unused multiply (``unused``)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((4, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.exp(x))
            b = bb.emit(relax.op.exp(x)) if repeat else bb.emit(relax.op.negative(x))
            c = bb.emit(relax.op.add(a, b))
            if unused:
                bb.emit(relax.op.multiply(c, c))
            if alias:
                c = bb.emit(c)
            out = bb.emit_output(c)
        bb.emit_func_output(out)
    return bb.get()


def test_a_normalized_function_is_marked_and_normalizing_it_again_returns_it():
    func = ExprMutator().visit_expr(_module(False, False, False)["main"])
    assert is_normalized(func)
    assert relax.BlockBuilder().normalize(func) is func
    assert ExprMutator().visit_expr(func) is func


def test_a_function_written_by_hand_is_normalized_once_then_kept():
    x = relax.Var("x", R.Tensor((4,), "float32"))
    # the nested call is bound to a variable of its own by normalizing
    func = relax.Function([x], relax.SeqExpr([], relax.op.add(relax.op.exp(x), x)), None)
    assert not is_normalized(func)
    once = relax.BlockBuilder().normalize(func)
    assert is_normalized(once) and once is not func
    assert relax.BlockBuilder().normalize(once) is once


def test_the_cleanups_return_a_function_with_nothing_to_clean_as_it_is():
    func = canonicalize_bindings(_module(False, False, False)["main"])  # the output copy folded
    assert is_normalized(func)
    assert canonicalize_bindings(func) is func
    assert eliminate_common_subexpr(func) is func
    assert remove_all_unused(func) is func


def test_the_cleanups_still_clean_and_the_result_computes_the_same():
    mod = _module(True, True, True)
    func = mod["main"]
    canonical = canonicalize_bindings(func)
    assert canonical is not func and "lv3 = lv2" not in canonical.script()
    merged = eliminate_common_subexpr(canonical)
    pruned = remove_all_unused(merged)
    text = pruned.script()
    assert text.count("R.exp(") == 1 and "R.multiply" not in text
    assert is_normalized(pruned)  # fewer bindings, each as it was
    xs = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
    out = {}
    for name, f in (("before", func), ("after", pruned)):
        ex = minitvm.compile(minitvm.IRModule({"main": f}))
        out[name] = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(xs)).numpy()
    np.testing.assert_allclose(out["after"], out["before"], rtol=1e-6)
    np.testing.assert_allclose(out["after"], 2 * np.exp(xs), rtol=1e-5)
