"""``relax.sort``, ``argsort`` and ``topk``: built and run against numpy's stable sort on
seeded random data (ties and NaN included), and the struct-info rules TVM's tests pin."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.struct_info import StructInfoError

from ._run import rand, run_op


def test_sort_and_argsort_match_numpy_stable_sort_with_ties_and_nan():
    rng = np.random.default_rng(0)
    ints = rng.integers(-3, 4, size=(3, 7, 2)).astype("int32")  # many ties: stability shows
    got = run_op(lambda a: R.argsort(a, axis=1, dtype="int64"), ints)
    np.testing.assert_array_equal(got, np.argsort(ints, axis=1, kind="stable"))
    got = run_op(lambda a: R.argsort(a, axis=1, descending=True), ints)
    np.testing.assert_array_equal(got, np.argsort(-ints, axis=1, kind="stable").astype("int32"))
    x = rand(rng, 4, 6)
    x[1, 2] = np.nan
    np.testing.assert_array_equal(run_op(lambda a: R.sort(a), x), np.sort(x, axis=-1))  # NaN last
    # descending, NaN counts as the largest value: first, as in torch
    want = torch.sort(torch.tensor(x[:, :3]), dim=0, descending=True, stable=True).values.numpy()
    np.testing.assert_array_equal(run_op(lambda a: R.sort(a, axis=0, descending=True), x[:, :3]), want)


def test_topk_matches_numpy():
    rng = np.random.default_rng(1)
    x = rand(rng, 2, 9, 3)
    values, indices = run_op(lambda a: R.topk(a, k=4, axis=1), x)
    order = np.argsort(-x, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(indices, order.astype("int32"))
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))
    smallest = run_op(lambda a: R.topk(a, k=2, ret_type="values", largest=False), x)
    np.testing.assert_array_equal(smallest, np.sort(x, axis=-1)[..., :2])


def _sinfo(call):
    return relax.BlockBuilder().normalize(call).struct_info


def test_struct_info_and_errors():
    x = relax.Var("x", relax.TensorStructInfo((2, 10, 4), "float32"))
    got = _sinfo(R.topk(x, k=5, axis=1, dtype="int64"))
    assert [int(d) for d in got.fields[1].shape.values] == [2, 5, 4] and got.fields[1].dtype == "int64"
    assert [int(d) for d in _sinfo(R.topk(x, k=6, ret_type="values")).shape.values] == [2, 10, 4]
    assert _sinfo(R.argsort(x)).dtype == "int32"
    with pytest.raises(StructInfoError, match="relax.sort expects a tensor for data"):
        _sinfo(R.sort(relax.Var("s", relax.ShapeStructInfo((2, 3)))))
    with pytest.raises(ValueError, match="ret_type must be one of both, values, indices"):
        R.topk(x, ret_type="all")
