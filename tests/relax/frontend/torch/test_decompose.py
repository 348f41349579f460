"""The importer's ``run_decompositions``: torch's result, torch's operator walk done once per
call instead of once per namespace, ``py_impl`` without its per-call annotations, and torch's
own functions back in place afterwards."""

from __future__ import annotations

import pytest
import torch
import torch._export.utils as export_utils
import torch._ops as torch_ops
import torch.nn.functional as F

from minitvm.relax.frontend.torch.decompose import run_decompositions


class Pool(torch.nn.Module):
    def forward(self, x):
        return F.gelu(F.avg_pool2d(x, 2, 2, 1, ceil_mode=True)).flatten(1) @ torch.ones(24, 3)


def _exported():
    return torch.export.export(Pool(), (torch.randn(1, 2, 5, 7),))


def _counting_walks(monkeypatch):
    walks = []
    real = export_utils._materialize_cpp_cia_ops
    monkeypatch.setattr(export_utils, "_materialize_cpp_cia_ops", lambda: (walks.append(1), real())[1])
    return walks


def test_the_graph_is_torchs_and_the_walk_runs_once(monkeypatch):
    ep = _exported()
    walks = _counting_walks(monkeypatch)
    want = ep.run_decompositions()
    torchs_walks = len(walks)
    got = run_decompositions(ep)
    assert torchs_walks > 10  # the cost this module exists for (torch 2.13: one walk per namespace)
    assert len(walks) - torchs_walks == 1
    assert got.graph_module.code == want.graph_module.code
    assert {str(n.target) for n in got.graph.nodes if n.op == "call_function"} >= {"aten.avg_pool2d.default"}
    x = torch.randn(1, 2, 5, 7)
    torch.testing.assert_close(got.module()(x), Pool()(x))


def test_torchs_functions_are_back_after_an_error(monkeypatch):
    before, py_impl = export_utils._materialize_cpp_cia_ops, torch_ops.OperatorBase.py_impl

    class Broken:
        def run_decompositions(self):
            assert export_utils._materialize_cpp_cia_ops is not before  # swapped while it runs
            assert torch_ops.OperatorBase.py_impl is not py_impl
            raise RuntimeError("decomposition failed")

    with pytest.raises(RuntimeError, match="decomposition failed"):
        run_decompositions(Broken())
    assert export_utils._materialize_cpp_cia_ops is before
    assert torch_ops.OperatorBase.py_impl is py_impl


def test_the_quick_py_impl_registers_as_torchs_does(monkeypatch):
    """While the importer decomposes, ``py_impl`` is torch's own source without the annotations
    built per call: it registers a kernel, and refuses a second one for the same key, as torch's."""
    seen = {}

    class Spy:
        def run_decompositions(self):
            seen["py_impl"] = torch_ops.OperatorBase.py_impl
            return "done"

    assert run_decompositions(Spy()) == "done"
    quick = seen["py_impl"]
    assert quick is not torch_ops.OperatorBase.py_impl
    assert isinstance(quick.__annotations__["k"], str)  # postponed: kept as text, never built
    op = torch.ops.aten.gelu.default
    key = torch._C.DispatchKey.AutocastCPU
    saved = op.py_kernels.copy()
    try:
        op.py_kernels.pop(key, None)
        kernel = quick(op, key)(lambda *a, **k: "mine")
        assert op.py_kernels[key] is kernel
        with pytest.raises(RuntimeError, match="override a python impl"):
            quick(op, key)(lambda *a, **k: "again")
    finally:
        op.py_kernels.clear()
        op.py_kernels.update(saved)
        op._dispatch_cache.clear()
