"""relax.dpl is_region: a piece of a dataflow block of any length between two bindings, refused when
it is not convex or (with only_used_by) read from outside; rewrites checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import IRModule
from minitvm.relax.dpl import PatternContext, is_const, is_convex, is_op, is_region, rewrite_bindings, wildcard

R = relax.op
RNG = np.random.default_rng(37)
SCALES = (1.5, -0.5, 3.0, 0.25)


def _chain(n: int, side: str = "", second_reader: bool = False) -> relax.Function:
    """``(x + y) * c1 * ... * cn - x``; ``side="from_src"``: ``exp`` of ``x + y`` multiplied in
    halfway (a second path from the add to the subtract), ``"from_x"``: ``exp(x)`` instead;
    ``second_reader``: the chain's second product is also an output."""
    x, y = (relax.Var(name, relax.TensorStructInfo((3, 4), "float32")) for name in "xy")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            src = cur = bb.emit(R.add(x, y))
            seen = []
            for i in range(n):
                cur = bb.emit(R.multiply(cur, relax.const(np.float32(SCALES[i]))))
                if i == 0 and side:
                    cur = bb.emit(R.multiply(cur, bb.emit(R.exp(src if side == "from_src" else x))))
                seen.append(cur)
            out = bb.emit(R.subtract(cur, x))
            gv = bb.emit_output(relax.Tuple([out, seen[1]]) if second_reader else out)
        bb.emit_func_output(gv)
    return bb.get()["main"]


def _reference(n: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x + y) * np.prod(np.float32(SCALES[:n])) - x


def _run(func: relax.Function, *arrays: np.ndarray):
    vm = relax.VirtualMachine(minitvm.compile(IRModule({"main": func}), target="llvm"), minitvm.cpu())
    return vm["main"](*[minitvm.nd.array(a) for a in arrays])


def _ops(func: relax.Function) -> list[str]:
    return [b.value.op.name for b in func.body.blocks[0].bindings if isinstance(b.value, relax.Call)]


def _fold_context(only: bool = True, path=None, **options):
    """``x + y``, then any number of multiplications (by constants unless ``path`` says), then
    ``- x``: the region between the add and the subtract."""
    with PatternContext() as ctx:
        a, b = wildcard(), wildcard()
        src = is_op("relax.add")(a, b)
        sink = is_op("relax.subtract")(wildcard(), a)
        chain = is_region(src, sink, path=path or is_op("relax.multiply")(wildcard(), is_const()), **options)
        if only:
            chain.only_used_by(sink)
        else:
            chain.used_by(sink)
    return ctx, (a, b, src, sink, chain)


def _fold(ctx_parts):
    """``(a + b) * c1 * ... * cn - a``  ->  ``a * (P - 1) + b * P`` with ``P = c1 * ... * cn``."""
    a, b, _, sink, chain = ctx_parts

    def rewrite(m, bindings):
        scale = np.prod([bindings[v].args[1].data.numpy() for v in m[chain][1:]], dtype="float32")
        return {m[sink]: R.add(R.multiply(m[a], relax.const(scale - np.float32(1))),
                               R.multiply(m[b], relax.const(scale)))}

    return rewrite


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_chain_of_any_length_matches_and_folds(n):
    func = _chain(n)
    ctx, parts = _fold_context()
    a, b, src, sink, chain = parts
    match = ctx.match_dfb(func.body.blocks[0])
    names = [v.name_hint for v in match[chain]]
    assert len(names) == n + 1 and names[0] == match[src].name_hint  # src, then the n products
    assert match[sink] not in match[chain] and (match[a].name_hint, match[b].name_hint) == ("x", "y")
    new = rewrite_bindings(ctx, _fold(parts), func)
    assert _ops(new) == ["relax.multiply", "relax.multiply", "relax.add"]  # the whole chain is gone
    x, y = (RNG.standard_normal((3, 4)).astype("float32") for _ in range(2))
    np.testing.assert_allclose(_run(new, x, y).numpy(), _reference(n, x, y), rtol=1e-5, atol=1e-6)


def test_a_region_that_is_not_convex_is_refused():
    # exp(x + y) leaves the chain of multiplications and comes back into it: fusing the chain
    # alone would need exp both before and after it
    ctx, _ = _fold_context(path=is_op("relax.multiply")(wildcard(), wildcard()))
    assert ctx.match_dfb(_chain(3, side="from_src").body.blocks[0]) is None
    # the same shape with exp(x) -- not on a path from the add -- is convex and matches
    match = ctx.match_dfb(_chain(3, side="from_x").body.blocks[0])
    assert len(match[ctx.regions[0]]) == 1 + 4  # the add, three products and the product with exp(x)


def test_only_used_by_refuses_a_chain_with_a_second_reader():
    func = _chain(3, second_reader=True)
    ctx, parts = _fold_context(only=True)
    assert ctx.match_dfb(func.body.blocks[0]) is None
    assert rewrite_bindings(ctx, _fold(parts), func) is func
    # used_by instead: the fold runs, and the second product stays for its other reader
    ctx, parts = _fold_context(only=False)
    new = rewrite_bindings(ctx, _fold(parts), func)
    assert new is not func and _ops(new).count("relax.subtract") == 0
    x, y = (RNG.standard_normal((3, 4)).astype("float32") for _ in range(2))
    out, second = _run(new, x, y)
    np.testing.assert_allclose(out.numpy(), _reference(3, x, y), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(second.numpy(), (x + y) * np.float32(SCALES[0] * SCALES[1]), rtol=1e-6)


def test_contains_max_len_and_inputs():
    three = _chain(3).body.blocks[0]
    assert _fold_context(contains=is_op("relax.exp")(wildcard()))[0].match_dfb(three) is None
    assert _fold_context(contains=is_op("relax.multiply")(wildcard(), is_const()))[0].match_dfb(three) is not None
    assert _fold_context(max_len=2)[0].match_dfb(three) is None
    assert _fold_context(max_len=3)[0].match_dfb(three) is not None
    # inputs: a transpose read only by the region joins it; one read elsewhere too does not
    x, y = (relax.Var(name, relax.TensorStructInfo((4, 4), "float32")) for name in "xy")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            ty = bb.emit(R.permute_dims(y))  # read by the add and the product: joins
            tx = bb.emit(R.permute_dims(x))  # read by the subtract and the output: does not
            s = bb.emit(R.multiply(bb.emit(R.add(x, ty)), ty))
            gv = bb.emit_output(R.subtract(s, tx))
            out = bb.emit_output(relax.Tuple([gv, tx]))
        bb.emit_func_output(out)
    with PatternContext() as ctx:
        src, sink = is_op("relax.add")(wildcard(), wildcard()), is_op("relax.subtract")(wildcard(), wildcard())
        region = is_region(src, sink, inputs=is_op("relax.permute_dims")(wildcard()))
    match = ctx.match_dfb(bb.get()["main"].body.blocks[0])
    assert [v.name_hint for v in match[region]] == [ty.name_hint, match[src].name_hint, s.name_hint]


def test_such_that_adds_a_test_written_in_python():
    func = _chain(3)
    big = is_op("relax.multiply")(wildcard(), is_const().such_that(lambda c: abs(float(c.data.numpy())) > 1))
    values = [b.value for b in func.body.blocks[0].bindings]
    assert [big.match(v) for v in values] == [False, True, False, True, False, False]  # ... subtract, output
    assert "such_that(<lambda>)" in repr(big)


def test_is_convex_and_misuse():
    block = _chain(3).body.blocks[0]
    lv = [b.var for b in block.bindings]  # add, three products, subtract, output
    assert is_convex(block, [lv[0], lv[1], lv[2]]) and is_convex(block, [lv[1]])
    assert not is_convex(block, [lv[0], lv[2]])  # lv[1] lies between them, outside
    with pytest.raises(RuntimeError, match="is_region needs a PatternContext"):
        is_region(wildcard(), wildcard())
    with PatternContext():
        region = is_region(wildcard(), wildcard())
        with pytest.raises(ValueError, match="max_len"):
            is_region(wildcard(), wildcard(), max_len=-1)
    with pytest.raises(TypeError, match="matches bindings of a dataflow block"):
        is_op("relax.exp")(region).match(R.exp(lv[0]))
