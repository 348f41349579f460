"""VirtualMachine.save_function (a function with its arguments bound, TVM's, for timing) and
set_input by parameter name; tvm.contrib.cc / popen_pool refuse by name."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Mul:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((2, 3), "float32")):
        return R.multiply(x, w)


def test_saved_function_and_named_inputs_compute_what_numpy_does():
    vm = relax.VirtualMachine(minitvm.compile(Mul, "llvm"), minitvm.cpu())
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((2, 3)).astype("float32") for _ in range(2))
    vm.save_function("main", "main_saved", minitvm.nd.array(a), w=minitvm.nd.array(b))
    np.testing.assert_allclose(vm["main_saved"]().numpy(), a * b, rtol=1e-6)
    vm.save_function("main", "quiet", minitvm.nd.array(a), minitvm.nd.array(b), include_return=False)
    assert vm["quiet"]() is None
    vm.set_input("main", w=minitvm.nd.array(b), x=minitvm.nd.array(a))
    vm.invoke_stateful("main")
    np.testing.assert_allclose(vm.get_outputs("main").numpy(), a * b, rtol=1e-6)
    with pytest.raises(ValueError, match="is a function of the module"):
        vm.save_function("main", "main", minitvm.nd.array(a), minitvm.nd.array(b))
    with pytest.raises(TypeError, match="no parameter named 'y'"):
        vm.set_input("main", minitvm.nd.array(a), y=minitvm.nd.array(b))


def test_contrib_cc_and_popen_pool_refuse_by_name():
    from minitvm.contrib import cc, popen_pool

    with pytest.raises(NotImplementedError, match="cc.create_shared"):
        cc.create_shared("/nonexistent/lib.so", [])
    with pytest.raises(NotImplementedError, match="PopenWorker"):
        popen_pool.PopenWorker()
