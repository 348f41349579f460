"""Chapter 8 exercises: from TIR to machine code (solved).

Each function returns what its docstring asks for: a lowered program written by hand, a TIR
pass, a schedule whose machine code holds a given instruction, or facts read from the lowered
IR and the LLVM IR of a build. Try them here or in a notebook::

    from exercises import ch08
    ch08.lowered_col_sum().show()

The graders (``tests/grade/test_ch08.py``) compare programs with ``assert_structural_equal``,
run the builds on random data against numpy, read the assembly the builds produce, and
(8.6) time your schedule against the unscheduled loop nest. Run them with
``minitvm grade ch08`` or ``minitvm.grade.check("ch08")``.
"""

from __future__ import annotations

import re

from minitvm.s_tir.tensor_intrin import x86

import minitvm
from minitvm import s_tir, tirx
from minitvm.ir import IRModule
from minitvm.script import ir as I
from minitvm.script import tirx as T
from minitvm.transform import PassContext

# ---------------------------------------------------------------- starting programs


@I.ir_module
class ColSum:
    @T.prim_func
    def main(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48,), "float32")):
        T.func_attr({"global_symbol": "col_sum", "tirx.noalias": True})
        for j, i in T.grid(48, 32):
            with T.sblock("B"):
                vj, vi = T.axis.remap("SR", [j, i])
                with T.init():
                    B[vj] = T.float32(0)
                B[vj] = B[vj] + A[vi, vj]


@I.ir_module
class MulAdd:
    @T.prim_func
    def main(X: T.Buffer((4096,), "float32"), W: T.Buffer((4096,), "float32"), Y: T.Buffer((4096,), "float32"),
             Z: T.Buffer((4096,), "float32")):
        T.func_attr({"global_symbol": "mul_add", "tirx.noalias": True})
        for i in range(4096):
            with T.sblock("Z"):
                vi = T.axis.spatial(4096, i)
                Z[vi] = X[vi] * W[vi] + Y[vi]


@I.ir_module
class Gather:
    @T.prim_func
    def main(A: T.Buffer((1024,), "float32"), idx: T.Buffer((256,), "int32"), B: T.Buffer((256,), "float32")):
        T.func_attr({"global_symbol": "gather", "tirx.noalias": True})
        for i in range(256):
            with T.sblock("B"):
                vi = T.axis.spatial(256, i)
                B[vi] = A[idx[vi]]


@I.ir_module
class MatMul:
    @T.prim_func
    def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
             C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i, j, k in T.grid(128, 128, 128):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


# ---------------------------------------------------------------- exercises


def lowered_col_sum() -> tirx.PrimFunc:
    """Exercise 8.1: predict the lowered loop nest of ``ColSum``.

    Write, in TVMScript, the PrimFunc that ``minitvm.lower(ColSum)["main"]`` is: the init
    turned into an ``if``, the block gone, ``A`` flattened to one dimension (a
    ``T.Buffer((n,), "float32", data=A.data)`` declared in the body), and the attributes the
    lowering adds (``"tir.lowered": True``). Work it out before you print the real one.
    """
    # BEGIN SOLUTION
    @T.prim_func
    def col_sum(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48,), "float32")):
        T.func_attr({"global_symbol": "col_sum", "tirx.noalias": True, "tir.lowered": True})
        A_1 = T.Buffer((1536,), "float32", data=A.data)
        for j, i in T.grid(48, 32):
            if i == 0:
                B[j] = T.float32(0.0)
            B[j] = B[j] + A_1[i * 48 + j]

    return col_sum
    # END SOLUTION


def unroll_small_loops(max_extent: int) -> minitvm.transform.Pass:
    """Exercise 8.2: a TIR pass that unrolls small loops.

    Return a pass (``tirx.transform.prim_func_pass``) that turns every *serial* ``For`` loop
    whose extent is a constant ``<= max_extent`` into an unrolled one (``kind`` =
    ``tirx.ForKind.UNROLLED``, as ``T.unroll`` writes it). Other loops -- parallel, vectorized,
    larger, or of a symbolic extent -- stay as they are. A ``tirx.StmtExprMutator`` with a
    ``visit_for_`` hook and ``minitvm.ir.replace(loop, kind=..., body=...)`` do the work.
    """
    # BEGIN SOLUTION
    from minitvm.ir import replace

    class Unroller(tirx.StmtExprMutator):
        def visit_for_(self, loop: tirx.For) -> tirx.For:
            body = self.visit(loop.body)
            small = isinstance(loop.extent, tirx.IntImm) and loop.extent.value <= max_extent
            kind = tirx.ForKind.UNROLLED if loop.kind == tirx.ForKind.SERIAL and small else loop.kind
            if body is loop.body and kind == loop.kind:
                return loop
            return replace(loop, kind=kind, body=body)

    @tirx.transform.prim_func_pass(opt_level=0, name="UnrollSmallLoops")
    def unroll(func, mod, ctx):
        return func.with_body(Unroller().visit(func.body))

    return unroll
    # END SOLUTION


def fma_on_zmm(mod: IRModule) -> s_tir.Schedule:
    """Exercise 8.3: make the vectorizer produce ``vfmadd...ps`` on ``zmm`` registers.

    Schedule ``MulAdd`` (``Z = X * W + Y``) so that its assembly for an AVX-512 CPU
    (``minitvm.tirx.build(sch.mod, target="llvm -mcpu=skylake-avx512 -mattr=+avx512f").get_source("asm")``,
    readable on any machine) multiplies-and-adds 16 floats at a time: a ``vfmadd...ps``
    instruction on ``%zmm`` registers, from a loop you vectorized. (An 8-lane loop gives
    ``%ymm``: AVX-512's registers hold 16 float32.) The grader runs it on this CPU for the numbers.
    """
    # BEGIN SOLUTION
    sch = s_tir.Schedule(mod)
    (i,) = sch.get_loops(sch.get_sblock("Z"))
    _, inner = sch.split(i, factors=[None, 16])
    sch.vectorize(inner)
    return sch
    # END SOLUTION


def checked_accesses(mod: IRModule) -> list[str]:
    """Exercise 8.4: find the bounds checks in the IR.

    Build ``mod`` with run-time bounds checks (``PassContext(config={"tir.bounds_check":
    True})``), then walk the lowered module the build compiled (``lib.ir_module``) and return
    the names of the buffers whose accesses got a check (an ``AssertStmt`` before them; each
    check's message names its buffer: ``"buffer A: index out of bounds ..."``), sorted, each
    once. Accesses the compiler proved in bounds get no check.
    """
    # BEGIN SOLUTION
    with PassContext(config={"tir.bounds_check": True}):
        lib = minitvm.tirx.build(mod)
    names: set[str] = set()

    def visit(node):
        if isinstance(node, tirx.AssertStmt):
            m = re.match(r"buffer (\w+):", node.message)
            if m:
                names.add(m.group(1))

    for _, func in lib.ir_module.items():
        tirx.post_order_visit(func.body, visit)
    return sorted(names)
    # END SOLUTION


def parallel_regions(lib: minitvm.runtime.Module) -> list[str]:
    """Exercise 8.5: find the parallel regions in the LLVM IR.

    ``lib`` is a built module. Each ``parallel`` loop becomes a function of its own that the
    generated code hands to minitvm's thread pool: ``call void @"__minitvm_parallel_run"(ptr @"<name>", ...)``
    in ``lib.get_source("ll-raw")`` (the IR as minitvm generated it, before LLVM's
    optimizations). Return the names of those functions, in the order of the calls.
    """
    # BEGIN SOLUTION
    return re.findall(r'call void @"?__minitvm_parallel_run"?\([^@]*@"?([\w.]+)"?', lib.get_source("ll-raw"))
    # END SOLUTION


def tensorize_matmul(mod: IRModule) -> s_tir.Schedule:
    """Exercise 8.6 (open): a matmul at least 4x faster, with the FMA micro-kernel doing the work.

    Schedule ``MatMul`` (the grader uses 128 x 128) so that it runs at least 4x faster than
    its unscheduled loop nest, measured on this machine, and so that its inner work is done by
    an AVX-512 FMA micro-kernel: ``tensorize`` a loop of your schedule with
    ``x86.avx512_fma_tile(rows, cols, k)``, sizes of your choice (it returns the intrinsic's
    name; ``s_tir.TensorIntrin.get(name).desc`` is the loop nest ``tensorize`` will look for).
    Any schedule around it. The grader checks the numbers on this CPU and reads the ``vfmadd``
    on ``%zmm`` registers in a build for ``x86.AVX512_TARGET``; on a CPU without AVX-512 the
    same kernel runs with narrower registers.
    """
    # BEGIN SOLUTION
    sch = s_tir.Schedule(mod)
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 32])
    k0, k1 = sch.split(k, factors=[None, 32])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.decompose_reduction(block, k0)
    sch.tensorize(k1, x86.avx512_fma_tile(4, 32, 32))
    return sch
    # END SOLUTION
