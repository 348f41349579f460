"""``relax.frontend.nn``: write a model as Python classes, export it to Relax.

    from minitvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.relu, self.fc2 = nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    mod, params = MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})

``mod["forward"]`` takes ``x`` and then every parameter (``params``: ``[("fc1.weight",
Parameter), ...]`` in that order); its body is a dataflow block of high-level Relax ops.
"""

from . import op, spec
from .core import Module, ModuleList, Parameter, Tensor
from .modules import GELU, Conv2D, Embedding, LayerNorm, Linear, ReLU, RMSNorm, Sequential, SiLU

__all__ = ["Module", "ModuleList", "Parameter", "Tensor", "Linear", "Conv2D", "LayerNorm", "RMSNorm",
           "Embedding", "ReLU", "GELU", "SiLU", "Sequential", "op", "spec"]
