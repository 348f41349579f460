"""Lowered TIR -> LLVM IR (llvmlite.ir): :class:`CodeGenLLVM`, the scalar emitter.

Input contract (what the TIR lowering pipeline produces): flat loops and 1-D buffer
accesses with one index each; the buffers' ``data`` variables are those of the parameter
buffers (``buffer_map``) or of ``Allocate`` statements.  Functions follow the calling
convention described in ``calling.py``.

Float ``a * b + c`` may become one fused multiply-add (the ``contract`` flag, as TVM's
default): one rounding instead of two.

Loops: ``vectorized`` loops of constant extent are emitted as SIMD code directly
(see ``vector.py``); other ones carry ``llvm.loop.vectorize.enable`` metadata,
``unrolled`` loops with a constant extent are unrolled here, ``parallel`` loops are
outlined into a function that minitvm's thread pool runs on every core (see
``thread_pool.py``: no stalls when another process busies a core).
Inside a ``parallel`` loop a failing worker stores its code in a flag
(atomically) and stops; the others finish their chunks, and the function returns the flag.
"""

from __future__ import annotations

from typing import Any, Callable

import llvmlite.binding as llvm
from llvmlite import ir

from ...arith import Analyzer
from ...ir import dtype as _dt
from ...runtime.module import BoundsCheck
from ...tir import expr as _e
from ...tir import stmt as _s
from ...tir.function import PrimFunc
from ...tir.functor import hook_of, post_order_visit
from ...tir.semantics import (
    BOOL_ONLY,
    BY_NODE,
    FLOAT_ONLY,
    LLVM_PURE_INTRIN,
    Semantics,
    emit_cast,
    kind_of,
    node_operands,
    row_of,
)
from ...tir.transform.instrument_bound_checkers import bounds_checks, checked_index
from ..signature import FunctionSignature
from ..target import Target
from .calling import ERROR_INDEX_SYMBOL
from .fastmath import FAST_FLOAT32, call_intrinsic, integral_exponent, power_by_multiplying
from .llvm_jit import init_llvm, target_machine_for
from .llvm_types import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    VOID,
    CodegenError,
    FoldingBuilder,
    FunctionAttrs,
    LoopID,
    alloca,
    llvm_type,
    mem_type,
    store_atomic,
)
from .packed_call import emit_call_packed
from .thread_pool import PARALLEL_RUN_SYMBOL, ensure_thread_pool
from .vector import emit_vector_loop

__all__ = ["CodeGenLLVM", "STACK_ALLOC_LIMIT", "MAX_CODEGEN_UNROLL", "INLINE_CHUNK_FIRST", "UNROLL_AROUND_LONG_LOOPS",
           "LONG_LOOP"]

#: arrays up to this many bytes with a constant size live on the stack
STACK_ALLOC_LIMIT = 32 * 1024
#: alignment in bytes of the arrays allocated on the heap (a cache line)
HEAP_ALIGN = 64
#: ``unrolled`` loops with a constant extent up to this are unrolled by the code generator;
#: longer ones (or symbolic extents) are left to LLVM's unroller through loop metadata
MAX_CODEGEN_UNROLL = 64
#: whether LLVM may unroll a loop whose trip count is known only at run time (copies of the
#: body plus a remainder loop).  Off (``llvm.loop.unroll.runtime.disable`` on every loop): in
#: minitvm's kernels those loops are the outer loops of a parallel chunk (padding, copies), whose
#: unrolled copies LLVM then compiled for nothing -- ResNet-18: ~0.04 s of its 0.84 s of machine
#: code, O3 the same within noise (min of 8); the kernels' code is otherwise the same (ViT-tiny's
#: and MobileNetV2's identical)
RUNTIME_UNROLL = False
#: a parallel loop's chunk function is ``alwaysinline``: the O3 pipeline's always-inliner puts
#: it into its one caller before the function passes run (its ``noalias`` parameters become
#: alias scopes), so the kernel's body is simplified once; without it the inliner (bottom-up)
#: simplified the chunk, inlined it, and simplified the same body again in the caller.  The
#: five realistic models' O3: 3.7-4.0 -> 2.8-3.0 s CPU; their innermost loops the same or
#: shorter (ResNet-18's 3x3 convolutions at 14x14 and 7x7: 245 -> 93 instructions per 36 FMAs)
INLINE_CHUNK_FIRST = True
#: whether LLVM may unroll a loop around a long loop (LONG_LOOP iterations or more, or a count
#: known at run time only).  Off (``llvm.loop.unroll.disable``): O3 fully unrolled such loops of
#: a few iterations (a matmul's 4 column blocks around its 128-step reduction), copying the long
#: loop as many times -- the same innermost loop each time, only its setup differing: LLVM
#: compiled the copies for nothing (the five realistic models: 12-17% of their LLVM CPU).
#: Loops around short loops (a 3x3 window) are still unrolled into them
UNROLL_AROUND_LONG_LOOPS = False
LONG_LOOP = 16


# -- the code generator ------------------------------------------------------------------------


class _FuncState:
    """Per-LLVM-function state: builder, variable values, where allocas go, how asserts fail."""

    def __init__(self, fn: ir.Function, error_slot: ir.Value | None):
        self.fn = fn
        entry = fn.append_basic_block("entry")
        self.alloca_builder = FoldingBuilder(entry)
        body = fn.append_basic_block("body")
        self.alloca_builder.branch(body)
        self.alloca_builder.position_at_start(entry)
        self.builder = FoldingBuilder(body)
        self.vars: dict[int, ir.Value] = {}
        self.buffers: dict[int, ir.Value] = {}  # id(data var) -> pointer
        self.error_slot = error_slot  # outlined functions report assert failures here


def _divides_by_variable(body: Any) -> bool:
    """Whether ``body`` has an integer division by a non-constant: its zero check may leave the
    loop early, which LLVM's loop vectorizer cannot vectorize (asked to, it prints a warning)."""
    found: list[bool] = []

    def visit(n: Any) -> None:
        if (isinstance(n, (_e.Div, _e.Mod, _e.FloorDiv, _e.FloorMod)) and not _dt.is_float(n.dtype)
                and not isinstance(n.b, _e.IntImm)):
            found.append(True)

    post_order_visit(body, visit)
    return bool(found)


class CodeGenLLVM:
    """Emits LLVM IR for lowered PrimFuncs into one llvmlite module."""

    def __init__(self, target: Target, module_name: str = "minitvm", noalias: bool = False,
                 disable_vectorize: bool = False):
        self.target = target
        self.noalias_default = noalias
        self.disable_vectorize = disable_vectorize
        init_llvm()
        self.threads = ensure_thread_pool()  # parallel loops run serially on a one-CPU machine
        self.tm = target_machine_for(target)
        self.module = ir.Module(name=module_name)
        self.module.triple = llvm.get_process_triple()
        self.module.data_layout = str(self.tm.target_data)
        #: what failure code k means: ``failures[k - 1]``, an assert's message or a bounds check
        self.failures: list[str | BoundsCheck] = []
        self._bounds_checks: dict[str, BoundsCheck] = {}  # of the function being emitted
        self._decls: dict[str, ir.Function] = {}
        self._fn_attrs = ['"target-cpu"="' + target.mcpu + '"']
        if "avx512f" in target.features:
            self._fn_attrs.append('"prefer-vector-width"="512"')
        #: float32 lanes of one vector register: the piece a vectorized loop of another length
        #: is emitted in (``vector.lane_chunks``)
        self.vector_lanes = target.vector_unit.lanes
        self._outlined = 0
        self._long_loops = 0  # loops of LONG_LOOP iterations or more (or unknown) emitted so far
        self._loops: list[_s.For] = []  # the loops around the code being emitted
        #: _non_negative's answers by (expression, enclosing loops), identities (kept alive in the
        #: values): a vectorized row asks about the same index once per lane
        self._non_negative_memo: dict[tuple, tuple[bool, Any, tuple]] = {}
        #: emit_vector_loop's verdicts by (loop body, loop variable), identities (kept alive in
        #: the values): an unrolled loop emits the same vectorized body once per iteration
        self.vector_verdicts: dict[tuple[int, int], tuple[Any, Any, Any]] = {}
        self.st: _FuncState

    # -- functions ------------------------------------------------------------------------
    @staticmethod
    def kernel_type(sig: FunctionSignature) -> ir.FunctionType:
        """The LLVM type of a kernel: i32 (its failure code) of its buffers' pointers, its scalars
        and its shape variables."""
        params = [PTR if spec.is_buffer else mem_type(spec.dtype) for spec in sig.params]
        params += [llvm_type(v.dtype) for v in sig.shape_vars]
        return ir.FunctionType(I32, params)

    def declare_kernel(self, name: str, sig: FunctionSignature) -> ir.Function:
        """A kernel compiled in another LLVM module, for this module's code to call."""
        fn = ir.Function(self.module, self.kernel_type(sig), name=name)
        self._decorate(fn)
        return fn

    def add_function(self, name: str, func: PrimFunc, sig: FunctionSignature) -> None:
        fn = ir.Function(self.module, self.kernel_type(sig), name=name)
        self._decorate(fn)
        # TVM 0.27 spells the attribute tirx.noalias
        noalias = bool(func.attrs.get("tir.noalias", func.attrs.get("tirx.noalias", self.noalias_default)))
        self._fn_noalias = noalias
        self.st = _FuncState(fn, None)
        self._bounds_checks = bounds_checks(func)
        for i, spec in enumerate(sig.params):
            arg = fn.args[i]
            arg.name = spec.name
            if spec.is_buffer:
                if noalias:
                    arg.add_attribute("noalias")
                self.st.buffers[id(func.buffer_map[spec.var].data)] = arg
            else:
                value = arg if spec.dtype != "bool" else self.st.builder.trunc(arg, I1)
                self.st.vars[id(spec.var)] = value
        for j, var in enumerate(sig.shape_vars):
            arg = fn.args[len(sig.params) + j]
            arg.name = var.name
            self.st.vars[id(var)] = arg
        self.visit_stmt(func.body)
        if not self.st.builder.block.is_terminated:
            self.st.builder.ret(ir.Constant(I32, 0))

    def _decorate(self, fn: ir.Function) -> None:
        fn.attributes = FunctionAttrs()
        fn.attributes.add("nounwind")
        for a in self._fn_attrs:
            fn.attributes.add(a)

    def _declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self._decls.get(name)
        if fn is None:
            fn = self.module.globals.get(name) or ir.Function(self.module, ir.FunctionType(ret, args), name)
            self._decls[name] = fn
        return fn

    # -- helpers ----------------------------------------------------------------------------
    @property
    def b(self) -> ir.IRBuilder:
        return self.st.builder

    def _cast(self, value: ir.Value, src: str, dst: str) -> ir.Value:
        """Convert a register value between TIR dtypes (the meaning is the semantics table's)."""
        return emit_cast(self.b, value, src, dst, llvm_type(dst), self._declare)

    def _index(self, e: _e.PrimExpr) -> ir.Value:
        """An index expression as i64 (addresses are computed in 64 bits)."""
        value = self.visit_expr(e)
        return self._cast(value, e.dtype, "int64") if e.dtype != "int64" else value

    def _address(self, buffer: Any, indices: tuple) -> ir.Value:
        if len(indices) != 1:
            raise CodegenError(f"buffer {buffer.name} is accessed with {len(indices)} indices; the LLVM "
                               "code generator needs flattened (1-D) accesses — run the lowering pipeline")
        ptr = self.st.buffers.get(id(buffer.data))
        if ptr is None:
            raise CodegenError(f"buffer {buffer.name} is neither a parameter nor allocated in the function")
        index = self._index(indices[0])
        return self.b.gep(ptr, [index], inbounds=True, source_etype=mem_type(buffer.dtype))

    def _align(self, dtype: str) -> int:
        return max(1, _dt.bits(dtype) // 8)

    # -- statements ---------------------------------------------------------------------------
    def visit_stmt(self, s: Any) -> None:
        if self.b.block.is_terminated:  # code after a failed-assert return is unreachable
            self.st.builder.position_at_end(self.st.fn.append_basic_block("dead"))
        method = hook_of(self, type(s))  # visit_<node>_, as tir.functor names it
        if method is None:
            raise CodegenError(f"LLVM codegen: {type(s).__name__} must be lowered before code generation "
                               "(run minitvm.tir.transform.lower_pipeline())")
        method(s)

    def visit_seq_stmt_(self, s: _s.SeqStmt) -> None:
        for x in s.seq:
            self.visit_stmt(x)

    def visit_evaluate_(self, s: _s.Evaluate) -> None:
        if not isinstance(s.value, (_e.IntImm, _e.FloatImm, _e.StringImm)):
            self.visit_expr(s.value)

    def visit_let_stmt_(self, s: _s.LetStmt) -> None:
        value = self.visit_expr(s.value)
        if s.var.dtype == "handle":
            self.st.buffers[id(s.var)] = value
        self.st.vars[id(s.var)] = value
        self.visit_stmt(s.body)

    def visit_buffer_store_(self, s: _s.BufferStore) -> None:
        value = self.visit_expr(s.value)
        if s.value.dtype != s.buffer.dtype:
            value = self._cast(value, s.value.dtype, s.buffer.dtype)
        if s.buffer.dtype == "bool":
            value = self.b.zext(value, I8)
        self.b.store(value, self._address(s.buffer, s.indices), align=self._align(s.buffer.dtype))

    def visit_if_then_else_(self, s: _s.IfThenElse) -> None:
        cond = self._bool(s.condition)
        fn = self.st.fn
        then_bb = fn.append_basic_block("if_then")
        else_bb = fn.append_basic_block("if_else") if s.else_case is not None else None
        end_bb = fn.append_basic_block("if_end")
        self.b.cbranch(cond, then_bb, else_bb or end_bb)
        self.b.position_at_end(then_bb)
        self.visit_stmt(s.then_case)
        if not self.b.block.is_terminated:
            self.b.branch(end_bb)
        if else_bb is not None:
            self.b.position_at_end(else_bb)
            self.visit_stmt(s.else_case)
            if not self.b.block.is_terminated:
                self.b.branch(end_bb)
        self.b.position_at_end(end_bb)

    def visit_assert_stmt_(self, s: _s.AssertStmt) -> None:
        cond = self._bool(s.condition)
        check = self._bounds_checks.get(str(s.message))
        bad_index = None if check is None else checked_index(s)
        self.failures.append(str(s.message) if bad_index is None else check)
        code = ir.Constant(I32, len(self.failures))
        fail = self.st.fn.append_basic_block("assert_fail")
        ok = self.st.fn.append_basic_block("assert_ok")
        self.b.cbranch(cond, ok, fail)
        self.b.position_at_end(fail)
        if bad_index is not None:  # a bounds check: tell the runtime which index was wrong
            store_atomic(self.b, self._index(bad_index), self._error_index(), 8)
        self._fail(code)
        self.b.position_at_end(ok)
        self.visit_stmt(s.body)

    def _fail(self, code: ir.Value) -> None:
        if self.st.error_slot is None:
            self.b.ret(code)
        else:  # a parallel worker: several threads may fail at once, hence an atomic store
            store_atomic(self.b, code, self.st.error_slot, 4)
            self.b.ret_void()

    def _error_index(self) -> ir.GlobalVariable:
        """The module's ``i64`` slot where a failed bounds check leaves the index it saw."""
        slot = self.module.globals.get(ERROR_INDEX_SYMBOL)
        if slot is None:
            slot = ir.GlobalVariable(self.module, I64, ERROR_INDEX_SYMBOL)
            slot.initializer = ir.Constant(I64, 0)
            slot.align = 8
        return slot

    def visit_allocate_(self, s: _s.Allocate) -> None:
        buf = s.buffer
        elem = mem_type(buf.dtype)
        count: Any = 1
        for dim in buf.shape:
            count = count * dim
        count = _e.convert(count) if not isinstance(count, _e.PrimExpr) else count
        nbytes = count.value * max(1, _dt.bits(buf.dtype) // 8) if isinstance(count, _e.IntImm) else None
        if nbytes is not None and nbytes <= STACK_ALLOC_LIMIT:
            ptr = alloca(self.st.alloca_builder, elem, ir.Constant(I64, max(count.value, 1)), buf.name)
            ptr.align = max(64, buf.data_alignment)
            self.st.buffers[id(buf.data)] = ptr
            self.visit_stmt(s.body)
            return
        # on the heap, aligned to a cache line (as TVM's workspaces): a 64-byte vector row of a
        # packed operand then fills one line, where malloc's 16-byte alignment splits it over two
        aligned_alloc = self._declare("aligned_alloc", PTR, [I64, I64])
        free = self._declare("free", VOID, [PTR])
        size = self.b.mul(self._index(count), ir.Constant(I64, elem.get_abi_size(self.tm.target_data)))
        align = max(HEAP_ALIGN, buf.data_alignment)  # (aligned_alloc: the size a multiple of it)
        size = self.b.and_(self.b.add(size, ir.Constant(I64, align - 1)), ir.Constant(I64, -align))
        ptr = self.b.call(aligned_alloc, [ir.Constant(I64, align), size], name=buf.name)
        failed = self.b.icmp_unsigned("==", ptr, ir.Constant(PTR, None))
        self.failures.append(f"out of memory allocating buffer {buf.name}")
        code = ir.Constant(I32, len(self.failures))
        with self.b.if_then(failed, likely=False):
            self._fail(code)
        self.st.buffers[id(buf.data)] = ptr
        self.visit_stmt(s.body)
        if not self.b.block.is_terminated:
            self.b.call(free, [ptr])

    def visit_for_(self, s: _s.For) -> None:
        self._loops.append(s)
        try:
            self._emit_for(s)
        finally:
            self._loops.pop()

    def _non_negative(self, e: _e.PrimExpr) -> bool:
        """Provably >= 0 given the enclosing loops' ranges (loop indices usually are)."""
        loops = tuple(self._loops)
        key = (id(e), tuple(map(id, loops)))
        known = self._non_negative_memo.get(key)
        if known is not None:
            return known[0]
        ana = Analyzer()
        for loop in loops:
            ana.bind(loop.loop_var, _e.Range(loop.min, loop.extent))
        answer = bool(ana.can_prove(e >= 0))
        self._non_negative_memo[key] = (answer, e, loops)
        return answer

    def _emit_for(self, s: _s.For) -> None:
        kind = s.kind
        if (kind == _s.ForKind.UNROLLED and isinstance(s.extent, _e.IntImm) and isinstance(s.min, _e.IntImm)
                and s.extent.value <= MAX_CODEGEN_UNROLL):
            for k in range(s.extent.value):
                self.st.vars[id(s.loop_var)] = ir.Constant(llvm_type(s.loop_var.dtype), s.min.value + k)
                self.visit_stmt(s.body)
            return
        if kind == _s.ForKind.PARALLEL and self.threads > 1:
            self._parallel_for(s)
            return
        if kind == _s.ForKind.VECTORIZED and not self.disable_vectorize and emit_vector_loop(self, s):
            return
        begin = self._loop_bound(s.min, s.loop_var.dtype)
        extent = self._loop_bound(s.extent, s.loop_var.dtype)
        end = self.b.add(begin, extent)
        self._serial_loop(s.loop_var, begin, end, s.body, kind)

    def _loop_bound(self, e: _e.PrimExpr, dtype: str) -> ir.Value:
        return self._cast(self.visit_expr(e), e.dtype, dtype)

    def _serial_loop(self, var: _e.Var, begin: ir.Value, end: ir.Value, body: Any, kind: str) -> None:
        fn = self.st.fn
        pre = self.b.block
        head = fn.append_basic_block(f"for_{var.name}")
        body_bb = fn.append_basic_block(f"for_{var.name}_body")
        exit_bb = fn.append_basic_block(f"for_{var.name}_end")
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.phi(begin.type, name=var.name)
        i.add_incoming(begin, pre)
        signed = not _dt.is_uint(var.dtype)
        cmp = self.b.icmp_signed if signed else self.b.icmp_unsigned
        self.b.cbranch(cmp("<", i, end), body_bb, exit_bb)
        self.b.position_at_end(body_bb)
        self.st.vars[id(var)] = i
        if not (isinstance(begin, ir.Constant) and isinstance(end, ir.Constant)
                and end.constant - begin.constant < LONG_LOOP):
            self._long_loops += 1
        long_loops_before = self._long_loops
        self.visit_stmt(body)
        holds_long_loop = self._long_loops > long_loops_before
        if not self.b.block.is_terminated:
            nxt = self.b.add(i, ir.Constant(i.type, 1), name=f"{var.name}.next",
                             flags=("nsw",) if signed else ("nuw",))
            latch = self.b.branch(head)
            i.add_incoming(nxt, self.b.block)
            props = self._loop_properties(kind, body)
            if holds_long_loop and not UNROLL_AROUND_LONG_LOOPS and kind != _s.ForKind.UNROLLED:
                props.append(self.module.add_metadata([ir.MetaDataString(self.module, "llvm.loop.unroll.disable")]))
            if props:
                latch.set_metadata("llvm.loop", LoopID(self.module, props))
        self.b.position_at_end(exit_bb)

    def _loop_properties(self, kind: str, body: Any) -> list:
        md = self.module.add_metadata
        if kind == _s.ForKind.UNROLLED:
            return [md([ir.MetaDataString(self.module, "llvm.loop.unroll.enable")])]
        props = [] if RUNTIME_UNROLL else [md([ir.MetaDataString(self.module, "llvm.loop.unroll.runtime.disable")])]
        if kind == _s.ForKind.VECTORIZED and not self.disable_vectorize and not _divides_by_variable(body):
            props.append(md([ir.MetaDataString(self.module, "llvm.loop.vectorize.enable"), ir.Constant(I1, 1)]))
        return props

    # -- parallel loops (outlined, run by the thread pool) ----------------------------------------
    def _parallel_for(self, s: _s.For) -> None:
        """Outline the loop into ``void body(ptr closure, i64 begin, i64 end)``; minitvm's thread
        pool (``thread_pool.py``) calls it for consecutive ranges of the iterations, on the
        calling thread and on whichever workers are free."""
        dtype = s.loop_var.dtype
        begin = self._loop_bound(s.min, dtype)
        extent = self._loop_bound(s.extent, dtype)
        captured = self._captured(s.body)
        outer = self.st
        error_slot = alloca(outer.alloca_builder, I32, name="par_error")
        self.b.store(ir.Constant(I32, 0), error_slot)
        fields = [begin.type, PTR] + [v.type for _, v, _ in captured]
        closure_ty = ir.LiteralStructType(fields)
        closure = alloca(outer.alloca_builder, closure_ty, name="closure")
        for idx, value in enumerate([begin, error_slot] + [v for _, v, _ in captured]):
            self.b.store(value, self.b.gep(closure, [I32(0), I32(idx)], inbounds=True,
                                           source_etype=closure_ty))
        self._outlined += 1
        name = f"{outer.fn.name}.parallel{self._outlined}"
        body_fn = self._internal_function(name, [PTR, I64, I64])
        body_fn.args[0].add_attribute("noalias")
        # body(closure, lo, hi) unpacks the closure and calls chunk(values...), whose buffer pointers
        # are `noalias` parameters: pointers loaded from memory would tell LLVM nothing, and it would
        # then keep storing accumulators on every iteration instead of holding them in registers
        chunk_fn = self._internal_function(name + ".chunk", [begin.type, begin.type] + fields[1:])
        if INLINE_CHUNK_FIRST:
            chunk_fn.attributes.add("alwaysinline")
        self.st = _FuncState(body_fn, None)
        b = self.b
        loaded = [b.load(b.gep(body_fn.args[0], [I32(0), I32(idx)], inbounds=True, source_etype=closure_ty),
                         typ=fields[idx]) for idx in range(len(fields))]
        lo = self._cast(body_fn.args[1], "int64", dtype)
        count = self._cast(b.sub(body_fn.args[2], body_fn.args[1]), "int64", dtype)
        b.call(chunk_fn, [b.add(loaded[0], lo), count] + loaded[1:])
        b.ret_void()
        self._emit_chunk(s, chunk_fn, captured, outer)
        self.st = outer
        run = self._declare(PARALLEL_RUN_SYMBOL, VOID, [PTR, PTR, I64])
        count = self._cast(extent, dtype, "int64")
        # a negative extent runs nothing, as a serial loop's signed test (the pool counts unsigned)
        count = self.b.select(self.b.icmp_signed("<", count, ir.Constant(I64, 0)), ir.Constant(I64, 0), count)
        self.b.call(run, [body_fn, closure, count])
        err = self.b.load(error_slot, typ=I32)
        with self.b.if_then(self.b.icmp_unsigned("!=", err, ir.Constant(I32, 0)), likely=False):
            self._fail(err)

    def _captured(self, body: Any) -> list[tuple[int, ir.Value, str]]:
        """What a parallel loop's body needs from the enclosing function: ``(key, value, kind)``
        for the variables (kind ``"var"``) and buffer pointers (``"buf"``) bound now."""
        used: list[int] = []
        seen: set[int] = set()

        def collect(n: Any) -> None:
            key = None
            if isinstance(n, _e.Var):
                key = id(n)
            elif isinstance(n, (_e.BufferLoad, _s.BufferStore)):
                key = id(n.buffer.data)
            if key is not None and key not in seen:
                seen.add(key)
                used.append(key)

        post_order_visit(body, collect)
        captured = [(k, self.st.vars[k], "var") for k in used if k in self.st.vars]
        captured += [(k, self.st.buffers[k], "buf") for k in used if k in self.st.buffers and k not in self.st.vars]
        return captured

    def _internal_function(self, name: str, params: list[ir.Type]) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(VOID, params), name=name)
        fn.linkage = "internal"
        self._decorate(fn)
        return fn

    def _emit_chunk(self, s: _s.For, chunk_fn: ir.Function, captured: list, outer: _FuncState) -> None:
        """``chunk(lo, count, error_slot, captured...)``: iterations ``[lo, lo + count)``."""
        self.st = _FuncState(chunk_fn, None)
        b = self.b
        for (_, _, kind), arg in zip(captured, chunk_fn.args[3:]):
            if kind == "buf" and self._fn_noalias:
                arg.add_attribute("noalias")
        lo, count, self.st.error_slot = chunk_fn.args[0], chunk_fn.args[1], chunk_fn.args[2]
        for (key, _, kind), value in zip(captured, chunk_fn.args[3:]):
            (self.st.vars if kind == "var" else self.st.buffers)[key] = value
        for key, _value, kind in captured:  # a handle LetStmt var is both a var and a buffer
            if kind == "var" and key in outer.buffers:
                self.st.buffers[key] = self.st.vars[key]
        self._serial_loop(s.loop_var, lo, b.add(lo, count), s.body, _s.ForKind.SERIAL)
        if not self.b.block.is_terminated:
            self.b.ret_void()

    # -- expressions ------------------------------------------------------------------------------
    def visit_expr(self, e: Any) -> ir.Value:
        method = hook_of(self, type(e))
        if method is not None:
            return method(e)
        row = BY_NODE.get(type(e))
        if row is None:
            raise CodegenError(f"LLVM codegen: unsupported expression {type(e).__name__}")
        return self._emit_row(row, e, node_operands(e))

    def _bool(self, e: _e.PrimExpr) -> ir.Value:
        value = self.visit_expr(e)
        return value if e.dtype == "bool" else self._cast(value, e.dtype, "bool")

    def visit_var_(self, e: _e.Var) -> ir.Value:
        value = self.st.vars.get(id(e))
        if value is None:
            raise CodegenError(f"LLVM codegen: variable {e.name!r} is used but never defined")
        return value

    visit_size_var_ = visit_var_

    def visit_int_imm_(self, e: _e.IntImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def visit_float_imm_(self, e: _e.FloatImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def visit_cast_(self, e: _e.Cast) -> ir.Value:
        return self._cast(self.visit_expr(e.value), e.value.dtype, e.dtype)

    def _emit_row(self, row: Semantics, e: Any, operands: tuple) -> ir.Value:
        """An operation of the semantics table: its operands, then the row's instructions."""
        dtype = e.dtype if row.node is _e.Select else operands[0].dtype
        row.check(dtype, "LLVM codegen")
        if (row.node in (_e.FloorDiv, _e.FloorMod) and kind_of(dtype) == "int" and isinstance(e.b, _e.IntImm)
                and e.b.value > 0 and self._non_negative(e.a)):
            # x // c and x % c with x >= 0 (fused loop indices): unsigned division, which LLVM's
            # address analysis understands, so it can still tell the accessed elements apart
            dtype = "u" + dtype
        if row.node is _e.Select:
            values = [self._bool(operands[0])] + [self._operand(x, dtype) for x in operands[1:]]
        elif row.kinds == BOOL_ONLY:
            values = [self._bool(x) for x in operands]
        else:
            values = [self._operand(x, dtype) for x in operands]
        return row.llvm(self, dtype, *values)

    def _operand(self, x: _e.PrimExpr, dtype: str) -> ir.Value:
        value = self.visit_expr(x)
        if x.dtype != dtype and "u" + x.dtype != dtype:  # defensive: mixed index widths
            value = self._cast(value, x.dtype, dtype)
        return value

    # what the rows of the semantics table use (see minitvm.tir.semantics.LLVMContext)
    def fail_if(self, bad: ir.Value, message: str) -> None:
        self.failures.append(message)
        code = ir.Constant(I32, len(self.failures))
        with self.b.if_then(bad, likely=False):
            self._fail(code)

    def intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        """Call an overloaded intrinsic (``llvm.exp`` -> ``llvm.exp.f32``)."""
        return call_intrinsic(self.b, self._declare, name, args)

    def fast_f32(self, op: str, x: ir.Value) -> ir.Value | None:
        fast = FAST_FLOAT32.get(op)
        return None if fast is None else fast(self.b, x, self._declare)

    def target_intrinsic(self, name: str, feature: str, args: list[ir.Value]) -> ir.Value | None:
        """``name(*args)`` (a CPU-specific intrinsic) if the target has ``feature``, else None."""
        if feature not in self.target.features:
            return None
        return self.b.call(self._declare(name, args[0].type, [a.type for a in args]), args)

    def libm(self, name: str, args: list[ir.Value], dtype: str) -> ir.Value:
        suffix = {"float32": "f", "float64": ""}.get(dtype)
        if suffix is None:  # float16: compute in float32
            wide = [self.b.fpext(a, ir.FloatType()) for a in args]
            return self.b.fptrunc(self.libm(name, wide, "float32"), args[0].type)
        fn = self._declare(name + suffix, args[0].type, [a.type for a in args])
        return self.b.call(fn, args)

    def visit_let_(self, e: _e.Let) -> ir.Value:
        self.st.vars[id(e.var)] = self.visit_expr(e.value)
        return self.visit_expr(e.body)

    def visit_buffer_load_(self, e: _e.BufferLoad) -> ir.Value:
        value = self.b.load(self._address(e.buffer, e.indices), typ=mem_type(e.buffer.dtype),
                            align=self._align(e.buffer.dtype))
        if e.buffer.dtype == "bool":
            value = self.b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    # -- calls ------------------------------------------------------------------------------------
    def visit_call_(self, e: _e.Call) -> ir.Value:
        op = e.op if isinstance(e.op, str) else getattr(e.op, "name", str(e.op))
        if op == "tir.if_then_else":
            return self._if_then_else(e)
        if op in ("tir.likely",):
            return self.visit_expr(e.args[0])
        if op == "tir.call_extern":
            return self._call_extern(e)
        if op == "tir.address_of":
            load = e.args[0]
            return self._address(load.buffer, load.indices)
        if op == "tir.prefetch":
            return self._prefetch(e)
        if op == "tir.tvm_call_packed":
            return emit_call_packed(self, e)
        if op == "tir.ret":
            raise NotImplementedError("LLVM codegen: T.ret (returning a value from a prim func) is not "
                                      "supported; write the result into an output buffer")
        n = integral_exponent(e)
        if n is not None:  # as the vector emitter, so a loop's scalar tail computes the same
            return power_by_multiplying(self.b, self.visit_expr(e.args[0]), n)
        row = row_of(e)
        if row is None:
            what = f"{op}({e.args[0]})" if op == LLVM_PURE_INTRIN and e.args else repr(op)
            raise CodegenError(f"LLVM codegen: unsupported intrinsic {what}")
        operands = node_operands(e)
        dtype = e.dtype if row.result is None else operands[0].dtype
        if row.kinds == FLOAT_ONLY and not _dt.is_float(dtype):
            raise CodegenError(f"LLVM codegen: {row.llvm_intrin or op} needs float arguments, got {dtype}")
        return row.llvm(self, dtype, *[self._operand(a, dtype) for a in operands])

    def _prefetch(self, e: _e.Call) -> ir.Value:
        """``T.prefetch(address, rw, locality, cache_type)``: ``llvm.prefetch`` (a hint: an address
        outside any buffer does not fault)."""
        ptr = self.visit_expr(e.args[0])
        flags = []
        for a in e.args[1:]:
            if not isinstance(a, _e.IntImm):
                raise CodegenError(f"LLVM codegen: T.prefetch needs constant rw, locality and cache type, got {a}")
            flags.append(ir.Constant(I32, a.value))
        fn = self._declare("llvm.prefetch.p0", ir.VoidType(), [ptr.type, I32, I32, I32])
        self.b.call(fn, [ptr, *flags])
        return ir.Constant(I32, 0)

    def _call_extern(self, e: _e.Call) -> ir.Value:
        """``T.call_extern(dtype, "name", *args)``: a C call, declared from the argument types
        (resolved by the JIT among the process's symbols, e.g. libm's ``expf``)."""
        name = e.args[0].value if isinstance(e.args[0], _e.StringImm) else None
        if name is None:
            raise CodegenError(f"LLVM codegen: T.call_extern needs a function name string, got {e.args[0]}")
        args = [self.visit_expr(a) for a in e.args[1:]]
        types = [llvm_type(a.dtype) for a in e.args[1:]]
        fn = self._declare(name, llvm_type(e.dtype), types)
        if list(fn.function_type.args) != types or fn.function_type.return_type != llvm_type(e.dtype):
            raise CodegenError(f"LLVM codegen: T.call_extern({name!r}) is called with different types "
                               "in the same module")
        return self.b.call(fn, args)

    def _if_then_else(self, e: _e.Call) -> ir.Value:
        """``cond ? t : f`` with only the taken side evaluated (it may read out of bounds)."""
        return self.branch_and_join(self._bool(e.args[0]), lambda: self._operand(e.args[1], e.dtype),
                                    lambda: self._operand(e.args[2], e.dtype))

    def branch_and_join(self, cond: ir.Value, then_: Callable[[], ir.Value], else_: Callable[[], ir.Value],
                        label: str = "ite") -> ir.Value:
        """The value of ``then_()`` when ``cond`` holds, else of ``else_()``: a branch to blocks
        that emit only their own side, joined by a phi (the side not taken is never run)."""
        fn = self.st.fn
        then_bb, else_bb = fn.append_basic_block(f"{label}_then"), fn.append_basic_block(f"{label}_else")
        end_bb = fn.append_basic_block(f"{label}_end")
        self.b.cbranch(cond, then_bb, else_bb)
        arms = []
        for bb, emit in ((then_bb, then_), (else_bb, else_)):
            self.b.position_at_end(bb)
            value = emit()
            arms.append((value, self.b.block))
            self.b.branch(end_bb)
        self.b.position_at_end(end_bb)
        phi = self.b.phi(arms[0][0].type)
        for value, block in arms:
            phi.add_incoming(value, block)
        return phi

