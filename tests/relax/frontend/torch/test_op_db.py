"""The converters on PyTorch's own sample inputs (op_db), a bounded seeded subset: one sample
per op and dtype, chosen by a fixed seed among all of op_db's.  The full sweep is
``python -m minitvm.testing.torch_op_db`` (it also writes the table in docs/torch_ops.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("expecttest")  # torch.testing._internal needs it (the torch extra installs it)

from minitvm.testing.torch_op_db import SampleResult, op_infos, per_overload, run_op  # noqa: E402

SEED = 0
#: small samples only, to bound the time (compiling is the cost, not the sizes' run time)
MAX_NUMEL = 100
F32, INTS = ("float32",), ("float32", "int64", "bool")

#: one OpInfo per family of converters; the dtypes tried
CI_OPS = {
    # unary math, activations
    "sin": F32, "atanh": F32, "expm1": F32, "log1p": F32, "round": F32, "sign": INTS,
    "nn.functional.elu": F32, "nn.functional.hardswish": F32, "nn.functional.mish": F32,
    "nn.functional.softplus": F32, "nn.functional.prelu": F32, "nn.functional.leaky_relu": F32,
    # binary, bitwise, division modes
    "remainder": INTS, "fmod": F32, "bitwise_and": ("int64", "bool"), "div.floor_rounding": INTS,
    "logaddexp": F32, "baddbmm": F32, "einsum": F32, "where": F32, "clamp": F32,
    # reductions and search
    "var": F32, "logsumexp": F32, "cumsum": F32, "linalg.vector_norm": F32, "sum": INTS, "argsort": F32,
    # indexing and shapes
    "gather": F32, "scatter_add": F32, "index_put": F32, "roll": F32, "nn.functional.pad.reflect": F32,
    "repeat": F32, "meshgrid.list_of_tensors": F32, "cat": F32, "tril": F32, "unbind": F32,
    "nn.functional.one_hot": ("int64",),
    # nn
    "nn.functional.conv1d": F32, "nn.functional.conv_transpose2d": F32, "nn.functional.avg_pool3d": F32,
    "nn.functional.interpolate.bilinear": F32, "nn.functional.group_norm": F32, "nn.functional.rms_norm": F32,
    "nn.functional.scaled_dot_product_attention": F32, "nn.functional.pixel_shuffle": F32,
    # creation
    "linspace": F32, "eye": F32,
}


@pytest.mark.parametrize("name", sorted(CI_OPS))
def test_op_db_samples_match_eager(name):
    infos = op_infos([name])
    assert len(infos) == 1, f"op_db has no OpInfo {name!r}"
    results = run_op(infos[0], samples_per_dtype=1, seed=SEED, dtypes=CI_OPS[name], max_numel=MAX_NUMEL)
    ran = [r for r in results if r.status != "skip"]
    assert ran, f"no sample of {name} could be exported: {results}"
    bad = [r for r in ran if r.status != "pass"]
    assert not bad, "\n".join(f"{r.op} {r.dtype} sample {r.index}: {r.status} {r.missing} {r.message}" for r in bad)


def test_an_unconverted_op_is_reported_with_its_overload():
    """``erfinv`` has no converter: its samples are "unsupported", naming the overload."""
    results = run_op(op_infos(["erfinv"])[0], samples_per_dtype=1, seed=SEED, dtypes=F32)
    assert results and all(r.status == "unsupported" for r in results)
    assert all("aten.erfinv.default" in r.missing for r in results)


def test_per_overload_counts_every_sample_that_uses_an_overload():
    results = [
        SampleResult("a", "float32", 0, True, "pass", ("aten.sin.default", "aten.add.Tensor")),
        SampleResult("b", "float32", 0, True, "mismatch", ("aten.add.Tensor",)),
        SampleResult("c", "float32", 0, True, "skip"),
    ]
    stats = per_overload(results)
    assert (stats["aten.add.Tensor"].passed, stats["aten.add.Tensor"].total) == (1, 2)
    assert (stats["aten.sin.default"].passed, stats["aten.sin.default"].total) == (1, 1)
    assert stats["aten.add.Tensor"].ops == {"a", "b"}


def test_an_optional_output_is_compared_as_present_or_absent():
    """Some ATen operators leave an output out (None); the sweep compares that, rather than
    failing on it (it was 4 harness errors of the op_db sweep)."""
    import numpy as np
    import torch

    import minitvm
    from minitvm.testing.torch_op_db import _compare

    x = np.random.default_rng(0).standard_normal(3).astype("float32")
    assert _compare([minitvm.nd.array(x), None], [torch.from_numpy(x.copy()), None], True) == ""
    assert "None, torch gives a tensor" in _compare([minitvm.nd.array(x), None],
                                                   [torch.from_numpy(x.copy()), torch.zeros(1)], True)


def test_samples_find_the_unittest_method_as_torch_does():
    """The frame walk that stands in for torch's ``extract_test_fn`` while samples are made finds
    what torch's finds: the running unittest method (whose sample skips torch reads), else None."""
    import io
    import unittest

    from torch.testing._internal.common_utils import extract_test_fn

    from minitvm.testing.torch_op_db import _unittest_method_on_the_stack

    found = {}

    class Case(unittest.TestCase):
        def test_it(self):
            found["ours"], found["torch's"] = _unittest_method_on_the_stack(), extract_test_fn()

    assert unittest.TextTestRunner(stream=io.StringIO()).run(Case("test_it")).wasSuccessful()
    assert found["ours"] is Case.test_it and found["torch's"] is Case.test_it
    assert _unittest_method_on_the_stack() is None and extract_test_fn() is None
