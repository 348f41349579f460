"""relax.dpl: is_call_dps_packed / is_call_packed, is_shape, FunctionPattern, same_shape_as
(a PatternContext constraint), dup and fork_to -- what matches and what does not."""

from __future__ import annotations

import pytest

from minitvm import relax, tir
from minitvm.relax.dpl import (
    FunctionPattern,
    PatternContext,
    is_call_dps_packed,
    is_call_packed,
    is_op,
    is_shape,
    is_var,
    wildcard,
)
from minitvm.script import relax as R


@R.function(private=True)
def _packed(x: R.Tensor((4, 4), "float32")):
    with R.dataflow():
        a = R.call_dps_packed("ext_mm", (x, x), out_sinfo=R.Tensor((4, 4), "float32"))
        b = R.call_dps_packed("ext_relu", (a,), out_sinfo=R.Tensor((4, 4), "float32"))
        c = R.call_dps_packed("ext_relu", (a,), out_sinfo=R.Tensor((4, 4), "float32"))
        R.output(b, c)
    return (b, c)


def test_call_dps_packed_patterns_in_a_context():
    block = _packed.body.blocks[0]
    with PatternContext() as ctx:
        mm = is_call_dps_packed("ext_mm")
        relu = is_call_dps_packed("ext_relu")
        mm >> relu  # noqa: B015 - only used by (as TVM spells it)
    assert ctx.match_dfb(block) is None  # `a` has two readers, so neither relu is its only one
    with PatternContext() as ctx:
        mm, relu = is_call_dps_packed("ext_mm"), is_call_dps_packed("ext_relu")
        second = relu.dup()
        mm.fork_to(relu, second)  # mm ^ relu and mm ^ (a second relu): used by both
    match = ctx.match_dfb(block)
    assert match[mm] is block.bindings[0].var and match[relu] is block.bindings[1].var
    assert match[second] is block.bindings[2].var
    with PatternContext() as ctx:
        is_call_dps_packed("ext_mm") >> is_call_dps_packed("ext_missing")
    assert ctx.match_dfb(block) is None


def test_call_packed_shape_and_function_patterns():
    x, w = relax.Var("x", R.Tensor((2,), "float32")), relax.Var("w", R.Tensor((2,), "float32"))
    call = relax.Call(relax.ExternFunc("test.vm.mul"), [x, w])
    assert is_call_packed("test.vm.mul").match(call)
    assert is_call_packed("test.vm.mul", [is_var("x"), is_var("w")]).match(call)
    assert not is_call_packed("test.vm.add").match(call)
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    assert is_shape([n, m, n + m]).match(relax.ShapeExpr([n, m, m + n]))  # proved equal
    assert not is_shape([n, m, n * m]).match(relax.ShapeExpr([n, m, n + m]))
    assert is_shape([2, 3])[1] == 3 and len(is_shape([2, 3])) == 2
    fn = relax.Function([x, w], relax.op.add(x, w), R.Tensor((2,), "float32")).with_attr({"Codegen": "c"})
    xp, wp = is_var("x"), is_var("w")
    pattern = FunctionPattern([xp, wp], is_op("relax.add")(xp, wp))
    assert pattern.has_attr({"Codegen": "c"}).match(fn) and not pattern.has_attr({"Codegen": "d"}).match(fn)
    assert not FunctionPattern([xp], wildcard()).match(fn)  # one parameter too few


@pytest.mark.parametrize("second, same", [(R.Tensor(("n", 8), "float32"), True),
                                          (R.Tensor(("m", 8), "float32"), False)])
def test_same_shape_as_needs_provably_equal_shapes(second, same):
    n = tir.Var("n", "int64")
    a = relax.Var("a", R.Tensor((n, 8), "float32"))
    b = relax.Var("b", second if not same else R.Tensor((n, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [a, b]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.add(a, b))
        bb.emit_func_output(out)
    block = bb.get()["f"].body.blocks[0]
    with PatternContext() as ctx:
        lhs, rhs = wildcard(), wildcard()
        is_op("relax.add")(lhs, rhs)
        lhs.same_shape_as(rhs)
    assert (ctx.match_dfb(block) is not None) == same


def test_chains_and_parameters_in_a_context():
    block = _packed.body.blocks[0]
    with PatternContext() as ctx:
        chain = is_call_dps_packed("ext_mm") >> is_call_dps_packed("ext_relu")  # only used by: fails
        assert len(chain.patterns) == 2
        copy = chain.dup()
        assert all(a is not b for a, b in zip(chain.patterns, copy.patterns))
    assert ctx.match_dfb(block) is None
    with PatternContext() as ctx:
        x = is_var("x")
        mm = is_call_dps_packed("ext_mm")
        x ^ mm  # noqa: B015 - a parameter used by the binding: it is matched too
    match = ctx.match_dfb(block)
    assert match[x] is _packed.params[0] and match[mm] is block.bindings[0].var


def test_struct_info_pattern_binds_its_symbolic_variables_once():
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    lhs = wildcard().has_struct_info(R.Tensor([m, n]))
    rhs = wildcard().has_struct_info(R.Tensor([m, n]))
    add = is_op("relax.add")(lhs, rhs)
    a = relax.Var("a", R.Tensor((64, 128), "int32"))
    b = relax.Var("b", R.Tensor((1, 128), "int32"))
    bb = relax.BlockBuilder()
    assert add.match(bb.normalize(relax.op.add(a, a)))      # m = 64, n = 128 both times
    assert not add.match(bb.normalize(relax.op.add(a, b)))  # m = 64, then 1: a broadcast


def test_use_index_counts_the_reads_of_the_consumer():
    @R.function
    def diamond(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.call_dps_packed("ext_relu", (x,), out_sinfo=R.Tensor((4,), "float32"))
            b = R.call_dps_packed("ext_add", (a, a), out_sinfo=R.Tensor((4,), "float32"))
            R.output(b)
        return b

    with PatternContext() as ctx:
        fork, join = is_call_dps_packed("ext_relu"), is_call_dps_packed("ext_add")
        fork.only_used_by(join, index=0)
        fork.only_used_by(join, index=1)  # read twice: as the first and the second argument
    assert ctx.match_dfb(diamond.body.blocks[0]) is not None
    with PatternContext() as ctx:
        fork, join = is_call_dps_packed("ext_relu"), is_call_dps_packed("ext_add")
        fork.used_by(join, index=2)  # there is no third read
    assert ctx.match_dfb(diamond.body.blocks[0]) is None
