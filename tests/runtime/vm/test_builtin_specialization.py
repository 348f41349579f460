"""Builtins with constant arguments are specialized when the VM loads a program."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.runtime.vm import builtins as B
from minitvm.runtime.vm.builtins import SPECIALIZERS, ShapeTuple


def test_constant_allocations_are_specialized_and_results_unchanged():
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.exp(x))
            gv = bb.emit_output(relax.op.add(y, x))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(minitvm.compile(bb.get()), minitvm.cpu())
    callees = [ins[2].__name__ for prog in vm._programs.values() for ins in prog.code if ins[0] == 0]
    assert "alloc_storage_const" in callees and "alloc_tensor_const" in callees
    data = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
    first, second = vm["main"](data).numpy(), vm["main"](data).numpy()
    np.testing.assert_allclose(first, np.exp(data) + data, rtol=1e-6)
    np.testing.assert_array_equal(first, second)


def test_specialized_alloc_tensor_keeps_the_general_error():
    fast = SPECIALIZERS["vm.builtin.alloc_tensor"]([None, 0, ShapeTuple((8,)), "float32"], [0])
    good = fast(B.alloc_storage(32))
    assert good.shape == (8,) and good.dtype == "float32"
    with pytest.raises(ValueError, match=r"does not fit in a storage of 16 bytes"):
        fast(B.alloc_storage(16))
    # arguments the specializer cannot use are left to the general builtin
    assert SPECIALIZERS["vm.builtin.alloc_tensor"]([None, 2, ShapeTuple((8,)), "float32"], [0]) is None
    assert SPECIALIZERS["vm.builtin.alloc_storage"]([None, "float32"], [0]) is None


def test_constant_storage_is_reused_only_when_nothing_uses_it():
    alloc = SPECIALIZERS["vm.builtin.alloc_storage"]([1024, "uint8"], [])
    view = SPECIALIZERS["vm.builtin.alloc_tensor"]([None, 0, ShapeTuple((16,)), "float32"], [0])
    first = alloc()
    held = alloc()
    assert held is not first  # `first` is still referenced here
    del first
    tensor = view(held)
    del held
    again = alloc()
    assert again.raw is not tensor._array.base  # a live tensor pins its memory: not reused
    assert alloc() is not again  # `again` is held by this frame
    last = alloc()
    last_id = id(last)
    del last, again
    assert id(alloc()) == last_id  # nothing holds the last one: reused


def test_results_kept_by_the_caller_are_never_overwritten():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.multiply(x, x))
            gv = bb.emit_output(relax.op.add(y, x))
        bb.emit_func_output(gv)
    f = relax.VirtualMachine(minitvm.compile(bb.get()), minitvm.cpu())["main"]
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((2, 3)).astype("float32") for _ in range(4)]
    kept = [f(a) for a in inputs]  # every result held while the next call runs
    for a, out in zip(inputs, kept):
        np.testing.assert_allclose(out.numpy(), a * a + a, rtol=1e-6)
    addresses = {f(inputs[0]).data_ptr for _ in range(3)}  # dropped at once: the same memory again
    assert len(addresses) == 1


def test_a_function_without_jumps_runs_as_one_python_function_with_the_same_results_and_notes():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.exp(relax.op.multiply(x, x)))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(minitvm.compile(bb.get()), minitvm.cpu())
    prog = next(p for p in vm._programs.values() if p.name == "main")
    assert prog.straight is not None
    data = np.random.default_rng(2).standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(vm["main"](data).numpy(), np.exp(data * data), rtol=1e-6)
    profiled = vm.profile("main", data)  # a hook set: the interpreter loop runs, same result
    assert "exp" in str(profiled) or "multiply" in str(profiled)
    with pytest.raises(ValueError) as info:
        prog.straight(minitvm.nd.array(np.ones((3, 3), "float32")))  # wrong shape past the entry check
    assert any("in VM function @main, instruction" in note for note in info.value.__notes__)
