"""Small-batch dense layers and convolutions on both vector units: the schedules the rules pick
for AVX2 (16 ymm of 8 lanes) and AVX-512 (32 zmm of 16 lanes) compute numpy's numbers on random
data (the kernels are built for this machine either way; only the tiles differ)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import te, topi
from minitvm.tir.transform import default_schedule as ds
from minitvm.tir.transform.default_schedule import apply_default_schedule
from minitvm.tir.vector_unit import AVX2, AVX512

UNITS = pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])


def _dense_relu(rows: int, k: int, n_out: int):
    x, w = te.placeholder((rows, k), "float32", name="x"), te.placeholder((k, n_out), "float32", name="w")
    b = te.placeholder((n_out,), "float32", name="b")
    return te.create_prim_func([x, w, b, topi.nn.relu(topi.add(topi.nn.matmul(x, w), b))])


@UNITS
@pytest.mark.parametrize("rows, k, n_out", [(8, 5408, 100), (4, 200, 36), (3, 96, 20), (2, 13, 10)])
def test_few_rows_dense_runs_over_blocks_of_k(unit, rows, k, n_out):
    """MNIST's 8 x 5408 -> 100 (and smaller ones): the rows take turns over blocks of k
    (``schedule_dense_few_rows``), a k loop split in two around the row loop; numpy's result."""
    with unit:
        sched = apply_default_schedule(_dense_relu(rows, k, n_out))
        text = sched.script()
        assert "k_0" in text and "k_1" in text and 'scope="local"' in text, text
        lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(rows * k)
    x = rng.standard_normal((rows, k)).astype("float32")
    w = rng.standard_normal((k, n_out)).astype("float32")
    b = rng.standard_normal(n_out).astype("float32")
    out = minitvm.nd.array(np.full((rows, n_out), np.nan, "float32"))
    lib["main"](minitvm.nd.array(x), minitvm.nd.array(w), minitvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4 * np.sqrt(k))


@UNITS
@pytest.mark.parametrize("rows, k, split", [(8, 5408, True), (8, 5407, False), (1, 5408, True), (1, 5407, False),
                                            (2, 1000, False)],
                         ids=["even-k", "odd-k", "one-row", "one-row-odd-k", "small"])
def test_few_rows_dense_splits_k_between_threads(unit, rows, k, split):
    """A few-rows dense with an even k and a large weight (or much work) runs one half of k per
    thread for all rows (an ``rfactor``: partial tiles, then their sum and the epilogue), one row
    included; an odd k keeps groups of rows on threads (one row: another rule), a small one
    does not split.  numpy's result either way."""
    with unit:
        sched = apply_default_schedule(_dense_relu(rows, k, 100))
        text = sched.script()
        assert ("_rf" in text) == split and (not split or "T.parallel(" in text), text
        lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(k)
    x = rng.standard_normal((rows, k)).astype("float32")
    w = rng.standard_normal((k, 100)).astype("float32")
    b = rng.standard_normal(100).astype("float32")
    out = minitvm.nd.array(np.full((rows, 100), np.nan, "float32"))
    lib["main"](minitvm.nd.array(x), minitvm.nd.array(w), minitvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4 * np.sqrt(k))


def _conv_tanh(n: int, ci: int, hw: int, co: int, k: int, groups: int):
    """A convolution (its padding copy inside), a bias and tanh -- LeNet's first layer's shape."""
    x = te.placeholder((n, ci, hw, hw), "float32", name="x")
    w = te.placeholder((co, ci // groups, k, k), "float32", name="w")
    b = te.placeholder((co,), "float32", name="b")
    y = topi.nn.conv2d_nchw(x, w, stride=1, padding=k // 2, groups=groups)
    return te.create_prim_func([x, w, b, topi.tanh(topi.add(y, topi.reshape(b, (1, co, 1, 1))))])


@pytest.mark.parametrize("unit, ci, co, hw, k, rows", [
    (AVX512, 1, 6, 28, 5, 7),   # LeNet's 1 -> 6: rows of 2 zmm, 7 rows (14 of 32 zmm)
    (AVX2, 1, 6, 28, 5, 2),     # rows of 4 ymm: two rows (4 rows were all 16 ymm)
    (AVX512, 4, 4, 12, 3, 12),  # depthwise: rows of one zmm
    (AVX2, 4, 4, 12, 3, 4),     # rows of 2 ymm: 4 rows
], ids=["lenet-avx512", "lenet-avx2", "depthwise-avx512", "depthwise-avx2"])
def test_depthwise_rows_fit_the_units_registers(unit, ci, co, hw, k, rows):
    """A convolution with one input channel per group (a depthwise one, or a channel multiplier)
    tiles whole output rows, as many as fit the unit's registers; torch's numbers."""
    torch = pytest.importorskip("torch")
    with unit:
        sched = apply_default_schedule(_conv_tanh(2, ci, hw, co, k, groups=ci))
        text = sched.script()
        lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    assert 'scope="local"' in text and f"T.unroll({rows})" in text, text
    rng = np.random.default_rng(hw)
    x = rng.standard_normal((2, ci, hw, hw)).astype("float32")
    w = rng.standard_normal((co, 1, k, k)).astype("float32")
    b = rng.standard_normal(co).astype("float32")
    out = minitvm.nd.array(np.full((2, co, hw, hw), np.nan, "float32"))
    lib["main"](minitvm.nd.array(x), minitvm.nd.array(w), minitvm.nd.array(b), out)
    want = torch.tanh(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                                                 padding=k // 2, groups=ci)).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)


def _constant_dense(rows: int, w: np.ndarray, b: np.ndarray):
    """A relax function: ReLU(x @ w + b), the weight and bias constants (as after from_exported_program)."""
    from minitvm import relax

    x = relax.Var("x", relax.TensorStructInfo((rows, w.shape[0]), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = relax.op.add(relax.op.matmul(x, relax.const(w)), relax.const(b))
            gv = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("unit, width", [(AVX2, 104), (AVX512, 112)], ids=["avx2", "avx512"])
def test_few_rows_dense_reads_its_constant_weight_in_whole_vector_rows(unit, width):
    """MNIST's 8 x 5408 -> 100 dense with its weight a constant (``layout_free_buffers``): the
    weight is copied into rows padded to a whole number of vectors (AVX2 104 floats, AVX-512 112),
    the copy marked to be done once at compile time, so no vector load of a row crosses a cache
    line for want of alignment; the padding is never read -- numpy's numbers, built here."""
    with unit:
        sched = apply_default_schedule(_dense_relu(8, 5408, 100).with_attr("layout_free_buffers", [1]))
    text = sched.script()
    assert f"(5408, 1, {width})" in text and ds.LAYOUT_REWRITE_PREPROC in text, text
    with AVX2:
        lib = minitvm.build(apply_default_schedule(_dense_relu(8, 5408, 100).with_attr("layout_free_buffers", [1]))
                            .with_attr("global_symbol", "main"))
    rng = np.random.default_rng(5408)
    x, w = rng.standard_normal((8, 5408)).astype("float32"), rng.standard_normal((5408, 100)).astype("float32")
    b = rng.standard_normal(100).astype("float32")
    out = minitvm.nd.array(np.full((8, 100), np.nan, "float32"))
    lib["main"](minitvm.nd.array(x), minitvm.nd.array(w), minitvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4 * np.sqrt(5408))


def test_few_rows_dense_weight_is_padded_once_at_compile_time():
    """Through the default pipeline, the constant weight of that dense arrives padded (a
    constant of 5408 x 1 x a whole number of vectors) and the model computes numpy's numbers."""
    from minitvm import relax
    from minitvm.tir.vector_unit import VectorUnit

    rng = np.random.default_rng(5408)
    w = rng.standard_normal((5408, 100)).astype("float32")
    b = rng.standard_normal(100).astype("float32")
    lowered = relax.get_pipeline("default")(_constant_dense(8, w, b))
    shapes = []
    relax.analysis.post_order_visit(lowered["main"], lambda e: shapes.append(e.data.numpy().shape)
                                    if isinstance(e, relax.Constant) else None)
    lanes = VectorUnit.host().lanes
    assert (5408, 1, -(-100 // lanes) * lanes) in shapes, shapes
    x = rng.standard_normal((8, 5408)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(_constant_dense(8, w, b), "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](x).numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4 * np.sqrt(5408))


@UNITS
@pytest.mark.parametrize("rows", [1, 8])
def test_classifier_head_reads_its_constant_weight_transposed(unit, rows):
    """ResNet-18's head, rows x 512 -> 1000 + bias + ReLU with the weight a constant: the kernel
    reads it transposed, ``W[j, k]`` (1000 x 512, copied once at compile time), one contiguous row
    of W per output column with every row of x (``schedule_dense_transposed_weight``), the columns
    on threads -- not 32-column tiles of ``B[k, j]``, 128 bytes from each 4 KB row.  A weight passed
    as a parameter is left as it is.  numpy's numbers."""
    func = _dense_relu(rows, 512, 1000)
    with unit:
        sched = apply_default_schedule(func.with_attr("layout_free_buffers", [1]))
        plain = apply_default_schedule(func)
    text = sched.script()
    assert "(1000, 512)" in text and ds.LAYOUT_REWRITE_PREPROC in text, text
    assert "for i1 in T.parallel(1000)" in text or "for i1_0 in T.parallel(1000)" in text, text
    assert "(1000, 512)" not in plain.script()
    with unit:
        lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(rows)
    x, w = rng.standard_normal((rows, 512)).astype("float32"), rng.standard_normal((512, 1000)).astype("float32")
    b = rng.standard_normal(1000).astype("float32")
    out = minitvm.nd.array(np.full((rows, 1000), np.nan, "float32"))
    lib["main"](minitvm.nd.array(x), minitvm.nd.array(w), minitvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4 * np.sqrt(512))


@pytest.mark.parametrize("rows", [1, 8])
def test_classifier_head_weight_is_transposed_once_at_compile_time(rows):
    """Through the default pipeline the head's constant weight arrives transposed (a 1000 x 1280
    constant: MobileNetV2's) and the model computes numpy's numbers at batch 1 and 8."""
    from minitvm import relax

    rng = np.random.default_rng(1280 + rows)
    w = rng.standard_normal((1280, 1000)).astype("float32")
    b = rng.standard_normal(1000).astype("float32")
    lowered = relax.get_pipeline("default")(_constant_dense(rows, w, b))
    shapes = []
    relax.analysis.post_order_visit(lowered["main"], lambda e: shapes.append(e.data.numpy().shape)
                                    if isinstance(e, relax.Constant) else None)
    assert (1000, 1280) in shapes and (1280, 1000) not in shapes, shapes
    x = rng.standard_normal((rows, 1280)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(_constant_dense(rows, w, b), "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](x).numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4 * np.sqrt(1280))
