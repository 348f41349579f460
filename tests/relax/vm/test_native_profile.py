"""``VirtualMachine.profile`` of a function that runs as a native entry: the entry's timed twin
times each kernel call inside the machine code, on the arena a plain call uses."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.script import relax as R

RNG = np.random.default_rng(59)


@R.function
def _big_then_small(x: R.Tensor((384, 384), "float32"), w: R.Tensor((384, 384), "float32"),
                    s: R.Tensor((4,), "float32")):
    with R.dataflow():
        y = R.matmul(x, w)  # ~113 MFLOP
        t = R.add(s, s)  # 4 additions
        R.output(y, t)
    return (y, t)


@R.function
def _rows(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((16, 8), "float32")):
    with R.dataflow():
        y = R.nn.relu(R.matmul(x, w))
        R.output(y)
    return y


def _vm(func, **kw):
    ex = minitvm.compile(minitvm.IRModule({"main": func}), **kw)
    return ex, relax.VirtualMachine(ex, minitvm.cpu())


def _inputs():
    return (RNG.standard_normal((384, 384)).astype("float32"), RNG.standard_normal((384, 384)).astype("float32"),
            RNG.standard_normal(4).astype("float32"))


def test_the_profile_of_a_native_function_times_each_kernel_call_of_the_entry():
    ex, vm = _vm(_big_then_small)
    x, w, s = _inputs()
    report = vm.profile("main", x, w, s)
    kernels = [k for k, _ in ex.native_plans()["main"].calls]
    assert report.native and [e[2] for e in report.events] == kernels  # each call, in the entry's order
    assert [e[1] for e in report.events] == list(range(len(kernels)))
    assert all(t > 0 for *_, t in report.events) and sum(t for *_, t in report.events) <= report.total
    assert vm.native_entries["main"].calls == 1  # it ran the entry, not the bytecode
    text = str(report)
    assert text.startswith("VM profile of @main (native entry): ") and "(VM overhead)" in text
    assert "vm.builtin.alloc_storage" not in text  # the entry allocates nothing: the arena is planned
    by_call = {r["name"] for r in report.regroup("instruction").table()}
    assert f"@main call 0 {kernels[0]}" in by_call and "(native entry)" in report._repr_html_()
    # the stamps land on the right call: the 384^3 matmul takes far longer than 4 additions
    # (the least of three profiles, so one preemption of the small call cannot flip it)
    times = [vm.profile("main", x, w, s).events for _ in range(3)]
    matmul = next(k for k, name in enumerate(kernels) if "matmul" in name)
    add = next(k for k, name in enumerate(kernels) if name.startswith("add"))
    assert min(e[matmul][3] for e in times) > 10 * min(e[add][3] for e in times)
    # and the profiled call computed what a plain one does
    y, t = vm["main"](x, w, s)
    np.testing.assert_allclose(y.numpy(), x @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(t.numpy(), 2 * s, rtol=1e-6)


def test_the_bytecode_profile_stays_available_and_native_is_refused_where_there_is_no_entry():
    _, vm = _vm(_big_then_small)
    x, w, s = _inputs()
    report = vm.profile("main", x, w, s, native=False)
    assert not report.native and "vm.builtin.alloc_storage" in str(report)
    assert str(report).startswith("VM profile of @main: ")
    _, bytecode_vm = _vm(_big_then_small, exec_mode="bytecode")
    assert not bytecode_vm.profile("main", x, w, s).native
    with pytest.raises(ValueError, match="@main cannot be profiled natively: it has no native entry"):
        bytecode_vm.profile("main", x, w, s, native=True)


def test_an_instrument_makes_the_profile_watch_the_bytecode():
    _, vm = _vm(_big_then_small)
    x, w, s = _inputs()
    seen = []
    vm.set_instrument(lambda func, name, before, ret, *args: seen.append(name) if before else None)
    report = vm.profile("main", x, w, s)
    assert not report.native and "vm.builtin.alloc_storage" in seen
    with pytest.raises(ValueError, match="an instrument is set"):
        vm.profile("main", x, w, s, native=True)
    vm.set_instrument(None)
    assert vm.profile("main", x, w, s).native


def test_symbolic_sizes_and_a_saved_executable_profile_natively(tmp_path):
    ex, _ = _vm(_rows)
    ex.save(str(tmp_path / "rows.exe"))
    vm = relax.VirtualMachine(minitvm.runtime.load_module(str(tmp_path / "rows.exe")), minitvm.cpu())
    w = RNG.standard_normal((16, 8)).astype("float32")
    for n in (5, 2):
        report = vm.profile("main", RNG.standard_normal((n, 16)).astype("float32"), w)
        assert report.native and [e[2] for e in report.events] == [k for k, _ in ex.native_plans()["main"].calls]
        x = RNG.standard_normal((n, 16)).astype("float32")
        np.testing.assert_allclose(vm["main"](x, w).numpy(), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
