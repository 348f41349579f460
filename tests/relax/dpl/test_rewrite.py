"""relax.dpl.rewrite_call: matched bindings replaced, the result tidied, checked by structure and by running it."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.relax.dpl import is_const, is_op, rewrite_call, wildcard
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Dense:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w: R.Tensor((16, 8), "float32"), b: R.Tensor((8,), "float32"),
             s: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            lv0 = R.matmul(x, w)
            lv1 = R.add(lv0, b)
            lv2 = R.multiply(lv1, s)
            gv = R.add(lv2, lv1)
            R.output(gv)
        return gv


def _run(mod: IRModule, *arrays: np.ndarray) -> np.ndarray:
    ex = minitvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    return vm["main"](*[minitvm.nd.array(a) for a in arrays]).numpy()


def _inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype("float32") for s in ((4, 16), (16, 8), (8,), (4, 8))]


def test_multiply_add_becomes_ewise_fma_across_bindings():
    a, b, c = wildcard(), wildcard(), wildcard()
    pat = is_op("relax.add")(is_op("relax.multiply")(a, b), c)
    new = rewrite_call(pat, lambda expr, m: relax.op.ewise_fma(m[a], m[b], m[c]), Dense["main"])

    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w: R.Tensor((16, 8), "float32"), b: R.Tensor((8,), "float32"),
                 s: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            lv0 = R.matmul(x, w)
            lv1 = R.add(lv0, b)
            gv = R.ewise_fma(lv1, s, lv1)
            R.output(gv)
        return gv

    assert_structural_equal(new, main)


def test_no_match_returns_the_same_function():
    pat = is_op("relax.subtract")(wildcard(), wildcard())
    assert rewrite_call(pat, lambda e, m: relax.op.add(*e.args), Dense["main"]) is Dense["main"]
    # a rewriter that gives the match back leaves it alone too
    assert rewrite_call(is_op("relax.add")(wildcard(), wildcard()), lambda e, m: e, Dense["main"]) is Dense["main"]


def test_rewrite_into_a_new_fused_function_runs_like_numpy():
    """The course's dense + add fusion as a pattern: matmul then add becomes a call of a
    Primitive function, which the zero pipeline's FuseTIR turns into one kernel."""
    mod = Dense
    x, w, b = wildcard(), wildcard(), wildcard()
    dense_add = is_op("relax.add")(is_op("relax.matmul")(x, w), b)
    bb = relax.BlockBuilder(mod)

    def fuse(expr, m):
        params = [relax.Var(n, m[p].struct_info) for n, p in (("x", x), ("w", w), ("b", b))]
        with bb.function("fused_dense_add", params, attrs={"Primitive": 1}, private=True):
            with bb.dataflow():
                gv = bb.emit_output(relax.op.add(relax.op.matmul(params[0], params[1]), params[2]))
            bb.emit_func_output(gv)
        gv_fused = bb.get().get_global_var("fused_dense_add")
        return bb.normalize(relax.Call(gv_fused, [m[x], m[w], m[b]]))

    new_main = rewrite_call(dense_add, fuse, mod["main"])
    out = bb.get()
    out["main"] = new_main
    calls = [bn.value for bn in new_main.body.blocks[0].bindings]
    assert [c.op.name_hint if isinstance(c.op, relax.GlobalVar) else c.op.name for c in calls] == \
        ["fused_dense_add", "relax.multiply", "relax.add"]
    xs = _inputs(1)
    y = xs[0] @ xs[1] + xs[2]
    np.testing.assert_allclose(_run(out, *xs), y * xs[3] + y, rtol=1e-5, atol=1e-5)


def test_simplification_repeats_until_nothing_matches():
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            one = R.const(1.0, "float32")
            lv0 = R.multiply(x, one)
            lv1 = R.multiply(lv0, one)
            gv = R.nn.relu(lv1)
            R.output(gv)
        return gv

    x, c = wildcard(), is_const()
    times_one = is_op("relax.multiply")(x, c)

    def drop_one(expr, m):  # m[c] is the constant itself, though the program binds it to `one`
        return m[x] if np.all(m[c].data.numpy() == 1) else expr

    new = rewrite_call(times_one, drop_one, main)

    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            gv = R.nn.relu(x)
            R.output(gv)
        return gv

    assert_structural_equal(new, main)


def test_rewrite_call_names_bad_arguments():
    with pytest.raises(TypeError, match="DFPattern"):
        rewrite_call("relax.add", lambda e, m: e, Dense["main"])
    with pytest.raises(TypeError, match="relax.Function"):
        rewrite_call(wildcard(), lambda e, m: e, Dense)


def test_a_declined_alternative_lets_the_next_one_try():
    """With `p | q` at the top, a rewriter returning the match unchanged for `p` lets `q` try (as in TVM)."""
    any_add = is_op("relax.add")(wildcard(), wildcard())
    x, c = wildcard(), is_const()
    add_const = is_op("relax.add")(x, c)
    seen = []

    def rewriter(expr, m):
        seen.append(any_add in m)
        if any_add in m:
            return expr  # declined
        return relax.op.subtract(m[x], relax.op.negative(m[c]))

    bb = relax.BlockBuilder()
    v = relax.Var("v", relax.TensorStructInfo((3,), "float32"))
    with bb.function("main", [v]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.add(v, relax.const(np.ones(3, "float32"))))
        bb.emit_func_output(out)
    new = rewrite_call(any_add | add_const, rewriter, bb.get()["main"])
    assert seen[:2] == [True, False]
    ops = [b.value.op.name for b in new.body.blocks[0].bindings]
    assert ops == ["relax.negative", "relax.subtract"]


def test_struct_info_condition_accepts_a_more_precise_struct_info():
    """`has_struct_info(R.Tensor([2, 3]))` (any dtype) matches an int32 tensor of that shape."""
    v = relax.Var("v", relax.TensorStructInfo((2, 3), "int32"))
    assert wildcard().has_struct_info(R.Tensor((2, 3))).match(v)
    assert not wildcard().has_struct_info(R.Tensor((3, 2))).match(v)
    assert not wildcard().has_struct_info(R.Tensor((2, 3), "float32")).match(v)
