"""from_exported_program against torch where type promotion and pooling divisors are subtle:
bool arithmetic (``True + True`` is True), comparisons that promote a bool tensor against a
number, and avg/max pooling with ceil mode and padding."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
import torch

import minitvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program

F = torch.nn.functional


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _run(fn, *args):
    mod = from_exported_program(torch.export.export(Fn(fn), args), unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    return vm["main"](*(minitvm.nd.array(a.numpy()) for a in args)).numpy()


def _check(fn, *args):
    want = fn(*args).numpy()
    got = _run(fn, *args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


GEN = torch.Generator().manual_seed(13)
MASK_A = torch.rand(10, 10, generator=GEN) > 0.5
MASK_B = torch.rand(10, 10, generator=GEN) > 0.5
INTS = torch.randint(-5, 5, (10, 10), generator=GEN)
FLOATS = torch.randn(10, 10, generator=GEN)


@pytest.mark.parametrize("fn", [torch.add, torch.mul, torch.maximum, torch.minimum, torch.eq, torch.lt,
                                operator.and_, operator.or_, operator.xor, torch.logical_xor],
                         ids=lambda f: getattr(f, "__name__", str(f)))
def test_bool_with_bool(fn):
    _check(fn, MASK_A, MASK_B)


@pytest.mark.parametrize("other", [INTS, FLOATS], ids=["int64", "float32"])
@pytest.mark.parametrize("fn", [torch.add, torch.mul, torch.div, torch.eq, torch.gt],
                         ids=lambda f: f.__name__)
def test_bool_with_number_tensor_promotes(fn, other):
    _check(fn, MASK_A, other)


@pytest.mark.parametrize("scalar", [True, 2, 1.5])
@pytest.mark.parametrize("fn", [operator.add, operator.mul, operator.eq, operator.lt],
                         ids=lambda f: f.__name__)
def test_bool_with_python_scalar(fn, scalar):
    # a bool tensor against 2 compares as int64 (torch.result_type), not as bool
    _check(lambda a: fn(a, scalar), MASK_A)


@pytest.mark.parametrize("fn", [torch.logical_and, torch.logical_or, torch.logical_xor], ids=lambda f: f.__name__)
def test_logical_ops_on_numbers_test_nonzero(fn):
    _check(fn, FLOATS, INTS)


def test_bool_subtraction_is_refused_as_in_torch():
    with pytest.raises(RuntimeError, match="Subtraction"):
        torch.sub(MASK_A, MASK_B)


POOL_CASES = [
    (size, k, s, p, cip)
    for size, k, s, p, cip in itertools.product((5, 6, 7), (2, 3), (1, 2, 3), (0, 1), (False, True))
    if p <= k // 2 and (size + k + s + p) % 3 == 0  # a spread-out third of the grid keeps the test quick
]


@pytest.mark.parametrize("size,kernel,stride,padding,count_include_pad", POOL_CASES)
def test_avg_pool1d_and_2d_ceil_mode(size, kernel, stride, padding, count_include_pad):
    kw = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=True,
              count_include_pad=count_include_pad)
    x1 = torch.randn(2, 3, size, generator=GEN)
    _check(lambda x: F.avg_pool1d(x, **kw), x1)
    x2 = torch.randn(1, 2, size, size + 1, generator=GEN)
    _check(lambda x: F.avg_pool2d(x, **kw), x2)


def test_avg_pool1d_ceil_mode_issue_case():
    # the reported case: the last window is clipped at the padded end (max rel. error was 0.33)
    x = torch.randn(1, 2, 10, generator=GEN)
    _check(lambda t: F.avg_pool1d(t, 3, 2, padding=1, ceil_mode=True), x)


@pytest.mark.parametrize("size,kernel,stride,padding", [(5, 2, 2, 1), (7, 3, 2, 1), (6, 3, 3, 1)])
def test_max_pool_ceil_mode_drops_window_starting_in_trailing_padding(size, kernel, stride, padding):
    x = torch.randn(1, 2, size, size, generator=GEN)
    _check(lambda t: F.max_pool2d(t, kernel, stride, padding, ceil_mode=True), x)
    _check(lambda t: F.avg_pool2d(t, kernel, stride, padding, ceil_mode=True), x)


def test_avg_pool_divisor_override_is_refused_before_conversion():
    x = torch.randn(1, 2, 6, 6, generator=GEN)
    ep = torch.export.export(Fn(lambda t: F.avg_pool2d(t, 2, divisor_override=3)), (x,))
    with pytest.raises(ValueError, match="avg_pool2d.default: avg_pool's divisor_override is not supported"):
        from_exported_program(ep)
