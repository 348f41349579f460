"""The MLC course's end-to-end model (linear -> relu -> linear), built three ways:
call_tir of TVMScript PrimFuncs, emit_te, and call_dps_packed of registered functions."""

from __future__ import annotations

import numpy as np

from minitvm import relax, te
from minitvm.testing.programs import MLCModule

IN, HIDDEN, OUT = 784, 128, 10


# the MLC course's hand-written kernels (minitvm.testing.programs.MLCModule)
linear0, relu0, linear1 = (MLCModule[name] for name in ("linear0", "relu0", "linear1"))


def _params(batch):
    x = relax.Var("x", relax.TensorStructInfo((batch, IN), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((HIDDEN, IN), "float32"))
    b0 = relax.Var("b0", relax.TensorStructInfo((HIDDEN,), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((OUT, HIDDEN), "float32"))
    b1 = relax.Var("b1", relax.TensorStructInfo((OUT,), "float32"))
    return x, w0, b0, w1, b1


def mlp_call_tir():
    """The MLC chapter's MyModule: R.call_tir of three hand-written PrimFuncs (batch 1)."""
    bb = relax.BlockBuilder()
    gv_linear0 = bb.add_func(linear0, "linear0")
    gv_relu0 = bb.add_func(relu0, "relu0")
    gv_linear1 = bb.add_func(linear1, "linear1")
    x, w0, b0, w1, b1 = _params(1)
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit(relax.call_tir(gv_linear0, (x, w0, b0), relax.TensorStructInfo((1, HIDDEN), "float32")))
            lv1 = bb.emit(relax.call_tir(gv_relu0, (lv0,), relax.TensorStructInfo((1, HIDDEN), "float32")))
            out = bb.emit(relax.call_tir(gv_linear1, (lv1, w1, b1), relax.TensorStructInfo((1, OUT), "float32")))
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


def te_linear(X, W, B):
    k = te.reduce_axis((0, X.shape[1]), name="k")
    Y = te.compute((X.shape[0], W.shape[0]), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    return te.compute(Y.shape, lambda i, j: Y[i, j] + B[j], name="Z")


def te_relu(X):
    return te.compute(X.shape, lambda i, j: te.max(X[i, j], te.const(0, X.dtype)), name="relu")


def mlp_emit_te(batch=1):
    """The same model with emit_te; ``batch`` may be a tir.Var (symbolic batch)."""
    bb = relax.BlockBuilder()
    x, w0, b0, w1, b1 = _params(batch)
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_linear, x, w0, b0)
            lv1 = bb.emit_te(te_relu, lv0)
            out = bb.emit_te(te_linear, lv1, w1, b1)
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


def mlp_dps_packed(linear="env.linear", relu="env.relu"):
    """linear and relu as registered Python functions (call_dps_packed), as in the MLC chapter."""
    bb = relax.BlockBuilder()
    x, w0, b0, w1, b1 = _params(1)
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit(relax.call_dps_packed(linear, (x, w0, b0), relax.TensorStructInfo((1, HIDDEN), "float32")))
            lv1 = bb.emit(relax.call_dps_packed(relu, (lv0,), relax.TensorStructInfo((1, HIDDEN), "float32")))
            out = bb.emit(relax.call_dps_packed(linear, (lv1, w1, b1), relax.TensorStructInfo((1, OUT), "float32")))
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


def mlp_inputs(batch=1, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, IN), dtype=np.float32)
    params = [rng.standard_normal(s, dtype=np.float32) * 0.1 for s in [(HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,)]]
    return x, params


def mlp_reference(x, w0, b0, w1, b1):
    return np.maximum(x @ w0.T + b0, 0) @ w1.T + b1


