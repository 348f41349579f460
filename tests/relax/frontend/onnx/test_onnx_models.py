"""The ``light`` models ONNX ships in its wheel (ResNet-50, DenseNet-121, Inception, ...) and zoo
models exported by ``torch.onnx.export``: imported, compiled, run and compared with their reference
(ONNX's stored outputs; eager torch).  The full sweep: ``python -m minitvm.testing.onnx_node_cases
--light`` and ``--zoo``."""

from __future__ import annotations

import pytest

from minitvm.relax.frontend.onnx import from_onnx
from minitvm.testing import onnx_backend_cases
from minitvm.testing.onnx_node_cases import run_case, zoo_case

LIGHT = {case.name: case for case in onnx_backend_cases.light_cases()}


def test_every_light_model_imports_with_its_reference_shape():
    assert len(LIGHT) == 9, sorted(LIGHT)
    for name, case in LIGHT.items():
        out = from_onnx(case.model)["main"].ret_struct_info
        want = case.data_sets[0][1][0]
        assert [int(d) for d in out.shape_values] == list(want.shape) and out.dtype == str(want.dtype), name


def test_light_squeezenet_matches_onnx_reference_output():
    """SqueezeNet 1.0 on ONNX's input (``arange(n) / n``) equals the output stored beside it."""
    assert run_case(LIGHT["test_squeezenet"], seconds=300) == ("pass", "")


@pytest.mark.parametrize("name", ["lenet"])  # the full sweep is --zoo: an export costs seconds
def test_zoo_model_exported_to_onnx_matches_eager(name):
    assert run_case(zoo_case(name), seconds=300) == ("pass", "")
