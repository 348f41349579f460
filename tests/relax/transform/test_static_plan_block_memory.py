"""StaticPlanBlockMemory's decisions on hand-written lowered functions: which allocations
share a storage, which keep their own, and where the storages are allocated."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.relax.transform import StaticPlanBlockMemory, memory_plan
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Chain:
    @T.prim_func
    def exp(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            with T.block("exp"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.exp(A[vi, vj])

    @T.prim_func
    def to_int(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "int32")):
        for i, j in T.grid(2, 3):
            with T.block("to_int"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.Cast("int32", A[vi, vj])

    @T.prim_func
    def to_float(A: T.Buffer((2, 3), "int32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            with T.block("to_float"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.Cast("float32", A[vi, vj])

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Chain
        a = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0))
        _ = cls.exp(x, a)
        b = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("int32"), R.prim_value(0))
        _1 = cls.to_int(a, b)
        c = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0))
        _2 = cls.exp(x, c)
        unused = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0))  # noqa: F841
        d = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0))
        _3 = cls.to_float(b, d)
        e = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0))
        _4 = cls.exp(d, e)
        return e


def test_storages_are_shared_only_within_a_dtype_once_the_tensor_is_dead():
    plan = memory_plan(Chain["main"], Chain)
    assert str(plan).splitlines() == [
        "memory plan of main: 5 tensors in 3 storages (64 bytes)",
        # a is dead after to_int, c after the exp writing it: each next float32 tensor reuses
        "  storage (24 bytes, float32): a, c, d",
        # the int32 tensor never shares with a float32 one
        "  storage1 (24 bytes, int32): b",
        # nothing reads `unused`: a storage of its own, never freed
        "  storage2 (16 bytes, float32): unused",
        # the result leaves the function
        "  not planned (own memory): e",
    ]


def test_each_storage_is_allocated_right_before_its_first_tensor():
    planned = StaticPlanBlockMemory()(Chain)
    names = [b.var.name_hint for b in planned["main"].body.blocks[0].bindings]
    assert names[:3] == ["storage", "a", "_"]
    assert names.index("storage1") == names.index("b") - 1
    assert names.index("storage2") == names.index("unused") - 1
    assert "storage3" not in names
    xv = np.random.default_rng(11).standard_normal((2, 3)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(planned, target="llvm"), minitvm.cpu())
    want = np.exp(np.exp(xv).astype("int32").astype("float32"))
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(xv)).numpy(), want, rtol=1e-6)


@I.ir_module
class PassedToRelaxFunction:
    @T.prim_func
    def exp(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("exp"):
                vi = T.axis.spatial(4, i)
                B[vi] = T.exp(A[vi])

    @R.function
    def keep(t: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return t

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"relax.force_pure": True})
        cls = PassedToRelaxFunction
        a = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0))
        _ = cls.exp(x, a)
        kept = cls.keep(a)
        b = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0))
        _1 = cls.exp(kept, b)
        return b


def test_a_tensor_passed_to_a_relax_function_is_not_planned():
    # the callee may keep it (here it returns it): its memory must not be reused
    plan = memory_plan(PassedToRelaxFunction["main"], PassedToRelaxFunction)
    assert plan.num_allocations == 0 and plan.not_planned == ["a", "b"]
    assert StaticPlanBlockMemory()(PassedToRelaxFunction) is PassedToRelaxFunction


@I.ir_module
class FillDynamic:
    @T.prim_func
    def iota(var_out: T.handle, n: T.int64):
        out = T.match_buffer(var_out, (n,), "float32")
        for i in range(n):
            with T.block("iota"):
                vi = T.axis.spatial(n, i)
                out[vi] = T.Cast("float32", vi)

    @T.prim_func
    def exp(var_a: T.handle, var_b: T.handle):
        n = T.int64()
        A = T.match_buffer(var_a, (n,), "float32")
        B = T.match_buffer(var_b, (n,), "float32")
        for i in range(n):
            with T.block("exp"):
                vi = T.axis.spatial(n, i)
                B[vi] = T.exp(A[vi])

    @R.function
    def main(s: R.Shape(["n"])) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 16}, "relax.force_pure": True})
        cls = FillDynamic
        a = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0))
        _ = R.vm.call_tir_dyn(cls.iota, (a, R.shape([n])))
        b = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0))
        _1 = cls.exp(a, b)
        return b


def test_call_tir_dyn_arguments_are_planned_at_the_upper_bound_and_run():
    plan = memory_plan(FillDynamic["main"], FillDynamic)
    # n <= 16: a 64-byte storage for a; b is the result
    assert str(plan).splitlines()[1:] == ["  storage (64 bytes, float32): a", "  not planned (own memory): b"]
    vm = relax.VirtualMachine(minitvm.compile(FillDynamic, target="llvm"), minitvm.cpu())
    for n in (3, 16):
        got = vm["main"](minitvm.runtime.ShapeTuple([n])).numpy()
        np.testing.assert_allclose(got, np.exp(np.arange(n, dtype="float32")), rtol=1e-6)
