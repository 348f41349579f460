"""Operator gradients (``FPrimalGradient``): each rule's gradient, built and run, against finite
differences of the forward op on seeded random data (``minitvm.testing.check_numerical_grads``)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import Op
from minitvm.relax import op as R
from minitvm.testing.utils import check_numerical_grads

from ._run import run_op


def _vm(params, body_fn):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body_fn(bb))
        bb.emit_func_output(out)
    return relax.VirtualMachine(minitvm.compile(bb.get(), "llvm"), minitvm.cpu())


def _check(make, inputs, differentiable):
    """The gradient of ``sum(w * make(*inputs))`` from the op's rule against finite differences."""
    params = [relax.Var(f"x{i}", relax.TensorStructInfo(a.shape, str(a.dtype))) for i, a in enumerate(inputs)]
    call = make(*params)
    fwd = _vm(params, lambda bb: call)
    rng = np.random.default_rng(5)
    out_shape = [int(d) for d in relax.BlockBuilder().normalize(call).struct_info.shape_values]
    weights = rng.uniform(0.5, 1.5, out_shape).astype(inputs[0].dtype)
    g = relax.Var("g", relax.TensorStructInfo(weights.shape, str(weights.dtype)))
    rule = call.op.get_attr("FPrimalGradient")

    def grads(bb):
        orig = bb.emit(call)
        parts = rule(orig, call, g, bb)
        for i, part in enumerate(parts):  # no gradient flows to the others
            assert (part.op == Op.get("relax.grad.no_grad")) == (i not in differentiable)
        return relax.Tuple([parts[i] for i in differentiable])

    back = _vm(params + [g], grads)
    got = back["main"](*(minitvm.nd.array(a) for a in inputs), minitvm.nd.array(weights))
    got = [t.numpy() for t in got]

    def forward(*xs):
        full = list(inputs)
        for i, x in zip(differentiable, xs):
            full[i] = x
        return float(np.sum(weights * fwd["main"](*(minitvm.nd.array(a) for a in full)).numpy()))

    check_numerical_grads(forward, [inputs[i] for i in differentiable], got)


def test_matmul_of_a_vector_and_a_batch_of_matrices():
    rng = np.random.default_rng(0)
    _check(R.matmul, [rng.uniform(-1, 1, (4,)), rng.uniform(-1, 1, (2, 3, 4, 5))], [0, 1])


def test_grouped_strided_padded_conv2d():
    rng = np.random.default_rng(1)
    _check(lambda x, w: R.nn.conv2d(x, w, strides=2, padding=(2, 1), groups=2),
           [rng.uniform(-1, 1, (1, 4, 6, 5)), rng.uniform(-1, 1, (4, 2, 3, 2))], [0, 1])


def test_take_with_repeated_indices_adds_both():
    rng = np.random.default_rng(2)
    _check(lambda x, i: R.take(x, i, axis=1), [rng.uniform(-1, 1, (2, 5, 3)), np.array([[4, 0], [4, 2]])], [0])


def test_softmax_cumsum_and_variance():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 4))
    for make in (lambda a: R.nn.softmax(a, 0), lambda a: R.cumsum(a, 1), lambda a: R.variance(a, [1], True)):
        _check(make, [x], [0])


def test_check_numerical_grads_rejects_a_wrong_gradient():
    x = np.random.default_rng(4).uniform(1, 2, (3,))
    check_numerical_grads(lambda a: float(np.sum(a ** 3)), [x], [3 * x ** 2])
    with pytest.raises(AssertionError, match="differs from finite differences"):
        check_numerical_grads(lambda a: float(np.sum(a ** 3)), [x], [2 * x ** 2])


@pytest.mark.parametrize("pool", [R.nn.max_pool2d, R.nn.avg_pool2d])
def test_pool2d_with_padding_and_ceil_mode(pool):
    x = np.random.default_rng(6).uniform(0, 3, (1, 2, 6, 5))
    _check(lambda a: pool(a, 3, 2, (1, 2), ceil_mode=True, count_include_pad=True), [x], [0])


def test_checkpoint_marks_take_a_variable_and_are_identities():
    from minitvm.base import TVMError
    from minitvm.error import TVMError as Same
    assert TVMError is Same
    x = relax.Var("x", relax.TensorStructInfo((3, 4), "float32"))
    bb = relax.BlockBuilder()
    assert bb.normalize(R.grad.start_checkpoint(x)).struct_info.shape.values[1].value == 4
    with pytest.raises(TVMError, match="relax.grad.end_checkpoint marks a variable"):
        bb.normalize(R.grad.end_checkpoint(relax.const(1.0, "float32")))
    got = run_op(lambda a: R.grad.end_checkpoint(R.grad.start_checkpoint(a)), np.arange(3.0))
    np.testing.assert_array_equal(got, np.arange(3.0))
