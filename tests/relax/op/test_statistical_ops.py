"""median and the reductions' and scans' struct info as TVM's rules give it: against torch
on random data, and the shapes, dtypes and virtual devices inferred."""

import numpy as np
import pytest
import torch

from minitvm import relax
from minitvm.ir import VDevice
from minitvm.relax import op as R

from ._run import rand, run_op


def _sinfo(call):
    bb = relax.BlockBuilder()
    with bb.function("f", [a for a in call.args if isinstance(a, relax.Var)]):
        out = bb.emit(call)
        bb.emit_func_output(out)
    return out.struct_info


def test_median_along_an_axis_matches_torch_values_and_indices():
    rng = np.random.default_rng(21)
    x = rand(rng, 3, 6, 4)  # an even count along axis 1: torch takes the lower middle value
    val, idx = run_op(lambda a: R.median(a, axis=1), x)
    want = torch.tensor(x).median(dim=1)
    np.testing.assert_array_equal(val, want.values.numpy())
    np.testing.assert_array_equal(idx, want.indices.numpy())
    val, idx = run_op(lambda a: R.median(a, axis=-1, keepdims=True), x)
    assert val.shape == (3, 6, 1) and idx.dtype == np.int64
    np.testing.assert_array_equal(val, torch.tensor(x).median(dim=-1, keepdim=True).values.numpy())


def test_median_of_every_element_matches_torch():
    rng = np.random.default_rng(22)
    x = rand(rng, 3, 5)
    got = run_op(lambda a: R.median(a), x)
    assert got.shape == ()
    np.testing.assert_array_equal(got, torch.tensor(x).median().numpy())
    assert run_op(lambda a: R.median(a, keepdims=True), x).shape == (1, 1)


def test_median_struct_info_is_a_pair_along_one_axis():
    x = relax.Var("x", relax.TensorStructInfo((2, 3, 4), "float32"))
    sinfo = _sinfo(R.median(x, axis=[1]))
    assert isinstance(sinfo, relax.TupleStructInfo)
    assert [f.dtype for f in sinfo.fields] == ["float32", "int64"]
    assert [int(d) for d in sinfo.fields[1].shape.values] == [2, 4]
    assert isinstance(_sinfo(R.median(x)), relax.TensorStructInfo)


def test_reductions_and_scans_keep_the_vdevice_and_read_only_literal_shapes():
    vdev = VDevice("llvm")
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32", vdev))
    assert _sinfo(R.sum(x, axis=1)).vdevice == vdev
    assert _sinfo(R.cumsum(x, axis=0)).vdevice == vdev
    # a shape variable whose values are known: TVM's rule reads no dims from it
    s = relax.Var("s", relax.ShapeStructInfo((2, 3)))
    y = relax.Var("y", relax.TensorStructInfo(s, "float32"))
    sinfo = _sinfo(R.mean(y, axis=1))
    assert sinfo.shape is None and sinfo.ndim == 1
    assert list(_sinfo(R.mean(y)).shape.values) == []
    assert [int(d) for d in _sinfo(R.max(y, keepdims=True)).shape.values] == [1, 1]


def test_median_over_several_axes_is_refused_when_legalized():
    with pytest.raises(NotImplementedError, match="several axes"):
        run_op(lambda a: R.median(a, axis=[0, 1]), np.ones((2, 3), "float32"))
