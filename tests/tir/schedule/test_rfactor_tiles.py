"""rfactor as TVM lays it out: partial sums in a copy of the loop nest, the final reduction in
the original loops; negative factor axes; a whole reduction rfactored into plain stores."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def row_dot(x: T.Buffer((1, 64), "float32"), W: T.Buffer((32, 64), "float32"), Y: T.Buffer((1, 32), "float32")):
    for i, j, k in T.grid(1, 32, 64):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + x[vi, vk] * W[vj, vk]


def test_rfactor_under_a_spatial_tile_loop_writes_back_only_that_tile():
    sch = tir.Schedule(row_dot)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    k0, k1 = sch.split(k, [None, 16])
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i, j0, k0, j1, k1)  # j1 (spatial) sits between the reduction loops k0 and k1
    sch.rfactor(k1, 2)
    text = sch.mod.script()
    # as TVM: the partial sums run in a copy of the whole nest; the write-back keeps the
    # original loops except the other reduction loop k_0 (j_1 stays, so each tile is combined)
    assert "for i, j_0, j_1, k_1 in T.grid(1, 8, 4, 16):" in text, text
    assert text.count("for i, j_0, k_0, j_1, k_1 in T.grid(1, 8, 4, 4, 16):") == 1, text
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 64)).astype("float32"), rng.standard_normal((32, 64)).astype("float32")
    for target in ("llvm", "python"):
        out = minitvm.nd.array(np.full((1, 32), np.nan, "float32"))
        minitvm.build(sch.mod, target=target)["row_dot"](minitvm.nd.array(x), minitvm.nd.array(w), out)
        np.testing.assert_allclose(out.numpy(), x @ w.T, rtol=1e-5, atol=1e-5)


@T.prim_func
def col_sums(A: T.Buffer((64, 16), "float32"), B: T.Buffer((16,), "float32")):
    for k, j in T.grid(64, 16):
        with T.block("B"):
            vk, vj = T.axis.remap("RS", [k, j])
            with T.init():
                B[vj] = T.float32(0)
            B[vj] = B[vj] + A[vk, vj]


def test_rfactor_negative_axis_counts_from_the_end(same_numbers):
    sch = tir.Schedule(col_sums)
    k, _ = sch.get_loops("B")
    k0, k1 = sch.split(k, [None, 8])
    rf = sch.rfactor(k1, -1)  # -1: the new axis goes last, as TVM
    write = sch.get(rf).writes[0]
    assert [int(s) for s in write.buffer.shape] == [16, 8]
    same_numbers(col_sums, sch.mod)


def test_rfactor_of_the_whole_reduction_stores_partials():
    sch = tir.Schedule(col_sums)
    k, _ = sch.get_loops("B")
    rf = sch.rfactor(k, 0)
    block = sch.get(rf)
    # no reduction iterator is left in the rfactor block: each partial is a plain store
    assert block.init is None and all(iv.iter_type == "spatial" for iv in block.iter_vars)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 16)).astype("float32")
    out = minitvm.nd.array(np.full((16,), np.nan, "float32"))
    minitvm.build(sch.mod)["col_sums"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.sum(axis=0), rtol=1e-5, atol=1e-5)
