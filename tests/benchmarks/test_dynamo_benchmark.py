"""benchmarks/dynamo.py's choice of models (zoo and realistic names, groups) and its check of a
row against eager torch.  The timed rows themselves are not run here (inductor's compile alone
takes seconds); ``benchmarks/dynamo.py --tiny`` is the smoke run."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.testing import zoo


@pytest.fixture(scope="module")
def dynamo_bench(load_benchmark):
    return load_benchmark("dynamo")


def test_model_names_take_zoo_and_realistic_names_and_groups(dynamo_bench):
    realistic = ["resnet18", "mobilenet_v2", "vit_tiny", "bert_mini", "gpt2_mini"]
    assert dynamo_bench.model_names("realistic") == realistic
    assert dynamo_bench.model_names("all") == list(zoo.MODELS) + realistic
    assert dynamo_bench.model_names("mlp, gpt2_mini,mlp") == ["mlp", "gpt2_mini"]
    with pytest.raises(SystemExit, match="unknown model.*resnet50"):
        dynamo_bench.model_names("mlp,resnet50")


def test_bench_model_uses_the_sections_builders_and_tolerances(dynamo_bench):
    model, export, atol, rtol = dynamo_bench.bench_model("gpt2_mini", tiny=True)
    (ids,) = model.example_inputs(2)
    assert tuple(ids.shape) == (2, 16) and export.__module__ == "realistic"
    assert (atol, rtol) == (1e-4, 1e-3)
    model, _, atol, rtol = dynamo_bench.bench_model("mlp", tiny=True)
    assert model is zoo.MODELS["mlp"] and (atol, rtol) == (1e-4, 1e-4)


def test_check_flags_an_error_over_the_tolerance(dynamo_bench):
    import torch

    want = [np.random.default_rng(0).standard_normal((3, 4)).astype("float32")]
    close = torch.from_numpy(want[0] + 1e-5)
    far = torch.from_numpy(want[0] + 0.1)
    assert dynamo_bench._check(close, want, 1e-4, 1e-4) == "1.0e-05"
    assert dynamo_bench._check((far,), want, 1e-4, 1e-4) == "1.0e-01 WRONG"
