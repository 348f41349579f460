"""AnnotateTIROpPattern: each PrimFunc gets the OpPattern fusion needs."""

from __future__ import annotations

from minitvm import relax, te, topi
from minitvm.relax.op.registry import OpPattern
from minitvm.relax.transform import AnnotateTIROpPattern
from minitvm.relax.transform.annotate_tir_op_pattern import analyze_op_pattern
from minitvm.script import tir as T

from ..vm.mlp_models import linear0, relu0


def pattern_of(fn, *shapes):
    """The op_pattern of the PrimFunc ``te.create_prim_func`` makes of ``fn`` on placeholders."""
    args = [te.placeholder(s, "float32", name=f"x{i}") for i, s in enumerate(shapes)]
    func = te.create_prim_func([*args, fn(*args)])
    return analyze_op_pattern(func)


def test_patterns_of_topi_kernels():
    assert pattern_of(topi.add, (4, 8), (4, 8)) == OpPattern.ELEMWISE
    assert pattern_of(topi.nn.relu, (4, 8)) == OpPattern.ELEMWISE
    # TVM's rule: an elementwise load next to a broadcast one keeps the block elementwise
    assert pattern_of(topi.add, (4, 8), (8,)) == OpPattern.ELEMWISE
    assert pattern_of(lambda a: topi.broadcast_to(a, (4, 8)), (8,)) == OpPattern.BROADCAST
    assert pattern_of(lambda a: topi.transpose(a, (1, 0)), (4, 8)) == OpPattern.INJECTIVE
    assert pattern_of(lambda a: topi.reshape(a, (32,)), (4, 8)) == OpPattern.INJECTIVE
    assert pattern_of(lambda a: topi.sum(a, axis=1), (4, 8)) == OpPattern.COMM_REDUCE
    assert pattern_of(topi.nn.matmul, (4, 8), (8, 2)) == OpPattern.OUT_ELEMWISE_FUSABLE


def test_reduction_with_an_epilogue_block_is_out_ewise_fusable():
    assert analyze_op_pattern(linear0) == OpPattern.OUT_ELEMWISE_FUSABLE   # matmul block + bias block
    assert analyze_op_pattern(relu0) == OpPattern.ELEMWISE


@T.prim_func
def clip_if(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            if A[vi] > T.float32(0):
                B[vi] = A[vi]
            else:
                B[vi] = T.float32(0)


@T.prim_func
def reverse(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[7 - vi] = A[vi]


@T.prim_func
def no_store(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            T.evaluate(A[vi])


def test_opaque_blocks_as_tvm_judges_them():
    # TVM looks at the stores, not the control flow: both stores of clip_if use the same
    # indices and its loads match them, so it is elementwise
    assert analyze_op_pattern(clip_if) == OpPattern.ELEMWISE
    assert analyze_op_pattern(reverse) == OpPattern.OPAQUE    # a store index the loads do not share
    assert analyze_op_pattern(no_store) == OpPattern.OPAQUE


def test_pass_sets_the_attribute_and_keeps_an_existing_one():
    bb = relax.BlockBuilder()
    gv0 = bb.add_func(relu0, "relu0")
    gv1 = bb.add_func(clip_if.with_attr("op_pattern", int(OpPattern.INJECTIVE)), "clip_if")
    mod = AnnotateTIROpPattern()(bb.get())
    assert mod[gv0].attrs["op_pattern"] == OpPattern.ELEMWISE
    assert mod[gv1].attrs["op_pattern"] == OpPattern.INJECTIVE
    assert AnnotateTIROpPattern()(mod) is mod   # nothing left to annotate
