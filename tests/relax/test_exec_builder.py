"""relax.ExecBuilder (TVM's hand-written bytecode) and relax.vm_build._vmcodegen/_vmlink."""

import numpy as np
import pytest

import minitvm
import minitvm.relax.testing.vm  # noqa: F401 - registers test.vm.add / test.vm.mul
from minitvm import relax
from minitvm.script import relax as R


def _add_then_mul(ib, first, second):
    with ib.function("func0", num_inputs=2):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(first))
        ib.emit_call("test.vm.mul", args=[ib.r(1), ib.r(first)], dst=ib.r(second))
        ib.emit_ret(ib.r(second))
    return ib.get()


def test_exec_builder_runs_and_formalizes_registers():
    sparse = _add_then_mul(relax.ExecBuilder(), 100, 50)
    dense = _add_then_mul(relax.ExecBuilder(), 2, 3)
    assert sparse.as_text() == dense.as_text()  # registers renumbered in order of first use
    rng = np.random.default_rng(3)
    a, b = rng.random(4), rng.random(4)
    vm = relax.VirtualMachine(sparse, minitvm.cpu())
    np.testing.assert_allclose(vm["func0"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy(), (a + b) * b)


def test_exec_builder_refuses_unwritten_register_and_shares_constants():
    ib = relax.ExecBuilder()
    with pytest.raises(minitvm.TVMError, match="reads register %2"):
        with ib.function("func0", num_inputs=2):
            ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(2)], dst=ib.r(2))
            ib.emit_ret(ib.r(2))
    ib = relax.ExecBuilder()
    with ib.function("f", num_inputs=1):
        t = np.arange(3, dtype="int32")
        assert ib.convert_constant(minitvm.nd.array(t)) == ib.convert_constant(minitvm.nd.array(t.copy()))
        assert ib.convert_constant((1, 2)) != ib.convert_constant((1, 3))
        ib.emit_ret(ib.r(0))


def test_vmcodegen_and_vmlink_without_lowering_passes():
    @minitvm.script.ir_module
    class Mod:
        @R.function(pure=False)
        def foo(x: R.Tensor((3, 4), "float32")):
            z = R.call_packed("vm.builtin.copy", x, sinfo_args=(R.Tensor((3, 4), dtype="float32")))
            return z

    ib = relax.ExecBuilder()
    tir_mod = relax.vm_build._vmcodegen(ib, Mod, exec_mode="bytecode")
    ex = relax.vm_build._vmlink(ib, "llvm", tir_mod)
    x = np.random.default_rng(5).random((3, 4)).astype("float32")
    np.testing.assert_array_equal(relax.VirtualMachine(ex, minitvm.cpu())["foo"](minitvm.nd.array(x)).numpy(), x)


def test_vm_alloc_ops_through_vmcodegen():
    from minitvm.script import ir as I
    from minitvm.script import tir as T

    @I.ir_module
    class Mod:
        @T.prim_func
        def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = A[vi]

        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Mod
            storage: R.Object = R.vm.alloc_storage(R.shape([16]), R.prim_value(0), R.dtype("uint8"))
            out: R.Tensor((4,), "float32") = R.vm.alloc_tensor(storage, R.prim_value(0), R.shape([4]),
                                                               R.dtype("float32"))
            _: R.Tuple = cls.copy(x, out)
            return out

    ib = relax.ExecBuilder()
    ex = relax.vm_build._vmlink(ib, "llvm", relax.vm_build._vmcodegen(ib, Mod))
    x = np.random.default_rng(11).random(4).astype("float32")
    np.testing.assert_array_equal(relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(x)).numpy(), x)
