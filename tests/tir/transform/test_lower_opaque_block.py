"""LowerOpaqueBlock: blocks disappear, their meaning stays."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.target.interpreter import run_prim_func
from minitvm.testing import tir_builders as tb
from minitvm.tir import post_order_visit
from minitvm.tir.transform import ConvertBlocksToOpaque, LowerInitBlock, LowerOpaqueBlock


def nodes_of(stmt, kind):
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


def lower_blocks(func):
    mod = IRModule({"main": func})
    return LowerOpaqueBlock()(LowerInitBlock()(mod))["main"]


def test_blocks_are_gone_and_iter_vars_replaced_by_their_values():
    func = tb.mm_relu()
    lowered = lower_blocks(func)
    assert not nodes_of(lowered.body, (tir.Block, tir.BlockRealize))
    names = {v.name for v in nodes_of(lowered.body, tir.Var)}
    assert names.isdisjoint({"vi", "vj", "vk"})
    assert lowered.params is func.params and lowered.buffer_map is func.buffer_map


def test_alloc_buffer_becomes_allocate_at_the_block_position():
    lowered = lower_blocks(tb.mm_relu())
    assert isinstance(lowered.body, tir.Allocate)
    assert lowered.body.buffer.name == "Y" and lowered.body.buffer.shape[0].value == 16


def test_init_is_lowered_even_without_lower_init_block():
    lowered = LowerOpaqueBlock()(IRModule({"main": tb.mm_relu()}))["main"]
    assert len(nodes_of(lowered.body, tir.IfThenElse)) == 1


def test_predicate_becomes_an_if():
    A = tb.buffer("A", (10,))
    # split 10 by 4: 3 x 4 iterations, the last two guarded away
    body = tb.grid((3, 4), lambda io, ii: tb.block(
        "A", [("S", 10, io * 4 + ii)], body=lambda v: tb.store(A, (v,), tir.const(1.0)),
        predicate=io * 4 + ii < 10))
    lowered = lower_blocks(tb.prim_func("f", [A], body))
    (guard,) = nodes_of(lowered.body, tir.IfThenElse)
    ii, io = [loop.loop_var for loop in nodes_of(lowered.body, tir.For)]  # inner loop first
    assert_structural_equal(guard.condition, io * 4 + ii < 10)
    store = guard.then_case
    assert_structural_equal(store.indices[0], io * 4 + ii)


def _row_sum_with_match_buffer():
    """Out[i] = sum(A[i, 0:8]) where the block sees its row through a match_buffer view."""
    A, Out = tb.buffer("A", (4, 8)), tb.buffer("Out", (4,))
    i = tir.Var("i")
    vi = tir.Var("vi")
    row = tir.decl_buffer((8,), "float32", "row")
    k = tir.Var("k")
    body = tir.seq(tir.BufferStore(Out, tir.const(0.0), (vi,)),
                   tir.For(k, tir.const(0), tir.const(8), body=tir.BufferStore(
                       Out, Out[vi] + row[k], (vi,))))
    block = tir.Block("row_sum", (tir.IterVar(tir.Range(tir.const(0), tir.const(4)), vi, "spatial"),),
                      match_buffers=(tir.MatchBufferRegion(row, A[vi, 0:8]),), body=body)
    loop = tir.For(i, tir.const(0), tir.const(4), body=tir.BlockRealize((i,), tir.const(True), block))
    return tb.prim_func("row_sum", [A, Out], loop)


def test_match_buffer_accesses_go_to_the_source_region():
    func = _row_sum_with_match_buffer()
    lowered = lower_blocks(func)
    loads = [n for n in nodes_of(lowered.body, tir.BufferLoad) if n.buffer.name == "A"]
    (load,) = loads
    i = nodes_of(lowered.body, tir.For)[-1].loop_var
    k = nodes_of(lowered.body, tir.For)[0].loop_var
    assert load.buffer is func.buffer_map[func.params[0]]
    assert_structural_equal(load.indices[0], i)
    assert_structural_equal(load.indices[1], k)
    A, Out = tb.random_arguments(func)
    run_prim_func(lowered, [A, Out])
    np.testing.assert_allclose(Out, A.sum(axis=1), rtol=1e-5)


def test_convert_blocks_to_opaque_is_the_same_lowering():
    assert ConvertBlocksToOpaque().info.name == LowerOpaqueBlock().info.name


# -- a buffer over a match view's memory in another dtype (a tensor intrinsic's word view) ------------


def _rows_as_words(src: str, word: str, rows: int = 6, row_bytes: int = 16, start: int = 0):
    """Out[i, :] = the bytes X[i, start:start + row_bytes] read as ``word`` values, through a
    match_buffer view of the row and a ``word`` buffer over the view's data."""
    from minitvm.script import tir as T

    size = np.dtype(src).itemsize
    n_src, n_words = row_bytes // size, row_bytes // np.dtype(word).itemsize
    cols = n_src + start

    @T.prim_func
    def rows_as_words(X: T.Buffer((rows, cols), src), Out: T.Buffer((rows, n_words), word)):
        for i in range(rows):
            with T.block("row"):
                vi = T.axis.spatial(rows, i)
                T.reads(X[vi, start:start + n_src])
                T.writes(Out[vi, 0:n_words])
                R = T.match_buffer(X[vi, start:start + n_src], (n_src,), src)
                Row = T.match_buffer(Out[vi, 0:n_words], (n_words,), word)
                R_words = T.Buffer((n_words,), word, data=R.data)
                for w in range(n_words):
                    Row[w] = R_words[w]

    return rows_as_words


@pytest.mark.parametrize("src, word", [("uint8", "int32"), ("int8", "int16"), ("int32", "uint8"),
                                       ("float32", "int32")])
@pytest.mark.parametrize("target", ["llvm", "python"])
def test_a_word_view_of_a_match_view_reads_the_source_memory(src, word, target):
    func = _rows_as_words(src, word)
    lowered = lower_blocks(func)
    words = [b for b in _buffers(lowered.body) if b.name == "R_words"]
    assert words and all(b.data is func.buffer_map[func.params[0]].data for b in words)  # X's memory
    x = np.random.default_rng(3).integers(0, 256, (6, 16), dtype=np.uint8).view(src)
    out = np.zeros((6, 16 // np.dtype(word).itemsize), word)
    lib = minitvm.build(func, target=target)
    lib["rows_as_words"](x, out)
    np.testing.assert_array_equal(out, x.view(word))
    blocks_out = np.zeros_like(out)
    run_prim_func(func, [x, blocks_out])  # the interpreter on the blocks resolves the views alike
    np.testing.assert_array_equal(blocks_out, x.view(word))


def test_a_word_view_starting_inside_a_word_is_refused_naming_the_buffers():
    func = _rows_as_words("uint8", "int32", start=1)
    with pytest.raises(ValueError, match=r"R_words \(a int32 view of R, which matches X\).*multiple of 4"):
        lower_blocks(func)


def test_a_word_view_of_a_scattered_region_is_refused():
    from minitvm.script import tir as T

    @T.prim_func
    def corner(X: T.Buffer((4, 8), "uint8"), Out: T.Buffer((2,), "int32")):
        with T.block("corner"):
            T.reads(X[0:2, 0:4])
            T.writes(Out[0:2])
            R = T.match_buffer(X[0:2, 0:4], (2, 4), "uint8")
            R_words = T.Buffer((2,), "int32", data=R.data)
            for w in range(2):
                Out[w] = R_words[w]

    with pytest.raises(ValueError, match="R_words .*not contiguous in X"):
        lower_blocks(corner)


def _buffers(stmt):
    found = []
    post_order_visit(stmt, lambda n: found.append(n.buffer) if isinstance(n, (tir.BufferLoad, tir.BufferStore))
                     else None)
    return found
