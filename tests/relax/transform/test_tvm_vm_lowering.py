"""TVM's VM-lowering passes that optimize_llm.py's pipeline names, each on its own (TVM's tests'
shape: a Before module, the pass, an Expected module), then run on the VM."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax import transform
from minitvm.relax.transform.rewrite_dataflow_reshape import has_reshape_pattern
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@T.prim_func(private=True)
def _reshape(a: T.Buffer((T.int64(8), T.int64(3)), "float32"),
             out: T.Buffer((T.int64(2), T.int64(4), T.int64(3)), "float32")):
    for i0, i1, i2 in T.grid(T.int64(2), T.int64(4), T.int64(3)):
        with T.block("T_reshape"):
            v0, v1, v2 = T.axis.remap("SSS", [i0, i1, i2])
            out[v0, v1, v2] = a[(v0 * T.int64(12) + v1 * T.int64(3) + v2) // T.int64(3),
                                (v0 * T.int64(12) + v1 * T.int64(3) + v2) % T.int64(3)]


@T.prim_func(private=True)
def _expand_dims(a: T.Buffer((T.int64(2), T.int64(4), T.int64(3)), "float32"),
                 out: T.Buffer((T.int64(2), T.int64(1), T.int64(4), T.int64(3)), "float32")):
    for i0, i1, i2, i3 in T.grid(T.int64(2), T.int64(1), T.int64(4), T.int64(3)):
        with T.block("expand_dims"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            out[v0, v1, v2, v3] = a[v0, v2, v3]


@T.prim_func(private=True)
def _transpose(a: T.Buffer((T.int64(8), T.int64(3)), "float32"),
               out: T.Buffer((T.int64(3), T.int64(8)), "float32")):
    for i0, i1 in T.grid(T.int64(3), T.int64(8)):
        with T.block("T_transpose"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            out[v0, v1] = a[v1, v0]


@T.prim_func(private=True)
def _slice(a: T.Buffer((T.int64(8), T.int64(3)), "float32"), out: T.Buffer((T.int64(4), T.int64(3)), "float32")):
    for i0, i1 in T.grid(T.int64(4), T.int64(3)):
        with T.block("T_slice"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            out[v0, v1] = a[v0, v1]  # the first half of the rows: the same positions, fewer elements


@I.ir_module
class _Softmax:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((4, 8), "float32")):
        n = T.int64()
        with R.dataflow():
            h = R.matmul(x, R.permute_dims(w))
            r = R.reshape(h, R.shape([n, 2, 2]))
            r2 = R.reshape(r, R.shape([n, 4]))
            y = R.nn.softmax(R.exp(r2), axis=-1)
            R.output(y)
        return y


def _lower(mod, passes):
    for p in passes:
        mod = p(mod)
    return mod


def _planned_module():
    """_Softmax legalized, fused and lowered to planned memory (TVM's pipeline up to StaticPlanBlockMemory)."""
    t = transform
    return _lower(_Softmax, [t.LegalizeOps(), t.AnnotateTIROpPattern(), t.FoldConstant(), t.FuseOps(), t.FuseTIR(),
                             t.DeadCodeElimination(), t.RewriteDataflowReshape(), t.ToNonDataflow(),
                             t.RemovePurityChecking(), t.CallTIRRewrite(), t.StaticPlanBlockMemory()])


def test_has_reshape_pattern():
    assert has_reshape_pattern(_reshape) and has_reshape_pattern(_expand_dims)
    assert not has_reshape_pattern(_transpose)
    # the positions match, so the kernel test passes; the pass refuses it on the element counts
    assert has_reshape_pattern(_slice)


def test_rewrite_dataflow_reshape_inside_dataflow_only():
    @I.ir_module
    class Before:
        reshape = _reshape
        expand_dims = _expand_dims

        @R.function
        def main(x: R.Tensor((8, 3), "float32")) -> R.Tensor((2, 1, 4, 3), "float32"):
            cls = Before
            with R.dataflow():
                y = R.call_tir(cls.reshape, (x,), out_sinfo=R.Tensor((2, 4, 3), "float32"))
                # z leaves the dataflow block: not rewritten, although expand_dims is a reshape too
                z = R.call_tir(cls.expand_dims, (y,), out_sinfo=R.Tensor((2, 1, 4, 3), "float32"))
                R.output(z)
            return z

    @I.ir_module
    class Expected:
        reshape = _reshape
        expand_dims = _expand_dims

        @R.function
        def main(x: R.Tensor((8, 3), "float32")) -> R.Tensor((2, 1, 4, 3), "float32"):
            cls = Expected
            with R.dataflow():
                y = R.reshape(x, R.shape([2, 4, 3]))
                z = R.call_tir(cls.expand_dims, (y,), out_sinfo=R.Tensor((2, 1, 4, 3), "float32"))
                R.output(z)
            return z

    assert_structural_equal(transform.RewriteDataflowReshape()(Before), Expected)


def test_rewrite_dataflow_reshape_leaves_other_kernels():
    @I.ir_module
    class Before:
        transpose = _transpose
        slice = _slice

        @R.function
        def main(x: R.Tensor((8, 3), "float32")):
            cls = Before
            with R.dataflow():
                t = R.call_tir(cls.transpose, (x,), out_sinfo=R.Tensor((3, 8), "float32"))
                s = R.call_tir(cls.slice, (x,), out_sinfo=R.Tensor((4, 3), "float32"))
                u = (t, s)
                R.output(u)
            return u

    after = transform.RewriteDataflowReshape()(Before)
    assert after is Before


def test_remove_purity_checking():
    @I.ir_module
    class Before:
        @R.function
        def pure(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            y = R.call_pure_packed("my.identity", x, sinfo_args=R.Tensor((3,), "float32"))
            return y

        @R.function(pure=False)
        def impure(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            y = R.call_packed("my.identity", x, sinfo_args=R.Tensor((3,), "float32"))
            return y

    @I.ir_module
    class Expected:
        @R.function
        def pure(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            R.func_attr({"relax.force_pure": True})
            y = R.call_packed("my.identity", x, sinfo_args=R.Tensor((3,), "float32"))
            return y

        @R.function(pure=False)
        def impure(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            y = R.call_packed("my.identity", x, sinfo_args=R.Tensor((3,), "float32"))
            return y

    after = transform.RemovePurityChecking()(Before)
    assert_structural_equal(after, Expected)
    assert after["impure"] is Before["impure"]


def test_rewrite_cuda_graph_only_when_asked():
    mod = _planned_module()
    assert transform.RewriteCUDAGraph()(mod) is mod
    with minitvm.transform.PassContext(config={"relax.backend.use_cuda_graph": False}):
        assert transform.RewriteCUDAGraph()(mod) is mod
    with minitvm.transform.PassContext(config={"relax.backend.use_cuda_graph": True}):
        with pytest.raises(NotImplementedError, match="no CUDA device"):
            transform.RewriteCUDAGraph()(mod)


def test_lower_alloc_tensor():
    @I.ir_module
    class Before:
        @R.function
        def main():
            x = R.builtin.alloc_tensor(R.shape([16, 32]), "float32", 0)
            return x

    @I.ir_module
    class Expected:
        @R.function
        def main():
            storage = R.memory.alloc_storage(R.shape([2048]), 0, "global", "uint8")
            x = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), "float32", 0)
            return x

    assert_structural_equal(transform.LowerAllocTensor()(Before), Expected)


def test_lower_alloc_tensor_symbolic_size():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor(("n", 8), "float16")):
            n = T.int64()
            y = R.builtin.alloc_tensor(R.shape([n, 8]), "float16", 0)
            return y

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(("n", 8), "float16")):
            n = T.int64()
            storage = R.memory.alloc_storage(R.shape([n * 16]), 0, "global", "uint8")
            y = R.memory.alloc_tensor(storage, 0, R.shape([n, 8]), "float16", 0)
            return y

    assert_structural_equal(transform.LowerAllocTensor()(Before), Expected)


def test_kill_after_last_use_basic():
    @I.ir_module
    class Before:
        @R.function(pure=False)
        def main(x: R.Tensor([16, 32], "float32")):
            storage = R.memory.alloc_storage(R.shape([2048]), 0, "global", "uint8")
            y = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), "float32")
            _dummy = R.call_packed("add_tensors", x, y, sinfo_args=R.Tuple())
            z = R.add(x, y)
            return z

    @I.ir_module
    class Expected:
        @R.function(pure=False)
        def main(x: R.Tensor([16, 32], "float32")):
            storage = R.memory.alloc_storage(R.shape([2048]), 0, "global", "uint8")
            y = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), "float32")
            _ = R.memory.kill_storage(storage)
            _dummy = R.call_packed("add_tensors", x, y, sinfo_args=R.Tuple())
            z = R.add(x, y)
            _1 = R.memory.kill_tensor(y)
            return z

    assert_structural_equal(transform.KillAfterLastUse()(Before), Expected)


def test_kill_after_last_use_follows_trivial_rebindings():
    @I.ir_module
    class Before:
        @R.function(pure=False)
        def main(w: R.Tensor([16, 32], "float32")):
            x = R.add(w, R.const(1, "float32"))
            y = x
            z = R.add(y, R.const(1, "float32"))
            return z

    @I.ir_module
    class Expected:
        @R.function(pure=False)
        def main(w: R.Tensor([16, 32], "float32")):
            x = R.add(w, R.const(1, "float32"))
            z = R.add(x, R.const(1, "float32"))
            _ = R.memory.kill_tensor(x)
            return z

    assert_structural_equal(transform.KillAfterLastUse()(Before), Expected)


def test_kill_after_last_use_match_cast_and_objects():
    @I.ir_module
    class Before:
        @R.function(pure=False)
        def main(w: R.Tensor([16, 32], "float32")):
            x = R.add(w, R.const(1, "float32"))
            y = R.match_cast(x, R.Tensor([16, 32]))  # says less than x's struct info: not trivial
            t = (y, w)
            z = R.add(t[0], R.const(1, "float32"))
            return z

    @I.ir_module
    class Expected:
        @R.function(pure=False)
        def main(w: R.Tensor([16, 32], "float32")):
            x = R.add(w, R.const(1, "float32"))
            y = R.match_cast(x, R.Tensor([16, 32]))
            _ = R.memory.kill_tensor(x)
            t = (y, w)
            _1 = R.memory.kill_tensor(y)
            lv = t[0]
            _2 = R.vm.kill_object(t)
            z = R.add(lv, R.const(1, "float32"))
            _3 = R.memory.kill_tensor(lv)
            return z

    assert_structural_equal(transform.KillAfterLastUse()(Before), Expected)


def test_lower_runtime_builtin():
    @I.ir_module
    class Before:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 6), "float32")):
            storage = R.memory.alloc_storage(R.shape([48]), 0, "global", "uint8")
            y = R.memory.alloc_tensor(storage, 0, R.shape([2, 6]), "float32")
            _ = R.memory.kill_storage(storage)
            z = R.reshape(y, R.shape([3, 4]))
            _1 = R.memory.kill_tensor(y)
            return z

    @I.ir_module
    class Expected:
        @R.function(pure=False)
        def main(x: R.Tensor((2, 6), "float32")):
            storage = R.call_packed("vm.builtin.alloc_storage", R.shape([48]), R.dtype("uint8"), sinfo_args=R.Object)
            y = R.call_packed("vm.builtin.alloc_tensor", storage, R.prim_value(0), R.shape([2, 6]), R.dtype("float32"),
                              sinfo_args=R.Tensor((2, 6), "float32"))
            _ = R.vm.kill_object(storage)
            z = R.call_packed("vm.builtin.reshape", y, R.shape([3, 4]), sinfo_args=R.Tensor((3, 4), "float32"))
            _1 = R.vm.kill_object(y)
            return z

    assert_structural_equal(transform.LowerRuntimeBuiltin()(Before), Expected)


def test_lower_runtime_builtin_refuses_alloc_tensor():
    @I.ir_module
    class Before:
        @R.function
        def main():
            x = R.builtin.alloc_tensor(R.shape([4]), "float32", 0)
            return x

    with pytest.raises(ValueError, match="LowerRuntimeBuiltin: relax.builtin.alloc_tensor .* LowerAllocTensor"):
        transform.LowerRuntimeBuiltin()(Before)
    # minitvm's own VMBuiltinLower (its relax.build lowering has no LowerAllocTensor) still takes it
    assert "vm.builtin.alloc_storage" in transform.VMBuiltinLower()(Before)["main"].script()


def test_attach_global_symbol():
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def zeros(x: T.Buffer((2,), "float32")):
            x[0] = T.float32(0)

        @R.function(private=True)
        def main() -> R.Tensor((2,), "float32"):
            cls = Before
            gv0 = R.call_tir(cls.zeros, (), R.Tensor((2,), "float32"))
            return gv0

    @I.ir_module
    class Expected:
        @T.prim_func
        def zeros(x: T.Buffer((2,), "float32")):
            T.func_attr({"global_symbol": "zeros"})
            x[0] = T.float32(0)

        @R.function
        def main() -> R.Tensor((2,), "float32"):
            R.func_attr({"global_symbol": "main"})
            cls = Expected
            gv0 = R.call_tir(cls.zeros, (), R.Tensor((2,), "float32"))
            return gv0

    after = transform.AttachGlobalSymbol()(Before)
    assert_structural_equal(after, Expected)
    assert transform.AttachGlobalSymbol()(after) is after


def test_attach_global_symbol_system_lib_prefix():
    @I.ir_module
    class Before:
        I.module_attrs({"system_lib_prefix": "hello_"})

        @T.prim_func(private=True)
        def zeros(x: T.Buffer((2,), "float32")):
            x[0] = T.float32(0)

        @R.function
        def main() -> R.Tensor((2,), "float32"):
            cls = Before
            gv0 = R.call_tir(cls.zeros, (), R.Tensor((2,), "float32"))
            return gv0

    @I.ir_module
    class Expected:
        I.module_attrs({"system_lib_prefix": "hello_"})

        @T.prim_func
        def hello_zeros(x: T.Buffer((2,), "float32")):
            T.func_attr({"global_symbol": "hello_zeros"})
            x[0] = T.float32(0)

        @R.function
        def main() -> R.Tensor((2,), "float32"):
            cls = Expected
            gv0 = R.call_tir(cls.hello_zeros, (), R.Tensor((2,), "float32"))
            return gv0

    assert_structural_equal(transform.AttachGlobalSymbol()(Before), Expected)


def test_kills_run_on_the_vm_with_aliased_registers():
    """y = match_cast(x) and t[0] of a tuple share a register in minitvm's bytecode: killing x or
    y must not empty it while the other is still read."""

    @I.ir_module
    class Mod:
        @R.function(pure=False)
        def main(w: R.Tensor([16, 32], "float32")):
            m = T.int64()
            x = R.add(w, R.const(1, "float32"))
            y = R.match_cast(x, R.Tensor([m, 32], "float32"))
            t = (y, w)
            z = R.multiply(t[0], t[0])
            return z

    t = transform
    lowered = _lower(Mod, [t.LegalizeOps(), t.ToNonDataflow(), t.RemovePurityChecking(), t.CallTIRRewrite(),
                           t.StaticPlanBlockMemory(), t.LowerAllocTensor(), t.KillAfterLastUse(),
                           t.LowerRuntimeBuiltin(), t.VMShapeLower(), t.AttachGlobalSymbol()])
    # x (now the kernel's output alloc), y, t, and both t[0] are killed
    assert lowered["main"].script().count("R.vm.kill_object(") == 7
    for mode in ("bytecode", "compiled"):
        ex = relax.build(lowered, "llvm", relax_pipeline=None, exec_mode=mode)
        w = np.random.default_rng(1).standard_normal((16, 32)).astype("float32")
        got = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(w)).numpy()
        np.testing.assert_allclose(got, (w + 1) ** 2, rtol=1e-6)


def test_planned_softmax_runs_after_each_remaining_pass():
    """_Softmax through the rest of TVM's lowering; relax.build adds nothing, two sizes of n."""
    t = transform
    lowered = _lower(_planned_module(), [t.RewriteCUDAGraph(), t.LowerAllocTensor(), t.KillAfterLastUse(),
                                         t.LowerRuntimeBuiltin(), t.VMShapeLower(), t.AttachGlobalSymbol()])
    ex = relax.build(lowered, "llvm", relax_pipeline=None)
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 8)).astype("float32")
    for n in (1, 6):
        x = rng.standard_normal((n, 8)).astype("float32")
        y = np.exp(x @ w.T)
        e = np.exp(y - y.max(-1, keepdims=True))
        got = vm["main"](minitvm.nd.array(x), minitvm.nd.array(w)).numpy()
        np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5)


def test_kill_after_last_use_around_an_if():
    """A branch's own bindings are killed inside it; a variable last read in a branch is killed
    after the If; nothing bound in a branch is killed outside it."""

    @I.ir_module
    class Before:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
            a = R.exp(x)
            if c:
                b = R.add(a, a)
                r = R.multiply(b, b)
            else:
                r = R.negative(a)
            return r

    @I.ir_module
    class Expected:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")):
            a = R.exp(x)
            if c:
                b = R.add(a, a)
                r1 = R.multiply(b, b)
                _ = R.memory.kill_tensor(b)
                r = r1
            else:
                r = R.negative(a)
            _1 = R.memory.kill_tensor(a)
            return r

    after = transform.KillAfterLastUse()(Before)
    assert_structural_equal(after, Expected)
    t = transform
    lowered = _lower(Before, [t.LegalizeOps(), t.ToNonDataflow(), t.RemovePurityChecking(), t.CallTIRRewrite(),
                              t.StaticPlanBlockMemory(), t.LowerAllocTensor(), t.KillAfterLastUse(),
                              t.LowerRuntimeBuiltin(), t.VMShapeLower()])
    vm = relax.VirtualMachine(relax.build(lowered, "llvm", relax_pipeline=None), minitvm.cpu())
    x = np.random.default_rng(5).standard_normal(4).astype("float32")
    for c, want in ((True, 4 * np.exp(2 * x)), (False, -np.exp(x))):
        np.testing.assert_allclose(vm["main"](minitvm.nd.array(x), minitvm.nd.array(np.array(c))).numpy(), want,
                                   rtol=1e-5)
