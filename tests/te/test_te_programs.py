"""Whole TE programs (broadcast add, softmax, conv2d): well-formed TIR, numpy's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import te, tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.target.interpreter import run_prim_func
from minitvm.tir import (
    Block,
    BlockRealize,
    BufferLoad,
    BufferStore,
    For,
    LetStmt,
    PrimFunc,
    Var,
    analysis,
    post_order_visit,
)


def broadcast_add():
    A = te.placeholder((4, 3), name="A")
    B = te.placeholder((3,), name="B")
    C = te.compute((4, 3), lambda i, j: A[i, j] + B[j], name="C")
    func = te.create_prim_func([A, B, C])

    def reference(a, b):
        return a + b

    return func, [(4, 3), (3,)], (4, 3), reference


def softmax():
    m, n = 3, 5
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), "k")
    amax = te.compute((m,), lambda i: te.max(A[i, k], axis=k), name="amax")
    e = te.compute((m, n), lambda i, j: te.exp(A[i, j] - amax[i]), name="e")
    k2 = te.reduce_axis((0, n), "k2")
    esum = te.compute((m,), lambda i: te.sum(e[i, k2], axis=k2), name="esum")
    out = te.compute((m, n), lambda i, j: e[i, j] / esum[i], name="softmax")
    func = te.create_prim_func([A, out])

    def reference(a):
        x = np.exp(a - a.max(axis=1, keepdims=True))
        return x / x.sum(axis=1, keepdims=True)

    return func, [(m, n)], (m, n), reference


def conv2d():
    """NCHW conv2d, stride 1, padding 1 (through te.if_then_else), 3x3 kernel."""
    N, CI, H, W, CO, K, P = 1, 2, 5, 5, 3, 3, 1
    data = te.placeholder((N, CI, H, W), name="data")
    weight = te.placeholder((CO, CI, K, K), name="weight")
    pad = te.compute(
        (N, CI, H + 2 * P, W + 2 * P),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= P, y < H + P, x >= P, x < W + P),
            data[n, c, y - P, x - P], te.const(0.0, "float32")),
        name="pad")
    rc = te.reduce_axis((0, CI), "rc")
    ry = te.reduce_axis((0, K), "ry")
    rx = te.reduce_axis((0, K), "rx")
    conv = te.compute(
        (N, CO, H, W),
        lambda n, f, y, x: te.sum(pad[n, rc, y + ry, x + rx] * weight[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv")
    func = te.create_prim_func([data, weight, conv])

    def reference(d, w):
        dp = np.pad(d, ((0, 0), (0, 0), (P, P), (P, P)))
        out = np.zeros((N, CO, H, W), "float32")
        for ky in range(K):
            for kx in range(K):
                patch = dp[:, :, ky:ky + H, kx:kx + W]  # N, CI, H, W
                out += np.einsum("nchw,fc->nfhw", patch, w[:, :, ky, kx])
        return out

    return func, [(N, CI, H, W), (CO, CI, K, K)], (N, CO, H, W), reference


def argmax_rows():
    """An arg-max: a two-value reducer (index, value) writing two outputs from one block."""

    def fcombine(x, y):
        keep = x[1] >= y[1]
        return te.if_then_else(keep, x[0], y[0]), te.if_then_else(keep, x[1], y[1])

    def fidentity(index_dtype, value_dtype):
        return te.const(-1, index_dtype), te.min_value(value_dtype)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    A = te.placeholder((3, 6), name="A")
    k = te.reduce_axis((0, 6), "k")
    index, value = te.compute((3,), lambda i: argmax((k.var, A[i, k]), axis=k), name="T")
    func = te.create_prim_func([A, index, value])

    def reference(a):
        return a.argmax(axis=1).astype("int32"), a.max(axis=1)

    return func, [(3, 6)], [((3,), "int32"), ((3,), "float32")], reference


def prefix_sum():
    """A reduction restricted with where=: out[i] = sum of A[0..i]."""
    A = te.placeholder((6,), name="A")
    k = te.reduce_axis((0, 6), "k")
    P = te.compute((6,), lambda i: te.sum(A[k], axis=k, where=k <= i), name="P")
    func = te.create_prim_func([A, P])
    return func, [(6,)], (6,), np.cumsum


PROGRAMS = {"broadcast_add": broadcast_add, "softmax": softmax, "conv2d": conv2d,
            "argmax": argmax_rows, "prefix_sum": prefix_sum}


def assert_well_formed(func: PrimFunc) -> None:
    """Every variable used is defined, every buffer is a parameter or allocated, every
    block is bound to as many values as it has iterators and declares the accesses
    its body makes."""
    defined = set(id(p) for p in func.params)
    buffers = set()
    for buf in func.buffer_map.values():
        buffers.add(id(buf))
        post_order_visit(buf.shape, lambda x: defined.add(id(x)) if isinstance(x, Var) else None)

    def collect(n):
        if isinstance(n, For):
            defined.add(id(n.loop_var))
        elif isinstance(n, LetStmt):
            defined.add(id(n.var))
        elif isinstance(n, Block):
            defined.update(id(iv.var) for iv in n.iter_vars)
            buffers.update(id(b) for b in n.alloc_buffers)
            if n is not func.body.block:  # the root block declares no accesses, as in TVM
                reads, writes = analysis.get_block_read_write_region(n)
                assert_structural_equal(tuple(reads), n.reads)
                assert_structural_equal(tuple(writes), n.writes)
        elif isinstance(n, BlockRealize):
            assert len(n.iter_values) == len(n.block.iter_vars), n.block.name_hint

    post_order_visit(func.body, collect)

    def check(n):
        if isinstance(n, Var):
            assert id(n) in defined, f"variable {n.name} used but never defined"
        if isinstance(n, (BufferLoad, BufferStore)):
            assert id(n.buffer) in buffers, f"buffer {n.buffer.name} is neither a parameter nor allocated"

    post_order_visit(func.body, check)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_is_well_formed(name):
    func, *_ = PROGRAMS[name]()
    assert_well_formed(func)


def test_softmax_structure():
    func, *_ = softmax()
    root = func.body.block
    assert [b.name for b in root.alloc_buffers] == ["amax", "e", "esum"]
    blocks = []
    post_order_visit(func.body, lambda n: blocks.append(n) if isinstance(n, Block) else None)
    by_name = {b.name_hint: b for b in blocks}
    assert list(by_name) == ["amax", "e", "esum", "softmax", "root"]
    assert by_name["amax"].init is not None and by_name["esum"].init is not None
    assert by_name["e"].init is None and by_name["softmax"].init is None


def test_conv2d_structure():
    func, *_ = conv2d()
    blocks = []
    post_order_visit(func.body, lambda n: blocks.append(n) if isinstance(n, Block) else None)
    conv = next(b for b in blocks if b.name_hint == "conv")
    assert [iv.var.name for iv in conv.iter_vars] == ["v_n", "v_f", "v_y", "v_x", "v_rc", "v_ry", "v_rx"]
    assert [iv.iter_type for iv in conv.iter_vars] == ["spatial"] * 4 + ["reduce"] * 3
    # a block reads points in terms of its own iterators: pad[v_n, v_rc, v_y + v_ry, v_x + v_rx]
    assert [r.buffer.name for r in conv.reads] == ["pad", "weight"]
    pad_read = conv.reads[0].region
    assert all(isinstance(r.extent, tir.IntImm) and r.extent.value == 1 for r in pad_read)
    v = {iv.var.name: iv.var for iv in conv.iter_vars}
    assert_structural_equal(pad_read[2].min, v["v_y"] + v["v_ry"])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_survives_the_tvmscript_round_trip(name):
    func, *_ = PROGRAMS[name]()
    assert_structural_equal(from_source(func.script()), func)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_numpy(name):
    func, in_shapes, out_spec, reference = PROGRAMS[name]()
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype("float32") for s in in_shapes]
    multi = isinstance(out_spec, list)
    outs = [np.zeros(shape, dtype) for shape, dtype in (out_spec if multi else [(out_spec, "float32")])]
    run_prim_func(func, [*inputs, *outs])
    expected = reference(*inputs)
    for got, want in zip(outs, expected if multi else [expected]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
