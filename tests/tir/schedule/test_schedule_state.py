"""sch.get_sref / sch.state: TVM's statement references, made on demand (state.py)."""

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def two_stages(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8), "float32")
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_srefs_point_at_the_statement_now_and_at_their_parents():
    sch = tir.Schedule(two_stages, debug_mask=tir.schedule.state.ScheduleDebugMask.VERIFY_SREF_TREE)
    block = sch.get_block("C")
    sref = sch.get_sref(block)
    assert sref.stmt is sch.get(block)
    assert sch.state.get_sref(sch.get(block)).same_as(sref)
    i, j = sch.get_loops(block)
    assert sref.parent.stmt is sch.get(j) and sref.parent.parent.stmt is sch.get(i)
    assert sref.parent.parent.parent.stmt.name_hint == "root"
    # after a primitive, a new sref points at the rebuilt statement
    sch.split(j, factors=[2, 4])
    assert sch.get_sref(i).stmt.body.extent == 2
    # a copy shares the statements, not the references
    other = sch.copy()
    assert other.get_sref(i).stmt is sch.get_sref(i).stmt
    assert not other.get_sref(i).same_as(sch.get_sref(i))
    assert sch.state.mod is sch.mod
    assert sch.state.get_sref(two_stages.body.block) is None  # not in the scheduled module


def test_a_state_over_a_function():
    state = tir.ScheduleState(two_stages)
    root = two_stages.body.block
    assert state.mod["main"] is two_stages
    assert state.get_sref(root).stmt is root and state.get_sref(root).parent is None


@T.prim_func
def read_then_overwrite(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("D"):
            vi = T.axis.spatial(8, i)
            C[vi] = C[vi] + B[vi]


def test_block_scope_lists_raw_waw_and_war_dependencies():
    sch = tir.Schedule(read_then_overwrite)
    c, b, d = (sch.get_sref(sch.get_block(n)) for n in "CBD")
    scope = sch.state.get_block_scope(sch.get_sref(sch.get_block("root")))
    kinds = {(x.src.stmt.name_hint, x.dst.stmt.name_hint, x.kind) for x in scope.deps}
    DepKind = tir.schedule.DepKind
    assert kinds == {("C", "B", DepKind.WAR), ("C", "D", DepKind.RAW), ("C", "D", DepKind.WAW),
                     ("B", "D", DepKind.RAW)}
    assert [x.dst.stmt.name_hint for x in scope.get_deps_by_src(b)] == ["D"]
    assert {x.src.stmt.name_hint for x in scope.get_deps_by_dst(d)} == {"B", "C"}
    assert scope.get_deps_by_dst(c) == []
