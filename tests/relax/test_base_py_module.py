"""BasePyModule (TVM 0.27): Python, TensorIR and Relax functions in one module, the VM calling
back into Python (R.call_py_func), and RelaxToPyFuncConverter -- numbers against torch."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import minitvm as tvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax.base_py_module import BasePyModule
from minitvm.relax.relax_to_pyfunc_converter import RelaxToPyFuncConverter
from minitvm.runtime.vm import builtins as vm_builtins
from minitvm.script import from_source
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tirx as T


def close(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    # (numpy's check: torch.testing.assert_close imports torch.distributed, seconds on first use)
    assert isinstance(actual, torch.Tensor) and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=rtol, atol=atol)


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@tvm.register_global_func("test_pymodule.scaled_mul", override=True)
def _scaled_mul(x, y, out):
    out[:] = x.numpy() * y.numpy() * 0.5


@I.ir_module
class Hybrid(BasePyModule):
    @T.prim_func(s_tir=True)
    def axpy(var_a: T.handle, var_b: T.handle, var_c: T.handle):
        n = T.int64()
        A = T.match_buffer(var_a, (n, 3), "float32")
        B = T.match_buffer(var_b, (n, 3), "float32")
        C = T.match_buffer(var_c, (n, 3), "float32")
        for i, j in T.grid(n, 3):
            with T.sblock("axpy"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(3.0) + B[vi, vj]

    @R.function
    def relax_sub(x: R.Tensor(("m", 3), "float32"), y: R.Tensor(("m", 3), "float32")) -> R.Tensor(("m", 3), "float32"):
        return R.subtract(x, y)

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        h = R.call_py_func("soft", (x,), out_ty=R.Tensor((2, 3), "float32"))
        return R.multiply(h, x)

    @I.pyfunc
    def soft(self, x):
        return F.softmax(x, dim=-1)

    @I.pyfunc
    def forward(self, a, b):
        c = self.call_tir(self.axpy, [a, b], out_ty=R.Tensor((T.int64(), 3), "float32"))
        d = self.call_dps_packed("test_pymodule.scaled_mul", [c, b], out_ty=R.Tensor((a.shape[0], 3), "float32"))
        return torch.tanh(d)


@pytest.fixture(scope="module")
def hybrid():
    return Hybrid(device=tvm.cpu(0))


def test_pyfunc_calls_tir_and_packed(hybrid):
    for rows in (2, 5):  # the kernel's n and the output shape come from the arguments
        a, b = rand(rows, 3, seed=rows), rand(rows, 3, seed=rows + 10)
        out = hybrid.forward(a, b)
        assert isinstance(out, torch.Tensor)
        close(out, torch.tanh((a * 3 + b) * b * 0.5))
    # the kernel named by its PrimFunc, its GlobalVar or its name: the same call
    a, b = rand(2, 3, seed=20), rand(2, 3, seed=21)
    for handle in (Hybrid.ir_module["axpy"], Hybrid.ir_module.get_global_var("axpy"), "axpy"):
        close(hybrid.call_tir(handle, [a, b], R.Tensor((2, 3), "float32")), a * 3 + b)


def test_module_from_the_factory_itself():
    # TVM also accepts what @I.ir_module gave as the module of a BasePyModule
    mod = BasePyModule(Hybrid, tvm.cpu(0))
    x = rand(2, 3, seed=22)
    close(mod.soft(x), F.softmax(x, dim=-1))
    assert mod.list_functions()["tirx"] == ["axpy"]
    # two live modules with a Python function of one name: each VM calls back its own
    other = Hybrid(device=tvm.cpu(0))
    mod.add_python_function("soft", lambda self, x: x + 1)
    close(mod.main(x), (x + 1) * x)
    close(other.main(x), F.softmax(x, dim=-1) * x)
    close(mod.main(x), (x + 1) * x)


def test_relax_function_called_from_python(hybrid):
    for rows in (1, 4):
        x, y = rand(rows, 3, seed=1), rand(rows, 3, seed=2)
        out = hybrid.relax_sub(x, y)
        assert isinstance(out, torch.Tensor)
        close(out, x - y)


def test_vm_calls_back_into_python(hybrid):
    x = rand(2, 3, seed=3)
    expected = F.softmax(x, dim=-1) * x
    close(hybrid.main(x), expected)
    close(hybrid.call_py_func("soft", [x]), F.softmax(x, dim=-1))


def test_conversions_share_memory(hybrid):
    x = rand(3, 3, seed=4)
    nd = hybrid._convert_pytorch_to_tvm(x)
    assert isinstance(nd, tvm.runtime.NDArray) and nd.data_ptr == x.data_ptr()
    back = hybrid._convert_tvm_to_pytorch(nd)
    assert back.data_ptr() == x.data_ptr()
    x[0, 0] = 42.0
    assert nd.numpy()[0, 0] == 42.0
    assert [t.data_ptr for t in hybrid._convert_pytorch_to_tvm([x, x])] == [x.data_ptr()] * 2


def test_show_lists_and_names(hybrid, capsys):
    text = hybrid.script()
    assert 'forward = R.ExternFunc("forward")' in text and 'soft = R.ExternFunc("soft")' in text
    assert 'R.call_py_func("soft", (x,), out_ty=R.Tensor((2, 3), dtype="float32"))' in text
    hybrid.show()
    assert capsys.readouterr().out.strip() == text.strip()
    # the printed module parses back to the same module
    assert_structural_equal(from_source(text), hybrid.ir_mod)
    hybrid.forward(rand(2, 3), rand(2, 3))  # looks the packed function up: listed as extern
    assert hybrid.list_functions() == {"tirx": ["axpy"], "relax": ["main", "relax_sub"],
                                       "extern": ["test_pymodule.scaled_mul"]}
    assert isinstance(hybrid, BasePyModule) and relax.BasePyModule is BasePyModule
    assert sorted(hybrid.ir_mod.pyfuncs) == ["forward", "soft"]
    assert hybrid.get_function("axpy") is hybrid.axpy and hybrid.get_function("nope") is None


def test_errors_at_the_edges(hybrid):
    x = rand(2, 3, seed=5)
    with pytest.raises(ValueError, match="Could not resolve or find compiled TIR function: nope. Available"):
        hybrid.call_tir("nope", [x], out_ty=R.Tensor((2, 3), "float32"))
    with pytest.raises(ValueError, match="expects 3 arguments"):
        hybrid.call_tir("axpy", [x], out_ty=R.Tensor((2, 3), "float32"))
    with pytest.raises(ValueError, match="expects 2 arguments"):
        hybrid.relax_sub(x)
    with pytest.raises(ValueError, match="'nope.f' not found as a global function"):
        hybrid.call_dps_packed("nope.f", [x], out_ty=R.Tensor((2, 3), "float32"))
    with pytest.raises(ValueError, match="Python function 'nope' not found in module pyfuncs"):
        hybrid.call_py_func("nope", [x])
    with pytest.raises(ValueError, match="Cannot infer concrete output shape"):
        hybrid.call_tir("axpy", [x, x], out_ty=R.Tensor((T.int64(), 3, T.int64()), "float32"))
    with pytest.raises(TypeError, match="defined ShapeExpr"):
        R.call_py_func("soft", (relax.Var("v", R.Tensor((2, 3))),), out_ty=R.Tensor(ndim=2))
    with pytest.raises(tvm.script.TVMScriptError, match="only allowed in classes that inherit from BasePyModule"):
        @I.ir_module
        class NotPy:
            @I.pyfunc
            def f(self, x):
                return x


def test_callbacks_leave_with_their_module():
    @I.ir_module
    class Short(BasePyModule):
        @R.function
        def main(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            return R.call_py_func("test_pymodule_twice", (x,), out_ty=R.Tensor((3,), "float32"))

        @R.function
        def wrong(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            y = R.call_py_func("test_pymodule_short", (x,), out_ty=R.Tensor((3,), "float32"))
            return R.add(y, x)

        @I.pyfunc
        def test_pymodule_twice(self, x):
            return x * 2

        @I.pyfunc
        def test_pymodule_short(self, x):
            return x[:2].clone()

    mod = Short(device=tvm.cpu(0))
    x = rand(3, seed=6)
    close(mod.main(x), x * 2)
    # what Python returns is checked against out_ty before a kernel reads it
    with pytest.raises(ValueError, match="call_py_func_test_pymodule_short: dimension 0 is 2, expected 3"):
        mod.wrong(x)
    del mod
    gc.collect()
    assert "test_pymodule_twice" not in vm_builtins._PY_FUNCS
    with pytest.raises(LookupError, match="'test_pymodule_twice' not found in registry"):
        tvm.get_global_func("vm.builtin.call_py_func")(("test_pymodule_twice", (x,)))


@I.ir_module
class Dynamic(BasePyModule):
    # TVM's pymodule tutorial's last example: a kernel written as a bare loop (no block at all)
    @T.prim_func(s_tir=True)
    def scale_tir(var_x: T.handle, var_out: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n,), "float32")
        out = T.match_buffer(var_out, (n,), "float32")
        for i in T.serial(n):
            out[i] = x[i] * T.float32(2.0)

    @R.function
    def add_relax(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        return R.add(x, y)


def test_a_block_free_kernel_beside_a_symbolic_relax_function():
    """The CPU default schedule must pass over a kernel with no block (it once indexed the
    first block before asking whether the function is a convolution), or the Relax VM is lost."""
    mod = Dynamic(device=tvm.cpu(0), target="llvm")
    for n in (5, 10):
        a, b = rand(n, seed=n), rand(n, seed=n + 1)
        close(mod.add_relax(a, b), a + b)
    x = rand(7, seed=3)
    scaled = mod.call_tir("scale_tir", [x], relax.TensorType((T.int64(),), "float32"))
    np.testing.assert_allclose(scaled.numpy(), x.numpy() * 2.0, rtol=1e-6)


@I.ir_module
class Dense:
    @T.prim_func(s_tir=True)
    def bias_add(var_x: T.handle, var_b: T.handle, var_out: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, 5), "float32")
        b = T.match_buffer(var_b, (5,), "float32")
        out = T.match_buffer(var_out, (n, 5), "float32")
        for i, j in T.grid(n, 5):
            out[i, j] = x[i, j] + b[j]

    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 5), "float32"),
             b: R.Tensor((5,), "float32")) -> R.Tensor(("n", 5), "float32"):
        n = T.int64()
        h = R.matmul(x, w)
        g = h
        hb = R.call_tir(Dense.bias_add, (g, b), out_ty=R.Tensor((n, 5), "float32"))
        s = R.nn.softmax(R.nn.relu(hb), axis=-1)
        t = R.sum(R.permute_dims(s), axis=[1], keepdims=True)
        return R.add(s, R.permute_dims(R.exp(t)))

    @R.function
    def conv(x: R.Tensor((1, 1, 4, 4), "float32"), w: R.Tensor((1, 1, 3, 3), "float32")):
        return R.nn.conv2d(x, w)


def _dense_reference(x, w, b):
    s = F.softmax(F.relu(x @ w + b), dim=-1)
    return s + torch.exp(s.T.sum(dim=1, keepdim=True)).T


def test_converter_matches_torch_before_and_after_a_pass():
    x, w, b = rand(3, 4, seed=7), rand(4, 5, seed=8), rand(5, seed=9)
    expected = _dense_reference(x, w, b)
    early = RelaxToPyFuncConverter(Dense).convert(["main"])
    assert isinstance(early, tvm.IRModule) and list(early.pyfuncs) == ["main"] and not Dense.pyfuncs
    close(early.pyfuncs["main"](x, w, b), expected)
    late = RelaxToPyFuncConverter(relax.transform.CanonicalizeBindings()(Dense)).convert("main")
    x6 = rand(6, 4, seed=10)  # the symbolic n from the arguments, for R.call_tir's output too
    close(late.pyfuncs["main"](x6, w, b), _dense_reference(x6, w, b))


def test_converter_errors():
    converter = RelaxToPyFuncConverter(Dense)
    with pytest.raises(ValueError, match="Relax function 'nope' not found in IRModule"):
        converter.convert(["nope"])
    main = converter.convert("main").pyfuncs["main"]
    with pytest.raises(ValueError, match="Expected 3 arguments, got 2"):
        main(rand(3, 4), rand(4, 5))
    conv = converter.convert("conv").pyfuncs["conv"]
    with pytest.raises(NotImplementedError, match=r"operator relax\.nn\.conv2d \(in function conv\)"):
        conv(rand(1, 1, 4, 4), rand(1, 1, 3, 3))


@tvm.register_global_func("test_pymodule.dps_double", override=True)
def _dps_double(x, out):
    out[:] = x.numpy() * 2


@tvm.register_global_func("test_pymodule.returns_negative", override=True)
def _returns_negative(x):  # takes the inputs only: the converter uses what it returns, as TVM's
    return tvm.runtime.tensor(-x.numpy())


@I.ir_module
class Shapes:
    @R.function
    def main(x: R.Tensor((4, 6), "float32"), i: R.Tensor((2, 2), "int64"), g: R.Tensor((6,), "float32"),
             b: R.Tensor((6,), "float32")):
        parts = R.split(x, [1, 4], axis=1)
        taken = R.take(x, i, axis=1)
        csum = R.cumsum(parts[1], axis=0, exclusive=True)
        norm = R.nn.layer_norm(x, g, b, axes=[-1])
        tiled = R.flip(R.tile(parts[0], [1, 2]), axis=0)
        rep = R.repeat(parts[2], 2, axis=1)
        best = R.argmax(x, axis=1)
        doubled = R.call_dps_packed("test_pymodule.dps_double", (x,), out_ty=R.Tensor((4, 6), "float32"))
        negated = R.call_dps_packed("test_pymodule.returns_negative", (x,), out_ty=R.Tensor((4, 6), "float32"))
        return (taken, csum, norm, tiled, rep, best, R.add(doubled, negated))


def test_converter_shape_ops_and_packed_calls():
    x, g, b = rand(4, 6, seed=11), rand(6, seed=12), rand(6, seed=13)
    i = torch.tensor([[5, 0], [2, 2]])
    got = RelaxToPyFuncConverter(Shapes).convert("main").pyfuncs["main"](x, i, g, b)
    xn, first, mid, last = x.numpy(), x[:, :1], x[:, 1:4], x[:, 4:]
    close(got[0], torch.from_numpy(np.take(xn, i.numpy(), axis=1)))
    close(got[1], torch.cumsum(mid, dim=0) - mid)
    close(got[2], F.layer_norm(x, [6], g, b), rtol=1e-5, atol=1e-5)
    close(got[3], torch.flip(torch.tile(first, (1, 2)), dims=[0]))
    close(got[4], torch.from_numpy(np.repeat(last.numpy(), 2, axis=1)))
    assert got[5].tolist() == np.argmax(xn, axis=1).tolist()
    close(got[6], x)  # 2x - x
