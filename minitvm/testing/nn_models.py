"""Models written with ``relax.frontend.nn``, shared by tests and benchmarks."""

from __future__ import annotations

from typing import Any

from ..relax.frontend import nn

__all__ = ["QuickStartMLP", "export_quick_start_mlp"]


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
