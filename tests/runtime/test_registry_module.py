"""Global function registry, Module and time_evaluator."""

from __future__ import annotations

import time

import numpy as np
import pytest

import minitvm
from minitvm.runtime import BenchmarkResult, Module, registry


def test_register_decorator_and_call_forms():
    @minitvm.register_func("test.registry.add_one")
    def add_one(x):
        return x + 1

    assert add_one(1) == 2  # the decorator returns the function itself
    assert minitvm.get_global_func("test.registry.add_one")(41) == 42
    registry.register_global_func("test.registry.double", lambda x: 2 * x)
    assert minitvm.get_global_func("test.registry.double")(4) == 8
    assert "test.registry.double" in registry.list_global_func_names()


def test_bare_decorator_uses_function_name():
    @minitvm.register_func
    def test_registry_bare_name():
        return "ok"

    assert minitvm.get_global_func("test_registry_bare_name")() == "ok"


def test_override_and_missing():
    minitvm.register_func("test.registry.over", lambda: 1)
    with pytest.raises(ValueError, match="already registered"):
        minitvm.register_func("test.registry.over", lambda: 2)
    minitvm.register_func("test.registry.over", lambda: 3, override=True)
    assert minitvm.get_global_func("test.registry.over")() == 3
    assert minitvm.get_global_func("test.registry.nope", allow_missing=True) is None
    with pytest.raises(ValueError, match="test.registry.nope"):
        minitvm.get_global_func("test.registry.nope")


def test_module_lookup():
    mod = Module({"main": lambda x: x * 2, "other": lambda: "o"})
    assert mod["main"](3) == 6
    assert mod.get_function("other")() == "o"
    assert "main" in mod and "missing" not in mod
    assert mod.entry_name == "main" and mod(5) == 10
    assert mod.imported_modules == []
    with pytest.raises(AttributeError, match="missing"):
        mod["missing"]


def test_time_evaluator_returns_seconds():
    calls = []

    def slow(x):
        calls.append(x)
        time.sleep(0.001)

    mod = Module({"slow": slow})
    res = mod.time_evaluator("slow", minitvm.cpu(), number=3, repeat=2)(7)
    assert isinstance(res, BenchmarkResult)
    assert len(res.results) == 2
    assert 0.0009 < res.min <= res.median <= res.max < 0.1
    assert res.mean > 0 and res.std >= 0
    assert len(calls) == 1 + 3 * 2  # one warm-up call
    assert "mean" in str(res)


def test_time_evaluator_min_repeat_ms_grows_number():
    count = [0]

    def fast():
        count[0] += 1

    Module({"f": fast}).time_evaluator("f", number=1, repeat=1, min_repeat_ms=5)()
    assert count[0] > 10


def test_tvm_names_for_runtime_objects():
    # the names the MLC course reaches for: tvm.runtime.ShapeTuple / Tensor, tvm.nd.NDArray
    shape = minitvm.runtime.ShapeTuple([2, 3])
    assert shape == (2, 3) and len(shape) == 2 and shape[1] == 3
    arr = minitvm.nd.array(np.arange(6, dtype="float32").reshape(2, 3))
    assert isinstance(arr, minitvm.runtime.Tensor) and isinstance(arr, minitvm.nd.NDArray)
    assert minitvm.runtime.ShapeTuple(arr.shape) == shape


def test_register_global_func_with_output_argument():
    # the integration chapter's pattern: a registered function that writes its last argument
    @minitvm.register_global_func("test.runtime.double_into", override=True)
    def double_into(x, out):
        out.copyfrom(x.numpy() * 2)

    x = minitvm.nd.array(np.random.default_rng(1).standard_normal((3, 4)).astype("float32"))
    out = minitvm.nd.empty((3, 4), "float32")
    minitvm.get_global_func("test.runtime.double_into")(x, out)
    np.testing.assert_allclose(out.numpy(), x.numpy() * 2, rtol=1e-6)
    assert minitvm.runtime.get_global_func("test.runtime.double_into") is not None


def test_time_evaluator_refuses_a_preprocessing_function_it_would_not_run():
    from minitvm.runtime.module import make_time_evaluator

    with pytest.raises(NotImplementedError, match="f_preproc='cache_flush_cpu_non_first_arg'"):
        make_time_evaluator(lambda: None, f_preproc="cache_flush_cpu_non_first_arg")
    assert make_time_evaluator(lambda: None, number=1)().mean >= 0
