"""Observing a run: the profile table and the instrument hook."""

from __future__ import annotations

import numpy as np
import pytest
from vm_programs import mlp_inputs, mlp_reference

from minitvm import relax
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
        eb.emit_ret(eb.emit_call("tests.vm.add_ints", [eb.r(0), eb.imm(1)]))
    report = VirtualMachine(eb.get()).profile("main", 1)
    rows = {r["name"]: r for r in report.table()}
    assert rows["inner *"]["percent"] is None and rows["tests.vm.add_ints"]["calls"] == 1
    assert "* VM function: its time includes the calls it makes" in str(report)


def test_instrument_records_every_intermediate(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    seen = []

    def record(func, func_symbol, before_run, ret_value, *args):
        # TVM's signature: called before (ret_value None) and after every Call instruction
        assert callable(func)
        if before_run:
            assert ret_value is None
            seen.append(("before", func_symbol))
            return None
        # DPS kernels return nothing: their output is the last argument; copy it, storage may be reused
        value = args[-1] if func_symbol.startswith("test.vm.") else ret_value
        seen.append(("after", func_symbol, value.numpy() if hasattr(value, "numpy") else value))
        return None

    vm.set_instrument(record)
    x, w1, w2 = mlp_inputs(2, seed=3)
    out = vm["forward"](x, w1, w2)
    callees = ["vm.builtin.alloc_shape_heap", "vm.builtin.match_shape", "vm.builtin.make_shape",
               "vm.builtin.alloc_storage", "vm.builtin.alloc_tensor", "test.vm.linear_relu",
               "vm.builtin.make_shape", "vm.builtin.alloc_storage", "vm.builtin.alloc_tensor", "test.vm.linear"]
    assert [s[:2] for s in seen] == [p for c in callees for p in (("before", c), ("after", c))]
    after = [s for s in seen if s[0] == "after"]
    hidden = dict((s[1], s[2]) for s in after)["test.vm.linear_relu"]
    np.testing.assert_allclose(hidden, np.maximum(x @ w1, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(after[-1][2], out.numpy())
    assert after[2][2] == (2, 128)  # make_shape's result: the hidden shape with n = 2
    vm.set_instrument(None)
    seen.clear()
    vm["forward"](x, w1, w2)
    assert seen == []
    with pytest.raises(TypeError, match="set_instrument needs a callable"):
        vm.set_instrument(42)


def test_instrument_skip_run_skips_the_call(mlp_exe):
    """Returning SKIP_RUN before a call skips it, and its after-call, as in TVM."""
    vm = VirtualMachine(mlp_exe)
    hits = []

    def skip_linear(func, func_symbol, before_run, ret_value, *args):
        hits.append((func_symbol, before_run))
        if func_symbol == "test.vm.linear":
            args[-1].copyfrom(np.full(args[-1].shape, 7.0, "float32"))  # what the skipped kernel would have written
            return relax.VMInstrumentReturnKind.SKIP_RUN
        return relax.VMInstrumentReturnKind.NO_OP

    vm.set_instrument(skip_linear)
    out = vm["forward"](*mlp_inputs(2))
    assert ("test.vm.linear", True) in hits and ("test.vm.linear", False) not in hits
    assert ("test.vm.linear_relu", False) in hits
    np.testing.assert_array_equal(out.numpy(), np.full(out.shape, 7.0, "float32"))


def test_instrument_sees_the_profile_too(mlp_exe):
    vm = VirtualMachine(mlp_exe)
    calls = []
    vm.set_instrument(lambda func, name, before_run, *rest: calls.append(name) if before_run else None)
    report = vm.profile("forward", *mlp_inputs(1))
    assert len(calls) == len(report.events) == 10
    assert vm._hook is not None  # the instrument is still installed
