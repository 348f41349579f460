"""CUDA C source for lowered device kernels (what TVM's CodeGenCUDA prints, simplified).

A device PrimFunc from :mod:`~minitvm.tir.transform.split_host_device` becomes one
``extern "C" __global__`` function: buffer parameters are ``float* __restrict__`` pointers,
thread indices are ``((int)threadIdx.x)``, a ``shared`` allocation is a ``__shared__``
array, a ``local`` one a per-thread array, ``T.tvm_storage_sync("shared")`` is
``__syncthreads()``.  Expressions are fully parenthesized, as TVM prints them.  Vectorized
loops are printed as plain loops (TVM would use ``float4``; the meaning is the same).
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir import dtype as _dt
from ...tir import expr as E
from ...tir import stmt as S
from ...tir.expr import IterVar, Range, Var
from ...tir.function import PrimFunc
from ...tir.functor import substitute
from ...tir.semantics import MATH_INTRINSICS
from ...tir.thread_scope import storage_rank
from ...tir.transform.instrument_bound_checkers import bounds_checks
from ...tir.transform.split_host_device import launch_dims

__all__ = ["cuda_source", "CUDACodegenError"]


class CUDACodegenError(NotImplementedError):
    """A construct the CUDA source printer does not print (named in the message)."""


_CTYPES = {"float32": "float", "float64": "double", "float16": "half", "int32": "int", "int64": "int64_t",
           "int16": "short", "int8": "signed char", "uint8": "unsigned char", "uint16": "unsigned short",
           "uint32": "unsigned int", "uint64": "uint64_t", "bool": "bool"}

_BINARY = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.EQ: "==",
           E.NE: "!=", E.And: "&&", E.Or: "||"}

#: tir intrinsic -> CUDA math function for float32 (the double version drops the ``f``): every math
#: row of the semantics table, under its own name except these (sigmoid is printed as 1 / (1 + exp(-x)))
_CUDA_SPELLING = {"round": "rint", "sigmoid": None}
_MATH = {name: _CUDA_SPELLING.get(name, name) for name in MATH_INTRINSICS if _CUDA_SPELLING.get(name, name)}
#: integer intrinsic -> C operator
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<", "shift_right": ">>"}


def ctype(dtype: str) -> str:
    base = str(dtype)
    if base not in _CTYPES:
        raise CUDACodegenError(f"CUDA source: no C type for dtype {dtype!r}")
    return _CTYPES[base]


class _CUDAPrinter:
    def __init__(self, func: PrimFunc, name: str):
        self.func, self.name = func, name
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[int, str] = {}  # var id -> C name
        self.used: set[str] = set()
        self.ana = Analyzer()
        self.needs_floor_helpers = False
        self.bounds_checks = bounds_checks(func)  # (of a cuda-emulated build under tir.bounds_check)

    # -- names -------------------------------------------------------------------------------
    def bind_name(self, var: Var, hint: str | None = None) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in (hint or var.name)) or "v"
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        self.names[id(var)] = name
        return name

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        if isinstance(e, E.IntImm):
            if e.dtype == "bool":
                return "true" if e.value else "false"
            return f"(int64_t){e.value}" if e.dtype == "int64" else str(e.value)
        if isinstance(e, E.FloatImm):
            text = f"{e.value:e}"
            if text in ("inf", "-inf", "nan"):
                bits32 = {"inf": "0x7f800000", "-inf": "0xff800000", "nan": "0x7fc00000"}[text]
                bits64 = {"inf": "0x7ff0000000000000", "-inf": "0xfff0000000000000", "nan": "0x7ff8000000000000"}[text]
                return f"__int_as_float({bits32})" if e.dtype == "float32" else f"__longlong_as_double({bits64}LL)"
            return text + ("f" if e.dtype == "float32" else "")
        if isinstance(e, Var):
            name = self.names.get(id(e))
            if name is None:
                raise CUDACodegenError(f"CUDA source: variable {e.name} is not defined in kernel {self.name}")
            return name
        if isinstance(e, E.Cast):
            return f"(({ctype(e.dtype)}){self.expr(e.value)})"
        if type(e) in _BINARY:
            return f"({self.expr(e.a)} {_BINARY[type(e)]} {self.expr(e.b)})"
        if isinstance(e, E.Not):
            return f"(!{self.expr(e.a)})"
        if isinstance(e, (E.Div, E.Mod)):
            return f"({self.expr(e.a)} {'/' if isinstance(e, E.Div) else '%'} {self.expr(e.b)})"
        if isinstance(e, (E.FloorDiv, E.FloorMod)):
            return self._floor(e)
        if isinstance(e, (E.Min, E.Max)):
            fn = "min" if isinstance(e, E.Min) else "max"
            if _dt.is_float(e.dtype):
                fn = "f" + fn + ("f" if e.dtype == "float32" else "")
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, E.Select):
            return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"
        if isinstance(e, E.BufferLoad):
            return f"{self.buffer_name(e.buffer)}[{self.expr(e.indices[0])}]"
        if isinstance(e, E.Call):
            return self._call(e)
        if isinstance(e, E.Let):
            raise CUDACodegenError("CUDA source: a Let expression (T.Let) is not printed; bind it with a LetStmt")
        raise CUDACodegenError(f"CUDA source: no CUDA form for {type(e).__name__}")

    def _floor(self, e: Any) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        if _dt.is_float(e.dtype):
            suffix = "f" if e.dtype == "float32" else ""
            q = f"floor{suffix}({a} / {b})"
            return q if isinstance(e, E.FloorDiv) else f"({a} - {q} * {b})"
        # indices are non-negative almost always: then C's / and % round down too
        if self.ana.can_prove(e.a >= 0) and self.ana.can_prove(e.b > 0):
            return f"({a} {'/' if isinstance(e, E.FloorDiv) else '%'} {b})"
        self.needs_floor_helpers = True
        return f"{'floordiv' if isinstance(e, E.FloorDiv) else 'floormod'}({a}, {b})"

    def _call(self, e: E.Call) -> str:
        op = e.op if isinstance(e.op, str) else getattr(e.op, "name", str(e.op))
        short = op.removeprefix("tir.")
        args = [self.expr(a) for a in e.args]
        if short == "if_then_else":
            return f"({args[0]} ? {args[1]} : {args[2]})"
        if short == "likely":
            return args[0]
        if short in _MATH and _dt.is_float(e.dtype):
            fn = _MATH[short] + ("f" if e.dtype == "float32" else "")
            return f"{fn}({', '.join(args)})"
        if short == "sigmoid" and _dt.is_float(e.dtype):
            f = "f" if e.dtype == "float32" else ""
            return f"(1.0{f} / (1.0{f} + exp{f}(-{args[0]})))"
        if short == "call_extern":
            return f"{e.args[0].value}({', '.join(args[1:])})"
        if short in _BITWISE and len(args) == 2:
            return f"({args[0]} {_BITWISE[short]} {args[1]})"
        if short == "bitwise_not":
            return f"(~{args[0]})"
        if short == "isnan" and _dt.is_float(e.args[0].dtype):  # CUDA's isnan takes float and double
            return f"isnan({args[0]})"
        raise CUDACodegenError(f"CUDA source: no CUDA form for the call T.{short}")

    def buffer_name(self, buffer: Any) -> str:
        name = self.names.get(id(buffer.data))
        if name is None:
            raise CUDACodegenError(f"CUDA source: buffer {buffer.name} is neither a parameter nor allocated")
        return name

    # -- statements --------------------------------------------------------------------------
    def stmt(self, s: Any) -> None:
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                self.stmt(c)
        elif isinstance(s, S.AttrStmt):
            self._attr(s)
        elif isinstance(s, S.Allocate):
            self._allocate(s)
        elif isinstance(s, S.For):
            self._for(s)
        elif isinstance(s, S.IfThenElse):
            self.emit(f"if ({self.expr(s.condition)}) {{")
            self._nested(s.then_case)
            if s.else_case is not None:
                self.emit("} else {")
                self._nested(s.else_case)
            self.emit("}")
        elif isinstance(s, S.LetStmt):
            value = self.expr(s.value)
            self.emit(f"{ctype(s.var.dtype)} {self.bind_name(s.var)} = {value};")
            self.stmt(s.body)
        elif isinstance(s, S.BufferStore):
            self.emit(f"{self.buffer_name(s.buffer)}[{self.expr(s.indices[0])}] = {self.expr(s.value)};")
        elif isinstance(s, S.Evaluate):
            v = s.value
            if isinstance(v, E.Call) and v.op == "tir.tvm_storage_sync":
                self.emit("__syncthreads();")
            elif isinstance(v, (E.IntImm,)):
                pass
            else:
                self.emit(f"{self.expr(v)};")
        elif isinstance(s, S.AssertStmt) and str(s.message) in self.bounds_checks:
            self.stmt(s.body)  # the emulator's bounds check: the CUDA source is the kernel's, unchecked
        elif isinstance(s, S.AssertStmt):
            raise CUDACodegenError(f"CUDA source: an assertion ({s.message!r}) inside a kernel is not printed")
        else:
            raise CUDACodegenError(f"CUDA source: no CUDA form for {type(s).__name__}")

    def _nested(self, s: Any) -> None:
        self.indent += 1
        self.stmt(s)
        self.indent -= 1

    def _attr(self, s: S.AttrStmt) -> None:
        if not (isinstance(s.node, IterVar) and s.attr_key == "thread_extent"):
            raise CUDACodegenError(f"CUDA source: no CUDA form for the attribute {s.attr_key!r}")
        tag = s.node.thread_tag
        if id(s.node.var) not in self.names:
            self.names[id(s.node.var)] = f"((int){tag})"
            self.ana.bind(s.node.var, Range(E.const(0, s.node.var.dtype), s.value))
        self.stmt(s.body)

    def _allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        size = 1
        for d in buf.shape:
            if not isinstance(d, E.IntImm):
                raise CUDACodegenError(f"CUDA source: allocation {buf.name} has a symbolic size ({d})")
            size *= d.value
        prefix = "__shared__ " if storage_rank(buf.scope) == 1 else ""
        if storage_rank(buf.scope) == 0:
            raise CUDACodegenError(f"CUDA source: a global allocation ({buf.name}) inside a kernel; allocate it "
                                   "on the host")
        name = self.bind_name(buf.data, buf.name)
        self.emit(f"{prefix}{ctype(buf.dtype)} {name}[{size}];")
        self.stmt(s.body)

    def _vector_copy(self, s: S.For) -> bool:
        """A vectorized copy of 2 or 4 consecutive floats as one ``float2``/``float4`` move (as TVM
        prints the course's cooperative fetch); False when ``s`` is not one."""
        body = s.body
        if not (s.kind == S.ForKind.VECTORIZED and isinstance(s.extent, E.IntImm) and s.extent.value in (2, 4)
                and isinstance(s.min, E.IntImm) and s.min.value == 0 and isinstance(body, S.BufferStore)
                and isinstance(body.value, E.BufferLoad) and body.buffer.dtype == "float32"
                and body.value.buffer.dtype == "float32"):
            return False
        var, lanes = s.loop_var, s.extent.value
        bases = []
        for idx in (body.indices[0], body.value.indices[0]):
            base = self.ana.simplify(substitute(idx, {var: E.const(0, var.dtype)}))
            if not self.ana.can_prove_equal(idx - base, var):
                return False
            bases.append(base)
        # aligned only if the base is a multiple of the lane count
        if not all(self.ana.can_prove_equal(E.FloorMod(b, E.const(lanes, b.dtype)), 0) for b in bases):
            return False
        vt = f"float{lanes}"
        dst, src = self.buffer_name(body.buffer), self.buffer_name(body.value.buffer)
        self.emit(f"*({vt}*)({dst} + {self.expr(bases[0])}) = *({vt}*)({src} + {self.expr(bases[1])});")
        return True

    def _for(self, s: S.For) -> None:
        if self._vector_copy(s):
            return
        var = s.loop_var
        name = self.bind_name(var)
        ty = ctype(var.dtype)
        lo, extent = self.expr(s.min), self.expr(s.extent)
        if s.kind == S.ForKind.UNROLLED:
            self.emit("#pragma unroll")
        end = extent if isinstance(s.min, E.IntImm) and s.min.value == 0 else f"{lo} + {extent}"
        self.emit(f"for ({ty} {name} = {lo}; {name} < {end}; ++{name}) {{")
        if isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm):
            self.ana.bind(var, Range(s.min, s.extent))
        self._nested(s.body)
        self.emit("}")

    # -- the function ------------------------------------------------------------------------
    def function(self) -> str:
        params = []
        for p in self.func.params:
            buf = self.func.buffer_map.get(p)
            if buf is not None:
                params.append(f"{ctype(buf.dtype)}* __restrict__ {self.bind_name(buf.data, buf.name)}")
            else:
                params.append(f"{ctype(p.dtype)} {self.bind_name(p)}")
        threads = 1
        launch = self.func.attrs.get("tir.kernel_launch_params", [])
        extents = _launch_extents(self.func.body)
        for tag in launch:
            if tag.startswith("threadIdx.") and isinstance(extents.get(tag), int):
                threads *= extents[tag]
        self.stmt(self.func.body)
        head = f'extern "C" __global__ void __launch_bounds__({threads}) {self.name}({", ".join(params)}) {{'
        return "\n".join([head, *self.lines, "}"])


def _launch_extents(body: Any) -> dict[str, Any]:
    return {tag: (e.value if isinstance(e, E.IntImm) else e) for tag, e, _ in launch_dims(body)}


#: no #include: NVRTC compiles the source as it is (float4, min/max and the math functions are built in)
_PREAMBLE = ""

_FLOOR_HELPERS = """
__device__ __forceinline__ int floordiv(int a, int b) { int q = a / b; return (q * b > a) ? q - 1 : q; }
__device__ __forceinline__ int floormod(int a, int b) { return a - floordiv(a, b) * b; }
"""


def cuda_source(kernels: dict[str, PrimFunc]) -> str:
    """The CUDA C source of device kernels (name -> lowered device PrimFunc)."""
    bodies = []
    helpers = False
    half = False
    for name, func in kernels.items():
        p = _CUDAPrinter(func, name)
        bodies.append(p.function())
        helpers |= p.needs_floor_helpers
        half |= "half" in bodies[-1]
    pre = _PREAMBLE + ("#include <cuda_fp16.h>\n" if half else "") + (_FLOOR_HELPERS.lstrip() if helpers else "")
    return pre + ("\n" if pre else "") + "\n\n".join(bodies) + "\n"

