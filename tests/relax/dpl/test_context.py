"""relax.dpl PatternContext / rewrite_bindings: patterns over several bindings with use constraints,
checked by structure and by running the rewritten function against the original."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import IRModule
from minitvm.relax.dpl import PatternContext, is_op, rewrite_bindings, wildcard
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class TwoProducts:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32"), z: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv0 = R.multiply(x, y)
            lv1 = R.add(lv0, z)  # lv0 is read again below: not an fma
            lv2 = R.multiply(lv1, z)
            lv3 = R.add(lv2, x)  # lv2 read here only: an fma
            gv = R.multiply(lv3, lv0)
            R.output(gv)
        return gv


@I.ir_module
class SharedInput:
    @R.function
    def main(x: R.Tensor((2, 8), "float32"), wq: R.Tensor((8, 4), "float32"), wk: R.Tensor((8, 4), "float32"),
             wv: R.Tensor((8, 4), "float32")):
        with R.dataflow():
            q = R.matmul(x, wq)
            k = R.matmul(x, wk)
            v = R.matmul(x, wv)
            gv = R.add(R.multiply(q, k), v)
            R.output(gv)
        return gv


def _run(func: relax.Function, *arrays: np.ndarray) -> np.ndarray:
    vm = relax.VirtualMachine(minitvm.compile(IRModule({"main": func}), target="llvm"), minitvm.cpu())
    return vm["main"](*[minitvm.nd.array(a) for a in arrays]).numpy()


def _ops(func: relax.Function) -> list[str]:
    return [b.value.op.name for b in func.body.blocks[0].bindings if isinstance(b.value, relax.Call)]


def _fma_context():
    with PatternContext() as ctx:
        a, b, c = wildcard(), wildcard(), wildcard()
        mul = is_op("relax.multiply")(a, b)
        fma = is_op("relax.add")(mul, c)
        mul.only_used_by(fma)
    return ctx, (a, b, c, mul, fma)


def test_only_used_by_skips_a_value_read_twice():
    ctx, (a, b, c, mul, fma) = _fma_context()
    match = ctx.match_dfb(TwoProducts["main"].body.blocks[0])
    assert match is not None
    # the first candidate (lv0, read by lv1 and gv) is refused; lv2 -> lv3 matches, as variables
    assert (match[mul].name_hint, match[fma].name_hint) == ("lv2", "lv3")
    assert (match[a].name_hint, match[b].name_hint, match[c].name_hint) == ("lv1", "z", "x")


def test_rewrite_bindings_rewrites_only_the_safe_match_and_computes_the_same():
    ctx, (a, b, c, mul, fma) = _fma_context()
    func = TwoProducts["main"]
    new = rewrite_bindings(ctx, lambda m, bindings: {m[fma]: relax.op.ewise_fma(m[a], m[b], m[c])}, func)
    assert _ops(new) == ["relax.multiply", "relax.add", "relax.ewise_fma", "relax.multiply"]
    rng = np.random.default_rng(11)
    args = [rng.standard_normal((3, 4)).astype("float32") for _ in range(3)]
    np.testing.assert_allclose(_run(new, *args), _run(func, *args), rtol=1e-6)


def test_an_output_of_the_block_is_not_only_used_by_anything():
    with PatternContext() as ctx:
        mul = is_op("relax.multiply")(wildcard(), wildcard())
        out = is_op("relax.nn.relu")(mul)
        mul >> out  # noqa: B015 - the operator records the constraint (only used by)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            m = bb.emit_output(relax.op.multiply(x, x))  # leaves the block: read after it
            r = bb.emit_output(relax.op.nn.relu(m))
        bb.emit_func_output(relax.Tuple([m, r]))
    assert ctx.match_dfb(bb.get()["main"].body.blocks[0]) is None


def test_used_by_with_an_index_names_the_argument():
    with PatternContext() as ctx:
        lhs = is_op("relax.multiply")(wildcard(), wildcard())
        sub = is_op("relax.subtract")(wildcard(), wildcard(), add_constraint=False)
        lhs.used_by(sub, 1)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            m = bb.emit(relax.op.multiply(x, x))
            s0 = bb.emit(relax.op.subtract(m, x))  # m as argument 0: no
            s1 = bb.emit_output(relax.op.subtract(s0, m))  # m as argument 1: yes
        bb.emit_func_output(s1)
    match = ctx.match_dfb(bb.get()["main"].body.blocks[0])
    assert match[lhs] is m and match[sub] is s1


def test_three_matmuls_sharing_an_input_become_one():
    """Three roots, one shared wildcard: TVM's classic rewrite_bindings example."""
    with PatternContext() as ctx:
        x = wildcard()
        ws = [wildcard() for _ in range(3)]
        mms = [is_op("relax.matmul")(x, w) for w in ws]

    def merge(m, bindings):
        n = [int(m[w].struct_info.shape_values[1]) for w in ws]
        qkv = relax.op.matmul(m[x], relax.op.concat([m[w] for w in ws], axis=1))
        parts = relax.op.split(qkv, [n[0], n[0] + n[1]], axis=1)
        return {m[mm]: relax.TupleGetItem(parts, i) for i, mm in enumerate(mms)}

    func = SharedInput["main"]
    new = rewrite_bindings(ctx, merge, func)
    assert _ops(new).count("relax.matmul") == 1 and "relax.split" in _ops(new)
    rng = np.random.default_rng(12)
    args = [rng.standard_normal(s).astype("float32") for s in ((2, 8), (8, 4), (8, 4), (8, 4))]
    np.testing.assert_allclose(_run(new, *args), _run(func, *args), rtol=1e-5, atol=1e-6)


def test_a_declined_match_changes_nothing():
    ctx, _ = _fma_context()
    func = TwoProducts["main"]
    assert rewrite_bindings(ctx, lambda m, bindings: {}, func) is func


def test_constraints_and_rewrite_bindings_name_bad_use():
    p, q = wildcard(), wildcard()
    with pytest.raises(RuntimeError, match="needs a PatternContext"):
        p.only_used_by(q)
    with pytest.raises(TypeError, match="ctx must be a PatternContext"):
        rewrite_bindings(p, lambda m, b: {}, TwoProducts["main"])
    with pytest.raises(ValueError, match="without patterns"):
        rewrite_bindings(PatternContext(), lambda m, b: {}, TwoProducts["main"])


def _dense_relu(bias: bool, reuse: bool) -> relax.Function:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((3, 3), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = mm = bb.emit(relax.op.matmul(x, w))
            if bias:
                y = bb.emit(relax.op.add(mm, x))
            r = bb.emit(relax.op.nn.relu(y))
            out = bb.emit_output(relax.op.add(r, mm) if reuse else r)
        bb.emit_func_output(out)
    return bb.get()["main"]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("reuse", [False, True])
def test_constraints_of_an_alternative_apply_to_the_branch_taken(bias, reuse):
    with PatternContext() as ctx:
        mm = is_op("relax.matmul")(wildcard(), wildcard())
        biased = is_op("relax.add")(mm, wildcard())
        either = mm | biased
        out = is_op("relax.nn.relu")(either)
        mm.only_used_by(biased)
        either.only_used_by(out)
    match = ctx.match_dfb(_dense_relu(bias, reuse).body.blocks[0])
    assert (match is not None) == (not reuse)  # a second reader of the matmul refuses either branch
    if match is not None:
        assert (biased in match) == bias and match[either] is (match[biased] if bias else match[mm])
