"""Pooling in 1, 2 and 3 spatial dimensions (``relax.nn.{max,avg}_pool{1,2,3}d``,
``adaptive_avg_pool{1,2,3}d``): built and run against torch on seeded random data, in the
canonical and in other layouts, and the struct-info errors TVM raises."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.struct_info import StructInfoError

from ._run import rand, run_op

_TORCH_POOL = {("max", 1): F.max_pool1d, ("max", 2): F.max_pool2d, ("max", 3): F.max_pool3d,
               ("avg", 1): F.avg_pool1d, ("avg", 2): F.avg_pool2d, ("avg", 3): F.avg_pool3d}
_TORCH_ADAPTIVE = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}


def _pool(kind: str, dim: int):
    return getattr(R.nn, f"{kind}_pool{dim}d")


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dim,size,kernel,stride,pad,ceil,cip", [
    (1, (2, 3, 11), 3, 2, 1, True, False),
    (2, (2, 3, 9, 8), 3, 2, 1, False, True),
    (3, (1, 2, 7, 6, 5), 2, 2, 1, True, True),
])
def test_pool_matches_torch(kind, dim, size, kernel, stride, pad, ceil, cip):
    x = rand(np.random.default_rng(dim), *size)
    got = run_op(lambda a: _pool(kind, dim)(a, kernel, stride, pad, ceil_mode=ceil, count_include_pad=cip), x)
    extra = {"count_include_pad": cip} if kind == "avg" else {}
    want = _TORCH_POOL[kind, dim](torch.tensor(x), kernel, stride, pad, ceil_mode=ceil, **extra).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_dilated_max_pool1d_and_channels_last_layouts_match_torch():
    rng = np.random.default_rng(7)
    x = rand(rng, 2, 3, 12)
    got = run_op(lambda a: R.nn.max_pool1d(a, 3, 1, 1, dilation=2), x)
    np.testing.assert_allclose(got, F.max_pool1d(torch.tensor(x), 3, 1, 1, dilation=2).numpy())
    # data in NDHWC, output in NCDHW: pooled in the data's layout, then transposed
    x3 = rand(rng, 1, 4, 6, 5, 2)
    want = F.avg_pool3d(torch.tensor(x3).permute(0, 4, 1, 2, 3), 2, 2).numpy()
    got = run_op(lambda a: R.nn.avg_pool3d(a, 2, 2, layout="NDHWC", out_layout="NCDHW"), x3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dim,size,out", [(1, (2, 3, 10), 4), (2, (1, 2, 6, 9), (3, 2)),
                                          (3, (1, 2, 4, 6, 3), (2, 3, 1))])
def test_adaptive_avg_pool_matches_torch(dim, size, out):
    x = rand(np.random.default_rng(3 + dim), *size)
    got = run_op(lambda a: getattr(R.nn, f"adaptive_avg_pool{dim}d")(a, out), x)
    np.testing.assert_allclose(got, _TORCH_ADAPTIVE[dim](torch.tensor(x), out).numpy(), rtol=1e-5, atol=1e-6)


def _sinfo(call):
    return relax.BlockBuilder().normalize(call).struct_info


def _v(shape):
    return relax.Var("x", relax.TensorStructInfo(shape, "float32"))


def test_struct_info_in_blocked_and_permuted_layouts():
    got = _sinfo(R.nn.max_pool2d(_v((2, 4, 32, 32, 16)), 3, layout="NCHW16c", out_layout="NHWC"))
    assert [int(d) for d in got.shape.values] == [2, 30, 30, 64]
    got = _sinfo(R.nn.adaptive_avg_pool3d(_v((2, 8, 8, 8, 3)), 2, layout="NDHWC", out_layout="NCDHW4c"))
    assert [int(d) for d in got.shape.values] == [2, 1, 2, 2, 2, 4]
    assert R.nn.avg_pool3d(_v((1, 1, 4, 4, 4)), 2).attrs.strides[2].dtype == "int64"


@pytest.mark.parametrize("make,match", [
    (lambda: R.nn.max_pool1d(_v((2, 3, 28, 28))),
     r"max_pool1d: data must be 3-D for the layout 'NCW', got \(2, 3, 28, 28\)"),
    (lambda: R.nn.avg_pool3d(_v((2, 3, 8, 8, 8)), layout="OIDHW"),
     "data layout 'OIDHW' must name the dimensions of NCDHW"),
    (lambda: R.nn.adaptive_avg_pool1d(_v((2, 3, 8)), out_layout="NWW"), "output layout 'NWW'"),
    (lambda: R.nn.max_pool2d(_v((1, 1, 2, 2)), 3), r"the window \[3, 3\] does not fit the data \(1, 1, 2, 2\)"),
])
def test_struct_info_errors_name_the_problem(make, match):
    with pytest.raises(StructInfoError, match=match):
        _sinfo(make())


def test_wrong_attribute_lengths_are_refused_when_the_call_is_made():
    x = _v((2, 3, 8))
    with pytest.raises(StructInfoError, match=r"max_pool1d pool_size must have 1 value, got \(1, 2\)"):
        R.nn.max_pool1d(x, pool_size=(1, 2))
    with pytest.raises(StructInfoError, match="avg_pool3d padding must have 1, 3 or 6 values"):
        R.nn.avg_pool3d(x, padding=(1, 2))
    with pytest.raises(StructInfoError, match="adaptive_avg_pool2d output_size must have 2 values"):
        R.nn.adaptive_avg_pool2d(x, output_size=(1, 2, 3))
