"""The MLC end-to-end chapter's module written in TVMScript, built and run on the VM."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.testing.programs import MLCModule

from .mlp_models import mlp_inputs, mlp_reference


def test_tvmscript_module_builds_and_matches_numpy():
    ex = relax.build(MLCModule, target="llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    x, params = mlp_inputs(1, seed=11)
    out = vm["main"](minitvm.nd.array(x), *[minitvm.nd.array(p) for p in params])
    np.testing.assert_allclose(out.numpy(), mlp_reference(x, *params), rtol=1e-5, atol=1e-5)


def test_memory_reuse_is_visible_in_the_printed_ir():
    mod = relax.transform.ToNonDataflow()(MLCModule)
    mod = relax.transform.StaticPlanBlockMemory()(relax.transform.CallTIRRewrite()(mod))
    text = mod["main"].script()
    assert text.count("R.memory.alloc_storage(") == 2
    assert "R.memory.alloc_tensor(storage, " in text and "R.memory.alloc_tensor(storage1, " in text
    assert text.count("R.builtin.alloc_tensor(") == 1  # the result, which escapes
