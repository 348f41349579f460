"""Observing a run: the profile table and the instrument hook."""

from __future__ import annotations

import numpy as np
import pytest
from vm_programs import mlp_inputs, mlp_reference

from minitvm.runtime.vm import ExecBuilder, VirtualMachine


def test_profile_table(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    report = vm.profile("forward", *mlp_inputs(3))
    rows = {r["name"]: r for r in report.table()}
    assert rows["test.vm.linear_relu"]["calls"] == 1
    assert rows["vm.builtin.alloc_tensor"]["calls"] == 2 and rows["vm.builtin.make_shape"]["calls"] == 2
    assert len(report.events) == 10  # one per Call instruction
    assert sum(r["percent"] for r in rows.values()) == pytest.approx(100.0)
    assert all(r["total_us"] >= 0 for r in rows.values())
    text = str(report)
    assert text.startswith("VM profile of @forward: ")
    assert "Name" in text and "Share %" in text and "test.vm.linear_relu" in text and "(VM overhead)" in text
    page = report._repr_html_()
    assert "<table>" in page and "<td>test.vm.linear</td>" in page
    by_instruction = {r["name"]: r for r in report.regroup("instruction").table()}
    assert by_instruction["@forward[5] test.vm.linear_relu"]["calls"] == 1 and len(by_instruction) == 11
    assert by_instruction["@forward[5] test.vm.linear_relu"]["total_us"] == rows["test.vm.linear_relu"]["total_us"]
    # profiling leaves the VM as it was
    assert vm._hook is None
    np.testing.assert_allclose(vm["forward"](*mlp_inputs(1)).numpy(), mlp_reference(*mlp_inputs(1)), rtol=1e-5)


def test_profile_marks_nested_vm_functions():
    eb = ExecBuilder()
    with eb.function("main", ["a"]):
        eb.emit_ret(eb.emit_call("inner", [eb.r(0)]))
    with eb.function("inner", ["a"]):
        eb.emit_ret(eb.emit_call("test.vm.add", [eb.r(0), eb.imm(1)]))
    report = VirtualMachine(eb.get()).profile("main", 1)
    rows = {r["name"]: r for r in report.table()}
    assert rows["inner *"]["percent"] is None and rows["test.vm.add"]["calls"] == 1
    assert "* VM function: its time includes the calls it makes" in str(report)


def test_instrument_records_every_intermediate(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    seen = []

    def record(func_name, index, callee, args, result):
        # DPS kernels return nothing: their output is the last argument; copy it, storage may be reused
        value = args[-1] if callee.startswith("test.vm.") else result
        seen.append((func_name, index, callee, value.numpy() if hasattr(value, "numpy") else value))

    vm.set_instrument(record)
    x, w1, w2 = mlp_inputs(2, seed=3)
    out = vm["forward"](x, w1, w2)
    assert [s[2] for s in seen] == ["vm.builtin.alloc_shape_heap", "vm.builtin.match_shape", "vm.builtin.make_shape",
                                    "vm.builtin.alloc_storage", "vm.builtin.alloc_tensor", "test.vm.linear_relu",
                                    "vm.builtin.make_shape", "vm.builtin.alloc_storage", "vm.builtin.alloc_tensor",
                                    "test.vm.linear"]
    assert [s[1] for s in seen] == list(range(10)) and all(s[0] == "forward" for s in seen)
    hidden = dict((s[2], s[3]) for s in seen)["test.vm.linear_relu"]
    np.testing.assert_allclose(hidden, np.maximum(x @ w1, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(seen[-1][3], out.numpy())
    assert seen[2][3] == (2, 128)  # make_shape's result: the hidden shape with n = 2
    vm.set_instrument(None)
    seen.clear()
    vm["forward"](x, w1, w2)
    assert seen == []
    with pytest.raises(TypeError, match="set_instrument needs a callable"):
        vm.set_instrument(42)


def test_instrument_sees_the_profile_too(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    calls = []
    vm.set_instrument(lambda *a: calls.append(a[2]))
    report = vm.profile("forward", *mlp_inputs(1))
    assert len(calls) == len(report.events) == 10
    assert vm._hook is not None  # the instrument is still installed
