"""Parsing TVMScript into TensorIR: the structure TVM builds, and equivalent spellings."""

import pytest

from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal, structural_equal
from minitvm.script import from_source, ir_module
from minitvm.script import ir as I
from minitvm.script import tir as T
from minitvm.testing.programs import TwoFunctions, mm_relu


def test_mm_relu_structure():
    f = mm_relu
    assert isinstance(f, tir.PrimFunc)
    assert f.attrs == {"global_symbol": "mm_relu", "tir.noalias": True}
    assert [p.name for p in f.params] == ["A", "B", "C"]
    for p in f.params:
        assert p.dtype == "handle"
        buf = f.buffer_map[p]
        assert buf.name == p.name and buf.dtype == "float32"
        assert [s.value for s in buf.shape] == [128, 128]
        assert buf.data is not p and buf.data.dtype == "handle"

    root_realize = f.body
    assert isinstance(root_realize, tir.BlockRealize)
    assert root_realize.iter_values == () and structural_equal(root_realize.predicate, tir.IntImm("bool", 1))
    root = root_realize.block
    assert root.name_hint == "root" and root.reads == () and root.writes == ()
    (Y,) = root.alloc_buffers
    assert Y.name == "Y" and Y.dtype == "float32"

    loop_i, loop_c = root.body.seq
    loops = [loop_i, loop_i.body, loop_i.body.body]
    for loop, name in zip(loops, "ijk"):
        assert isinstance(loop, tir.For) and loop.kind == "serial" and loop.annotations == {}
        assert loop.loop_var.name == name
        assert isinstance(loop.min, tir.IntImm) and loop.min.value == 0 and loop.min.dtype == "int32"
        assert loop.extent.value == 128

    realize = loops[2].body
    assert [v.name for v in realize.iter_values] == ["i", "j", "k"]
    assert all(a is lp.loop_var for a, lp in zip(realize.iter_values, loops))
    block = realize.block
    assert block.name_hint == "Y"
    assert [iv.iter_type for iv in block.iter_vars] == ["spatial", "spatial", "reduce"]
    assert [iv.var.name for iv in block.iter_vars] == ["vi", "vj", "vk"]
    assert all(iv.dom.min.value == 0 and iv.dom.extent.value == 128 for iv in block.iter_vars)
    vi, vj, vk = (iv.var for iv in block.iter_vars)
    A, B, _ = f.buffers
    assert [r.buffer for r in block.reads] == [A, B]  # the reduction's own read is implied by T.init
    assert [r.buffer for r in block.writes] == [Y]
    assert all(r.extent.value == 1 for r in block.writes[0].region)
    assert block.writes[0].region[0].min is vi and block.writes[0].region[1].min is vj
    assert isinstance(block.init, tir.BufferStore) and block.init.value.value == 0.0
    store = block.body
    assert isinstance(store, tir.BufferStore) and store.buffer is Y
    assert isinstance(store.value, tir.Add) and isinstance(store.value.b, tir.Mul)
    assert store.value.b.a.indices == (vi, vk)

    c_block = loop_c.body.body.block
    assert isinstance(c_block.body.value, tir.Max) and c_block.init is None


def _mm_relu_variant(style):
    if style == "remap":
        @T.prim_func
        def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                    C: T.Buffer((128, 128), "float32")):
            T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
            Y = T.alloc_buffer((128, 128), "float32")
            for i, j, k in T.grid(128, 128, 128):
                with T.block("Y"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        Y[vi, vj] = T.float32(0)
                    Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
        return mm_relu

    if style == "explicit":
        @T.prim_func
        def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                    C: T.Buffer((128, 128), "float32")):
            T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
            Y = T.alloc_buffer((128, 128))
            for i in range(128):
                for j in T.serial(128):
                    for k in T.serial(0, 128):
                        with T.sblock("Y"):
                            vi = T.axis.S(128, i)
                            vj = T.axis.spatial(128, j)
                            vk = T.axis.reduce((0, 128), k)
                            T.reads(A[vi, vk], B[vk, vj])
                            T.writes(Y[vi, vj])
                            with T.init():
                                Y[vi, vj] = 0.0
                            Y[vi, vj] += A[vi, vk] * B[vk, vj]
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads(Y[vi, vj])
                    T.writes(C[vi, vj])
                    C[vi, vj] = T.max(Y[vi, vj], 0.0)
        return mm_relu

    # the class-subscript annotation and a size taken from the enclosing function
    n = 128

    @T.prim_func
    def mm_relu(A: T.Buffer[(n, n), "float32"], B: T.Buffer[(n, n), "float32"],  # noqa: F821
                C: T.Buffer[(n, n), "float32"]):  # noqa: F821 (ruff reads "float32" as a type name)
        T.func_attr({"tir.noalias": True})
        Y = T.alloc_buffer((n, n))
        for i, j, k in T.grid(n, n, n):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(n, n):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    return mm_relu


@pytest.mark.parametrize("style", ["remap", "explicit", "closure"])
def test_equivalent_spellings_give_equal_functions(style):
    assert_structural_equal(_mm_relu_variant(style), mm_relu)


def test_names_do_not_matter_but_structure_does():
    @T.prim_func
    def renamed(X: T.Buffer((4,), "float32"), Z: T.Buffer((4,), "float32")):
        for a in range(4):
            with T.block("B"):
                va = T.axis.spatial(4, a)
                Z[va] = X[va] + T.float32(1)

    @T.prim_func
    def other(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] + T.float32(2)

    assert structural_equal(renamed.with_attr("global_symbol", "other"), other) is False
    assert structural_equal(renamed.with_attr("global_symbol", "other"),
                            from_source(other.script().replace("2.0", "1.0")))


def test_private_functions_have_no_global_symbol():
    @T.prim_func(private=True)
    def kernel(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = T.float32(0)

    assert "global_symbol" not in kernel.attrs
    assert kernel.script().splitlines()[2] == "@T.prim_func(private=True)"


def test_no_blocks_means_no_root_block():
    @T.prim_func
    def plain(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = T.float32(1)

    assert isinstance(plain.body, tir.For)
    assert isinstance(plain.body.body, tir.BufferStore)
    assert plain.body.body.value.dtype == "float32"


def test_let_meta_var_and_static_if():
    use_relu = False
    scale = 3

    @T.prim_func
    def f(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
        for i in range(8):
            offset = T.meta_var(i * scale)  # a Python alias, no LetStmt
            x = A[i] + offset  # a LetStmt
            if use_relu:  # decided while parsing
                B[i] = T.max(x, 0)
            else:
                B[i] = x

    let = f.body.body
    assert isinstance(let, tir.LetStmt) and let.var.name == "x"
    assert isinstance(let.value.b, tir.Mul) and let.value.b.b.value == 3
    assert isinstance(let.body, tir.BufferStore) and let.body.value is let.var


def test_block_level_alloc_and_match_buffer():
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        A = T.match_buffer(a, (16,), "float32")
        B = T.match_buffer(b, (16,), "float32")
        for i in range(4):
            with T.block("outer"):
                vi = T.axis.spatial(4, i)
                tile = T.match_buffer(A[vi * 4:vi * 4 + 4], (4,))
                acc = T.alloc_buffer((4,), scope="local")
                for j in range(4):
                    acc[j] = tile[j] * T.float32(2)
                for j in range(4):
                    B[vi * 4 + j] = acc[j]

    a, b = f.params
    assert a.dtype == "handle" and f.buffer_map[a].name == "A"
    outer = f.body.block.body.body.block
    assert [buf.name for buf in outer.alloc_buffers] == ["acc"]
    assert outer.alloc_buffers[0].scope == "local"
    (match,) = outer.match_buffers
    assert match.buffer.name == "tile" and match.source.buffer is f.buffer_map[a]
    assert [r.buffer.name for r in outer.reads] == ["A"]
    assert_structural_equal(from_source(f.script()), f)


def test_ir_module_decorator_and_old_spelling():
    assert isinstance(TwoFunctions, IRModule)
    assert TwoFunctions["add_one"].attrs == {"global_symbol": "add_one"}
    assert TwoFunctions["double"].attrs == {}

    @ir_module
    class Mod:
        @T.prim_func
        def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
            for i in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    B[vi] = A[vi] + T.float32(1)

    assert_structural_equal(Mod["add_one"], TwoFunctions["add_one"])
    assert isinstance(I.GlobalVar("f"), I.GlobalVar)


def test_module_attrs():
    @I.ir_module
    class Mod:
        I.module_attrs({"system_lib_prefix": "demo_"})

        @T.prim_func
        def f(A: T.Buffer((2,), "float32")):
            A[0] = T.float32(1)

    assert Mod.attrs == {"system_lib_prefix": "demo_"}
    assert_structural_equal(from_source(Mod.script()), Mod)


def test_scalar_constructors_and_helpers():
    assert T.float32(0).dtype == "float32" and isinstance(T.float32(0), tir.FloatImm)
    assert T.int64(5).dtype == "int64" and T.bool(True).value == 1
    i = tir.Var("i", "int32")
    assert isinstance(T.float32(i), tir.Cast)
    assert isinstance(T.Cast("int32", T.int32(3)), tir.Cast)  # the node, never folded
    assert T.cast(T.int32(3), "float32").value == 3.0  # the helper folds constants
    assert [lp.extent.value for lp in T.grid(2, 3)] == [2, 3]
    assert T.serial(2, 10).extent.value == 8
    assert T.float32("inf").value == float("inf")
