"""Thirty ``transformers`` architectures as a user gets them (transformers' own model code at a
tiny config, random weights): torch.export -> from_exported_program -> the default pipeline ->
LLVM -> the Relax VM, compared with torch eager on random token ids."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import minitvm
from minitvm.relax.frontend.torch import from_exported_program
from minitvm.testing import transformers_zoo


@pytest.mark.parametrize("name", list(transformers_zoo.ARCHITECTURES))
def test_architecture_compiles_and_matches_eager(name):
    model, inputs = transformers_zoo.build(name)
    with torch.no_grad():
        expected = model(*inputs).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(model, inputs)
    mod = from_exported_program(exported, unwrap_unit_return_tuple=True)
    vm = minitvm.relax.VirtualMachine(minitvm.compile(mod), minitvm.cpu())
    got = vm["main"](*[minitvm.nd.array(x.numpy()) for x in inputs]).numpy()
    assert got.shape == expected.shape == (1, transformers_zoo.SEQUENCE, got.shape[-1])
    assert np.abs(expected).max() > 0.1  # real activations, not a vanishing output
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=2e-5)


def test_an_unknown_architecture_is_named():
    with pytest.raises(KeyError, match="no architecture 'bertt'"):
        transformers_zoo.build("bertt")
