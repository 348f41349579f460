"""Zoo models exported with a dynamic batch (``torch.export.Dim``): compiled once, run at two
batch sizes; torch tensors go into the VM directly and come back with ``torch.from_dlpack``.
(Each model is exported and compiled once per process, ``zoo_cache.dynamic_zero``: the DLPack
and entry-check tests use the programs the two-sizes test checked.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm.testing import zoo

from .test_zoo import NAMES, eager
from .zoo_cache import dynamic_zero


@pytest.mark.parametrize("name", NAMES)
def test_dynamic_batch_compiles_once_and_runs_at_two_sizes(name):
    m = zoo.MODELS[name]
    mod, vm = dynamic_zero(name)
    batch_dim = mod["main"].params[0].struct_info.shape_values[0]
    assert isinstance(batch_dim, minitvm.tir.Var) and batch_dim.name == "batch"
    model = m.build()
    for batch in (1, 3):
        inputs = m.example_inputs(batch)
        got = vm["main"](*(minitvm.nd.array(x.numpy()) for x in inputs)).numpy()
        want = eager(model, inputs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_torch_tensors_in_and_out_through_dlpack():
    m = zoo.MODELS["mlc_mnist"]
    _, vm = dynamic_zero("mlc_mnist")
    model = m.build()
    for batch in (2, 5):
        (x,) = m.example_inputs(batch)
        out = torch.from_dlpack(vm["main"](x))
        assert isinstance(out, torch.Tensor) and out.shape == (batch, 10)
        with torch.no_grad():
            torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)


def test_wrong_dtype_or_sequence_length_is_reported_at_entry():
    m = zoo.MODELS["embedding_posenc"]
    _, vm = dynamic_zero("embedding_posenc")
    (ids,) = m.example_inputs(2)
    with pytest.raises(TypeError, match="main: argument 'ids' expects dtype int64, got int32"):
        vm["main"](ids.to(torch.int32))
    with pytest.raises(ValueError, match=r"main: argument 'ids' expects shape \(batch, 8\), got \(2, 5\)"):
        vm["main"](ids[:, :5])
