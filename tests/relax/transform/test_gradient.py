"""relax.transform.Gradient: the adjoint function's gradients against formulas worked by hand
and against finite differences, on seeded random data; the refusals name the problem."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.testing import nn
from minitvm.testing.utils import check_numerical_grads


def _tensor(name, *shape, dtype="float32"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


def _vm(mod):
    return relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())


def test_gradient_of_a_broadcast_expression_matches_the_hand_derivation():
    x, y, z, u = _tensor("x", 3, 5), _tensor("y", 5), _tensor("z", 5), _tensor("u", 5)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y, z, u]):
        with bb.dataflow():
            d = bb.emit(R.subtract(R.add(x, x), R.add(y, y)))  # 2x - 2y
            s = bb.emit(R.add(y, z))
            loss = bb.emit_output(R.sum(R.multiply(d, s)))
        bb.emit_func_output(loss)
    mod = relax.transform.Gradient("main")(bb.get())
    rng = np.random.default_rng(0)
    a, b, c, e = (rng.uniform(-1, 1, s).astype("float32") for s in [(3, 5), (5,), (5,), (5,)])
    out, grads = _vm(mod)["main_adjoint"](*(minitvm.nd.array(v) for v in (a, b, c, e)))
    np.testing.assert_allclose(out.numpy(), np.sum((2 * a - 2 * b) * (b + c)), rtol=1e-5)
    want = [np.broadcast_to(2 * b + 2 * c, a.shape), np.sum(2 * a - 4 * b - 2 * c, axis=0),
            np.sum(2 * a - 2 * b, axis=0), np.zeros(5)]  # u is unused: zeros
    for got, w in zip(grads, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-4, atol=1e-5)


def test_gradient_through_a_tuple_and_selected_parameters_matches_finite_differences():
    x, w = _tensor("x", 2, 6, dtype="float64"), _tensor("w", 3, 4, dtype="float64")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            parts = bb.emit(R.split(x, 2, axis=1))  # two (2, 3) halves
            h = bb.emit(R.matmul(R.nn.relu(parts[1]), w))
            loss = bb.emit_output(R.sum(R.multiply(R.sigmoid(h), R.matmul(R.tanh(parts[0]), w))))
        bb.emit_func_output(loss)
    before = bb.get()
    mod = relax.transform.Gradient("main", require_grads=[w])(before)
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (2, 6)), rng.uniform(-1, 1, (3, 4))
    _, (gw,) = _vm(mod)["main_adjoint"](minitvm.nd.array(a), minitvm.nd.array(b))
    forward = _vm(before)["main"]
    check_numerical_grads(lambda wv: float(forward(minitvm.nd.array(a), minitvm.nd.array(wv)).numpy()),
                          [b], [gw.numpy()])


def test_a_target_that_is_not_a_scalar_is_refused():
    x = _tensor("x", 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(R.exp(x))
        bb.emit_func_output(y)
    with pytest.raises(minitvm.TVMError, match="the target of main must be a float scalar"):
        relax.transform.Gradient("main")(bb.get())


def test_checkpointed_segments_recompute_and_give_the_same_gradient():
    """emit_checkpoint_sequential: values inside a checkpointed segment are recomputed
    (``<name>_cp`` bindings) in the backward pass; the gradient is the plain one, and matches
    d/dx sum(tanh(x * w) ** 2 + x) worked by hand."""
    x, w = _tensor("x", 4, 3), _tensor("w", 4, 3)
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            layers = [lambda v: R.multiply(v, w), R.tanh, lambda v: R.power(v, relax.const(2.0, "float32"))]
            out = nn.emit_checkpoint_sequential(layers, 1, x, checkpoint_last=True)
            loss = bb.emit_output(R.sum(R.add(out, x)))
        bb.emit_func_output(loss)
    mod = relax.transform.Gradient("main")(bb.get())
    names = [b.var.name_hint for b in mod["main_adjoint"].body.blocks[0].bindings]
    assert any(n.endswith("_cp") for n in names), names
    rng = np.random.default_rng(2)
    a, b = (rng.uniform(-1, 1, (4, 3)).astype("float32") for _ in range(2))
    out, (gx, gw) = _vm(mod)["main_adjoint"](minitvm.nd.array(a), minitvm.nd.array(b))
    t = np.tanh(a * b)
    np.testing.assert_allclose(out.numpy(), np.sum(t ** 2 + a), rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), 2 * t * (1 - t ** 2) * b + 1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), 2 * t * (1 - t ** 2) * a, rtol=1e-4, atol=1e-5)


def test_call_tir_with_grad_uses_the_registered_te_gradient():
    """bb.call_te_with_grad: the forward keeps R.call_tir_with_grad; the adjoint calls the
    TE gradient registered under te_grad_name (with te_grad_kwargs) and plain call_tir."""
    from minitvm import te
    from minitvm.relax.training.utils import register_te_gradient

    @register_te_gradient("minitvm_test_scaled_square_grad")
    def _grad(g, x, k):
        return [te.compute(x.shape, lambda *i: g[i] * x[i] * k * 2.0, name="scaled_square_grad")]

    def scaled_square(x, k):
        return te.compute(x.shape, lambda *i: x[i] * x[i] * k, name="scaled_square")

    x = _tensor("x", 3, 4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(bb.call_te_with_grad(scaled_square, x, 3.0, te_grad_name="minitvm_test_scaled_square_grad",
                                             te_grad_kwargs={"k": 3.0}))
            loss = bb.emit_output(R.sum(y))
        bb.emit_func_output(loss)
    mod = relax.transform.Gradient("main")(bb.get())
    assert mod["main"].body.blocks[0].bindings[0].value.op.name == "relax.call_tir_with_grad"
    ops = {b.value.op.name for b in mod["main_adjoint"].body.blocks[0].bindings if isinstance(b.value, relax.Call)}
    assert "relax.call_tir_with_grad" not in ops and "relax.call_tir" in ops
    a = np.random.default_rng(3).uniform(-1, 1, (3, 4)).astype("float32")
    out, (gx,) = _vm(mod)["main_adjoint"](minitvm.nd.array(a))
    np.testing.assert_allclose(out.numpy(), np.sum(3 * a * a), rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), 6 * a, rtol=1e-5)
