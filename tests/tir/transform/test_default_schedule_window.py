"""DefaultCPUSchedule's window-reduction rule: pooling (and a reduction over a middle axis)
walks the window outside a vectorized row of outputs, and computes what torch computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm import relax
from minitvm.relax.transform import LegalizeOps
from minitvm.tir.transform.default_schedule import apply_default_schedule, schedule_window_reduction


def _kernel(op, shape):
    """The single PrimFunc LegalizeOps makes of ``op`` applied to a tensor of ``shape``."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op(x))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    (name,) = [gv.name_hint for gv in mod.get_global_vars() if gv.name_hint != "main"]
    return mod[name].with_attr("global_symbol", "main")


def _run(func, x, out_shape):
    lib = minitvm.tirx.build(func, target="llvm")
    out = minitvm.nd.empty(out_shape, "float32")
    lib["main"](minitvm.nd.array(x), out)
    return out.numpy()


CASES = {
    "max 2x2 stride 2": (lambda x: relax.op.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2)), (3, 5, 26, 26),
                         lambda t: torch.nn.functional.max_pool2d(t, 2, 2)),
    "max 3x3 stride 1 padded": (lambda x: relax.op.nn.max_pool2d(x, pool_size=(3, 3), strides=(1, 1),
                                                                 padding=(1, 1, 1, 1)), (2, 3, 11, 13),
                                lambda t: torch.nn.functional.max_pool2d(t, 3, 1, padding=1)),
    "max 3x3 stride 2, 300 columns": (lambda x: relax.op.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2)),
                                      (1, 2, 7, 601), lambda t: torch.nn.functional.max_pool2d(t, 3, 2)),
    "avg 2x2": (lambda x: relax.op.nn.avg_pool2d(x, pool_size=(2, 2), strides=(2, 2)), (2, 4, 10, 14),
                lambda t: torch.nn.functional.avg_pool2d(t, 2, 2)),
    "sum over a middle axis": (lambda x: relax.op.sum(x, axis=[1]), (4, 37, 19), lambda t: t.sum(dim=1)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_window_reductions_vectorize_the_output_row_and_match_torch(case):
    op, shape, reference = CASES[case]
    func = _kernel(op, shape)
    scheduled = apply_default_schedule(func)
    text = scheduled.script()
    assert "T.vectorized" in text, text
    x = np.random.default_rng(len(case)).standard_normal(shape).astype("float32")
    want = reference(torch.from_numpy(x)).numpy()
    got = _run(scheduled, x, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the window's loops run outside the vectorized row: the same values in the same order per
    # output, so the result is the unscheduled kernel's to the bit
    np.testing.assert_array_equal(got, _run(func, x, want.shape))


def test_a_sum_along_the_last_axis_is_not_a_window():
    """Reducing along the input's innermost axis: vectorizing the output row would read down
    columns, so the rule leaves it to the row-reduction rule."""
    func = _kernel(lambda x: relax.op.sum(x, axis=[1]), (16, 64))
    sch = minitvm.s_tir.Schedule(func)
    assert schedule_window_reduction(sch) is False


def test_a_short_output_row_accumulates_in_registers_four_rows_at_a_time():
    """A 13-wide output row (the zoo's mlc_mnist pooling): the window reduces into a local tile
    of 4 rows x 13 (registers, unrolled rows), written to the output once after the window --
    the same maxima as the unscheduled kernel, NaN included."""
    func = _kernel(lambda x: relax.op.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2)), (2, 8, 26, 26))
    scheduled = apply_default_schedule(func)
    text = scheduled.script()
    assert 'scope="local"' in text and "T.unroll(T.int64(4))" in text, text
    x = np.random.default_rng(7).standard_normal((2, 8, 26, 26)).astype("float32")
    x[0, 3, 5, 7] = np.nan
    got = _run(scheduled, x, (2, 8, 13, 13))
    np.testing.assert_array_equal(got, torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, 2).numpy())
    np.testing.assert_array_equal(got, _run(func, x, (2, 8, 13, 13)))
    assert np.isnan(got[0, 3, 2, 3])


@pytest.mark.parametrize("shape", [(2, 4, 28, 28), (1, 2, 9, 261)], ids=["rows in registers", "long rows"])
def test_a_padded_max_pool_pads_the_rows_each_group_of_outputs_reads(shape):
    """ResNet's 3x3 stride-2 max pool with a border of 1: the ``-inf`` padding is computed under
    the loop over output rows (the few padded rows a group of outputs reads) instead of as a
    padded copy of the whole input before the loop -- the same maxima as torch, a NaN and the
    border included."""
    func = _kernel(lambda x: relax.op.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1)),
                   shape)
    scheduled = apply_default_schedule(func)
    sch = minitvm.s_tir.Schedule(scheduled)
    pad_loops = sch.get_loops(sch.get_block("pad_temp"))
    pool_loops = sch.get_loops(sch.get_block("pool_max_update"))
    assert sch.get(pad_loops[0]).same_as(sch.get(pool_loops[0])), scheduled.script()
    x = np.random.default_rng(3).standard_normal(shape).astype("float32")
    x[0, 1, 0, 0] = np.nan
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x), 3, 2, padding=1).numpy()
    got = _run(scheduled, x, want.shape)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0, 1, 0, 0])


def test_the_mnist_pool_at_batch_8_runs_its_rows_on_threads():
    """The zoo's mlc_mnist pool at batch 8, 8 x 32 x 26 x 26 -> 13 x 13: 173K window positions,
    under the elementwise threshold but worth threads (``WINDOW_PARALLEL_WORK``: each position is
    a strided load and a NaN-propagating max) -- the same maxima as torch, a NaN included."""
    shape = (8, 32, 26, 26)
    func = _kernel(lambda x: relax.op.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2)), shape)
    scheduled = apply_default_schedule(func)
    assert "T.parallel" in scheduled.script(), scheduled.script()
    x = np.random.default_rng(8).standard_normal(shape).astype("float32")
    x[7, 31, 25, 25] = np.nan
    got = _run(scheduled, x, (8, 32, 13, 13))
    np.testing.assert_array_equal(got, torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, 2).numpy())
    assert np.isnan(got[7, 31, 12, 12])
