"""te.create_prim_func builds the same PrimFunc a learner writes by hand."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import te, tir
from minitvm.ir import assert_structural_equal, structural_equal
from minitvm.script import from_source
from minitvm.target.interpreter import run_prim_func
from minitvm.tir import (
    Block,
    BlockRealize,
    BufferLoad,
    BufferStore,
    FloatImm,
    For,
    IntImm,
    IterVar,
    Max,
    PrimFunc,
    Range,
    SeqStmt,
    Var,
    analysis,
    decl_buffer,
    post_order_visit,
)


def _mm_relu_te(n: int = 128):
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    Y = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((n, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    return te.create_prim_func([A, B, C]).with_attr({"global_symbol": "mm_relu"})


def _block(name, iter_vars, body, init=None, alloc=()):
    """A block with the reads/writes TVMScript infers."""
    blk = Block(name, iter_vars=tuple(iter_vars), alloc_buffers=tuple(alloc), init=init, body=body)
    reads, writes = analysis.get_block_read_write_region(blk)
    return Block(name, iter_vars=tuple(iter_vars), alloc_buffers=tuple(alloc), reads=tuple(reads),
                 writes=tuple(writes), init=init, body=body)


def _nest(loops, block):
    stmt = BlockRealize(tuple(v for v, _ in loops), IntImm("bool", 1), block)
    for v, extent in reversed(loops):
        stmt = For(v, IntImm("int32", 0), IntImm("int32", extent), "serial", stmt)
    return stmt


def _mm_relu_by_hand(n: int = 128) -> PrimFunc:
    """The mm_relu of the MLC course, built node by node."""
    a, b, c = Var("A", "handle"), Var("B", "handle"), Var("C", "handle")
    A, B, C = (decl_buffer((n, n), "float32", name) for name in "ABC")
    Y = decl_buffer((n, n), "float32", "Y")
    dom = Range(IntImm("int32", 0), IntImm("int32", n))

    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("v_i"), Var("v_j"), Var("v_k")
    y_block = _block(
        "Y",
        [IterVar(dom, vi, "spatial"), IterVar(dom, vj, "spatial"), IterVar(dom, vk, "reduce")],
        BufferStore(Y, Y[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
        init=BufferStore(Y, FloatImm("float32", 0.0), (vi, vj)),
    )
    i2, j2 = Var("i"), Var("j")
    wi, wj = Var("v_i"), Var("v_j")
    c_block = _block(
        "C",
        [IterVar(dom, wi, "spatial"), IterVar(dom, wj, "spatial")],
        BufferStore(C, Max(Y[wi, wj], FloatImm("float32", 0.0)), (wi, wj)),
    )
    body = SeqStmt((_nest([(i, n), (j, n), (k, n)], y_block), _nest([(i2, n), (j2, n)], c_block)))
    root = Block("root", iter_vars=(), alloc_buffers=(Y,), reads=(), writes=(), body=body)
    return PrimFunc((a, b, c), {a: A, b: B, c: C}, BlockRealize((), IntImm("bool", 1), root),
                    attrs={"global_symbol": "mm_relu", "tir.noalias": True})


def test_mm_relu_matches_hand_written():
    assert_structural_equal(_mm_relu_te(), _mm_relu_by_hand())


def test_mm_relu_shape_of_the_result():
    func = _mm_relu_te()
    assert func.attrs == {"global_symbol": "mm_relu", "tir.noalias": True}
    assert [b.name for b in func.buffers] == ["A", "B", "C"]
    root = func.body.block
    assert root.name_hint == "root" and [b.name for b in root.alloc_buffers] == ["Y"]
    nest = root.body.seq[0]
    names = []
    while isinstance(nest, For):
        names.append(nest.loop_var.name)
        assert nest.kind == "serial" and nest.min == IntImm("int32", 0) and nest.annotations == {}
        nest = nest.body
    assert names == ["i", "j", "k"]
    block = nest.block
    assert block.name_hint == "Y"
    assert [iv.var.name for iv in block.iter_vars] == ["v_i", "v_j", "v_k"]
    assert [iv.iter_type for iv in block.iter_vars] == ["spatial", "spatial", "reduce"]
    assert [r.buffer.name for r in block.reads] == ["A", "B"]
    assert [w.buffer.name for w in block.writes] == ["Y"]
    # TVM's operand order: the accumulator first
    assert block.body.value.a.buffer.name == "Y"


def test_hand_written_differs_when_it_should():
    other = _mm_relu_by_hand().with_attr("global_symbol", "other")
    assert not structural_equal(_mm_relu_te(), other)
    assert not structural_equal(_mm_relu_te(64), _mm_relu_by_hand())


def test_default_attrs_and_single_op_has_no_seq():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    assert func.attrs == {"global_symbol": "main", "tir.noalias": True}
    root = func.body.block
    assert isinstance(root.body, For) and root.alloc_buffers == ()
    assert isinstance(func.body.predicate, IntImm) and func.body.predicate.dtype == "bool"


@pytest.mark.parametrize("reducer, identity", [
    (te.sum, FloatImm("float32", 0.0)),
    (te.max, tir.min_value("float32")),
    (te.min, tir.max_value("float32")),
])
def test_reduction_init_is_the_identity(reducer, identity):
    A = te.placeholder((8, 16), name="A")
    k = te.reduce_axis((0, 16), "k")
    R = te.compute((8,), lambda i: reducer(A[i, k], axis=k), name="R")
    block = te.create_prim_func([A, R]).body.block.body.body.body.block
    assert_structural_equal(block.init.value, identity)
    body = block.body.value
    assert isinstance(body.a, tir.BufferLoad) and body.a.buffer.name == "R"
    assert [r.buffer.name for r in block.reads] == ["A"]


def test_where_guards_the_update():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    L = te.compute((8,), lambda i: te.sum(A[i, k], axis=k, where=k <= i), name="L")
    block = te.create_prim_func([A, L]).body.block.body.body.body.block
    assert isinstance(block.body, tir.IfThenElse)
    assert isinstance(block.body.then_case, BufferStore)


def test_intermediates_are_allocated_in_topological_order():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((4,), lambda i: B[i] + C[i], name="D")
    func = te.create_prim_func([A, D])
    root = func.body.block
    assert [b.name for b in root.alloc_buffers] == ["B", "C"]
    assert [s.body.block.name_hint for s in root.body.seq] == ["B", "C", "D"]


def test_symbolic_shape():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + 1.0, name="B")
    func = te.create_prim_func([A, B])
    loop = func.body.block.body
    assert loop.extent is n
    assert func.buffers[0].shape[0] is n
    a = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    b = np.zeros((3, 4), "float32")
    run_prim_func(func, [a, b])  # n is taken from the shape of the array
    np.testing.assert_allclose(b, a + 1.0)


def test_zero_dim_result_of_a_symbolic_reduction():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    rows = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="rows")
    r = te.reduce_axis((0, n), "r")
    total = te.compute((), lambda: te.sum(rows[r], axis=r), name="total")
    func = te.create_prim_func([A, total])
    a = np.random.default_rng(1).standard_normal((5, 4)).astype("float32")
    out = np.zeros((), "float32")
    run_prim_func(func, [a, out])
    np.testing.assert_allclose(out, a.max(axis=1).sum(), rtol=1e-5)


def test_scalar_var_parameter():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i], name="B")
    func = te.create_prim_func([A, B, n])
    assert func.params[2] is n and n not in func.buffer_map


def test_missing_placeholder_is_reported():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match="placeholder A is read by B but is not in the argument list"):
        te.create_prim_func([B])


def test_duplicate_argument_is_reported():
    A = te.placeholder((4,), name="A")
    with pytest.raises(ValueError, match="appears twice"):
        te.create_prim_func([A, A])


def test_mm_relu_matches_tvmscript():
    from minitvm.testing.programs import mm_relu

    assert_structural_equal(_mm_relu_te(), mm_relu)


def test_names_are_made_unique():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0)
    C = te.compute((4,), lambda i: B[i] * 2.0)
    assert B.name == C.name == "compute"
    func = te.create_prim_func([A, C])
    root = func.body.block
    # the block and the buffer of one compute share one name, given in topological order
    assert [b.name for b in root.alloc_buffers] == ["compute"]
    assert [b.name for b in func.buffers] == ["A", "compute_1"]
    assert [s.body.block.name_hint for s in root.body.seq] == ["compute", "compute_1"]


def test_index_dtype_override_int64():
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis((0, 6), "k")
    S = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, where=k < 5), name="S")
    D = te.compute((4,), lambda i: S[i] + A[i, 0] + te.if_then_else(i > 0, 1.0, 0.0), name="D")
    idx = te.compute((4,), lambda i: i * 2, name="idx")  # an index used as an int32 value
    func = te.create_prim_func([A, D, idx], index_dtype_override="int64")

    for buf in func.buffers:
        assert all(d.dtype == "int64" for d in buf.shape)
    accesses, loops = [], []
    post_order_visit(func.body, lambda n: accesses.append(n) if isinstance(n, (BufferLoad, BufferStore))
                     else loops.append(n) if isinstance(n, For) else None)
    for n in accesses:
        assert all(i.dtype == "int64" for i in n.indices), n
    assert all(lp.loop_var.dtype == lp.min.dtype == lp.extent.dtype == "int64" for lp in loops)
    # the stored index value is cast back to the int32 of its tensor
    store = next(n for n in accesses if isinstance(n, BufferStore) and n.buffer.name == "idx")
    assert store.value.dtype == "int32"
    assert_structural_equal(from_source(func.script()), func)

    a = np.random.default_rng(0).standard_normal((4, 6)).astype("float32")
    d, i = np.zeros(4, "float32"), np.zeros(4, "int32")
    run_prim_func(func, [a, d, i])
    np.testing.assert_allclose(d, a[:, :5].sum(1) + a[:, 0] + (np.arange(4) > 0), rtol=1e-5)
    np.testing.assert_array_equal(i, np.arange(4) * 2)


def test_index_dtype_override_must_be_an_integer_dtype():
    A = te.placeholder((4,), name="A")
    with pytest.raises(ValueError, match="integer dtype"):
        te.create_prim_func([A], index_dtype_override="float32")
