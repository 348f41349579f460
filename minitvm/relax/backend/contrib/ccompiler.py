"""``ccompiler``: an example BYOC backend -- matrix products written out as C and compiled by gcc.

Importing this module registers, under the prefix ``"ccompiler"``, the patterns of a float32
2-D ``R.matmul`` (its right operand may be ``R.permute_dims`` of a matrix), optionally ``+ bias``
and ``R.nn.relu``; and the code generator ``relax.ext.ccompiler`` that
:class:`~minitvm.relax.transform.RunCodegen` calls::

    mod = relax.transform.FuseOpsByPattern(get_patterns_with_prefix("ccompiler"), annotate_codegen=True)(mod)
    mod = relax.transform.RunCodegen()(mod)   # -> R.call_dps_packed("fused_..._ccompiler", ...)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())

The check function accepts a match only when every shape is static, the bias is ``(N,)``,
``(1, N)`` or ``(M, N)``, and no value inside the match is read outside it; what it refuses
stays in Relax and is compiled as usual.  The code generator turns each offloaded function --
one composite call or several (``MergeCompositeFunctions``) -- into one C function of
``DLTensor*`` arguments (inputs, the constants the composites hold, then outputs) that calls
``ccompiler_gemm`` once per composite, and compiles all of them with the system C compiler
through :class:`minitvm.relax.frontend.nn.SourceModule`; ``module.get_source()`` shows the C.
``target_options={"ccompiler": {"compiler": "clang", "compile_options": [...]}}`` picks the
compiler and its flags.
"""

from __future__ import annotations

from typing import Any, Callable

from ....ir.op import Op
from ....runtime.module import Module
from ....runtime.ndarray import NDArray, array
from ....runtime.registry import register_func
from ....tir.expr import IntImm
from ...expr import Call, Constant, Function, Tuple, Var
from ...frontend.nn.extern import SourceModule
from ...struct_info import TensorStructInfo
from ...transform.fuse_ops_by_pattern import PatternCheckContext
from ..pattern_registry import register_patterns
from ..patterns import make_matmul_pattern
from ..utils import has_leaking_intermediate_variables

__all__ = ["CCompilerModule", "codegen", "C_PRELUDE"]

#: the C every generated file starts with: the one kernel the composites call
C_PRELUDE = r"""#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dlpack/dlpack.h>

static float* ccompiler_data(DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }

/* C[M,N] = A[M,K] @ B (+ bias) (then ReLU); B is [K,N], or [N,K] when trans_b;
   bias holds N values (bias_rows 1) or M*N (bias_rows M) */
static void ccompiler_gemm(const float* A, const float* B, const float* bias, float* C, int64_t M, int64_t K,
                           int64_t N, int trans_b, int64_t bias_rows, int relu) {
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * N;
    for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
    if (trans_b) {
      for (int64_t j = 0; j < N; ++j) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k) acc += A[i * K + k] * B[j * K + k];
        c[j] = acc;
      }
    } else {
      for (int64_t k = 0; k < K; ++k) {
        const float a = A[i * K + k];
        const float* b = B + k * N;
        for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
      }
    }
    if (bias) {
      const float* row = bias + (bias_rows == 1 ? 0 : i) * N;
      for (int64_t j = 0; j < N; ++j) c[j] += row[j];
    }
    if (relu)
      for (int64_t j = 0; j < N; ++j) c[j] = c[j] > 0.0f ? c[j] : 0.0f;
  }
}
"""


# -- patterns ------------------------------------------------------------------------------------

def _static_shape(sinfo: Any) -> tuple[int, ...] | None:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or not hasattr(sinfo.shape, "values"):
        return None
    dims = list(sinfo.shape.values)
    return tuple(int(d.value) for d in dims) if all(isinstance(d, IntImm) for d in dims) else None


def _float32_tensor(expr: Any) -> tuple[int, ...] | None:
    """The static shape of a float32 tensor, else None."""
    sinfo = getattr(expr, "struct_info_", None)
    shape = _static_shape(sinfo)
    return shape if shape is not None and sinfo.dtype == "float32" else None


def _float32_matrix(expr: Any) -> tuple[int, ...] | None:
    shape = _float32_tensor(expr)
    return shape if shape is not None and len(shape) == 2 else None


def _check_matmul(context: PatternCheckContext) -> bool:
    """Accept a match the C kernel computes exactly: float32 matrices of static shapes."""
    if has_leaking_intermediate_variables(context):
        return False
    root = context.annotated_expr["root"]
    lhs, rhs = _float32_matrix(root.args[0]), _float32_matrix(context.annotated_expr["rhs"])
    out = _float32_matrix(root)
    if lhs is None or rhs is None or out is None or str(root.attrs.get("out_dtype", "void")) not in ("void", "float32"):
        return False
    permute = context.matched_bindings.get(root.args[1])
    if isinstance(permute, Call) and permute.op == Op.get("relax.permute_dims"):
        axes = permute.attrs.get("axes")
        if axes is not None and [int(a) for a in axes] != [1, 0]:
            return False
    if "bias" in context.annotated_expr:
        bias = _static_shape(getattr(context.annotated_expr["bias"], "struct_info_", None))
        m, n = out
        if bias not in ((n,), (1, n), (m, n)) or context.annotated_expr["bias"].struct_info.dtype != "float32":
            return False
    return True


def _register() -> None:
    """The patterns, smallest first: a later one has priority, so the largest match wins."""
    entries = []
    for transposed in (False, True):
        for bias, relu in ((False, False), (False, True), (True, False), (True, True)):
            name = "ccompiler.matmul" + "_transposed" * transposed + "_bias" * bias + "_relu" * relu
            pattern, annotations = make_matmul_pattern(bias, "relax.nn.relu" if relu else None, transposed)
            entries.append((name, pattern, annotations, _check_matmul))
    register_patterns(entries)


_register()


# -- code generation -----------------------------------------------------------------------------

class _Gemm:
    """One composite function, read: operands as parameter indices (or constants) and flags."""

    def __init__(self, func: Function) -> None:
        self.name = str(func.attrs.get("Composite"))
        index = {id(p): i for i, p in enumerate(func.params)}
        value: dict[int, Any] = {}
        self.lhs = self.rhs = self.bias = None
        self.trans_b, self.relu, self.bias_rows = False, False, 1
        for block in func.body.blocks:
            for b in block.bindings:
                value[id(b.var)] = b.value
                self._read(b.value, index, value)
        self.shape = _float32_matrix(func.body.body)
        if self.lhs is None or self.rhs is None or self.shape is None:
            raise NotImplementedError(f"ccompiler: composite {self.name!r} is not a float32 matrix product")

    def _operand(self, expr: Any, index: dict[int, int]) -> Any:
        if id(expr) in index:
            return index[id(expr)]
        if isinstance(expr, Constant):
            return expr
        raise NotImplementedError(f"ccompiler: composite {self.name!r} reads {expr!r}, not a parameter or a constant")

    def _read(self, call: Any, index: dict[int, int], value: dict[int, Any]) -> None:
        op = call.op.name if isinstance(call, Call) and isinstance(call.op, Op) else None
        if op == "relax.permute_dims":
            return  # read through by the matmul that uses it
        if op == "relax.matmul":
            rhs = value.get(id(call.args[1]))
            self.trans_b = isinstance(rhs, Call) and rhs.op == Op.get("relax.permute_dims")
            self.lhs = self._operand(call.args[0], index)
            self.rhs = self._operand(rhs.args[0] if self.trans_b else call.args[1], index)
        elif op == "relax.add":
            product = next(a for a in call.args if isinstance(value.get(id(a)), Call))
            bias = call.args[1] if call.args[0] is product else call.args[0]
            self.bias = self._operand(bias, index)
            self.bias_rows = _static_shape(bias.struct_info)[0] if len(bias.struct_info.shape.values) == 2 else 1
        elif op == "relax.nn.relu":
            self.relu = True
        else:
            raise NotImplementedError(f"ccompiler: composite {self.name!r} holds {op or type(call).__name__}, "
                                      "which the C code generator does not write")


class _Function:
    """One offloaded function as C: its signature, the buffers and one ``ccompiler_gemm`` per call."""

    def __init__(self, func: Function) -> None:
        self.symbol = str(func.attrs["global_symbol"])
        self.inputs = [_float32_tensor(p) for p in func.params]
        if any(s is None for s in self.inputs):
            raise NotImplementedError(f"ccompiler: {self.symbol} takes a parameter that is not a float32 tensor "
                                      "of static shape")
        self.ptr: dict[int, str] = {id(p): f"in{i}" for i, p in enumerate(func.params)}
        self.constants: list[Constant] = []
        self.locals: dict[int, _Gemm] = {}
        self.lines: list[str] = []
        self.buffers: list[str] = []
        body = func.body
        outputs = list(body.body.fields) if isinstance(body.body, Tuple) else [body.body]
        self.outputs = [_float32_matrix(o) for o in outputs]
        for k, out in enumerate(outputs):  # an output is computed in place when it can be
            if isinstance(out, Var) and id(out) not in self.ptr and outputs.index(out) == k:
                self.ptr[id(out)] = f"out{k}"
        for block in body.blocks:
            for b in block.bindings:
                self._binding(b.var, b.value)
        for k, out in enumerate(outputs):
            if self.ptr.get(id(out)) != f"out{k}":
                m, n = self.outputs[k]
                self.lines.append(f"  memcpy(out{k}, {self._pointer(out)}, {m * n} * sizeof(float));")

    def _pointer(self, expr: Any) -> str:
        if isinstance(expr, Constant):
            self.constants.append(expr)
            return f"const{len(self.constants) - 1}"
        if id(expr) not in self.ptr:
            raise NotImplementedError(f"ccompiler: {self.symbol} reads {expr!r}, which it does not compute")
        return self.ptr[id(expr)]

    def _binding(self, var: Var, value: Any) -> None:
        if isinstance(value, Function) and value.attrs.get("Composite"):
            self.locals[id(var)] = _Gemm(value)
        elif isinstance(value, Var):
            self.ptr[id(var)] = self._pointer(value)
        elif isinstance(value, Call) and id(value.op) in self.locals:
            gemm = self.locals[id(value.op)]
            args = [value.args[o] if isinstance(o, int) else o for o in (gemm.lhs, gemm.rhs, gemm.bias)]
            a, b = self._pointer(args[0]), self._pointer(args[1])
            bias = "NULL" if gemm.bias is None else self._pointer(args[2])
            if id(var) not in self.ptr:
                self.ptr[id(var)] = f"buf{len(self.buffers)}"
                self.buffers.append(f"{gemm.shape[0] * gemm.shape[1]}")
            (m, n), k = gemm.shape, _float32_matrix(args[0])[1]
            self.lines.append(f"  ccompiler_gemm({a}, {b}, {bias}, {self.ptr[id(var)]}, {m}, {k}, {n}, "
                              f"{int(gemm.trans_b)}, {gemm.bias_rows if gemm.bias is not None else 1}, "
                              f"{int(gemm.relu)});  /* {gemm.name} */")
        else:
            raise NotImplementedError(f"ccompiler: {self.symbol} binds {type(value).__name__} to {var.name_hint}; "
                                      "the C code generator writes calls of composite functions only")

    def source(self) -> str:
        names = ([f"in{i}" for i in range(len(self.inputs))] + [f"const{i}" for i in range(len(self.constants))]
                 + [f"out{k}" for k in range(len(self.outputs))])
        out = [f"int {self.symbol}({', '.join(f'DLTensor* t_{n}' for n in names)}) {{"]
        out += [f"  float* {n} = ccompiler_data(t_{n});" for n in names]
        out += [f"  float* buf{i} = (float*)malloc({size} * sizeof(float));" for i, size in enumerate(self.buffers)]
        out += [f"  if (!buf{i}) return 1;" for i in range(len(self.buffers))]
        out += self.lines + [f"  free(buf{i});" for i in range(len(self.buffers))] + ["  return 0;", "}"]
        return "\n".join(out)


class CCompilerModule(Module):
    """The compiled functions of one ``relax.ext.ccompiler`` call; ``get_source()`` is their C."""

    def __init__(self, functions: dict[str, Callable[..., Any]], source: str, library: Module) -> None:
        super().__init__(functions, type_key="c")
        self.source = source
        self._library = library  # keeps the shared library loaded

    def get_source(self, fmt: str = "") -> str:
        return self.source


def _entry(symbol: str, c_func: Callable[..., Any], fn: _Function) -> Callable[..., Any]:
    """The function the VM calls: checks the tensors it is given, adds the constants, calls C."""
    shapes = fn.inputs + fn.outputs
    constants = [array(c.data.numpy()) for c in fn.constants]

    def call(*args: Any) -> None:
        if len(args) != len(shapes):
            raise TypeError(f"{symbol} (ccompiler) takes {len(fn.inputs)} inputs and {len(fn.outputs)} outputs, "
                            f"got {len(args)} tensors")
        for i, (arg, shape) in enumerate(zip(args, shapes)):
            if not isinstance(arg, NDArray) or tuple(arg.shape) != shape or str(arg.dtype) != "float32":
                got = f"{tuple(arg.shape)} {arg.dtype}" if isinstance(arg, NDArray) else type(arg).__name__
                raise ValueError(f"{symbol} (ccompiler): tensor {i} must be float32 of shape {shape}, got {got}")
        c_func(*args[:len(fn.inputs)], *constants, *args[len(fn.inputs):])

    call.__name__ = symbol
    return call


@register_func("relax.ext.ccompiler", override=True)
def codegen(functions: list[Function], options: dict | None = None,
            constant_names: dict | None = None) -> list[Module]:
    """``relax.ext.ccompiler``: C for the offloaded functions, compiled into one module."""
    options = dict(options or {})
    unknown = sorted(set(options) - {"compiler", "compile_options"})
    if unknown:
        raise NotImplementedError(f"relax.ext.ccompiler: target option(s) {', '.join(unknown)} not supported "
                                  "(it takes 'compiler' and 'compile_options')")
    read = [_Function(f) for f in functions]
    source = "\n\n".join([C_PRELUDE, *(fn.source() for fn in read)]) + "\n"
    symbols = {fn.symbol: (lambda *args: None) for fn in read}
    library = SourceModule(symbols, source, "c", compile_options=options.get("compile_options"),
                           compiler=options.get("compiler")).load()
    entries = {fn.symbol: _entry(fn.symbol, library[fn.symbol], fn) for fn in read}
    return [CCompilerModule(entries, source, library)]
