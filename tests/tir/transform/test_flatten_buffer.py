"""FlattenBuffer: N-D accesses become 1-D accesses on flat buffers over the same memory."""

import pytest

from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.testing import tir_builders as tb
from minitvm.tir import post_order_visit
from minitvm.tir.transform import FlattenBuffer, LowerInitBlock, LowerOpaqueBlock
from minitvm.tir.transform.flatten_buffer import flat_index, flattened


def flatten(func):
    mod = IRModule({"main": func})
    for p in (LowerInitBlock(), LowerOpaqueBlock(), FlattenBuffer()):
        mod = p(mod)
    return mod["main"]


def accesses(stmt):
    found = []
    post_order_visit(stmt, lambda n: found.append(n)
                     if isinstance(n, (tir.BufferLoad, tir.BufferStore)) else None)
    return found


def test_every_access_is_one_dimensional_on_the_original_memory():
    func = tb.mm_relu(16, 8, 4)
    flat = flatten(func)
    data_vars = {id(b.data) for b in func.buffer_map.values()}
    allocated = flat.body.buffer
    assert allocated.ndim == 1 and allocated.shape[0].value == 16 * 8
    for access in accesses(flat.body):
        assert access.buffer.ndim == 1 and len(access.indices) == 1
        assert id(access.buffer.data) in data_vars | {id(allocated.data)}
    # the signature keeps the N-D buffers for argument checks
    assert flat.buffer_map is func.buffer_map


def test_row_major_index_is_simplified():
    func = tb.mm_relu(16, 8, 4)
    flat = flatten(func)
    stores = [a for a in accesses(flat.body) if isinstance(a, tir.BufferStore) and a.buffer.name == "C"]
    (store,) = stores
    loops = []
    post_order_visit(flat.body, lambda n: loops.append(n) if isinstance(n, tir.For) else None)
    j, i = loops[-2].loop_var, loops[-1].loop_var  # the relu nest, inner loop first
    assert_structural_equal(store.indices[0], tir.Add(tir.Mul(i, tir.const(8)), j))


def test_flat_buffer_shares_data_name_and_dtype():
    A = tb.buffer("A", (3, 5, 7), "int64")
    flat = flattened(A)
    assert flat.data is A.data and flat.dtype == "int64" and flat.name == "A"
    assert flat.shape[0].value == 105
    assert flattened(flat) is flat  # already flat: nothing to do


def test_strides_and_offset_are_honoured():
    A = tir.decl_buffer((4, 4), "float32", "A", strides=(8, 1), elem_offset=2)
    i, j = tir.Var("i"), tir.Var("j")
    from minitvm.arith import simplify
    assert_structural_equal(simplify(flat_index(A, (i, j))), i * 8 + j + 2)
    assert flattened(A).shape[0].value == 3 * 8 + 3 * 1 + 1 + 2


def test_large_buffers_index_in_int64():
    A = tb.buffer("A", (65536, 65536))
    assert flattened(A).shape[0].dtype == "int64"
    index = flat_index(A, (tir.Var("i"), tir.Var("j")))
    assert index.dtype == "int64"


def test_blocks_must_be_lowered_first():
    with pytest.raises(ValueError, match="LowerOpaqueBlock"):
        FlattenBuffer()(IRModule({"main": tb.broadcast_add()}))
