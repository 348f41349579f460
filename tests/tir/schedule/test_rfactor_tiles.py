"""rfactor inside a tile: the final reduction covers the tile, not the whole axis."""

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
