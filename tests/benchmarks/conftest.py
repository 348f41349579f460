"""The benchmark scripts set torch up for timing (no autograd, two threads) process-wide, as a
script should; the tests call their ``main`` in the test process (some from module-scoped
fixtures), so each test module gives torch back as it found it: a later test on the same worker,
e.g. a gradient check, needs autograd."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def restore_torch_globals():
    grad, threads = torch.is_grad_enabled(), torch.get_num_threads()
    yield
    torch.set_grad_enabled(grad)
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def load_benchmark():
    """``load_benchmark("zoo")``: a script of benchmarks/ imported as a module (by path: benchmarks/
    is not a package), registered in sys.modules first, where dataclasses look their module up."""
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", root / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    return load
