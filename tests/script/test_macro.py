"""``T.macro``: a TVMScript fragment pasted where a prim func calls it."""

import numpy as np
import pytest

import minitvm
from minitvm.ir import assert_structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import tir as T


def test_macro_expands_with_keyword_and_star_arguments():
    @T.macro
    def update(i, *rest, lhs, **named):
        vi, vj, vk = T.axis.remap("SSR", [i, rest[0], rest[1]])
        with T.init():
            named["out"][vi, vj] = T.float32(0)
        named["out"][vi, vj] = named["out"][vi, vj] + lhs[vi, vk] * named["rhs"][vj, vk]

    @T.prim_func
    def with_macro(A: T.Buffer((16, 8), "float32"), B: T.Buffer((12, 8), "float32"),
                   C: T.Buffer((16, 12), "float32")):
        for i, j, k in T.grid(16, 12, 8):
            with T.block("update"):
                update(i, j, k, lhs=A, rhs=B, out=C)

    @T.prim_func(private=True)
    def with_macro_expected(A: T.Buffer((16, 8), "float32"), B: T.Buffer((12, 8), "float32"),
                            C: T.Buffer((16, 12), "float32")):
        for i, j, k in T.grid(16, 12, 8):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

    assert_structural_equal(with_macro, with_macro_expected.with_attr("global_symbol", "with_macro"))
    assert_structural_equal(from_source(with_macro.script()), with_macro)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((16, 8)).astype("float32"), rng.standard_normal((12, 8)).astype("float32")
    c = minitvm.nd.array(np.zeros((16, 12), "float32"))
    minitvm.build(with_macro, target="llvm")["with_macro"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b.T, rtol=1e-5)


def test_hygienic_macro_sees_its_definition_site():
    x_value = 3

    @T.macro
    def static_capture(A, B):
        B[()] = A[x_value]

    @T.macro(hygienic=False)
    def dynamic_capture(A, B):
        B[()] = A[x_value]

    @T.prim_func
    def use(A: T.Buffer((16,), "int32"), B: T.Buffer((), "int32")):
        for x_value in range(10):  # noqa: B007 - the non-hygienic macro reads it
            static_capture(A, B)
            dynamic_capture(A, B)

    loop_body = use.body.body.seq
    assert loop_body[0].value.indices[0].value == 3  # A[3]
    assert loop_body[1].value.indices[0] is use.body.loop_var  # A[x_value], the loop variable


def test_repeated_macro_blocks_get_numbered_names():
    @T.macro
    def double(A, idx):
        with T.block("op"):
            v = T.axis.remap("S", [idx])
            A[v] = A[v] * T.float32(2)

    @T.prim_func
    def f(A: T.Buffer((10,), "float32")):
        for i in range(10):
            double(A, i)
            double(A, i)
            double(A, i)

    names = [s.block.name for s in f.body.block.body.body.seq]
    assert names == ["op", "op_1", "op_2"]
    a = np.random.default_rng(4).standard_normal(10).astype("float32")
    out = minitvm.nd.array(a)
    minitvm.build(f, target="llvm")["f"](out)
    np.testing.assert_allclose(out.numpy(), 8 * a, rtol=1e-6)


def test_macro_misuse_is_reported():
    with pytest.raises(ValueError, match="keyword arguments"):
        T.macro(True)

    @T.macro
    def one_arg(A):
        A[0] = 1

    with pytest.raises(TypeError, match="only be called inside a @T.prim_func"):
        one_arg(None)
    with pytest.raises(TVMScriptError, match="macro one_arg: too many positional arguments"):
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            one_arg(A, A)
