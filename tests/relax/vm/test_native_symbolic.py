"""The native entry of a Relax function with symbolic shapes (``n``): one native call per model
call, the sizes computed at entry from the arguments' shapes, the arena grown when a call needs
more, the outputs allocated with the shapes the call computed.  Functions that call into Python
keep the bytecode."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from llvmlite import ir

import minitvm
from minitvm import relax
from minitvm.runtime.vm import EntryPlan
from minitvm.runtime.vm.builtins import EXPR_CODES
from minitvm.runtime.vm.native import Sym
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.target.codegen.native_entry import emit_entry

RNG = np.random.default_rng(33)
D = 32


@R.function
def _block(x: R.Tensor(("n", 32), "float32"), wq: R.Tensor((32, 32), "float32"),
           g: R.Tensor((32,), "float32"), b: R.Tensor((32,), "float32")):
    n = T.int64()
    with R.dataflow():
        h = R.nn.rms_norm(x, g, axes=-1, epsilon=1e-5)
        q = R.matmul(h, wq)
        s = R.matmul(q, R.permute_dims(h, [1, 0]))
        p = R.nn.softmax(s, axis=-1)
        a = R.reshape(R.reshape(R.matmul(p, h), (n, 4, 8)), (n * 32,))
        y = R.add(R.reshape(a, (n, 32)), x)
        z = R.nn.layer_norm(y, g, b, axes=-1)
        flat = R.reshape(p, (n * n,))
        R.output(z, flat)
    return (z, flat)


def _block_numpy(x, wq, g, b):
    h = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * g
    s = (h @ wq) @ h.T
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    y = p @ h + x
    mu, var = y.mean(axis=-1, keepdims=True), y.var(axis=-1, keepdims=True)
    return (y - mu) / np.sqrt(var + 1e-5) * g + b, p.reshape(-1)


@pytest.fixture(scope="module")
def block_vm():
    ex = minitvm.compile(minitvm.IRModule({"main": _block}))
    return ex, relax.VirtualMachine(ex, minitvm.cpu())


def _weights():
    return ((RNG.standard_normal((D, D)) / np.sqrt(D)).astype("float32"), RNG.standard_normal(D).astype("float32"),
            RNG.standard_normal(D).astype("float32"))


def test_a_block_with_symbolic_n_runs_natively_for_every_n(block_vm):
    ex, vm = block_vm
    plan = ex.native_plans()["main"]
    assert isinstance(plan, EntryPlan) and plan.symbolic
    entry = vm.native_entries["main"]
    wq, g, b = _weights()
    for k, n in enumerate((1, 7, 64)):
        x = RNG.standard_normal((n, D)).astype("float32")
        z, flat = vm["main"](x, wq, g, b)
        assert entry.calls == k + 1  # one native call, no bytecode
        want_z, want_flat = _block_numpy(x, wq, g, b)
        assert z.shape == (n, D) and flat.shape == (n * n,)
        np.testing.assert_allclose(z.numpy(), want_z, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(flat.numpy(), want_flat, rtol=1e-4, atol=1e-5)
        # the same kernels through the bytecode give the very same bits
        z2, flat2 = vm.invoke_bytecode("main", x, wq, g, b)
        assert np.array_equal(z.numpy(), z2.numpy()) and np.array_equal(flat.numpy(), flat2.numpy())
    assert entry.calls == 3


def test_results_a_caller_keeps_survive_later_calls_of_other_sizes(block_vm):
    _, vm = block_vm
    wq, g, b = _weights()
    x7, x64, x2 = (RNG.standard_normal((n, D)).astype("float32") for n in (7, 64, 2))
    z7, _ = vm["main"](x7, wq, g, b)
    kept = z7.numpy().copy()
    vm["main"](x64, wq, g, b)  # grows the arena
    z2, _ = vm["main"](x2, wq, g, b)  # a smaller n in the grown arena
    assert np.array_equal(z7.numpy(), kept)
    np.testing.assert_allclose(z2.numpy(), _block_numpy(x2, wq, g, b)[0], rtol=1e-4, atol=1e-4)
    assert vm.native_entries["main"]._arena.nbytes >= 64 * 64 * 4


def test_a_busy_entry_runs_a_call_with_memory_of_its_own(block_vm):
    _, vm = block_vm
    entry = vm.native_entries["main"]
    wq, g, b = _weights()
    x = RNG.standard_normal((5, D)).astype("float32")
    with entry._lock:  # as if another thread were in the entry
        z, flat = vm["main"](x, wq, g, b)
    want_z, want_flat = _block_numpy(x, wq, g, b)
    np.testing.assert_allclose(z.numpy(), want_z, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(flat.numpy(), want_flat, rtol=1e-4, atol=1e-5)


def test_the_plan_prints_the_sizes_and_survives_json(block_vm):
    ex, _ = block_vm
    text = ex.as_text()
    assert "size  n = x.shape[0]  (read by Python)" in text and "sized at entry" in text
    assert "check x: (n, 32) float32" in text and "int64(n)" in text
    plan = ex.native_plans()["main"]
    again = EntryPlan.from_json(plan.to_json())
    assert again.symbol == plan.symbol and again.as_text() == plan.as_text()


def test_a_mismatched_call_names_argument_and_dimension_and_touches_nothing():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor(("n", 8), "float32"), r: R.Tensor(("n", 8), "float32"),
                 y: R.Tensor(("m", 8), "float32")):
            n = T.int64()
            t = R.add(R.nn.softmax(x, axis=-1), r)
            z = R.match_cast(y, R.Tensor((n, 8), "float32"))
            u = R.multiply(t, z)
            return u

    vm = relax.VirtualMachine(minitvm.compile(Mod), minitvm.cpu())
    entry = vm.native_entries["main"]
    x, r, y = (RNG.standard_normal((3, 8)).astype("float32") for _ in range(3))
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(vm["main"](x, r, y).numpy(), (e / e.sum(-1, keepdims=True) + r) * y, rtol=1e-5)
    assert entry.calls == 1
    # the argument check (the same on both paths): which argument, which dimension
    r4 = RNG.standard_normal((4, 8)).astype("float32")
    kept = [a.copy() for a in (x, r4, y)]
    with pytest.raises(ValueError, match=r"argument 'r' expects shape \(n, 8\), got \(4, 8\): dimension 0 is n = 4, "
                                         r"but n = 3 from argument 'x'"):
        vm["main"](x, r4, y)
    with pytest.raises(ValueError, match=r"argument 'x' expects shape \(n, 8\), got \(3, 9\)"):
        vm["main"](np.zeros((3, 9), "float32"), r, y)
    # a match_cast inside the function: checked by the entry before any kernel runs
    y2 = RNG.standard_normal((2, 8)).astype("float32")
    with pytest.raises(ValueError, match=r"match_cast of z: dimension 0 is 2, but the same symbolic dimension was 3"):
        vm["main"](x, r, y2)
    with pytest.raises(ValueError, match=r"match_cast of z: dimension 0 is 2, but the same symbolic dimension was 3"):
        vm.invoke_bytecode("main", x, r, y2)
    assert entry.calls == 2  # the failed entry call counted, no kernel of it ran
    for a, k in zip((x, r4, y), kept):
        assert np.array_equal(a, k)
    np.testing.assert_allclose(vm["main"](x, r, y).numpy(), (e / e.sum(-1, keepdims=True) + r) * y, rtol=1e-5)


def test_a_reshape_view_and_a_kernel_taking_n_as_an_argument():
    # vm.builtin.reshape (what RewriteDataflowReshape emits) is a view in the entry; the multiply
    # kernel after it takes n as a scalar and its buffers as (n * 4, 8)
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor(("n", 32), "float32")):
            n = T.int64()
            y = R.add(x, x)
            r = R.call_pure_packed("vm.builtin.reshape", y, R.shape([n * 4, 8]),
                                   sinfo_args=R.Tensor((n * 4, 8), "float32"))
            z = R.multiply(r, r)
            return z

    ex = minitvm.compile(Mod)
    assert isinstance(ex.native_plans()["main"], EntryPlan)
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    for n in (1, 7):
        x = RNG.standard_normal((n, 32)).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), (4 * x * x).reshape(n * 4, 8), rtol=1e-6)
    assert vm.native_entries["main"].calls == 2


def test_a_function_calling_python_keeps_the_bytecode_and_says_why():
    seen = []
    minitvm.register_func("test.native_sym.record", lambda t: seen.append(t.shape), override=True)

    @I.ir_module
    class Mod:
        @R.function(pure=False)
        def main(x: R.Tensor(("n", 4), "float32")):
            y = R.add(x, x)
            _ = R.call_packed("test.native_sym.record", y, sinfo_args=R.Tuple())
            return y

    ex = minitvm.compile(Mod)
    why = ex.native_plans()["main"]
    assert isinstance(why, str) and "test.native_sym.record" in why and "not a kernel" in why
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    assert "main" not in vm.native_entries
    x = RNG.standard_normal((5, 4)).astype("float32")
    np.testing.assert_allclose(vm["main"](x).numpy(), 2 * x, rtol=1e-6)
    assert seen == [(5, 4)]


def test_a_function_taking_an_object_keeps_the_bytecode_and_says_why():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32"), cache: R.Object):
            y = R.add(x, x)
            return y

    ex = minitvm.compile(Mod)
    why = ex.native_plans()["main"]
    assert isinstance(why, str) and "parameter 'cache' is an object" in why
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    x = RNG.standard_normal((3, 4)).astype("float32")
    np.testing.assert_allclose(vm["main"](x, "any object").numpy(), 2 * x, rtol=1e-6)
    assert "main" not in vm.native_entries


def _run_sizes_only(plan: EntryPlan, inputs: list[int]) -> tuple[int, list[int]]:
    """JIT ``plan``'s entry alone (no kernels) and run it on ``inputs``: (rc, size table)."""
    import llvmlite.binding as llvm

    from minitvm.target.codegen.llvm_jit import LLVM_LOCK

    module = ir.Module(name="sizes_only")
    emit_entry(module, plan)
    with LLVM_LOCK:
        mod = llvm.parse_assembly(str(module))
        tm = llvm.Target.from_default_triple().create_target_machine()
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        fn = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * 5)(engine.get_function_address(plan.symbol))
    table = (ctypes.c_int64 * plan.table_size)(*inputs)
    table[len(plan.slot_names)] = 1 << 40  # the arena's capacity: plenty
    rc = fn(None, None, None, None, ctypes.addressof(table))
    return rc, list(table)


def test_the_entrys_integer_arithmetic_is_the_shape_heaps():
    # floor division and modulo round as Python's (and the VM's eval_shape_expr) do, for every sign
    ops = ["Add", "Sub", "Mul", "FloorDiv", "FloorMod", "Min", "Max"]
    plan = EntryPlan("sizes", ["x"], [((None, None), "int64")])
    plan.inputs, plan.slot_names = [(0, 0), (0, 1)], ["a", "b"] + [f"s{k}" for k in range(len(ops))]
    plan.steps = [("check", "ne", Sym(1), 0, "divides by zero")]
    plan.steps += [("set", 2 + k, EXPR_CODES[op], Sym(0), Sym(1)) for k, op in enumerate(ops)]
    py = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a // b, lambda a, b: a % b, min, max]
    for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (0, -5)]:
        rc, table = _run_sizes_only(plan, [a, b])
        assert rc == 0
        assert table[2:2 + len(ops)] == [f(a, b) for f in py], (a, b)
    rc, _ = _run_sizes_only(plan, [7, 0])
    assert rc == -2  # check step 0 failed; nothing divided by zero
