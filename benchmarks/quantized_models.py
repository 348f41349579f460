"""Weight-only quantization of whole models (``relax.transform.QuantizeLinearWeights``): the
weights' size, the outputs' largest difference from float32, and the time per call at batch 1,
for float32, int8 (per-channel scales) and packed int4 (scales per 32 weights).

    .venv/bin/python benchmarks/quantized_models.py

Models: a decode-sized MLP (1024 -> 2048 -> 1024 at one row), a transformer block (256 wide, 8
tokens) and the zoo's two-layer LLaMA decoder (32 wide: its 48-wide MLP input stays float under
int4, which needs rows of a multiple of 32 weights).  All are seeded and run on seeded inputs;
"max|d|" is the largest absolute difference of the outputs from minitvm's float32 ones, "rel"
that over the largest float32 output.  Nothing is asserted.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from common import format_table, setup_environment, time_fn, write_json

import minitvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program
from minitvm.relax.transform.quantize_weights import QuantizeLinearWeights, constant_bytes


def _models():
    """name -> (torch module, example inputs)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from minitvm.testing import zoo

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024))

    class Block(nn.Module):
        def __init__(self, dim: int = 256, heads: int = 4):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.o = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(y.transpose(1, 2).reshape(b, t, d))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    llama = zoo.MODELS["llama_decoder"]
    return {
        "mlp 1024-2048-1024": (mlp.eval(), (torch.randn(1, 1024),)),
        "transformer block 256 x 8": (Block().eval(), (torch.randn(1, 8, 256),)),
        "llama_decoder (zoo)": (llama.build(), llama.example_inputs(1)),
    }


def measure(name: str, model, inputs, repeat: int) -> list[str]:
    import torch

    ep = torch.export.export(model, inputs)
    mod = from_exported_program(ep)
    args = [minitvm.nd.array(a.numpy()) for a in inputs]
    results = {}
    for mode in ("fp32", "int8", "int4"):
        m = mod if mode == "fp32" else QuantizeLinearWeights(mode)(mod)
        vm = relax.VirtualMachine(minitvm.compile(m, target="llvm"), minitvm.cpu())
        out = vm["main"](*args)
        out = out[0] if isinstance(out, (list, tuple)) else out
        results[mode] = (constant_bytes(m), out.numpy(), time_fn(lambda vm=vm: vm["main"](*args), repeat=repeat).median)
    size0, ref, t0 = results["fp32"]
    cells = [name, f"{size0 / 2**10:.0f}"]
    for mode in ("int8", "int4"):
        size, out, _ = results[mode]
        d = float(np.abs(out - ref).max())
        cells += [f"{size / 2**10:.0f} ({size0 / size:.1f}x)", f"{d:.1e}", f"{d / float(np.abs(ref).max()):.1e}"]
    cells += [" / ".join(f"{results[m][2] * 1e6:.0f}" for m in ("fp32", "int8", "int4"))]
    return cells


def main() -> int:
    setup_environment()
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    head = ["model", "fp32 KiB", "int8 KiB", "max|d|", "rel", "int4 KiB", "max|d|", "rel", "us fp32/int8/int4"]
    lines = [measure(name, model, inputs, repeat=20) for name, (model, inputs) in _models().items()]
    print(format_table(head, lines))
    write_json("quantized_models", [], config={"table": [dict(zip(head, cells)) for cells in lines],
                                               "loadavg": list(load)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
