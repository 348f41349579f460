"""Deep IR never reaches a recursion limit (issue 35): a long elementwise chain (FuseOps makes
it one deep expression) and a 2,000-deep TIR expression build, print, parse and compute."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.ir import assert_structural_equal, structural_equal, structural_hash
from minitvm.ir.deep import on_deep_thread, run_deep
from minitvm.script import from_source
from minitvm.transform import PassContext

DEPTH = 2000


def _deep_tir(depth: int) -> tuple[tir.PrimFunc, np.ndarray, np.ndarray]:
    """``B[i] = (((A[i] + A[i]) * 0.5 + A[i]) * 0.5 ...)``: ``depth`` operators deep."""
    a_buf = tir.decl_buffer((64,), "float32", "A")
    b_buf = tir.decl_buffer((64,), "float32", "B")
    i = tir.Var("i", "int32")
    a = np.random.default_rng(35).standard_normal(64).astype("float32")
    e, ref = a_buf[i], a.copy()
    for k in range(depth):
        if k % 2 == 0:
            e, ref = e + a_buf[i], ref + a
        else:
            e, ref = e * tir.const(0.5, "float32"), ref * np.float32(0.5)
    body = tir.For(i, tir.const(0, "int32"), tir.const(64, "int32"), tir.ForKind.SERIAL,
                   tir.BufferStore(b_buf, e, [i]))
    pa, pb = tir.Var("A_handle", "handle"), tir.Var("B_handle", "handle")
    func = tir.PrimFunc([pa, pb], {pa: a_buf, pb: b_buf}, body).with_attr("global_symbol", "deep")
    return func, a, ref


@pytest.fixture(scope="module")
def deep_tir():
    return _deep_tir(DEPTH)


def test_deep_tir_expression_prints_and_parses_back_equal(deep_tir):
    func, _, _ = deep_tir
    text = func.script()
    assert "T.meta_var" in text  # printed in parts: Python refuses 200 nested parentheses
    parsed = from_source(text)
    assert_structural_equal(func, parsed)
    assert structural_equal(func, parsed)
    assert structural_hash(func) == structural_hash(parsed)


@pytest.mark.parametrize("target", ["llvm", "python"])
def test_deep_tir_expression_builds_and_computes(deep_tir, target):
    func, a, ref = deep_tir
    lib = minitvm.build(func, target=target)
    out = minitvm.nd.array(np.zeros(64, "float32"))
    lib["deep"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_deep_tir_expression_lowers_with_bounds_checks(deep_tir):
    func, a, ref = deep_tir
    assert "B[i]" in minitvm.lower(func).script()
    with PassContext(config={"tir.bounds_check": True}):
        lib = minitvm.build(func, target="llvm")
    out = minitvm.nd.array(np.zeros(64, "float32"))
    lib["deep"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def _chain(n: int) -> tuple[minitvm.IRModule, np.ndarray, np.ndarray]:
    """A Relax function of ``n`` chained elementwise ops (add x, multiply, tanh, relu)."""
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    xs = np.random.default_rng(35).standard_normal((4, 8)).astype("float32")
    ref = xs.copy()
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for k in range(n):
                if k % 4 == 0:
                    v, ref = bb.emit(relax.op.add(v, x)), ref + xs
                elif k % 4 == 1:
                    v, ref = bb.emit(relax.op.multiply(v, relax.const(np.float32(0.5)))), ref * np.float32(0.5)
                elif k % 4 == 2:
                    v, ref = bb.emit(relax.op.tanh(v)), np.tanh(ref)
                else:
                    v, ref = bb.emit(relax.op.nn.relu(v)), np.maximum(ref, 0)
            out = bb.emit_output(v)
        bb.emit_func_output(out)
    return bb.get(), xs, ref


def test_long_elementwise_chain_compiles_and_computes():
    # FuseOps makes the chain one kernel whose expression is 210 deep (200 used to fail).  The
    # 2,000-op chain (8 groups of 256) builds and computes too, in ~20 s of CPU: too long here.
    mod, xs, ref = _chain(210)
    ex = minitvm.compile(mod, target="llvm")
    out = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(xs)).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_run_deep_shares_thread_state_and_passes_errors_back():
    limit = sys.getrecursionlimit()
    with PassContext(opt_level=1, config={"tir.bounds_check": True}):
        seen = run_deep(lambda: (on_deep_thread(), PassContext.current().opt_level,
                                 threading.current_thread() is threading.main_thread()))
    assert seen == (True, 1, False)
    assert run_deep(lambda: run_deep(threading.get_ident)) != threading.get_ident()  # nested: one thread

    def fail():
        raise ValueError("from the deep thread")

    with pytest.raises(ValueError, match="from the deep thread"):
        run_deep(fail)
    assert sys.getrecursionlimit() == limit  # restored after the deep thread ends
    assert not on_deep_thread()


def test_a_reused_deep_thread_sees_only_its_callers_state():
    # deep threads are kept and reused: the second call, outside any PassContext, must not see
    # the first call's context, and the thread holds none of it while idle
    with PassContext(opt_level=1):
        first = run_deep(lambda: (threading.get_ident(), PassContext.current().opt_level))
    second = run_deep(lambda: (threading.get_ident(), PassContext.current().opt_level))
    assert first[1] == 1 and second[1] == PassContext().opt_level
    assert first[0] == second[0]  # the same thread served both


def test_deep_expression_in_the_analyzer_te_and_repr():
    x = tir.Var("x", "int32")
    e = x
    for k in range(DEPTH):  # ((x * 3) + 1) * 3 + 1 ...
        e = e + 1 if k % 2 else e * 3
    ana = minitvm.arith.Analyzer()
    assert ana.can_prove(tir.Var("y", "int32") * 0 == 0)
    assert ana.simplify(e - e).value == 0
    assert isinstance(ana.interval(e)[0], int)
    assert repr(e).startswith("Add(")
    a = minitvm.te.placeholder((16,), "float32", name="A")

    def body(i):
        v = a[i]
        for k in range(DEPTH):
            v = v * 0.5 + a[i] if k % 2 else v + 1.0
        return v

    b = minitvm.te.compute((16,), body, name="B")
    func = minitvm.te.create_prim_func([a, b])
    av = np.random.default_rng(35).standard_normal(16).astype("float32")
    ref = av.copy()
    for k in range(DEPTH):
        ref = ref * np.float32(0.5) + av if k % 2 else ref + np.float32(1.0)
    out = minitvm.nd.array(np.zeros(16, "float32"))
    minitvm.build(func, target="llvm")["main"](minitvm.nd.array(av), out)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
