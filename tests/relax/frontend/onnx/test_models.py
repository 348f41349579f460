"""Small models exported by torch (``torch.onnx.export(..., dynamo=True)``) with a dynamic batch,
imported, compiled once and run at two batch sizes against onnxruntime."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch

from minitvm.relax.frontend.onnx import from_onnx
from minitvm.tir.expr import Var as TirVar

from ._check import assert_outputs, compile_vm, ort_run, tvm_run


class TinyCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, groups=2)
        self.fc = torch.nn.Linear(8 * 2 * 2, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.c1(x)))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.nn.functional.gelu(self.c2(x))
        x = torch.nn.functional.avg_pool2d(x, 1)
        return torch.softmax(self.fc(x.flatten(1)), -1)


class TinyBlock(torch.nn.Module):
    """A pre-norm transformer block: layer norms, multi-head attention, a GELU MLP."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ff = torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.GELU(), torch.nn.Linear(32, d))

    def forward(self, x):
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


def _randomize_bn(model):
    """Running statistics that are not the identity, so batch norm is really checked."""
    g = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


@functools.cache
def exported(name):
    torch.manual_seed(0)
    if name == "cnn":
        model, x, dims = _randomize_bn(TinyCNN()).eval(), torch.randn(2, 3, 12, 12), {0: torch.export.Dim("batch")}
    else:
        model, x = TinyBlock().eval(), torch.randn(2, 5, 16)
        dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's own deprecation notes
        return torch.onnx.export(model, (x,), dynamo=True, dynamic_shapes=(dims,), verbose=False).model_proto


@pytest.mark.parametrize("name, shapes", [("cnn", [(2, 3, 12, 12), (5, 3, 12, 12)]),
                                          ("block", [(2, 5, 16), (3, 7, 16)])])
def test_exported_model_matches_onnxruntime_at_two_sizes(name, shapes):
    model = exported(name)
    mod = from_onnx(model)
    x_var = mod["main"].params[0]
    batch = x_var.struct_info.shape_values[0]
    assert isinstance(batch, TirVar) and batch.name == "batch", x_var.struct_info
    vm = compile_vm(mod)
    rng = np.random.default_rng(0)
    for shape in shapes:
        inputs = {"x": rng.standard_normal(shape).astype("float32")}
        assert_outputs(tvm_run(vm, model, inputs), ort_run(model, inputs), rtol=1e-4, atol=1e-5,
                       what=f"{name} at {shape}")
