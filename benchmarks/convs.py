"""The ``conv`` rows of ``benchmarks/run.py``: GFLOP/s of single convolution kernels against the
machine's peak, torch eager beside them.

Each case is one ``Conv2d(+bias) + ReLU`` layer exported from torch and compiled two ways:

* ``minitvm default`` -- the default pipeline: ``AlterOpLayout`` packs the weight in blocks of
  16 output channels at compile time and ``topi.x86.conv2d_nchw_packed``'s register-tiled
  schedule runs it (bias and ReLU fused into the write-back);
* ``minitvm generic`` -- ``LegalizeOps`` + fusion + ``DefaultCPUSchedule`` only: the generic
  NCHW kernel (vectorized along output columns), for reference;
* ``torch`` -- ``torch.relu(conv(x))`` in eager torch (oneDNN/MKL), 2 threads.

The cases are the convolutions of the zoo's ``resnet_small`` (3x64x64 input) at batch 1 and 8.
Peak: cores x clock (``/proc/cpuinfo``) x 64 float32 FLOP per cycle (two 512-bit FMA pipes, as
on Zen 4/5 and recent Xeons) -- a nominal figure: turbo clocks and other processes on the two
cores move it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Timing, time_interleaved  # noqa: E402

#: (in channels, out channels, kernel, stride, input height = width): resnet_small's convolutions
CASES = ((3, 16, 3, 2, 64), (16, 16, 3, 1, 32), (16, 32, 3, 2, 32), (32, 32, 3, 1, 16), (16, 32, 1, 2, 32))
#: float32 FLOP per cycle and core: 2 FMA pipes x 16 lanes x 2
FLOP_PER_CYCLE = 64


def peak_gflops() -> float | None:
    """Nominal float32 peak of the machine in GFLOP/s (None when /proc/cpuinfo has no clock)."""
    try:
        mhz = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
    except OSError:
        return None
    return None if not mhz else len(mhz) * max(mhz) * FLOP_PER_CYCLE / 1000.0


@dataclass
class ConvResult:
    """One case: its name, FLOP per call, timings by row name, max |error| vs torch per row."""

    case: str
    flops: float
    timings: dict[str, Timing]
    errors: dict[str, float]


def case_name(cin: int, cout: int, k: int, stride: int, hw: int, batch: int) -> str:
    return f"{cin}->{cout} {k}x{k}/{stride} {hw}x{hw} b={batch}"


def _compile(mod: Any, how: str) -> Any:
    import minitvm
    from minitvm import relax
    from minitvm.relax import pipeline
    from minitvm.tir.transform import DefaultCPUSchedule
    from minitvm.transform import Sequential

    if how == "default":
        lowered = relax.get_pipeline("default")(mod)
    else:
        lowered = Sequential([*pipeline.legalize_passes(), DefaultCPUSchedule()])(mod)
    ex = minitvm.compile(lowered, "llvm", relax_pipeline=None)
    return relax.VirtualMachine(ex, minitvm.cpu())["main"]


def measure_case(cin: int, cout: int, k: int, stride: int, hw: int, batch: int, torch: Any, repeat: int = 20,
                 rounds: int = 3, warmup: int = 3) -> ConvResult:
    """Compile and time one convolution layer (see the module docstring)."""
    import numpy as np

    import minitvm
    from minitvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(cin * 1000 + cout * 10 + k)
    layer = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2), torch.nn.ReLU()).eval()
    x = torch.randn(batch, cin, hw, hw)
    mod = from_exported_program(torch.export.export(layer, (x,)), unwrap_unit_return_tuple=True)
    want = layer(x).detach().numpy()
    xs = minitvm.nd.array(x.numpy())
    fns: dict[str, Any] = {"torch": lambda: layer(x)}
    errors = {}
    for how in ("default", "generic"):
        main = _compile(mod, how)
        errors[f"minitvm {how}"] = float(np.abs(main(xs).numpy() - want).max())
        fns[f"minitvm {how}"] = lambda main=main: main(xs)
    out = (hw + 2 * (k // 2) - k) // stride + 1
    flops = 2.0 * batch * cout * out * out * cin * k * k
    return ConvResult(case_name(cin, cout, k, stride, hw, batch), flops,
                      time_interleaved(fns, repeat, rounds, warmup), errors)
