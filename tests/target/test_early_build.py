"""Kernels compiled as ``DefaultCPUSchedule`` schedules them (``minitvm.target.tir_build.
EarlyKernels``): ``relax.build`` lowers each freshly scheduled kernel at once and hands it to an
LLVM worker while the rest of the pipeline runs.  The module must be the one the plain build
in pieces gives (the same lowered kernels, bit-identical results), a kernel a later pass
replaces or removes must not come from its early piece, and a failing build must release
LLVM's lock and the process's stderr."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from _layers import layer_inputs, layers  # tests/target/_layers.py

import minitvm
from minitvm import relax
from minitvm.driver import clear_kernel_cache
from minitvm.ir.structural import structural_equal
from minitvm.relax import vm_build
from minitvm.target import tir_build
from minitvm.target.codegen import llvm_parallel
from minitvm.target.codegen.llvm_jit import LLVM_LOCK
from minitvm.tir.function import PrimFunc
from minitvm.transform import Sequential, module_pass

RNG = np.random.default_rng(381)


def _inputs():
    return layer_inputs(RNG)


def _run(ex, args):
    return [o.numpy() for o in relax.VirtualMachine(ex, minitvm.cpu())["main"](*args)]


class _Spy:
    """What the build took from :class:`EarlyKernels` (kernel names), per build."""

    def __init__(self, monkeypatch):
        self.taken: list[list[str]] = []
        take = tir_build.EarlyKernels.take

        def spied(early, mod):
            out = take(early, mod)
            self.taken.append(sorted(out[1]))
            return out

        monkeypatch.setattr(tir_build.EarlyKernels, "take", spied)


def _no_early(monkeypatch):
    monkeypatch.setattr(vm_build, "compiling_as_scheduled", lambda target, built_as=None: _Nothing())


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _build(pipeline="default"):
    clear_kernel_cache()  # a cold build: fresh schedules, no cached library
    return relax.build(minitvm.IRModule({"main": layers}), "llvm", relax_pipeline=pipeline)


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setattr(llvm_parallel, "LLVM_THREADS", 2)


def _same_lowered(a, b):
    fa = {gv.name_hint: f for gv, f in a.lib.ir_module.items() if isinstance(f, PrimFunc)}
    fb = {gv.name_hint: f for gv, f in b.lib.ir_module.items() if isinstance(f, PrimFunc)}
    assert sorted(fa) == sorted(fb)
    for name in fa:
        assert structural_equal(fa[name], fb[name]), name


def test_early_build_gives_the_module_of_the_build_in_pieces(monkeypatch, two_threads):
    spy = _Spy(monkeypatch)
    early = _build()
    assert spy.taken and len(spy.taken[0]) == len(early.lib.function_names()) >= llvm_parallel.MIN_KERNELS
    with monkeypatch.context() as m:
        _no_early(m)
        plain = _build()
    assert len(spy.taken) == 1, "the plain build took kernels compiled early"
    assert sorted(early.lib.function_names()) == sorted(plain.lib.function_names())
    assert sorted(early.lib.native_entries) == sorted(plain.lib.native_entries)
    _same_lowered(early, plain)
    args = _inputs()
    for a, b in zip(_run(early, args), _run(plain, args)):
        np.testing.assert_array_equal(a, b)


def _replace_one_kernel(mod):
    """A pass after DefaultCPUSchedule: one kernel becomes another PrimFunc object (an attribute
    more), another kernel's name is left alone."""
    for gv, f in mod.items():
        if isinstance(f, PrimFunc):
            return mod.with_function(gv, f.with_attr("test.replaced", True))
    raise AssertionError("no kernel")


def test_a_kernel_replaced_after_scheduling_is_compiled_again(monkeypatch, two_threads):
    spy = _Spy(monkeypatch)
    replace = module_pass(lambda mod, ctx: _replace_one_kernel(mod), opt_level=0, name="ReplaceOne")
    ex = _build(Sequential([relax.get_pipeline("default"), replace]))
    names = ex.lib.function_names()
    replaced = [gv.name_hint for gv, f in ex.ir_module.items()
                if isinstance(f, PrimFunc) and f.attrs.get("test.replaced")]
    assert len(replaced) == 1 and replaced[0] not in spy.taken[0]
    assert len(spy.taken[0]) == len(names) - 1
    lowered = {gv.name_hint: f for gv, f in ex.lib.ir_module.items()}
    assert lowered[replaced[0]].attrs.get("test.replaced")  # the replacement was compiled, not the original
    with monkeypatch.context() as m:
        _no_early(m)
        plain = _build()
    args = _inputs()
    for a, b in zip(_run(ex, args), _run(plain, args)):
        np.testing.assert_array_equal(a, b)


def test_a_build_that_fails_after_early_pieces_releases_llvm_and_stderr(monkeypatch, two_threads):
    started = []
    call = tir_build.EarlyKernels.__call__

    def counted(early, gv, func, mod):
        call(early, gv, func, mod)
        started.append(gv.name_hint)

    monkeypatch.setattr(tir_build.EarlyKernels, "__call__", counted)

    def fail(mod, ctx):
        raise RuntimeError("a pass failed")

    before = os.fstat(2)
    with pytest.raises(RuntimeError, match="a pass failed"):
        _build(Sequential([relax.get_pipeline("default"), module_pass(fail, opt_level=0, name="Fail")]))
    assert started, "no kernel was compiled early"
    after = os.fstat(2)
    assert (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino), "stderr still captured"
    got = []
    other = threading.Thread(target=lambda: got.append(LLVM_LOCK.acquire(timeout=10) and LLVM_LOCK.release() is None))
    other.start()
    other.join()
    assert got == [True], "LLVM_LOCK still held"


def test_a_cached_compile_compiles_nothing_early(monkeypatch, two_threads):
    spy = _Spy(monkeypatch)
    mod = minitvm.IRModule({"main": layers})
    clear_kernel_cache()
    first = relax.build(mod, "llvm")
    again = relax.build(mod, "llvm")  # remembered schedules: no kernel is scheduled afresh
    assert again.lib is first.lib
    assert len(spy.taken) == 1


def test_pass_instruments_see_no_lowering_inside_default_cpu_schedule(monkeypatch, two_threads):
    from minitvm.transform.instrument import PassInstrument

    seen: list[tuple[str, ...]] = []
    stack: list[str] = []

    class Watch(PassInstrument):
        def run_before_pass(self, mod, info):
            stack.append(info.name)
            seen.append(tuple(stack))

        def run_after_pass(self, mod, info):
            stack.pop()

    spy = _Spy(monkeypatch)
    clear_kernel_cache()
    with minitvm.transform.PassContext(instruments=[Watch()]):
        relax.build(minitvm.IRModule({"main": layers}), "llvm")
    assert not spy.taken
    assert not [s for s in seen if "DefaultCPUSchedule" in s[:-1]]


def test_no_early_pieces_when_turned_off(monkeypatch, two_threads):
    monkeypatch.setattr(tir_build, "EARLY_PIECES_AT_ONCE", 0)
    spy = _Spy(monkeypatch)
    ex = _build()
    assert not spy.taken
    assert len(ex.lib.function_names()) >= llvm_parallel.MIN_KERNELS


def _with_constant_weight(w):
    """A 128 x 128 x 128 dense layer on a constant weight (the default pipeline packs it at compile
    time: SplitLayoutRewritePreproc turns the scheduled kernel into ``<name>_prepacked``), and
    three kernels after it."""
    x = relax.Var("x", relax.TensorStructInfo((128, 128), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            p = bb.emit(relax.op.nn.softmax(relax.op.matmul(x, relax.const(w)), axis=-1))
            out = bb.emit_output(relax.Tuple([bb.emit(relax.op.sum(p, axis=[0])), bb.emit(relax.op.max(p, axis=[1])),
                                              bb.emit(relax.op.permute_dims(p))]))
        bb.emit_func_output(out)
    return bb.get()


def test_a_kernel_split_after_scheduling_is_compiled_early_as_split(monkeypatch, two_threads):
    spy = _Spy(monkeypatch)
    w = RNG.uniform(-1, 1, (128, 128)).astype("float32")
    clear_kernel_cache()
    early = relax.build(_with_constant_weight(w), "llvm")
    names = early.lib.function_names()
    assert any(n.endswith("_prepacked") for n in names), names
    assert len(spy.taken) == 1 and sorted(spy.taken[0]) == sorted(names)
    with monkeypatch.context() as m:
        _no_early(m)
        clear_kernel_cache()
        plain = relax.build(_with_constant_weight(w), "llvm")
    _same_lowered(early, plain)
    x = RNG.uniform(-1, 1, (128, 128)).astype("float32")
    for a, b in zip(_run(early, [x]), _run(plain, [x])):
        np.testing.assert_array_equal(a, b)
