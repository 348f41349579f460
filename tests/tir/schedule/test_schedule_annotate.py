"""sch.annotate / sch.unannotate: values of every kind print as T.block_attr / loop annotations."""

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T


@T.prim_func
def matmul_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                D: T.Buffer((16, 16), "float32")):
    C = T.alloc_buffer((16, 16))
    for i, j, k in T.grid(16, 16, 16):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 16):
        with T.block("relu"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], 0.0)


@T.prim_func
def loops_annotated(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                    D: T.Buffer((16, 16), "float32")):
    C = T.alloc_buffer((16, 16))
    for i in T.serial(16, annotations={"s": "aaa", "d": {"arr": [0, 0], "key": 3}}):
        for j in T.serial(16, annotations={"n": 612, "l": ["aa", 1]}):
            for k in range(16):
                with T.block("matmul"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 16):
        with T.block("relu"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], 0.0)


@T.prim_func
def blocks_annotated(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                     D: T.Buffer((16, 16), "float32")):
    C = T.alloc_buffer((16, 16))
    for i, j, k in T.grid(16, 16, 16):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            T.block_attr({"s": "aaa", "d": {"arr": [0, 0], "key": 3}})
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 16):
        with T.block("relu"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.block_attr({"f": 0.22, "l": ["aa", 1]})
            D[vi, vj] = T.max(C[vi, vj], 0.0)


def _same(func, expected):
    assert_structural_equal(func, expected.with_attr("global_symbol", "matmul_relu"))
    assert_structural_equal(from_source(func.script()), func)  # every value prints and parses back


def test_annotate_loops_with_str_int_list_dict(trace_replays):
    sch = tir.Schedule(matmul_relu)
    block = sch.get_block("matmul")
    sch.annotate(sch.get_loops(block)[0], "s", "aaa")
    sch.annotate(sch.get_loops(block)[1], "n", 612)
    sch.annotate(sch.get_loops(block)[1], "l", ["aa", 1])
    sch.annotate(sch.get_loops(block)[0], "d", {"arr": [0, 0], "key": 3})
    _same(sch.mod["main"], loops_annotated)
    trace_replays(sch, matmul_relu)
    for loop, key in [(0, "s"), (1, "n"), (1, "l"), (0, "d")]:
        sch.unannotate(sch.get_loops(block)[loop], key)
    _same(sch.mod["main"], matmul_relu)
    trace_replays(sch, matmul_relu)


def test_annotate_blocks_with_float_and_by_name(trace_replays):
    sch = tir.Schedule(matmul_relu)
    sch.annotate("matmul", "s", "aaa")
    sch.annotate(sch.get_block("relu"), "f", 0.22)
    sch.annotate("relu", "l", ["aa", 1])
    sch.annotate("matmul", "d", {"arr": [0, 0], "key": 3})
    _same(sch.mod["main"], blocks_annotated)
    trace_replays(sch, matmul_relu)
    for block, key in [("matmul", "s"), ("relu", "f"), ("relu", "l"), ("matmul", "d")]:
        sch.unannotate(block, key)
    _same(sch.mod["main"], matmul_relu)
    trace_replays(sch, matmul_relu)


def test_annotate_keeps_an_existing_key_as_tvm_does():
    sch = tir.Schedule(matmul_relu)
    sch.annotate("relu", "k", 1)
    sch.annotate("relu", "k", 2)
    assert sch.get(sch.get_block("relu")).annotations == {"k": 1}


def test_unannotate_refuses_a_missing_key():
    sch = tir.Schedule(matmul_relu)
    with pytest.raises(tir.ScheduleError, match="block relu: it has no annotation 'nope'"):
        sch.unannotate("relu", "nope")
    loop = sch.get_loops(sch.get_block("relu"))[0]
    with pytest.raises(tir.ScheduleError, match="loop i: it has no annotation 'nope'"):
        sch.unannotate(loop, "nope")
