"""The native entry of a Relax function (``relax.build(exec_mode="compiled")``, the default):
the whole bytecode as one LLVM function beside the kernels, run by one call from Python, with
the bytecode kept for printing, instruments and what the entry does not cover.  That every zoo
model runs natively with the bytecode's exact values is checked where the zoo is compiled
(tests/relax/frontend/torch/test_zoo.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.runtime.vm import EntryPlan
from minitvm.script import relax as R

RNG = np.random.default_rng(20)


def _as_list(out):
    return [o.numpy() for o in out] if isinstance(out, tuple) else [out.numpy()]


@R.function
def _two_layers(x: R.Tensor((4, 16), "float32"), w: R.Tensor((16, 8), "float32")):
    with R.dataflow():
        h = R.nn.relu(R.matmul(x, w))
        y = R.add(h, h)
        R.output(h, y)
    return (y, h)


def _mod(func):
    return minitvm.IRModule({"main": func})


def test_a_tuple_result_and_fresh_outputs_per_call():
    ex = minitvm.compile(_mod(_two_layers))
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    x, w = RNG.standard_normal((4, 16)).astype("float32"), RNG.standard_normal((16, 8)).astype("float32")
    y, h = vm["main"](x, w)
    want = np.maximum(x @ w, 0)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.numpy(), 2 * want, rtol=1e-5, atol=1e-5)
    y2, _ = vm["main"](-x, w)  # a second call must not overwrite the first call's results
    np.testing.assert_allclose(y.numpy(), 2 * want, rtol=1e-5, atol=1e-5)
    assert not np.allclose(y2.numpy(), y.numpy())


def test_the_executable_prints_both_the_bytecode_and_the_native_entry():
    text = minitvm.compile(_mod(_two_layers)).as_text()
    assert "@main:" in text and "call  vm.builtin.alloc_storage" in text  # the bytecode
    assert "native entry of @main: __minitvm_entry_main_" in text
    assert "check x: (4, 16) float32" in text and "ret   (" in text


def test_exec_mode_bytecode_builds_no_native_entry_and_unknown_modes_are_refused():
    ex = minitvm.compile(_mod(_two_layers), exec_mode="bytecode")
    assert relax.VirtualMachine(ex, minitvm.cpu()).native_entries == {}
    assert "native entry" not in ex.as_text()
    with pytest.raises(ValueError, match="exec_mode 'jit' is not supported"):
        minitvm.compile(_mod(_two_layers), exec_mode="jit")


@R.function
def _symbolic(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((16, 8), "float32")):
    with R.dataflow():
        y = R.nn.relu(R.matmul(x, w))
        R.output(y)
    return y


def test_symbolic_shapes_run_natively_too_also_after_saving(tmp_path):
    # sizes computed at entry (tests/relax/vm/test_native_symbolic.py covers them in depth)
    ex = minitvm.compile(_mod(_symbolic))
    plan = ex.native_plans()["main"]
    assert isinstance(plan, EntryPlan) and plan.symbolic and plan.inputs == [(0, 0)]
    assert "size  n = x.shape[0]" in ex.as_text()
    ex.save(str(tmp_path / "sym.exe"))
    vm = relax.VirtualMachine(minitvm.runtime.load_module(str(tmp_path / "sym.exe")), minitvm.cpu())
    w = RNG.standard_normal((16, 8)).astype("float32")
    for n in (3, 1):
        x = RNG.standard_normal((n, 16)).astype("float32")
        np.testing.assert_allclose(vm["main"](x, w).numpy(), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
    assert vm.native_entries["main"].calls == 2


def test_an_instrument_sees_every_kernel_call_the_native_entry_would_make():
    ex = minitvm.compile(_mod(_two_layers))
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    seen = []
    vm.set_instrument(lambda func, name, before, ret, *args: seen.append(name) if before else None)
    x, w = RNG.standard_normal((4, 16)).astype("float32"), RNG.standard_normal((16, 8)).astype("float32")
    vm["main"](x, w)
    kernels = [k for k, _ in ex.native_plans()["main"].calls]
    assert [n for n in seen if n in kernels] == kernels
    assert vm.native_entries["main"].calls == 0
    vm.set_instrument(None)
    vm["main"](x, w)
    assert vm.native_entries["main"].calls == 1


def test_bad_arguments_are_refused_before_native_code_runs():
    vm = relax.VirtualMachine(minitvm.compile(_mod(_two_layers)), minitvm.cpu())
    with pytest.raises(ValueError, match=r"argument 'x' expects shape \(4, 16\)"):
        vm["main"](np.zeros((5, 16), "float32"), np.zeros((16, 8), "float32"))
    with pytest.raises(TypeError, match="argument 'w' expects dtype float32"):
        vm["main"](np.zeros((4, 16), "float32"), np.zeros((16, 8), "float64"))


def test_a_saved_executable_with_a_native_entry_runs_in_a_fresh_process(tmp_path):
    ex = minitvm.compile(_mod(_two_layers))
    path = tmp_path / "two.exe"
    ex.save(str(path))
    x, w = RNG.standard_normal((4, 16)).astype("float32"), RNG.standard_normal((16, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    script = textwrap.dedent(f"""
        import numpy as np, minitvm
        from minitvm import relax
        ex = minitvm.runtime.load_module({str(path)!r})
        text = ex.as_text()
        vm = relax.VirtualMachine(ex, minitvm.cpu())
        assert "main" in vm.native_entries
        assert ex.as_text() == text  # the saved plan printed before loading = the plan made again
        y, h = vm["main"](np.load({str(tmp_path / 'x.npy')!r}), np.load({str(tmp_path / 'w.npy')!r}))
        assert vm.native_entries["main"].calls == 1
        np.save({str(tmp_path / 'y.npy')!r}, y.numpy())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), 2 * np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def test_a_truncated_file_with_a_native_entry_fails_as_before(tmp_path):
    path = tmp_path / "two.exe"
    minitvm.compile(_mod(_two_layers)).save(str(path))
    blob = path.read_bytes()
    path.write_bytes(blob[:len(blob) // 2])
    with pytest.raises(ValueError, match="truncated"):
        minitvm.runtime.load_executable(str(path))


def test_the_plan_names_the_arena_and_the_outputs():
    plan = minitvm.compile(_mod(_two_layers)).native_plans()["main"]
    assert isinstance(plan, EntryPlan)
    assert plan.result_is_tuple and len(plan.result) == 2
    assert all(r.base == "out" for r in plan.result)
    assert plan.symbol.startswith("__minitvm_entry_main_") and len(plan.digest) == 16
    assert EntryPlan.from_json(plan.to_json()).symbol == plan.symbol
