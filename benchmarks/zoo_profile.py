"""Where a zoo model's time goes: the VM's per-kernel profile (``VirtualMachine.profile``) of
each ``minitvm.testing.zoo`` model compiled with the default pipeline.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/zoo_profile.py [--models a,b]

For each (model, batch): the median time of a plain call (``--repeat`` calls), then the profile
of one call after a warm-up (kernels, VM builtins such as ``alloc_tensor``, and the VM's own
overhead between instructions).  The profiled call is slower than a plain one (timing every
instruction costs), so read the shares, not the sum.  Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup_environment  # noqa: E402


def profile_model(name: str, batch: int, repeat: int = 50) -> str:
    """The median call time and the VM profile of zoo model ``name`` at ``batch``, as text."""
    import minitvm
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.testing import zoo

    m = zoo.MODELS[name]
    mod = from_exported_program(zoo.export(m, batch), unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    inputs = [minitvm.nd.array(x.numpy()) for x in m.example_inputs(batch)]
    main = vm["main"]
    for _ in range(5):
        main(*inputs)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        main(*inputs)
        samples.append(time.perf_counter() - t0)
    vm.profile("main", *inputs)  # first-touch of the profiler's own state
    report = vm.profile("main", *inputs)
    return f"== {name} b={batch}: median {statistics.median(samples) * 1e6:.1f} us per call\n{report}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="", help="comma list of zoo models (default: all)")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--repeat", type=int, default=50)
    args = p.parse_args(argv)
    setup_environment(None)
    import torch

    torch.set_num_threads(2)
    from minitvm.testing import zoo

    names = [n.strip() for n in args.models.split(",") if n.strip()] or list(zoo.MODELS)
    for name in names:
        for batch in (int(b) for b in args.batches.split(",")):
            print(profile_model(name, batch, args.repeat), flush=True)


if __name__ == "__main__":
    main()
