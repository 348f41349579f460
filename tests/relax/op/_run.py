"""Shared by the op tests: build a one-op Relax function, legalize and compile it, run it
through the VM (every compiled kernel is also round-tripped through TVMScript by conftest)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import from_source


def run_op(make: Callable[..., Any], *inputs: np.ndarray) -> Any:
    """``make(*vars)`` on Relax parameters shaped like ``inputs``, compiled and run on them."""
    params = [relax.Var(f"p{k}", relax.TensorStructInfo(a.shape, str(a.dtype))) for k, a in enumerate(inputs)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    mod = bb.get()
    # the Relax function prints as TVMScript that parses back to the same function
    minitvm.ir.assert_structural_equal(from_source(mod.script()), mod)
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(a) for a in inputs))
    if isinstance(got, (list, tuple)) or hasattr(got, "__len__") and not hasattr(got, "numpy"):
        return [g.numpy() for g in got]
    return got.numpy()


def rand(rng: np.random.Generator, *shape: int, dtype: str = "float32", low: float = -2.0,
         high: float = 2.0) -> np.ndarray:
    return rng.uniform(low, high, size=shape).astype(dtype)
