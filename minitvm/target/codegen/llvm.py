"""LLVM code generation: lowered TIR -> LLVM IR (llvmlite.ir) -> optimized machine code (MCJIT).

Input contract (what the TIR lowering pipeline produces): flat loops and 1-D buffer
accesses with one index each; the buffers' ``data`` variables are those of the parameter
buffers (``buffer_map``) or of ``Allocate`` statements.

Each PrimFunc becomes ``i32 name(ptr A, ptr B, ..., <scalars>, <size vars>)``: arrays
are passed as pointers, scalar parameters by value, symbolic dimensions (``n``) as extra
integers the driver reads off the arguments.  The result is 0, or ``k`` when the k-th
``AssertStmt`` failed.  A failed bounds check (an assert made by
``tir.transform.InstrumentBoundCheckers``) also leaves the bad index in the module's global
``__minitvm_bounds_error_index``, which the runtime puts in its ``BoundsError``.  Inside a
``parallel`` loop a failing worker stores its code in a flag (atomically) and stops; the
others finish their chunks, and the function returns the flag.

Float ``a * b + c`` may become one fused multiply-add (the ``contract`` flag, as TVM's
default): one rounding instead of two.

Loops: ``vectorized`` loops of constant extent are emitted as SIMD code directly
(see ``vector.py``); other ones carry ``llvm.loop.vectorize.enable`` metadata,
``unrolled`` loops with a constant extent are unrolled here, ``parallel`` loops are
outlined into a function that OpenMP's ``GOMP_parallel`` runs on every core (libgomp's
thread pool stays alive between calls, so a parallel region costs microseconds, not the
~70 us of creating threads; see :func:`_load_openmp` for the wait policy).
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import functools
import os
import threading
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from ...ir import dtype as _dt
from ...runtime.module import BOUNDS_CHECK_PREFIX, Module, bounds_error
from ...runtime.ndarray import NDArray
from ...runtime.registry import PackedFunc
from ...tir import expr as _e
from ...tir import stmt as _s
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.op import LIBM_BINARY, LIBM_UNARY
from ...tir.transform.instrument_bound_checkers import (
    InstrumentBoundCheckers,
    bounds_check_index,
    bounds_check_requested,
)
from ..signature import FunctionSignature
from ..target import Target
from .fastmath import FAST_FLOAT32, call_intrinsic
from .vector import emit_vector_loop

__all__ = ["build_llvm", "LLVMModule", "CodeGenLLVM", "llvm_type"]

#: the global where a failed bounds check stores the bad index (read by :class:`CompiledFunction`)
ERROR_INDEX_SYMBOL = "__minitvm_bounds_error_index"
#: arrays up to this many bytes with a constant size live on the stack
STACK_ALLOC_LIMIT = 32 * 1024
#: ``unrolled`` loops with a constant extent up to this are unrolled by the code generator;
#: longer ones (or symbolic extents) are left to LLVM's unroller through loop metadata
MAX_CODEGEN_UNROLL = 64

# -- LLVM setup -----------------------------------------------------------------------------

_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _init_llvm() -> bool:
    """Initialise LLVM once; returns whether libgomp (for parallel loops) is available."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return _load_openmp()


_KEEP_OPEN: list[Any] = []


def _load_openmp() -> bool:
    """Make libgomp's symbols visible to JIT code.

    libgomp reads its settings when it is loaded.  Unless the user chose a wait policy, we
    load it with ``OMP_WAIT_POLICY=PASSIVE``: idle workers then sleep instead of spinning.
    On a quiet machine a region costs ~8 us instead of ~1 us, but when another process
    busies a core (2 cores here), spinning workers made a region take up to 8 ms.
    Set ``OMP_WAIT_POLICY=active`` before the first build for benchmarks on an idle machine.
    """
    chosen = "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ
    if not chosen:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        for name in ("libgomp.so.1", ctypes.util.find_library("gomp")):
            if not name:
                continue
            try:
                llvm.load_library_permanently(name)
                # a second, never-closed handle: at exit LLVM's dlclose must not unmap libgomp
                # while its worker threads still run (seen as a segfault at interpreter exit)
                _KEEP_OPEN.append(ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL))
                return True
            except (RuntimeError, OSError):
                continue
        return False
    finally:
        if not chosen:
            del os.environ["OMP_WAIT_POLICY"]


def has_openmp() -> bool:
    """True when parallel loops run on threads (libgomp could be loaded)."""
    return _init_llvm()


def _target_machine(cpu: str, features: str, opt: int) -> llvm.TargetMachine:
    """A new target machine: the MCJIT engine takes ownership of (and frees) the one it gets."""
    _init_llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=True)


def _features_string(target: Target) -> str:
    return ",".join(f"+{f}" for f in target.features)


# -- types ----------------------------------------------------------------------------------

_I1, _I8, _I32, _I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
_PTR = ir.PointerType()
_VOID = ir.VoidType()


def llvm_type(dtype: str) -> ir.Type:
    """The register type of a TIR dtype (bool is ``i1``)."""
    dtype = str(dtype)
    if dtype == "bool":
        return _I1
    if dtype == "float32":
        return ir.FloatType()
    if dtype == "float64":
        return ir.DoubleType()
    if dtype == "float16":
        return ir.HalfType()
    if dtype == "handle":
        return _PTR
    if _dt.is_int(dtype):
        return ir.IntType(_dt.bits(dtype))
    raise TypeError(f"LLVM codegen: unsupported dtype {dtype!r}")


def _mem_type(dtype: str) -> ir.Type:
    """The in-memory type: bool is stored in a byte, like numpy's."""
    return _I8 if str(dtype) == "bool" else llvm_type(dtype)


def _ctype(dtype: str) -> Any:
    dtype = str(dtype)
    table = {"float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_uint8,
             "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
             "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
             "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "handle": ctypes.c_void_p}
    if dtype not in table:
        raise TypeError(f"LLVM codegen: scalar parameters of dtype {dtype} are not supported")
    return table[dtype]


class _Attrs(ir.values.FunctionAttributes):
    """Function attributes that also accept string attributes (``"key"="value"``)."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


class _LoopID(ir.values.MDValue):
    """A distinct, self-referencing loop-ID metadata node (``!0 = distinct !{!0, ...}``)."""

    def __init__(self, module: ir.Module, properties: list):
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *properties)

    def descr(self, buf: list) -> None:
        refs = ", ".join(op.get_reference() for op in self.operands)
        buf += (f"distinct !{{ {refs} }}", "\n")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def _alloca(builder: ir.IRBuilder, ty: ir.Type, size: ir.Value | None = None, name: str = "") -> ir.Value:
    """A stack slot as an opaque ``ptr`` (llvmlite would type it ``ty*``)."""
    slot = builder.alloca(ty, size=size, name=name)
    slot.type = _PTR
    return slot


def _store_atomic(builder: ir.IRBuilder, value: ir.Value, ptr: ir.Value, align: int) -> None:
    """``store atomic ... monotonic``: llvmlite's own ``store_atomic`` still expects typed pointers."""
    builder._insert(ir.instructions.StoreAtomicInstr(builder.block, value, ptr, "monotonic", align))


class CodegenError(Exception):
    """The function is not in the form the LLVM code generator accepts."""


# -- the code generator ------------------------------------------------------------------------


class _FuncState:
    """Per-LLVM-function state: builder, variable values, where allocas go, how asserts fail."""

    def __init__(self, fn: ir.Function, error_slot: ir.Value | None):
        self.fn = fn
        entry = fn.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.alloca_builder.branch(body)
        self.alloca_builder.position_at_start(entry)
        self.builder = ir.IRBuilder(body)
        self.vars: dict[int, ir.Value] = {}
        self.buffers: dict[int, ir.Value] = {}  # id(data var) -> pointer
        self.error_slot = error_slot  # outlined functions report assert failures here


class CodeGenLLVM:
    """Emits LLVM IR for lowered PrimFuncs into one llvmlite module."""

    def __init__(self, target: Target, module_name: str = "minitvm", noalias: bool = False,
                 disable_vectorize: bool = False):
        self.target = target
        self.noalias_default = noalias
        self.disable_vectorize = disable_vectorize
        self.openmp = _init_llvm()
        self.tm = _target_machine(target.mcpu, _features_string(target), target.opt_level)
        self.module = ir.Module(name=module_name)
        self.module.triple = llvm.get_process_triple()
        self.module.data_layout = str(self.tm.target_data)
        self.assert_messages: list[str] = []
        self._decls: dict[str, ir.Function] = {}
        self._fn_attrs = ['"target-cpu"="' + target.mcpu + '"']
        if "avx512f" in target.features:
            self._fn_attrs.append('"prefer-vector-width"="512"')
        self._outlined = 0
        self._loops: list[_s.For] = []  # the loops around the code being emitted
        self.st: _FuncState

    # -- functions ------------------------------------------------------------------------
    def add_function(self, name: str, func: PrimFunc, sig: FunctionSignature) -> None:
        params = []
        for spec in sig.params:
            params.append(_PTR if spec.is_buffer else _mem_type(spec.dtype))
        params += [llvm_type(v.dtype) for v in sig.shape_vars]
        fn = ir.Function(self.module, ir.FunctionType(_I32, params), name=name)
        self._decorate(fn)
        noalias = bool(func.attrs.get("tir.noalias", self.noalias_default))
        self._fn_noalias = noalias
        self.st = _FuncState(fn, None)
        for i, spec in enumerate(sig.params):
            arg = fn.args[i]
            arg.name = spec.name
            if spec.is_buffer:
                if noalias:
                    arg.add_attribute("noalias")
                self.st.buffers[id(func.buffer_map[spec.var].data)] = arg
            else:
                value = arg if spec.dtype != "bool" else self.st.builder.trunc(arg, _I1)
                self.st.vars[id(spec.var)] = value
        for j, var in enumerate(sig.shape_vars):
            arg = fn.args[len(sig.params) + j]
            arg.name = var.name
            self.st.vars[id(var)] = arg
        self.visit_stmt(func.body)
        if not self.st.builder.block.is_terminated:
            self.st.builder.ret(ir.Constant(_I32, 0))

    def _decorate(self, fn: ir.Function) -> None:
        fn.attributes = _Attrs()
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
        """Convert a register value between TIR dtypes (C semantics, bool = nonzero)."""
        if src == dst:
            return value
        b = self.b
        to = llvm_type(dst)
        if dst == "bool":
            if _dt.is_float(src):
                return b.fcmp_unordered("!=", value, ir.Constant(value.type, 0.0))
            return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
        if _dt.is_float(dst):
            if _dt.is_float(src):
                if _dt.bits(src) < _dt.bits(dst):
                    return b.fpext(value, to)
                return b.fptrunc(value, to)
            if src == "bool" or _dt.is_uint(src):
                return b.uitofp(value, to)
            return b.sitofp(value, to)
        # integer destination
        if _dt.is_float(src):
            return b.fptoui(value, to) if _dt.is_uint(dst) else b.fptosi(value, to)
        sbits, dbits = value.type.width, to.width
        if sbits == dbits:
            return value
        if sbits > dbits:
            return b.trunc(value, to)
        if src == "bool" or _dt.is_uint(src):
            return b.zext(value, to)
        return b.sext(value, to)

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
        return self.b.gep(ptr, [index], inbounds=True, source_etype=_mem_type(buffer.dtype))

    def _align(self, dtype: str) -> int:
        return max(1, _dt.bits(dtype) // 8)

    # -- statements ---------------------------------------------------------------------------
    def visit_stmt(self, s: Any) -> None:
        if self.b.block.is_terminated:  # code after a failed-assert return is unreachable
            self.st.builder.position_at_end(self.st.fn.append_basic_block("dead"))
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(f"LLVM codegen: {type(s).__name__} must be lowered before code generation "
                               "(run minitvm.tir.transform.lower_pipeline())")
        method(s)

    def stmt_SeqStmt(self, s: _s.SeqStmt) -> None:
        for x in s.seq:
            self.visit_stmt(x)

    def stmt_Evaluate(self, s: _s.Evaluate) -> None:
        if not isinstance(s.value, (_e.IntImm, _e.FloatImm, _e.StringImm)):
            self.visit_expr(s.value)

    def stmt_LetStmt(self, s: _s.LetStmt) -> None:
        value = self.visit_expr(s.value)
        if s.var.dtype == "handle":
            self.st.buffers[id(s.var)] = value
        self.st.vars[id(s.var)] = value
        self.visit_stmt(s.body)

    def stmt_BufferStore(self, s: _s.BufferStore) -> None:
        value = self.visit_expr(s.value)
        if s.value.dtype != s.buffer.dtype:
            value = self._cast(value, s.value.dtype, s.buffer.dtype)
        if s.buffer.dtype == "bool":
            value = self.b.zext(value, _I8)
        self.b.store(value, self._address(s.buffer, s.indices), align=self._align(s.buffer.dtype))

    def stmt_IfThenElse(self, s: _s.IfThenElse) -> None:
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

    def stmt_AssertStmt(self, s: _s.AssertStmt) -> None:
        cond = self._bool(s.condition)
        self.assert_messages.append(str(s.message))
        code = ir.Constant(_I32, len(self.assert_messages))
        fail = self.st.fn.append_basic_block("assert_fail")
        ok = self.st.fn.append_basic_block("assert_ok")
        self.b.cbranch(cond, ok, fail)
        self.b.position_at_end(fail)
        bad_index = bounds_check_index(s)
        if bad_index is not None:  # a bounds check: tell the runtime which index was wrong
            _store_atomic(self.b, self._index(bad_index), self._error_index(), 8)
        self._fail(code)
        self.b.position_at_end(ok)
        self.visit_stmt(s.body)

    def _fail(self, code: ir.Value) -> None:
        if self.st.error_slot is None:
            self.b.ret(code)
        else:  # a parallel worker: several threads may fail at once, hence an atomic store
            _store_atomic(self.b, code, self.st.error_slot, 4)
            self.b.ret_void()

    def _error_index(self) -> ir.GlobalVariable:
        """The module's ``i64`` slot where a failed bounds check leaves the index it saw."""
        slot = self.module.globals.get(ERROR_INDEX_SYMBOL)
        if slot is None:
            slot = ir.GlobalVariable(self.module, _I64, ERROR_INDEX_SYMBOL)
            slot.initializer = ir.Constant(_I64, 0)
            slot.align = 8
        return slot

    def stmt_Allocate(self, s: _s.Allocate) -> None:
        buf = s.buffer
        elem = _mem_type(buf.dtype)
        count: Any = 1
        for dim in buf.shape:
            count = count * dim
        count = _e.convert(count) if not isinstance(count, _e.PrimExpr) else count
        nbytes = count.value * max(1, _dt.bits(buf.dtype) // 8) if isinstance(count, _e.IntImm) else None
        if nbytes is not None and nbytes <= STACK_ALLOC_LIMIT:
            ptr = _alloca(self.st.alloca_builder, elem, ir.Constant(_I64, max(count.value, 1)), buf.name)
            ptr.align = 64
            self.st.buffers[id(buf.data)] = ptr
            self.visit_stmt(s.body)
            return
        malloc = self._declare("malloc", _PTR, [_I64])
        free = self._declare("free", _VOID, [_PTR])
        size = self.b.mul(self._index(count), ir.Constant(_I64, elem.get_abi_size(self.tm.target_data)))
        ptr = self.b.call(malloc, [size], name=buf.name)
        failed = self.b.icmp_unsigned("==", ptr, ir.Constant(_PTR, None))
        self.assert_messages.append(f"out of memory allocating buffer {buf.name}")
        code = ir.Constant(_I32, len(self.assert_messages))
        with self.b.if_then(failed, likely=False):
            self._fail(code)
        self.st.buffers[id(buf.data)] = ptr
        self.visit_stmt(s.body)
        if not self.b.block.is_terminated:
            self.b.call(free, [ptr])

    def stmt_For(self, s: _s.For) -> None:
        self._loops.append(s)
        try:
            self._emit_for(s)
        finally:
            self._loops.pop()

    def _non_negative(self, e: _e.PrimExpr) -> bool:
        """Provably >= 0 given the enclosing loops' ranges (loop indices usually are)."""
        from ...arith import Analyzer

        ana = Analyzer()
        for loop in self._loops:
            ana.bind(loop.loop_var, _e.Range(loop.min, loop.extent))
        return bool(ana.can_prove(e >= 0))

    def _emit_for(self, s: _s.For) -> None:
        kind = s.kind
        if (kind == _s.ForKind.UNROLLED and isinstance(s.extent, _e.IntImm) and isinstance(s.min, _e.IntImm)
                and s.extent.value <= MAX_CODEGEN_UNROLL):
            for k in range(s.extent.value):
                self.st.vars[id(s.loop_var)] = ir.Constant(llvm_type(s.loop_var.dtype), s.min.value + k)
                self.visit_stmt(s.body)
            return
        if kind == _s.ForKind.PARALLEL and self.openmp:
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
        self.visit_stmt(body)
        if not self.b.block.is_terminated:
            nxt = self.b.add(i, ir.Constant(i.type, 1), name=f"{var.name}.next",
                             flags=("nsw",) if signed else ("nuw",))
            latch = self.b.branch(head)
            i.add_incoming(nxt, self.b.block)
            props = self._loop_properties(kind)
            if props:
                latch.set_metadata("llvm.loop", _LoopID(self.module, props))
        self.b.position_at_end(exit_bb)

    def _loop_properties(self, kind: str) -> list:
        md = self.module.add_metadata
        if kind == _s.ForKind.VECTORIZED and not self.disable_vectorize:
            return [md([ir.MetaDataString(self.module, "llvm.loop.vectorize.enable"), ir.Constant(_I1, 1)])]
        if kind == _s.ForKind.UNROLLED:
            return [md([ir.MetaDataString(self.module, "llvm.loop.unroll.enable")])]
        return []

    # -- parallel loops (OpenMP outlining) --------------------------------------------------------
    def _parallel_for(self, s: _s.For) -> None:
        """Outline the loop into ``void body(ptr closure)``; ``GOMP_parallel`` runs it on every
        thread, and each thread takes one contiguous chunk of the iterations."""
        dtype = s.loop_var.dtype
        begin = self._loop_bound(s.min, dtype)
        extent = self._loop_bound(s.extent, dtype)
        # what the body needs from here: variables and buffer pointers bound now
        used_vars: list[int] = []
        seen: set[int] = set()

        def collect(n: Any) -> None:
            key = None
            if isinstance(n, _e.Var):
                key = id(n)
            elif isinstance(n, (_e.BufferLoad, _s.BufferStore)):
                key = id(n.buffer.data)
            if key is not None and key not in seen:
                seen.add(key)
                used_vars.append(key)

        post_order_visit(s.body, collect)
        captured = [(k, self.st.vars[k], "var") for k in used_vars if k in self.st.vars]
        captured += [(k, self.st.buffers[k], "buf") for k in used_vars
                     if k in self.st.buffers and k not in self.st.vars]
        error_slot = _alloca(self.st.alloca_builder, _I32, name="par_error")
        outer = self.st
        self.b.store(ir.Constant(_I32, 0), error_slot)
        fields = [begin.type, begin.type, _PTR] + [v.type for _, v, _ in captured]
        closure_ty = ir.LiteralStructType(fields)
        closure = _alloca(outer.alloca_builder, closure_ty, name="closure")
        for idx, value in enumerate([begin, extent, error_slot] + [v for _, v, _ in captured]):
            self.b.store(value, self.b.gep(closure, [_I32(0), _I32(idx)], inbounds=True,
                                           source_etype=closure_ty))
        # the outlined function
        self._outlined += 1
        body_fn = ir.Function(self.module, ir.FunctionType(_VOID, [_PTR]),
                              name=f"{outer.fn.name}.parallel{self._outlined}")
        body_fn.linkage = "internal"
        self._decorate(body_fn)
        body_fn.args[0].add_attribute("noalias")
        # body(closure) unpacks the closure and calls chunk(values...), whose buffer pointers are
        # `noalias` parameters: pointers loaded from memory would tell LLVM nothing, and it would
        # then keep storing accumulators on every iteration instead of holding them in registers
        chunk_fn = ir.Function(self.module, ir.FunctionType(_VOID, fields),
                               name=f"{outer.fn.name}.parallel{self._outlined}.chunk")
        chunk_fn.linkage = "internal"
        self._decorate(chunk_fn)
        self.st = _FuncState(body_fn, None)
        b = self.b
        loaded = [b.load(b.gep(body_fn.args[0], [_I32(0), _I32(idx)], inbounds=True, source_etype=closure_ty),
                         typ=fields[idx]) for idx in range(len(fields))]
        b.call(chunk_fn, loaded)
        b.ret_void()
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
        tid = self._cast(b.call(self._declare("omp_get_thread_num", _I32, []), []), "int32", dtype)
        nthreads = self._cast(b.call(self._declare("omp_get_num_threads", _I32, []), []), "int32", dtype)
        one = ir.Constant(count.type, 1)
        chunk = b.sdiv(b.sub(b.add(count, nthreads), one), nthreads)
        start = b.mul(tid, chunk)
        stop = b.add(start, chunk)
        stop = b.select(b.icmp_signed("<", stop, count), stop, count)
        self._serial_loop(s.loop_var, b.add(lo, start), b.add(lo, stop), s.body, _s.ForKind.SERIAL)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        self.st = outer
        gomp = self._declare("GOMP_parallel", _VOID, [_PTR, _PTR, _I32, _I32])
        # 0 threads: OpenMP's default team (OMP_NUM_THREADS, else one per core) unless -num-cores says
        nthreads = int(self.target.attrs.get("num-cores", 0))
        self.b.call(gomp, [body_fn, closure, ir.Constant(_I32, nthreads), ir.Constant(_I32, 0)])
        err = self.b.load(error_slot, typ=_I32)
        with self.b.if_then(self.b.icmp_unsigned("!=", err, ir.Constant(_I32, 0)), likely=False):
            self._fail(err)

    # -- expressions ------------------------------------------------------------------------------
    def visit_expr(self, e: Any) -> ir.Value:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(f"LLVM codegen: unsupported expression {type(e).__name__}")
        return method(e)

    def _bool(self, e: _e.PrimExpr) -> ir.Value:
        value = self.visit_expr(e)
        return value if e.dtype == "bool" else self._cast(value, e.dtype, "bool")

    def expr_Var(self, e: _e.Var) -> ir.Value:
        value = self.st.vars.get(id(e))
        if value is None:
            raise CodegenError(f"LLVM codegen: variable {e.name!r} is used but never defined")
        return value

    expr_SizeVar = expr_Var

    def expr_IntImm(self, e: _e.IntImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def expr_FloatImm(self, e: _e.FloatImm) -> ir.Value:
        return ir.Constant(llvm_type(e.dtype), e.value)

    def expr_Cast(self, e: _e.Cast) -> ir.Value:
        return self._cast(self.visit_expr(e.value), e.value.dtype, e.dtype)

    def _operands(self, e: Any) -> tuple[ir.Value, ir.Value, str]:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        dtype = e.a.dtype
        if e.b.dtype != dtype:  # defensive: mixed index widths
            b = self._cast(b, e.b.dtype, dtype)
        return a, b, dtype

    def expr_Add(self, e: Any) -> ir.Value:
        a, b, t = self._operands(e)
        return self.b.fadd(a, b, flags=("contract",)) if _dt.is_float(t) else self.b.add(a, b)

    def expr_Sub(self, e: Any) -> ir.Value:
        a, b, t = self._operands(e)
        return self.b.fsub(a, b) if _dt.is_float(t) else self.b.sub(a, b)

    def expr_Mul(self, e: Any) -> ir.Value:
        a, b, t = self._operands(e)
        return self.b.fmul(a, b, flags=("contract",)) if _dt.is_float(t) else self.b.mul(a, b)

    def _safe_divisor(self, a: ir.Value, b: ir.Value, t: str) -> tuple[ir.Value, ir.Value | None]:
        """Integer division by 0 (and INT_MIN / -1) traps on x86; make those cases divide by 1
        and return 0 (numpy's answer for x // 0) instead of crashing the process."""
        if isinstance(b, ir.Constant) and b.constant not in (0, -1):
            return b, None
        zero, one = ir.Constant(b.type, 0), ir.Constant(b.type, 1)
        bad = self.b.icmp_unsigned("==", b, zero)
        if not _dt.is_uint(t):
            int_min = ir.Constant(a.type, -(1 << (a.type.width - 1)))
            overflow = self.b.and_(self.b.icmp_signed("==", b, ir.Constant(b.type, -1)),
                                   self.b.icmp_signed("==", a, int_min))
            return self.b.select(self.b.or_(bad, overflow), one, b), bad
        return self.b.select(bad, one, b), bad

    def _int_divmod(self, e: Any, want: str) -> ir.Value:
        a, b, t = self._operands(e)
        b_safe, zero_div = self._safe_divisor(a, b, t)
        bld = self.b
        # x // c and x % c with x >= 0 (fused loop indices): unsigned division, which LLVM's
        # address analysis understands, so it can still tell the accessed elements apart
        unsigned_ok = (want in ("floordiv", "floormod") and isinstance(e.b, _e.IntImm) and e.b.value > 0
                       and self._non_negative(e.a))
        if _dt.is_uint(t) or t == "bool" or unsigned_ok:
            r = bld.udiv(a, b_safe) if want in ("div", "floordiv") else bld.urem(a, b_safe)
        else:
            q, rem = bld.sdiv(a, b_safe), bld.srem(a, b_safe)
            if want == "div":
                r = q
            elif want == "mod":
                r = rem
            else:
                # floor semantics: adjust when the remainder is nonzero and its sign differs from b's
                zero = ir.Constant(a.type, 0)
                adjust = bld.and_(bld.icmp_signed("!=", rem, zero),
                                  bld.icmp_signed("!=", bld.icmp_signed("<", rem, zero),
                                                  bld.icmp_signed("<", b_safe, zero)))
                if want == "floordiv":
                    r = bld.select(adjust, bld.sub(q, ir.Constant(a.type, 1)), q)
                else:
                    r = bld.select(adjust, bld.add(rem, b_safe), rem)
        if zero_div is not None:
            r = bld.select(zero_div, ir.Constant(r.type, 0), r)
        return r

    def expr_Div(self, e: Any) -> ir.Value:
        if _dt.is_float(e.a.dtype):
            a, b, _ = self._operands(e)
            return self.b.fdiv(a, b)
        return self._int_divmod(e, "div")

    def expr_Mod(self, e: Any) -> ir.Value:
        if _dt.is_float(e.a.dtype):
            a, b, _ = self._operands(e)
            return self.b.frem(a, b)
        return self._int_divmod(e, "mod")

    def expr_FloorDiv(self, e: Any) -> ir.Value:
        if _dt.is_float(e.a.dtype):
            a, b, t = self._operands(e)
            return self._intrinsic("llvm.floor", [self.b.fdiv(a, b)])
        return self._int_divmod(e, "floordiv")

    def expr_FloorMod(self, e: Any) -> ir.Value:
        if _dt.is_float(e.a.dtype):
            a, b, t = self._operands(e)
            q = self._intrinsic("llvm.floor", [self.b.fdiv(a, b)])
            return self.b.fsub(a, self.b.fmul(q, b))
        return self._int_divmod(e, "floormod")

    def _minmax(self, e: Any, is_min: bool) -> ir.Value:
        a, b, t = self._operands(e)
        if _dt.is_float(t):  # NaN-propagating, -0.0 < +0.0: numpy's minimum/maximum
            return self._intrinsic("llvm.minimum" if is_min else "llvm.maximum", [a, b])
        signed = not (_dt.is_uint(t) or t == "bool")
        cmp = self.b.icmp_signed if signed else self.b.icmp_unsigned
        return self.b.select(cmp("<" if is_min else ">", a, b), a, b)

    def expr_Min(self, e: Any) -> ir.Value:
        return self._minmax(e, True)

    def expr_Max(self, e: Any) -> ir.Value:
        return self._minmax(e, False)

    def _compare(self, e: Any, op: str) -> ir.Value:
        a, b, t = self._operands(e)
        if _dt.is_float(t):
            if op == "!=":  # NaN != x is true, as in numpy
                return self.b.fcmp_unordered(op, a, b)
            return self.b.fcmp_ordered(op, a, b)
        if _dt.is_uint(t) or t == "bool":
            return self.b.icmp_unsigned(op, a, b)
        return self.b.icmp_signed(op, a, b)

    def expr_EQ(self, e: Any) -> ir.Value: return self._compare(e, "==")
    def expr_NE(self, e: Any) -> ir.Value: return self._compare(e, "!=")
    def expr_LT(self, e: Any) -> ir.Value: return self._compare(e, "<")
    def expr_LE(self, e: Any) -> ir.Value: return self._compare(e, "<=")
    def expr_GT(self, e: Any) -> ir.Value: return self._compare(e, ">")
    def expr_GE(self, e: Any) -> ir.Value: return self._compare(e, ">=")

    def expr_And(self, e: Any) -> ir.Value:
        return self.b.and_(self._bool(e.a), self._bool(e.b))

    def expr_Or(self, e: Any) -> ir.Value:
        return self.b.or_(self._bool(e.a), self._bool(e.b))

    def expr_Not(self, e: Any) -> ir.Value:
        return self.b.xor(self._bool(e.a), ir.Constant(_I1, 1))

    def expr_Select(self, e: _e.Select) -> ir.Value:
        cond = self._bool(e.condition)
        t, f = self.visit_expr(e.true_value), self.visit_expr(e.false_value)
        if e.false_value.dtype != e.true_value.dtype:
            f = self._cast(f, e.false_value.dtype, e.true_value.dtype)
        return self.b.select(cond, t, f)

    def expr_Let(self, e: _e.Let) -> ir.Value:
        self.st.vars[id(e.var)] = self.visit_expr(e.value)
        return self.visit_expr(e.body)

    def expr_BufferLoad(self, e: _e.BufferLoad) -> ir.Value:
        value = self.b.load(self._address(e.buffer, e.indices), typ=_mem_type(e.buffer.dtype),
                            align=self._align(e.buffer.dtype))
        if e.buffer.dtype == "bool":
            value = self.b.icmp_unsigned("!=", value, ir.Constant(_I8, 0))
        return value

    # -- intrinsics -----------------------------------------------------------------------------
    def _intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        """Call an overloaded float intrinsic (``llvm.exp`` -> ``llvm.exp.f32``) on scalars."""
        return call_intrinsic(self.b, self._declare, name, args)

    def _libm(self, name: str, args: list[ir.Value], dtype: str) -> ir.Value:
        suffix = {"float32": "f", "float64": ""}.get(dtype)
        if suffix is None:  # float16: compute in float32
            wide = [self.b.fpext(a, ir.FloatType()) for a in args]
            r = self._libm(name, wide, "float32")
            return self.b.fptrunc(r, args[0].type)
        fn = self._declare(name + suffix, args[0].type, [a.type for a in args])
        call = self.b.call(fn, args)
        return call

    _LLVM_UNARY = {"tir.exp": "llvm.exp", "tir.exp2": "llvm.exp2", "tir.log": "llvm.log",
                   "tir.log2": "llvm.log2", "tir.sqrt": "llvm.sqrt", "tir.fabs": "llvm.fabs",
                   "tir.floor": "llvm.floor", "tir.ceil": "llvm.ceil", "tir.round": "llvm.roundeven",
                   "tir.nearbyint": "llvm.roundeven", "tir.trunc": "llvm.trunc", "tir.sin": "llvm.sin",
                   "tir.cos": "llvm.cos", "tir.tanh": "llvm.tanh"}

    def expr_Call(self, e: _e.Call) -> ir.Value:
        op = e.op if isinstance(e.op, str) else getattr(e.op, "name", str(e.op))
        if op == "tir.if_then_else":
            return self._if_then_else(e)
        if op in ("tir.likely",):
            return self.visit_expr(e.args[0])
        if op == "tir.call_extern":
            return self._call_extern(e)
        if op == "tir.ret":
            raise NotImplementedError("LLVM codegen: T.ret (returning a value from a prim func) is not "
                                      "supported; write the result into an output buffer")
        if op == "tir.isnan":
            value = self.visit_expr(e.args[0])
            return self.b.fcmp_unordered("uno", value, value)
        if op == "tir.popcount":
            value = self.visit_expr(e.args[0])
            return self.b.call(self._declare(f"llvm.ctpop.i{value.type.width}", value.type, [value.type]), [value])
        args = [self.visit_expr(a) for a in e.args]
        for i, a in enumerate(e.args):
            if a.dtype != e.dtype and _dt.is_float(e.dtype):
                args[i] = self._cast(args[i], a.dtype, e.dtype)
        if not _dt.is_float(e.dtype):
            raise CodegenError(f"LLVM codegen: {op} needs float arguments, got {e.dtype}")
        if e.dtype == "float32" and op in FAST_FLOAT32:  # vectorizable (see fastmath.py)
            return FAST_FLOAT32[op](self.b, args[0], self._declare)
        if op in self._LLVM_UNARY:
            return self._intrinsic(self._LLVM_UNARY[op], args[:1])
        one = ir.Constant(args[0].type, 1.0) if args else None
        if op == "tir.rsqrt":
            return self.b.fdiv(one, self._intrinsic("llvm.sqrt", args))
        if op == "tir.sigmoid":
            neg = self.b.fneg(args[0])
            return self.b.fdiv(one, self.b.fadd(one, self._intrinsic("llvm.exp", [neg])))
        if op == "tir.pow":
            return self._intrinsic("llvm.pow", args[:2])
        if op == "tir.erf":
            return self._libm("erf", args[:1], e.dtype)
        libm = op.removeprefix("tir.")
        if libm in LIBM_UNARY:
            return self._libm(libm, args[:1], e.dtype)
        if libm in LIBM_BINARY:
            return self._libm(libm, args[:2], e.dtype)
        raise CodegenError(f"LLVM codegen: unsupported intrinsic {op!r}")

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
        cond = self._bool(e.args[0])
        fn = self.st.fn
        then_bb, else_bb = fn.append_basic_block("ite_then"), fn.append_basic_block("ite_else")
        end_bb = fn.append_basic_block("ite_end")
        self.b.cbranch(cond, then_bb, else_bb)
        self.b.position_at_end(then_bb)
        tv = self.visit_expr(e.args[1])
        if e.args[1].dtype != e.dtype:
            tv = self._cast(tv, e.args[1].dtype, e.dtype)
        then_end = self.b.block
        self.b.branch(end_bb)
        self.b.position_at_end(else_bb)
        fv = self.visit_expr(e.args[2])
        if e.args[2].dtype != e.dtype:
            fv = self._cast(fv, e.args[2].dtype, e.dtype)
        else_end = self.b.block
        self.b.branch(end_bb)
        self.b.position_at_end(end_bb)
        phi = self.b.phi(tv.type)
        phi.add_incoming(tv, then_end)
        phi.add_incoming(fv, else_end)
        return phi


# -- compile and load --------------------------------------------------------------------------


def _optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, level: int, vectorize: bool = True) -> None:
    """LLVM's standard O<level> pipeline (new pass manager)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = vectorize and level >= 2
    pto.slp_vectorization = vectorize and level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        mpm.run(mod, pb)
    finally:  # free the native objects now rather than whenever the garbage collector runs
        mpm.close()
        pb.close()
        pto.close()


#: how many optimized modules :func:`_optimized_ir` remembers
OPTIMIZED_IR_CACHE_SIZE = 64
_optimized_cache: collections.OrderedDict[tuple, str] = collections.OrderedDict()


def _optimized_ir(raw: str, tm: llvm.TargetMachine, target: Target, vectorize: bool) -> tuple[llvm.ModuleRef, str]:
    """Parse and optimize ``raw`` LLVM IR: the module (ready for the JIT) and its optimized text.

    Every run of llvmlite's pass builder leaks ~65 KB of native memory (llvmlite 0.50 never
    frees the PassInstrumentationCallbacks it allocates per PassBuilder), so a notebook that
    rebuilds the same kernels again and again would grow without bound.  The same IR for the
    same target always optimizes to the same result: remember the last few, and JIT-compile the
    remembered text instead of optimizing again.  Call with ``_lock`` held.
    """
    key = (raw, target.mcpu, tuple(target.features), target.opt_level, vectorize)
    optimized = _optimized_cache.get(key)
    if optimized is not None:
        _optimized_cache.move_to_end(key)
        return llvm.parse_assembly(optimized), optimized
    mod = llvm.parse_assembly(raw)
    mod.verify()
    _optimize(mod, tm, target.opt_level, vectorize=vectorize)
    optimized = str(mod)
    _optimized_cache[key] = optimized
    while len(_optimized_cache) > OPTIMIZED_IR_CACHE_SIZE:
        _optimized_cache.popitem(last=False)
    return mod, optimized


def _pointer(arg: Any, array: Any) -> int:
    """Address of an argument's data (cached on NDArrays, which own their memory)."""
    return arg._ptr if type(arg) is NDArray else array.__array_interface__["data"][0]


class CompiledFunction:
    """A JIT-compiled kernel: checks the arguments, then calls the machine code (without the GIL)."""

    def __init__(self, name: str, address: int, sig: FunctionSignature, messages: list[str],
                 engine: Any, error_index_address: int = 0):
        self.name = name
        self.signature = sig
        argtypes = [ctypes.c_void_p if p.is_buffer else _ctype(p.dtype) for p in sig.params]
        argtypes += [_ctype(v.dtype) for v in sig.shape_vars]
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        self._messages = messages
        self._engine = engine  # keeps the machine code alive as long as this function is
        self._error_index = error_index_address
        self.__name__ = name
        self._all_buffers = all(p.is_buffer for p in sig.params)
        self._written = tuple(i for i, p in enumerate(sig.params) if p.written)
        # the shapes and dtypes of the last NDArray arguments that passed the full check, and
        # the sizes bound from them: a call with the same ones needs only their addresses
        self._checked: tuple | None = None

    def __call__(self, *args: Any) -> None:
        checked = self._checked
        if checked is not None and len(args) == len(checked[0]):
            shapes, dtypes, sizes = checked
            ptrs = []
            for arg, shape, dtype in zip(args, shapes, dtypes):
                if type(arg) is not NDArray or arg._array.shape != shape or arg._array.dtype is not dtype:
                    break
                ptrs.append(arg._ptr)
            else:
                for i in self._written:
                    if not args[i]._array.flags.writeable:
                        break
                else:
                    rc = self._cfunc(*ptrs, *sizes)
                    if rc != 0:
                        self._raise(rc)
                    return
        values, sizes = self.signature.bind(args)
        raw = [_pointer(arg, v) if spec.is_buffer else v
               for spec, arg, v in zip(self.signature.params, args, values)]
        if self._all_buffers and all(type(arg) is NDArray for arg in args):
            self._checked = (tuple(a._array.shape for a in args), tuple(a._array.dtype for a in args), sizes)
        rc = self._cfunc(*raw, *sizes)
        if rc != 0:
            self._raise(rc)

    def _raise(self, rc: int) -> None:
        """The exception for the error code the machine code returned."""
        msg = self._messages[rc - 1] if 0 < rc <= len(self._messages) else f"error code {rc}"
        if msg.startswith(BOUNDS_CHECK_PREFIX):
            index = ctypes.c_int64.from_address(self._error_index).value if self._error_index else None
            raise bounds_error(self.name, msg, index)
        raise RuntimeError(f"{self.name}: {msg}")

    def __repr__(self) -> str:
        return f"<compiled {self.name}({self.signature.describe()})>"


class LLVMModule(Module):
    """Native code for a set of PrimFuncs, JIT-compiled by LLVM's MCJIT."""

    def __init__(self, ll_unoptimized: str, ll_optimized: str, engine: Any, tm: llvm.TargetMachine,
                 target: Target, entry: dict[str, tuple[int, FunctionSignature]], messages: list[str]):
        super().__init__(type_key="llvm")
        self._engine = engine
        self._tm = tm
        self._ll_raw = ll_unoptimized
        self._ll = ll_optimized
        self._asm: str | None = None
        self.target = target
        error_index = engine.get_global_value_address(ERROR_INDEX_SYMBOL) if ERROR_INDEX_SYMBOL in ll_optimized else 0
        for name, (addr, sig) in entry.items():
            fn = CompiledFunction(name, addr, sig, messages, engine, error_index)
            self._functions[name] = PackedFunc(fn, name)

    def get_source(self, fmt: str = "ll") -> str:
        """``"ll"``: optimized LLVM IR; ``"ll-raw"``: as generated; ``"asm"``/``"s"``: assembly."""
        if fmt in ("ll", "", "llvm"):
            return self._ll
        if fmt in ("ll-raw", "raw"):
            return self._ll_raw
        if fmt in ("asm", "s"):
            if self._asm is None:
                with _lock:
                    self._asm = self._tm.emit_assembly(llvm.parse_assembly(self._ll))
            return self._asm
        raise ValueError(f"get_source: unknown format {fmt!r}; use 'll', 'll-raw' or 'asm'")

    def save(self, path: str, fmt: str = "") -> None:
        """Write LLVM IR (``.ll``), assembly (``.s``) or an object file (``.o``)."""
        fmt = fmt or path.rsplit(".", 1)[-1]
        if fmt == "o":
            with _lock:
                data = self._tm.emit_object(llvm.parse_assembly(self._ll))
            with open(path, "wb") as f:
                f.write(data)
            return
        with open(path, "w") as f:
            f.write(self.get_source("asm" if fmt in ("s", "asm") else "ll"))


def instrument_bound_checkers(funcs: dict[str, PrimFunc]) -> dict[str, PrimFunc]:
    """Run InstrumentBoundCheckers on functions that have not been through it yet (``minitvm.build``
    runs it itself, so that ``lib.ir_module`` shows the checks)."""
    from ...ir.module import IRModule

    mod = InstrumentBoundCheckers()(IRModule(dict(funcs)))
    return {gv.name_hint: f for gv, f in mod.items()}


def build_llvm(funcs: dict[str, PrimFunc], target: Target | str = "llvm",
               module_name: str = "minitvm") -> LLVMModule:
    """Compile lowered PrimFuncs (global name -> function) into a runnable module.

    Honors the current PassContext's ``tir.noalias`` (default for functions without the
    attribute), ``tir.disable_vectorize`` and ``tir.bounds_check`` (accesses not proven in range
    are checked by :class:`~minitvm.tir.transform.InstrumentBoundCheckers` and raise
    :class:`~minitvm.runtime.BoundsError` instead of touching memory outside the buffer) settings.
    """
    from ...transform import PassContext

    target = target if isinstance(target, Target) else Target(target)
    ctx = PassContext.current()
    disable_vectorize = bool(ctx.get_config("tir.disable_vectorize", False))
    # distinct buffer parameters are assumed not to overlap unless a function says otherwise
    # ("tir.noalias": False) or the PassContext does: it is what lets LLVM vectorize freely
    cg = CodeGenLLVM(target, module_name, noalias=bool(ctx.get_config("tir.noalias", True)),
                     disable_vectorize=disable_vectorize)
    if bounds_check_requested(ctx):
        funcs = instrument_bound_checkers(funcs)
    sigs: dict[str, FunctionSignature] = {}
    for name, func in funcs.items():
        sig = FunctionSignature.from_prim_func(name, func)
        sigs[name] = sig
        cg.add_function(name, func, sig)
    raw = str(cg.module)
    with _lock:  # LLVM's global state is not safe to drive from several threads at once
        mod, optimized = _optimized_ir(raw, cg.tm, target, not disable_vectorize)
        engine = llvm.create_mcjit_compiler(mod, cg.tm)
        engine.finalize_object()
        entry = {name: (engine.get_function_address(name), sig) for name, sig in sigs.items()}
    for name, (addr, _) in entry.items():
        if not addr:
            raise RuntimeError(f"LLVM JIT: no code for function {name!r}")
    return LLVMModule(raw, optimized, engine, cg.tm, target, entry, cg.assert_messages)
