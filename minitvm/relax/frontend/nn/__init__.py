"""``relax.frontend.nn``: write a model as Python classes, export it to Relax.

    from minitvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self):
            self.fc1, self.relu, self.fc2 = nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    mod, params = MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})

``mod["forward"]`` takes ``x`` and then every parameter (``params``: ``[("fc1.weight",
Parameter), ...]`` in that order); its body is a dataflow block of high-level Relax ops.  A spec
may name several methods, ``int`` and ``nn.spec.Object`` arguments, and per method a ``"$"``
entry with ``param_mode`` / ``effect_mode`` (see :mod:`.spec`).
"""

from . import op, spec
from .core import (
                   Effect,
                   Module,
                   ModuleDict,
                   ModuleList,
                   Object,
                   Parameter,
                   ParameterDict,
                   ParameterList,
                   Tensor,
                   get_default_dtype,
                   set_default_dtype,
)
from .exporter import add_extern
from .extern import ExternModule, ObjectModule, SourceModule
from .modules import (
                   GELU,
                   Conv1D,
                   Conv2D,
                   Embedding,
                   GroupNorm,
                   Identity,
                   IOEffect,
                   KVCache,
                   LayerNorm,
                   Linear,
                   ReLU,
                   RMSNorm,
                   Sequential,
                   SiLU,
)
from .op import *  # noqa: F401,F403  (as TVM: nn.silu, nn.split ... next to nn.op.*)
from .op import __all__ as _op_all
from .visitor import Mutator

__all__ = ["Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Parameter", "Tensor",
           "Object", "Effect", "Linear", "Conv1D", "Conv2D", "GroupNorm", "LayerNorm", "RMSNorm", "Embedding",
           "ReLU", "GELU", "SiLU",
           "Identity", "Sequential", "IOEffect", "KVCache", "ExternModule", "ObjectModule", "SourceModule",
           "add_extern", "Mutator",
           "get_default_dtype", "set_default_dtype", "op", "spec", *_op_all]
