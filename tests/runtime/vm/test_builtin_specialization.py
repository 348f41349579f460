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
