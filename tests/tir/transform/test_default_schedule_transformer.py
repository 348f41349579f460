"""DefaultCPUSchedule on a transformer's kernels: layer norm and softmax rows, attention heads."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
import minitvm.tir.transform.default_schedule as ds
from minitvm import te, topi
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt import For, ForKind
from minitvm.tir.stmt_functor import post_order_visit
from minitvm.tir.transform.default_schedule import apply_default_schedule
from minitvm.tir.vector_unit import AVX512


@pytest.fixture(autouse=True)
def two_threads_avx512(monkeypatch):
    """Pinned to this machine's (and CI's) 2 threads and AVX-512 tiles: the structures read the same everywhere."""
    monkeypatch.setattr(ds, "parallel_threads", lambda: 2)
    with AVX512:
        yield


def _run(func: PrimFunc, args: list[np.ndarray]) -> np.ndarray:
    lib = minitvm.build(func.with_attr("global_symbol", "main"), target="llvm")
    arrs = [minitvm.nd.array(a) for a in args]
    lib["main"](*arrs)
    return arrs[-1].numpy()


def _loops(func: PrimFunc) -> list[For]:
    found: list[For] = []
    post_order_visit(func.body, lambda s: found.append(s) if isinstance(s, For) else None)
    return found


def _local_buffers(func: PrimFunc) -> set[str]:
    text = func.script()
    return {line.split("=")[0].strip() for line in text.splitlines() if 'scope="local"' in line}


@pytest.mark.parametrize("shape", [(8, 128, 256), (1, 197, 192), (2, 5, 40)])
def test_layer_norm_sums_its_rows_in_vector_lanes(shape):
    """topi's layer norm sums x and x² in one (tuple) reduction: it is split into 16 partial sums
    of each in vector lanes (rfactor of both parts), combined as a tree, under the row loop with
    the normalization -- not 8 rows side by side, one scalar add per element.  numpy's numbers."""
    a = te.placeholder(shape, "float32", name="A")
    g = te.placeholder(shape[-1:], "float32", name="g")
    b = te.placeholder(shape[-1:], "float32", name="b")
    sched = apply_default_schedule(te.create_prim_func([a, g, b, topi.nn.layer_norm(a, g, b, axis=-1)]))
    assert sched.attrs.get("tir.is_scheduled") is True
    local = _local_buffers(sched)
    assert {"A_red_temp_v0_rf", "A_red_temp_v1_rf"} <= local
    assert {"A_red_temp_v0_rf_1", "A_red_temp_v1_rf_1"} <= local  # 16 lanes onto 8
    vectorized = [lp for lp in _loops(sched) if lp.kind == ForKind.VECTORIZED]
    assert any(int(lp.extent) == ds.ROW_PARTIALS for lp in vectorized)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype("float32") + 1
    gamma, beta = rng.standard_normal(shape[-1]).astype("float32"), rng.standard_normal(shape[-1]).astype("float32")
    got = _run(sched, [x, gamma, beta, np.zeros(shape, "float32")])
    x64 = x.astype("float64")
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("shape", [(4, 128, 128), (3, 197, 197)])
def test_softmax_combines_its_partial_results_as_a_tree(shape):
    """A row's 16 partial maxima (sums) are combined 16 -> 8 -> 4 -> 2 in vector operations, then
    the last two: the blocks ``*_rf_1`` .. ``*_rf_3`` of 8, 4 and 2 lanes.  numpy's numbers."""
    a = te.placeholder(shape, "float32", name="A")
    sched = apply_default_schedule(te.create_prim_func([a, topi.nn.softmax(a)]))
    text = sched.script()
    for name in ("T_softmax_maxelem", "T_softmax_expsum"):
        for level, lanes in ((1, 8), (2, 4), (3, 2)):
            assert f"{name}_rf_{level}" in _local_buffers(sched)
            assert f'T.sblock("{name}_rf_{level}_update")' in text
            assert f"{name}_rf_{level} = T.sblock_alloc_buffer(({shape[0]}, {shape[1]}, {lanes})" in text
    x = np.random.default_rng(5).standard_normal(shape).astype("float32") * 4
    e = np.exp(x.astype("float64") - x.max(-1, keepdims=True))
    np.testing.assert_allclose(_run(sched, [x, np.zeros(shape, "float32")]), e / e.sum(-1, keepdims=True),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((1, 3, 197, 64), (1, 3, 64, 197)),  # ViT's scores, as torch.fx gives them
    ((2, 3, 40, 120), (2, 3, 120, 64)),  # probabilities @ V, two batch axes
    ((2, 3, 48, 64), (64, 96)),  # a weight broadcast over both
])
def test_a_matmul_over_two_batch_axes_gets_the_register_tile(a_shape, b_shape):
    """A 4-D matmul of attention heads (``[b, h, i, k] @ [b, h, k, j]``, which the fx importer keeps
    4-D where torch.export reshapes it to 3-D) is tiled in registers and runs its rows on threads as
    a 3-D one is: before, five iterators were not a matmul to the rule, and it ran as a scalar loop
    nest on one thread (ViT-tiny's scores 330 vs 114 us).  numpy's numbers."""
    a, b = te.placeholder(a_shape, "float32", name="A"), te.placeholder(b_shape, "float32", name="B")
    sched = apply_default_schedule(te.create_prim_func([a, b, topi.nn.matmul(a, b)]))
    assert np.prod(a_shape) * b_shape[-1] > ds.MATMUL_PARALLEL_WORK  # enough work for threads
    kinds = {lp.kind for lp in _loops(sched)}
    assert {ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED} <= kinds
    assert _local_buffers(sched)  # the accumulator tile
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(a_shape).astype("float32"), rng.standard_normal(b_shape).astype("float32")
    got = _run(sched, [x, y, np.zeros(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + (a_shape[-2], b_shape[-1]),
                                       "float32")])
    np.testing.assert_allclose(got, x.astype("float64") @ y, rtol=1e-4, atol=1e-4)


def test_a_1x1_convolution_is_not_taken_for_a_batched_matmul():
    """A 1 x 1 convolution has a batched matmul's iterator kinds (n, o, h, w spatial, c reduced) but
    reads ``X[n, c, h, w]``: the matmul rule must leave it to the convolution rules."""
    x = te.placeholder((1, 32, 14, 14), "float32", name="X")
    w = te.placeholder((64, 32, 1, 1), "float32", name="W")
    sch = minitvm.s_tir.Schedule(te.create_prim_func([x, w, topi.nn.conv2d(x, w, 1, 0, 1)]))
    assert ds._matmul_block(sch) is None
