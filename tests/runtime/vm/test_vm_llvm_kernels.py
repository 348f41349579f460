"""Bytecode calling real kernels compiled by minitvm.build (TVMScript -> LLVM)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.runtime.registry import get_global_func
from minitvm.runtime.vm import ExecBuilder, ParamInfo, VirtualMachine, load_executable
from minitvm.runtime.vm import builtins as B
from minitvm.script import tir as T


@T.prim_func
def vadd(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"global_symbol": "vadd", "tir.noalias": True})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        with T.block("C"):
            vi = T.axis.spatial(n, i)
            C[vi] = A[vi] + B[vi]


@pytest.fixture(scope="module")
def add_exe():
    """add3(x, y, z) = (x + y) + z: two calls of the compiled kernel, outputs in one storage."""
    lib = minitvm.build(vadd, target="llvm")
    eb = ExecBuilder(lib=lib)
    info = [ParamInfo.tensor(("n",), "float32")] * 3
    with eb.function("add3", ["x", "y", "z"], info):
        heap = eb.emit_call("vm.builtin.alloc_shape_heap", [eb.imm(1)])
        eb.emit_call("vm.builtin.match_shape", [eb.r(0), heap, eb.imm(1), eb.imm(B.MATCH_STORE), eb.imm(0)], dst=None)
        shape = eb.emit_call("vm.builtin.make_shape", [heap, eb.imm(1), eb.imm(B.MAKE_LOAD), eb.imm(0)])
        two_n = eb.emit_call("vm.builtin.make_shape", [heap, eb.imm(2), eb.imm(B.MAKE_IMM), eb.imm(2),
                                                       eb.imm(B.MAKE_LOAD), eb.imm(0)])
        storage = eb.emit_call("vm.builtin.alloc_storage", [two_n, "float32"])  # room for 2 * n floats
        nbytes = eb.emit_call("test.vm.nbytes", [eb.r(0)])
        t = eb.emit_call("vm.builtin.alloc_tensor", [storage, eb.imm(0), shape, "float32"])
        out = eb.emit_call("vm.builtin.alloc_tensor", [storage, nbytes, shape, "float32"])
        eb.emit_call("vadd", [eb.r(0), eb.r(1), t], dst=None)
        eb.emit_call("vadd", [t, eb.r(2), out], dst=None)
        eb.emit_ret(out)
    return eb.get()


minitvm.register_func("test.vm.nbytes", lambda x: x.size * np.dtype(x.dtype).itemsize, override=True)


@pytest.mark.parametrize("n", [1, 16, 1000])
def test_compiled_kernel_called_from_bytecode(add_exe, n):
    rng = np.random.default_rng(n)
    x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    vm = VirtualMachine(add_exe, minitvm.cpu())
    np.testing.assert_allclose(vm["add3"](x, y, z).numpy(), x + y + z, rtol=1e-6)
    assert "= vadd (kernel)" in add_exe.as_text()


def test_kernel_errors_carry_the_vm_location(add_exe):
    vm = VirtualMachine(add_exe)
    with pytest.raises(ValueError, match=r"add3: argument 'y' expects shape \(n,\), got \(4,\): "
                                         r"dimension 0 is n = 4, but n = 3 from argument 'x'"):
        vm["add3"](np.ones(3, "float32"), np.ones(4, "float32"), np.ones(3, "float32"))


def test_compiled_library_is_saved_as_llvm_ir(add_exe, tmp_path):
    path = tmp_path / "add.exe"
    add_exe.save(str(path))
    loaded = load_executable(str(path))
    if get_global_func("runtime.module.export_llvm", allow_missing=True) is None:
        # the default export: the optimized LLVM IR and the kernel names
        assert loaded.kernel_format == "llvm_ir"
        assert "define" in loaded.kernel_payload and "@vadd" in loaded.kernel_payload
        assert loaded.kernel_metadata == {"functions": ["vadd"]}
    loader = f"runtime.module.loadfrom_{loaded.kernel_format}"
    if get_global_func(loader, allow_missing=True) is None:
        with pytest.raises(ValueError, match=f"no loader '{loader}' is registered"):
            VirtualMachine(loaded)
    else:  # the code generator provides the loader: the kernels run again without recompiling
        x = np.arange(5, dtype="float32")
        np.testing.assert_allclose(VirtualMachine(loaded)["add3"](x, x, x).numpy(), 3 * x)
