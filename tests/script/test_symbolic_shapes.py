"""Symbolic TIR variables (``n = T.int64()``), tuple unpacking and a module naming itself.

The end-to-end module is the MLC course's ``MyModule`` (end-to-end chapter): prim funcs whose
buffer shapes are ``T.int64()`` variables, called from a Relax function with symbolic shapes.
"""

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.ir import assert_structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def _round_trip(obj):
    again = from_source(obj.script())
    assert_structural_equal(again, obj)
    return again


@I.ir_module
class MLP:
    @T.prim_func
    def relu0(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (1, n), "float32")
        Y = T.match_buffer(y, (1, n), "float32")
        for i, j in T.grid(1, n):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @T.prim_func
    def linear0(x: T.handle, w: T.handle, b: T.handle, z: T.handle):
        m, n, k = T.int64(), T.int64(), T.int64()
        X = T.match_buffer(x, (1, m), "float32")
        W = T.match_buffer(w, (n, m), "float32")
        B = T.match_buffer(b, (n,), "float32")
        Z = T.match_buffer(z, (1, n), "float32")
        Y = T.alloc_buffer((1, n), "float32")
        for i, j, k in T.grid(1, n, m):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, n):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @R.function
    def main(x: R.Tensor((1, "m"), "float32"), w0: R.Tensor(("n", "m"), "float32"),
             b0: R.Tensor(("n",), "float32"), w1: R.Tensor(("k", "n"), "float32"),
             b1: R.Tensor(("k",), "float32")):
        m, n, k = T.int64(), T.int64(), T.int64()  # noqa: F841 - declares the shape names
        with R.dataflow():
            lv0 = R.call_dps_packed("linear0", (x, w0, b0), R.Tensor((1, n), "float32"))
            lv1 = R.call_dps_packed("relu0", (lv0,), R.Tensor((1, n), "float32"))
            out = R.call_dps_packed("linear0", (lv1, w1, b1), R.Tensor((1, k), "float32"))
            R.output(out)
        return out


def test_unpacked_int64_declares_one_variable_per_name():
    linear = MLP["linear0"]
    shapes = {name: buf.shape for name, buf in ((b.name, b) for b in linear.buffer_map.values())}
    m, n = shapes["X"][1], shapes["W"][0]
    assert isinstance(m, tir.Var) and isinstance(n, tir.Var)
    assert (m.name, n.name, m.dtype) == ("m", "n", "int64")
    assert shapes["W"][1] is m and shapes["Z"][1] is n  # the same variables, not copies


def test_symbolic_module_round_trips():
    _round_trip(MLP)


@pytest.mark.parametrize("compile_fn", ["relax.build", "minitvm.compile"])
def test_mlc_dynamic_mlp_runs_at_two_sizes(compile_fn):
    ex = relax.build(MLP, target="llvm") if compile_fn == "relax.build" else minitvm.compile(MLP, "llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    rng = np.random.default_rng(0)
    for m, n, k in [(24, 16, 5), (9, 31, 3)]:
        x = rng.standard_normal((1, m)).astype("float32")
        w0, b0 = rng.standard_normal((n, m)).astype("float32"), rng.standard_normal(n).astype("float32")
        w1, b1 = rng.standard_normal((k, n)).astype("float32"), rng.standard_normal(k).astype("float32")
        out = vm["main"](*[minitvm.nd.array(a) for a in (x, w0, b0, w1, b1)]).numpy()
        ref = np.maximum(x @ w0.T + b0, 0) @ w1.T + b1
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_buffer_params_with_shared_symbolic_dims_build_for_any_size():
    n, m = T.Var("n", "int64"), T.Var("m", "int64")

    @T.prim_func
    def add_one(A: T.Buffer((n, m), "float32"), B: T.Buffer((n, m), "float32")):
        for i, j in T.grid(n, m):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)

    _round_trip(add_one)
    lib = minitvm.build(add_one, target="llvm")
    rng = np.random.default_rng(1)
    for shape in [(3, 5), (17, 2)]:
        a = rng.standard_normal(shape).astype("float32")
        b = minitvm.nd.array(np.zeros_like(a))
        lib["add_one"](minitvm.nd.array(a), b)
        np.testing.assert_allclose(b.numpy(), a + 1, rtol=1e-6)


def test_int64_outside_a_function_is_a_variable():
    assert isinstance(T.int64(), tir.Var)
    assert isinstance(T.int32(is_size_var=True), tir.SizeVar)


def test_tir_tuple_of_expressions_binds_lets_in_order():
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), x: T.int32):
        a, b = x + 1, x * 2
        A[0] = a + b

    body = f.body
    assert isinstance(body, tir.stmt.LetStmt) and body.var.name == "a"
    assert isinstance(body.body, tir.stmt.LetStmt) and body.body.var.name == "b"
    _round_trip(f)


def test_tir_unpacking_count_mismatch_is_an_error():
    with pytest.raises(TVMScriptError, match="cannot unpack 3 values into 2 names"):
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            a, b = T.int64(), T.int64(), T.int64()  # noqa: F841
            A[0] = 1


def test_relax_tuple_unpacking_binds_tuple_get_items():
    @R.function
    def f(x: R.Tensor((4, 6), "float32")):
        with R.dataflow():
            lv0, lv1 = R.split(x, 2, axis=1)
            y = R.add(lv0, lv1)
            R.output(y)
        return y

    bindings = f.body.blocks[0].bindings
    values = [type(b.value).__name__ for b in bindings]
    assert values == ["Call", "TupleGetItem", "TupleGetItem", "Call"]
    assert [b.var.name_hint for b in bindings[1:3]] == ["lv0", "lv1"]
    assert [b.value.index for b in bindings[1:3]] == [0, 1]
    _round_trip(f)

    mod = minitvm.IRModule({"main": f})
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    x = np.random.default_rng(2).standard_normal((4, 6)).astype("float32")
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x)).numpy(), x[:, :3] + x[:, 3:], rtol=1e-6)


def test_relax_unpacking_a_tensor_is_an_error():
    with pytest.raises(TVMScriptError, match="only tuples unpack"):
        @R.function
        def f(x: R.Tensor((4, 6), "float32")):
            a, b = x
            return a


def test_module_class_refers_to_itself_by_name():
    @I.ir_module
    class Expected:
        @R.function
        def helper(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            y = R.add(x, x)
            return y

        @R.function
        def main(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            y = Expected.helper(x)
            z = cls.helper(y)  # noqa: F821 - TVMScript's name for the module being defined
            return z

    bindings = Expected["main"].body.blocks[0].bindings
    helper_gv = Expected.get_global_var("helper")
    assert bindings[0].value.op is helper_gv and bindings[1].value.op is helper_gv
    again = _round_trip(Expected)
    # from_source accepts the class's own name too
    text = Expected.script().replace("class Module:", "class Expected:")
    text = text.replace("cls.helper", "Expected.helper")
    assert "class Expected:" in text and "Expected.helper" in text
    assert_structural_equal(from_source(text), again)


def test_string_dimension_expressions_in_signatures():
    @R.function
    def f(x: R.Shape(("m",)), y: R.Tensor(("m * 2",), "float32"),
          z: R.Tensor(("T.max(m, 20)",), "float32")):
        m = T.int64()
        w = R.call_dps_packed("test_intrin", y, R.Tensor((m * 2,), dtype="float32"))
        return w

    m = f.params[0].struct_info.values[0]
    y_dim = f.params[1].struct_info.shape_values[0]
    z_dim = f.params[2].struct_info.shape_values[0]
    assert isinstance(y_dim, tir.Mul) and y_dim.a is m  # the same m, not a copy
    assert isinstance(z_dim, tir.Max) and z_dim.a is m
    _round_trip(f)


def test_r_tuple_builds_tuple_values():
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        t = R.tuple(x, x)
        e: R.Tuple() = R.tuple()  # noqa: F841
        return t

    values = [b.value for b in f.body.blocks[0].bindings]
    assert [len(v.fields) for v in values] == [2, 0]
    _round_trip(f)


def test_bind_params_fixes_symbolic_dims_in_call_outputs():
    """The MLC chapter binds the weights of the dynamic MLP, then compiles: n and k must
    become constants inside the body too (out_sinfo of the calls), not only in signatures."""
    rng = np.random.default_rng(11)
    m, n, k = 12, 7, 3
    params = {"w0": rng.standard_normal((n, m)).astype("float32"), "b0": rng.standard_normal(n).astype("float32"),
              "w1": rng.standard_normal((k, n)).astype("float32"), "b1": rng.standard_normal(k).astype("float32")}
    bound = relax.transform.BindParams("main", {name: minitvm.nd.array(v) for name, v in params.items()})(MLP)
    assert "(1, n)" not in bound["main"].script() and "(1, 7)" in bound["main"].script()
    vm = relax.VirtualMachine(minitvm.compile(bound, "llvm"), minitvm.cpu())
    x = rng.standard_normal((1, m)).astype("float32")
    ref = np.maximum(x @ params["w0"].T + params["b0"], 0) @ params["w1"].T + params["b1"]
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x)).numpy(), ref, rtol=1e-5, atol=1e-5)
