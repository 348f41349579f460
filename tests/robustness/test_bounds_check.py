"""Bounds-checked mode: ``PassContext(config={"tir.bounds_check": True})`` turns a bad index in
native code into a ``BoundsError``; accesses proven in range at compile time carry no check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.runtime import BoundsError
from minitvm.script import tir as T
from minitvm.target.codegen.llvm import ERROR_INDEX_SYMBOL
from minitvm.testing.programs import mm_relu, split_with_where
from minitvm.tir.stmt import AssertStmt
from minitvm.transform import PassContext

RNG = np.random.default_rng(9)
CHECKED = {"tir.bounds_check": True}


def _build(func, target="llvm"):
    with PassContext(config=CHECKED):
        return minitvm.build(func, target=target)


def _asserts(lib) -> list[str]:
    """The messages of the bounds checks in what ``lib`` compiled."""
    found: list[str] = []
    for _, f in lib.ir_module.items():
        tir.post_order_visit(f.body, lambda n: found.append(n.message) if isinstance(n, AssertStmt) else None)
    return found


def _line(code: str) -> int:
    """The line of this file where ``code`` (a kernel's statement) is written: the errors name it."""
    return next(k for k, text in enumerate(Path(__file__).read_text().splitlines(), 1) if code in text)


def _rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


@T.prim_func
def shift(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), k: T.int32):
    # shifted by an argument: nothing to prove at build time (B[vi + 1] would be refused then,
    # see tests/tir/test_oob_checker.py), so the run-time checks are what catches k = 1
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi + k] = A[vi]


def test_off_by_one_raises_bounds_error_naming_function_buffer_index_and_extent():
    lib = _build(shift)
    a, b = _rand(8), _rand(8)
    a_before = a.copy()
    with pytest.raises(BoundsError) as err:
        lib["shift"](a, b, 1)
    assert str(err.value) == ("shift: buffer B: index 8 is out of bounds for extent 8 (at B[i + k]) "
                              f"on TVMScript line {_line('B[vi + k] = A[vi]')}")
    assert isinstance(err.value, IndexError)
    np.testing.assert_array_equal(a, a_before)  # the input is untouched
    # the seven good iterations ran before the bad one was stopped
    np.testing.assert_array_equal(b[1:], a_before[:7])


def test_without_the_config_no_check_is_generated():
    lib = minitvm.build(shift)  # never run: it would write past the end of B
    assert _asserts(lib) == []
    raw = lib.get_source("ll-raw")
    assert "assert_fail" not in raw and ERROR_INDEX_SYMBOL not in raw
    checked = _build(shift).get_source("ll-raw")
    assert "assert_fail" in checked and ERROR_INDEX_SYMBOL in checked  # the same test sees a real check


def _scheduled_matmul():
    sch = tir.Schedule(mm_relu)
    block = sch.get_block("Y")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 16])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.vectorize(ji)
    return sch.mod["main"]


@pytest.mark.parametrize("func", [mm_relu, _scheduled_matmul()], ids=["plain", "split-parallel-vectorized"])
def test_matmul_indices_are_proven_so_no_runtime_check(func):
    lib = _build(func)
    assert _asserts(lib) == []
    assert "assert_fail" not in lib.get_source("ll-raw")
    a, b, c = _rand(128, 128), _rand(128, 128), np.zeros((128, 128), "float32")
    lib(a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    if func is not mm_relu:  # with no check in the way, the schedule's vector loop stays vectorized
        assert "x float>" in lib.get_source("ll")


def test_guarded_accesses_are_proven_from_the_condition():
    # split by a factor that does not divide the extent: `if io * 4 + ii < 10: B[io * 4 + ii] = ...`
    lib = _build(split_with_where)
    assert _asserts(lib) == []
    a, b = _rand(10), np.zeros(10, "float32")
    lib["split_with_where"](a, b)
    np.testing.assert_allclose(b, a * 2)


@T.prim_func
def pad_left(A: T.Buffer((8,), "float32"), B: T.Buffer((9,), "float32")):
    for i in range(9):
        with T.block("B"):
            vi = T.axis.spatial(9, i)
            B[vi] = T.if_then_else(vi >= 1, A[vi - 1], T.float32(0))


def test_if_then_else_arm_is_checked_only_where_it_runs():
    lib = _build(pad_left)
    assert _asserts(lib) == []  # A[i - 1] runs only when i >= 1
    a, b = _rand(8), _rand(9)
    lib["pad_left"](a, b)
    np.testing.assert_allclose(b, np.concatenate([[0], a]))


@T.prim_func
def gather(A: T.Buffer((16,), "float32"), idx: T.Buffer((8,), "int32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[idx[vi]]


def test_data_dependent_index_is_checked_at_run_time():
    lib = _build(gather)
    assert len(_asserts(lib)) == 1  # idx[i] is proven, A[idx[i]] cannot be
    a, idx, b = _rand(16), RNG.integers(0, 16, 8).astype("int32"), np.zeros(8, "float32")
    lib["gather"](a, idx, b)
    np.testing.assert_array_equal(b, a[idx])
    for bad in (16, -3, 1 << 30):
        idx[5] = bad
        with pytest.raises(BoundsError, match=rf"^gather: buffer A: index {bad} is out of bounds for extent 16 "
                                              rf"\(at A\[idx\[i\]\]\) on TVMScript line {_line('A[idx[vi]]')}$"):
            lib["gather"](a, idx, b)


@T.prim_func
def shift_parallel(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), k: T.int32):
    for i in T.parallel(1024):
        with T.block("B"):
            vi = T.axis.spatial(1024, i)
            B[vi] = A[vi + k]


@T.prim_func
def shift_vectorized(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32"), k: T.int32):
    for i in range(4):
        for j in T.vectorized(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj + k]  # k = 1 reads row vi + 1's first element, and past the end in the last row


def test_parallel_loop_with_a_bad_index_raises_cleanly():
    lib = _build(shift_parallel)
    assert "__minitvm_parallel_run" in lib.get_source("ll-raw")  # the loop really runs on the thread pool
    a, b = _rand(1024), np.zeros(1024, "float32")
    for _ in range(20):  # every worker thread runs; one of them fails, the call reports it
        with pytest.raises(BoundsError, match=r"^shift_parallel: buffer A: index 1024 is out of bounds "
                                              r"for extent 1024 \(at A\[i \+ k\]\) on TVMScript line "
                                              rf"{_line('B[vi] = A[vi + k]')}$"):
            lib["shift_parallel"](a, b, 1)
    # the other workers finished their chunks
    np.testing.assert_array_equal(b[:512], a[1:513])


def test_vectorized_loop_with_a_bad_index_raises_cleanly():
    lib = _build(shift_vectorized)  # the check inside the loop makes it a scalar loop (an early exit)
    a, b = _rand(4, 16), np.zeros((4, 16), "float32")
    with pytest.raises(BoundsError, match=r"^shift_vectorized: buffer A: index 64 is out of bounds for extent 64 "
                                          r"\(at A\[i \* 16 \+ j \+ k\]\) on TVMScript line "
                                          rf"{_line('A[vi, vj + k]')}$"):
        lib["shift_vectorized"](a, b, 1)
    np.testing.assert_array_equal(b[:3], a.reshape(-1)[1:49].reshape(3, 16))


@T.prim_func
def scale_n(a: T.handle, b: T.handle, shift: T.int32):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi + shift] * T.float32(2)


def test_symbolic_extent():
    lib = _build(scale_n)
    assert len(_asserts(lib)) == 1  # B[i] is proven from i < n; A[i + shift] is not
    a, b = _rand(37), np.zeros(37, "float32")
    lib["scale_n"](a, b, 0)
    np.testing.assert_allclose(b, a * 2)
    with pytest.raises(BoundsError, match="^scale_n: buffer A: index 37 is out of bounds for extent n "):
        lib["scale_n"](a, b, 1)


def test_each_library_has_its_own_error_slot():
    first, second = _build(shift), _build(gather)
    assert first["shift"]._fn._error_index != second["gather"]._fn._error_index != 0
    idx = np.full(8, 99, "int32")
    with pytest.raises(BoundsError, match="index 99 "):
        second["gather"](_rand(16), idx, np.zeros(8, "float32"))
    with pytest.raises(BoundsError, match="index 8 "):
        first["shift"](_rand(8), np.zeros(8, "float32"), 1)


def test_relax_model_checked_kernels_survive_save_and_load(tmp_path):
    from minitvm import relax

    a = relax.Var("a", relax.TensorStructInfo((16,), "float32"))
    idx = relax.Var("idx", relax.TensorStructInfo((8,), "int32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [a, idx]):
        gv = bb.add_func(gather, "gather")
        bb.emit_func_output(bb.emit(relax.call_tir(gv, (a, idx), out_sinfo=relax.TensorStructInfo((8,), "float32"))))
    with PassContext(config=CHECKED):
        exe = minitvm.compile(bb.get(), target="llvm")
    exe.save(str(tmp_path / "gather.exe"))
    vm = relax.VirtualMachine(minitvm.runtime.load_executable(str(tmp_path / "gather.exe")), minitvm.cpu())
    av, iv = _rand(16), RNG.integers(0, 16, 8).astype("int32")
    np.testing.assert_array_equal(vm["main"](minitvm.nd.array(av), minitvm.nd.array(iv)).numpy(), av[iv])
    iv[3] = 40
    with pytest.raises(BoundsError, match=r"^gather: buffer A: index 40 is out of bounds for extent 16"):
        vm["main"](minitvm.nd.array(av), minitvm.nd.array(iv))


def test_python_target_checks_every_access_itself():
    lib = _build(shift, target="python")
    assert "assert" not in lib.get_source()  # the pass is for native code only
    with pytest.raises(IndexError, match="buffer B: index 8 is out of bounds for extent 8"):
        lib["shift"](_rand(8), np.zeros(8, "float32"), 1)


def test_the_pass_runs_once():
    from minitvm.tir.transform import InstrumentBoundCheckers

    mod = InstrumentBoundCheckers()(minitvm.lower(shift))
    again = InstrumentBoundCheckers()(mod)
    assert again["shift"] is mod["shift"]
    assert mod["shift"].attrs["tir.bounds_checked"]


def test_tvm_spelling_of_the_config_key():
    with PassContext(config={"tir.instrument_bound_checkers": True}):
        lib = minitvm.build(shift)
    with pytest.raises(BoundsError, match="index 8 is out of bounds"):
        lib["shift"](_rand(8), np.zeros(8, "float32"), 1)


def test_config_key_is_validated():
    with pytest.raises(TypeError, match="config 'tir.bounds_check' expects bool, got int"):
        PassContext(config={"tir.bounds_check": 1})
    with pytest.raises(ValueError, match="unknown config key 'tir.bound_check'; known keys: .*tir.bounds_check"):
        PassContext(config={"tir.bound_check": True})


@T.prim_func(private=True)
def reload(A: T.Buffer((8,), "float32"), idx: T.Buffer((1,), "int32")):
    if 0 <= idx[0] and idx[0] < 8:
        idx[0] = idx[0] + 100
        A[idx[0]] = T.float32(1)  # the test above said nothing about the value stored since


def test_conditions_that_read_memory_prove_nothing():
    lib = _build(reload)
    assert len(_asserts(lib)) == 1
    a, idx = np.zeros(8, "float32"), np.array([3], "int32")
    with pytest.raises(BoundsError, match=r"^main: buffer A: index 103 is out of bounds for extent 8 "
                                          rf"\(at A\[idx\[0\]\]\) on TVMScript line {_line('A[idx[0]] = ')}$"):
        lib["main"](a, idx)
    np.testing.assert_array_equal(a, np.zeros(8, "float32"))


def test_checks_show_in_the_lowered_module():
    text = _build(shift).ir_module.script()
    assert ('assert 0 <= i + k and i + k < 8, "buffer B: index out of bounds for '
            f'extent 8 (at B[i + k]) on TVMScript line {_line("B[vi + k] = A[vi]")}"\n'
            '            B[i + k] = A[i]') in text


def test_the_failed_check_reaches_the_error_as_a_record():
    from minitvm.runtime import BoundsCheck
    from minitvm.tir.transform.instrument_bound_checkers import CHECKS_ATTR, bounds_checks

    lib = _build(shift)
    func = lib.ir_module["shift"]
    record = BoundsCheck(buffer="B", index="i + k", extent="8", line=_line("B[vi + k] = A[vi]"))
    assert func.attrs[CHECKS_ATTR] == [record.to_json()]  # the pass records the check as data
    assert bounds_checks(func) == {_asserts(lib)[0]: record}  # ... tied to the assert it made
    with pytest.raises(BoundsError) as err:
        lib["shift"](_rand(8), _rand(8), 1)
    assert err.value.check == record
    assert err.value.index == 8
    assert (err.value.check.buffer, err.value.check.index, err.value.check.extent) == ("B", "i + k", "8")


def test_in_a_notebook_build_checks_by_default_and_the_config_still_decides(monkeypatch):
    """Where a learner is (an IPython kernel), minitvm.build checks what it cannot prove; an
    explicit config wins either way; relax.build's kernels are checked only when asked."""
    from minitvm.target import tir_build as build_module

    monkeypatch.setattr(build_module, "in_notebook", lambda: True)
    assert _asserts(minitvm.build(gather)) != []  # idx[i] cannot be proven in range
    with PassContext(config={"tir.bounds_check": False}):
        assert _asserts(minitvm.build(gather)) == []
    assert _asserts(build_module.build_kernels(gather)) == []  # what relax.build uses for models
    monkeypatch.setattr(build_module, "in_notebook", lambda: False)
    assert _asserts(minitvm.build(gather)) == []


def test_the_notebook_test_is_false_outside_a_kernel():
    from minitvm.driver import in_notebook

    assert in_notebook() is False  # pytest is no IPython kernel


def test_the_same_kernel_written_at_another_line_names_its_own_line():
    # structurally one kernel (the compiled-kernel cache would hand back the first library),
    # but each check names where its own source wrote the access
    from minitvm.script import from_source

    text = shift.script()
    line = next(k for k, t in enumerate(text.splitlines(), 1) if "B[vi + k] = A[vi]" in t)
    for blank_lines in (0, 5):
        lib = _build(from_source("\n" * blank_lines + text))
        with pytest.raises(BoundsError, match=rf"\(at B\[i \+ k\]\) on TVMScript line {line + blank_lines}$"):
            lib["shift"](_rand(8), np.zeros(8, "float32"), 1)
