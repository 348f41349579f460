"""Models the Relax tests build: the MLC course's linear + relu with emit_te (TVM's quick
start MLP is ``minitvm.testing.nn_models.QuickStartMLP``)."""

from __future__ import annotations

from minitvm import relax, te


def te_matmul(A: te.Tensor, B: te.Tensor) -> te.Tensor:
    assert A.shape[1] == B.shape[0]
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((A.shape[0], B.shape[1]),
                      lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")


def te_relu(A: te.Tensor) -> te.Tensor:
    return te.compute(A.shape, lambda *i: te.max(A(*i), te.const(0, A.dtype)), name="relu")


def build_linear_relu(batch=1, in_features=784, out_features=128):
    """``relu(x @ w)`` with emit_te, as in the MLC course; ``batch`` may be a tir.Var."""
    x = relax.Var("x", relax.TensorStructInfo((batch, in_features), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((in_features, out_features), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_matmul, x, w)
            lv1 = bb.emit_te(te_relu, lv0)
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    return bb.get()
