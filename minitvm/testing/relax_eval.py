"""Evaluate a Relax function whose operators were legalized, without the VM.

``evaluate(mod, "main", x, w)`` walks the bindings of ``mod["main"]`` in order: each
``R.call_tir`` allocates its outputs from the out struct info (symbolic dimensions
bound from the arguments' shapes), runs the PrimFunc, compiled with
``minitvm.build(..., target="llvm")`` (or ``target="python"``, the interpreter), and
binds the result; tuples, tuple items, constants and ``match_cast`` are followed too.
Compiled kernels are cached by structure, so tests that build the same kernel again pay
for it once.  An operator call that is still there (not legalized) is an error naming it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import nd, relax
from ..arith import Analyzer
from ..driver import build
from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from ..ir.structural import structural_equal, structural_hash
from ..relax.struct_info import shape_text
from ..runtime.ndarray import as_numpy
from ..tir.expr import IntImm, PrimExpr
from ..tir.expr import Var as TirVar
from ..tir.function import PrimFunc
from ..tir.functor import substitute

__all__ = ["evaluate", "build_kernel", "RelaxEvalError"]


class RelaxEvalError(RuntimeError):
    """The function holds something this evaluator does not run."""


_KERNELS: dict[tuple[int, str], list[tuple[PrimFunc, Any]]] = {}


def build_kernel(func: PrimFunc, target: str = "llvm") -> Any:
    """``minitvm.build`` of one PrimFunc, cached by structural equality."""

    bucket = _KERNELS.setdefault((structural_hash(func), target), [])
    for known, fn in bucket:
        if structural_equal(known, func):
            return fn
    attrs = dict(func.attrs)
    attrs["global_symbol"] = "kernel"
    named = PrimFunc(func.params, func.buffer_map, func.body, func.ret_type, attrs)
    fn = build(named, target=target)["kernel"]
    bucket.append((func, fn))
    return fn


class _Evaluator:
    def __init__(self, mod: IRModule, target: str):
        self.relax = relax
        self.mod, self.target = mod, target
        self.values: dict[int, Any] = {}
        self.sym: dict[int, int] = {}
        self.sym_vars: dict[int, TirVar] = {}
        self.analyzer = Analyzer()

    # -- symbolic dimensions ----------------------------------------------------------------
    def dim(self, e: PrimExpr) -> int:
        if isinstance(e, IntImm):
            return e.value
        known = {v: IntImm(v.dtype, self.sym[id(v)]) for k, v in self.sym_vars.items()}
        out = self.analyzer.simplify(substitute(e, known))
        if not isinstance(out, IntImm):
            raise RelaxEvalError(f"cannot evaluate the dimension {e}: unbound symbolic variables")
        return out.value

    def match(self, sinfo: Any, value: Any, where: str) -> None:
        """Bind the symbolic dimensions of ``sinfo`` from ``value`` and check the rest."""
        r = self.relax
        if isinstance(sinfo, r.TensorStructInfo):
            if not isinstance(value, np.ndarray):
                raise RelaxEvalError(f"{where}: expected a tensor, got {type(value).__name__}")
            if not sinfo.is_unknown_dtype and str(value.dtype) != sinfo.dtype:
                raise RelaxEvalError(f"{where}: expected dtype {sinfo.dtype}, got {value.dtype}")
            vals = sinfo.shape_values
            if vals is None:
                return
            if len(vals) != value.ndim:
                raise RelaxEvalError(f"{where}: expected {len(vals)} dimensions, got shape {value.shape}")
            for d, n in zip(vals, value.shape):
                if isinstance(d, TirVar) and id(d) not in self.sym:
                    self.sym[id(d)], self.sym_vars[id(d)] = int(n), d
                elif self.dim(d) != n:
                    raise RelaxEvalError(f"{where}: expected shape {shape_text(vals)}, got {value.shape}")
        elif isinstance(sinfo, r.TupleStructInfo):
            for k, (f, v) in enumerate(zip(sinfo.fields, value)):
                self.match(f, v, f"{where}[{k}]")

    # -- expressions -------------------------------------------------------------------------
    def eval(self, e: Any) -> Any:
        r = self.relax
        if isinstance(e, r.Var):
            if id(e) not in self.values:
                raise RelaxEvalError(f"variable {e.name} is used before it is bound")
            return self.values[id(e)]
        if isinstance(e, r.Constant):
            return as_numpy(e.data)
        if isinstance(e, r.Tuple):
            return tuple(self.eval(f) for f in e.fields)
        if isinstance(e, r.TupleGetItem):
            return self.eval(e.tuple_value)[e.index]
        if isinstance(e, r.ShapeExpr):
            return tuple(self.dim(d) for d in e.values)
        if isinstance(e, r.PrimValue):
            return self.dim(e.value) if isinstance(e.value, (IntImm, TirVar)) else e.value
        if isinstance(e, r.SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    self.bind(b)
            return self.eval(e.body)
        if isinstance(e, r.Call):
            if isinstance(e.op, Op) and e.op.name == "relax.call_tir":
                return self.call_tir(e)
            what = e.op.name if isinstance(e.op, Op) else repr(e.op)
            raise RelaxEvalError(f"cannot evaluate a call of {what}: only R.call_tir runs here "
                                 "(was the module legalized with relax.transform.LegalizeOps?)")
        raise RelaxEvalError(f"cannot evaluate {type(e).__name__}")

    def bind(self, b: Any) -> None:
        value = self.eval(b.value)
        if isinstance(b, self.relax.MatchCast):
            self.match(b.struct_info, value, f"match_cast of {b.var.name}")
        self.values[id(b.var)] = value

    def alloc(self, sinfo: Any) -> Any:
        if isinstance(sinfo, self.relax.TupleStructInfo):
            return tuple(self.alloc(f) for f in sinfo.fields)
        return np.empty([self.dim(d) for d in sinfo.shape_values], sinfo.dtype)

    def call_tir(self, call: Any) -> Any:
        gv = call.args[0]
        func = self.mod[gv.name_hint] if isinstance(gv, GlobalVar) else None
        if not isinstance(func, PrimFunc):
            raise RelaxEvalError(f"R.call_tir of {gv!r}: no such PrimFunc in the module")
        args = list(self.eval(call.args[1]))
        out = self.alloc(call.sinfo_args[0])
        outs = list(out) if isinstance(out, tuple) else [out]
        scalars = list(self.eval(call.args[2])) if len(call.args) == 3 else []
        kernel = build_kernel(func, self.target)
        arrays = [nd.array(np.array(a, order="C", copy=not a.flags.c_contiguous)) for a in (*args, *outs)]
        kernel(*arrays, *scalars)
        results = [a.numpy() for a in arrays[len(args):]]
        return tuple(results) if isinstance(out, tuple) else results[0]


def evaluate(mod: IRModule, func_name: str = "main", *args: Any, target: str = "llvm") -> Any:
    """Run ``mod[func_name]`` on numpy ``args``; returns numpy arrays (tuples stay tuples)."""
    ev = _Evaluator(mod, target)
    func = mod[func_name]
    if len(args) != len(func.params):
        raise TypeError(f"{func_name} takes {len(func.params)} arguments, got {len(args)}")
    for p, a in zip(func.params, args):
        a = np.asarray(a)
        ev.match(p.struct_info, a, f"argument {p.name}")
        ev.values[id(p)] = a
    return ev.eval(func.body)
