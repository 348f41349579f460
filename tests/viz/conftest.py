"""Shared inputs of the viz tests: the TVM quick-start MLP, built with relax.frontend.nn."""

import pytest

from minitvm.relax.frontend import nn


class QuickStartMLP(nn.Module):
    """TVM's quick-start MLP: 784 -> 256 -> ReLU -> 10 (as chapters/00_overview.ipynb builds it)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


@pytest.fixture
def mlp():
    """(IRModule with a ``forward`` Relax function, parameter spec) of the quick-start MLP at batch 1."""
    return QuickStartMLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
