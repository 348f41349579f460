"""Models written with ``relax.frontend.nn`` (and one dense layer with a BlockBuilder), shared by
tests and benchmarks."""

from __future__ import annotations

from typing import Any

from .. import relax
from ..relax.frontend import nn

__all__ = ["QuickStartMLP", "export_quick_start_mlp", "linear_module"]


class QuickStartMLP(nn.Module):
    """TVM's quick-start MLP: 784 -> 256 -> ReLU -> 10 (chapters/00_overview.ipynb builds the same for 8 x 8
    digits: 64 -> 256 -> ReLU -> 10)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x: Any) -> Any:
        return self.fc2(self.relu1(self.fc1(x)))


def export_quick_start_mlp(batch: int | str = 1) -> tuple[Any, list]:
    """``export_tvm`` of the MLP for inputs ``(batch, 784)``: (IRModule with ``forward``, parameter spec)."""
    return QuickStartMLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor((batch, 784), "float32")}})


def linear_module(rows: Any, k: int, n_out: int, act: str | None = None) -> Any:
    """``act(x @ w.T + b)`` over ``rows`` rows (an int, or a ``tir.Var`` for a prompt of any
    length) as a Relax module whose weights are parameters, as ``nn.Linear`` exports them;
    ``act`` names a ``relax.op.nn`` activation (``"gelu"``, ``"silu"``) or is None."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((rows, k), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((n_out, k), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((n_out,), "float32"))
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(relax.op.matmul(x, relax.op.permute_dims(w)), b))
            if act:
                y = bb.emit(getattr(relax.op.nn, act)(y))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()
