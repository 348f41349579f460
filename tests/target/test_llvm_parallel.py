"""A build of many kernels compiled in pieces (``minitvm.target.codegen.llvm_parallel``): LLVM
optimizes and JIT-compiles one piece on a worker thread while the next is lowered and emitted.
The pieces must give the very machine code of one module (bit-identical results, native entry
and bytecode alike), one LLVM text for the library, and a saved executable that loads."""

from __future__ import annotations

import ctypes
import locale
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _layers import layer_inputs, layers  # tests/target/_layers.py
from llvmlite.binding import ffi

import minitvm
from minitvm import relax
from minitvm.driver import clear_kernel_cache
from minitvm.target import Target
from minitvm.target.codegen import llvm_parallel
from minitvm.target.codegen.llvm_jit import linked_text

RNG = np.random.default_rng(38)


def _inputs():
    return layer_inputs(RNG)


def _expected(x, w, v):
    h = np.maximum(x @ w, 0)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    g = (e / e.sum(axis=-1, keepdims=True)) @ v
    return [g.sum(axis=0), g.max(axis=1), g.T]


def _compile(monkeypatch, threads: int, exec_mode: str = "compiled"):
    monkeypatch.setattr(llvm_parallel, "LLVM_THREADS", threads)
    clear_kernel_cache()  # else the second build would get the first one's library
    return relax.build(minitvm.IRModule({"main": layers}), "llvm", exec_mode=exec_mode)


def _run(ex, args):
    out = relax.VirtualMachine(ex, minitvm.cpu())["main"](*args)
    return [o.numpy() for o in out]


@pytest.mark.parametrize("exec_mode", ["compiled", "bytecode"])
def test_pieces_give_the_results_of_one_module(monkeypatch, exec_mode):
    args = _inputs()
    one = _compile(monkeypatch, 0, exec_mode)
    pieces = _compile(monkeypatch, 2, exec_mode)
    assert len(one.lib._texts["optimized"]) == 1
    assert len(pieces.lib._texts["optimized"]) > 2, "the build was not split"
    assert len(one.lib.function_names()) >= llvm_parallel.MIN_KERNELS
    assert sorted(pieces.lib.function_names()) == sorted(one.lib.function_names())
    assert sorted(pieces.lib.native_entries) == sorted(one.lib.native_entries)
    assert bool(pieces.lib.native_entries) == (exec_mode == "compiled")
    got, want = _run(pieces, args), _run(one, args)
    for a, b, c in zip(got, want, _expected(*args)):
        np.testing.assert_array_equal(a, b)  # the same machine code per kernel
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)


def test_the_library_text_is_one_module_and_saves(monkeypatch, tmp_path):
    ex = _compile(monkeypatch, 2)
    ll = ex.lib.get_source("ll")
    for name in [*ex.lib.function_names(), *ex.lib.native_entries]:  # each defined once, none declared
        assert len(re.findall(rf"^define [^@\n]*@{name}\(", ll, re.M)) == 1, name
        assert not re.findall(rf"^declare [^@\n]*@{name}\(", ll, re.M), name
    asm = ex.lib.get_source("asm")
    assert all(f"{name}:" in asm for name in ex.lib.function_names())
    ex.save(str(tmp_path / "model.exe"))
    loaded = minitvm.runtime.load_module(str(tmp_path / "model.exe"))
    assert sorted(loaded.lib.native_entries) == sorted(ex.lib.native_entries)
    args = _inputs()
    for a, b in zip(_run(loaded, args), _run(ex, args)):
        np.testing.assert_array_equal(a, b)


def test_a_build_with_bounds_checks_stays_one_module(monkeypatch):
    monkeypatch.setattr(llvm_parallel, "LLVM_THREADS", 2)
    clear_kernel_cache()
    with minitvm.transform.PassContext(config={"tir.bounds_check": True}):
        checked = relax.build(minitvm.IRModule({"main": layers}), "llvm")
    assert len(checked.lib._texts["optimized"]) == 1
    args = _inputs()
    for a, c in zip(_run(checked, args), _expected(*args)):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)


def test_split_pieces_keeps_order_and_balance():
    assert llvm_parallel.split_pieces(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert llvm_parallel.split_pieces([1, 2], 5) == [[1], [2]]


def test_split_for_overlap_hands_over_the_first_kernel_alone():
    assert llvm_parallel.split_for_overlap(list(range(8)), 3) == [[0], [1, 2, 3, 4], [5, 6, 7]]
    assert llvm_parallel.split_for_overlap(list(range(3)), 3) == [[0], [1], [2]]
    assert llvm_parallel.split_for_overlap(list(range(5)), 1) == [list(range(5))]


def test_the_environment_sets_the_worker_threads(monkeypatch):
    monkeypatch.setattr(llvm_parallel, "LLVM_THREADS", None)
    monkeypatch.setenv("MINITVM_LLVM_THREADS", "0")
    assert llvm_parallel.llvm_threads() == 0
    monkeypatch.setenv("MINITVM_LLVM_THREADS", "3")
    assert llvm_parallel.llvm_threads() == 3
    monkeypatch.setenv("MINITVM_LLVM_THREADS", "two")
    with pytest.raises(ValueError, match="MINITVM_LLVM_THREADS='two'"):
        llvm_parallel.llvm_threads()


def _stores(first: int, count: int) -> str:
    """LLVM IR of ``count`` functions, ``f<i>`` storing float ``i`` through its argument."""
    return "".join(f"define void @f{i}(ptr %p) {{\n  store float {i}.0, ptr %p\n  ret void\n}}\n"
                   for i in range(first, first + count))


def test_compiling_pieces_leaves_the_process_locale_alone(monkeypatch):
    """Worker threads compiling pieces never change the process-wide locale, not even for a
    moment.  llvmlite's module printer (LLVMPY_PrintModuleToString) sets the C locale around
    each call and restores the one it saw: two workers printing at once left the process in "C"
    for good (Python then read every text file as ASCII), so no worker may call it."""
    printer = ffi.lib.LLVMPY_PrintModuleToString
    callers = []

    def spy(*args):
        callers.append(threading.current_thread().name)
        return printer(*args)

    monkeypatch.setitem(ffi.lib._fntab, "LLVMPY_PrintModuleToString", spy)  # what ffi.lib.<name> finds
    before = (locale.setlocale(locale.LC_ALL), locale.getpreferredencoding(False))
    seen = set()
    with ThreadPoolExecutor(4, "piece-worker") as pool:
        futures = [pool.submit(llvm_parallel._compile_piece, _stores(50 * k, 50), Target("llvm"), True, {})
                   for k in range(8)]
        while not all(f.done() for f in futures):
            seen.add(locale.setlocale(locale.LC_ALL))
        pieces = [f.result() for f in futures]
    assert not [c for c in callers if c.startswith("piece-worker")], "a worker printed a module"
    assert seen <= {before[0]}, f"the process's locale changed while pieces compiled: {seen}"
    assert (locale.setlocale(locale.LC_ALL), locale.getpreferredencoding(False)) == before
    # the pieces are real: a function's machine code runs, and their text (printed here) links
    out = ctypes.c_float(-1.0)
    ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_float))(pieces[3].engine.get_function_address("f155"))(out)
    assert out.value == 155.0
    assert linked_text([p.optimized for p in pieces[:2]]).count("define void @f") == 100


def _function_asm(asm: str, name: str) -> str:
    """The assembly of one function, from its label to its end marker."""
    return re.search(rf"^{re.escape(name)}:\n(.*?)^\.Lfunc_end", asm, re.M | re.S).group(1)


def test_the_native_entries_skip_o3_and_the_kernels_keep_it(monkeypatch):
    seen = []
    optimize = llvm_parallel.optimize

    def spy(mod, tm, level, *args, **kwargs):  # (on a worker: reads nothing of the module)
        seen.append(level)
        return optimize(mod, tm, level, *args, **kwargs)

    monkeypatch.setattr(llvm_parallel, "optimize", spy)
    one = _compile(monkeypatch, 0)
    pieces = _compile(monkeypatch, 2)
    assert pieces.lib.native_entries
    # every kernel piece went through the target's pipeline; the entries' piece (a straight run
    # of calls, nothing for O3 to do), the last of the library's modules, through none
    kernel_pieces = len(pieces.lib._texts["optimized"]) - 1
    assert seen == [Target("llvm").opt_level] * kernel_pieces
    # the library writes its kernels' assembly with the kernels' target machine, not the entries'
    asm_one, asm_pieces = one.lib.get_source("asm"), pieces.lib.get_source("asm")
    for name in pieces.lib.function_names():
        assert _function_asm(asm_pieces, name) == _function_asm(asm_one, name), name
    args = _inputs()
    for a, b in zip(_run(pieces, args), _run(one, args)):
        np.testing.assert_array_equal(a, b)


def test_object_code_and_assembly_before_the_text(monkeypatch, tmp_path):
    """A library of pieces links its text when first asked; writing its object code or assembly
    first must not wait for the lock it holds (it once did, for ever)."""
    ex = _compile(monkeypatch, 2)
    ex.lib.save(str(tmp_path / "kernels.o"))
    assert (tmp_path / "kernels.o").stat().st_size > 0
    ex = _compile(monkeypatch, 2)
    assert all(f"{name}:" in ex.lib.get_source("asm") for name in ex.lib.function_names())
