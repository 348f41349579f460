"""TensorIR: the loop-level IR that kernels are written, scheduled and compiled in.

The nodes (expressions, statements, buffers, functions, visitors, ``op``) load with the package;
what is built on them and on ``minitvm.arith`` -- ``IndexMap``, ``schedule`` (``Schedule``,
``Trace`` ...), ``analysis``, ``transform`` -- loads on first use (``tir.Schedule``,
``tir.transform``), as the root package does with its subpackages.  ``arith`` imports these
nodes, so loading the rest eagerly would close an import circle tir -> arith -> tir
(tests/test_import_cycles.py) and make ``import minitvm`` load the runtime and every pass.
"""

import importlib as _importlib
from pathlib import Path as _Path
from typing import Any as _Any

from .. import ir as _ir
from ..error import OutOfBoundsError  # what tir.analysis.OOBChecker (run by minitvm.build) raises
from . import op, stmt_functor
from .buffer import Buffer, BufferRegion, decl_buffer
from .expr import (
                   EQ,
                   GE,
                   GT,
                   LE,
                   LT,
                   NE,
                   Add,
                   And,
                   BinaryOp,
                   Broadcast,
                   BufferLoad,
                   Call,
                   Cast,
                   CmpOp,
                   Div,
                   FloatImm,
                   FloorDiv,
                   FloorMod,
                   IntImm,
                   IterVar,
                   Let,
                   Max,
                   Min,
                   Mod,
                   Mul,
                   Not,
                   Or,
                   PrimExpr,
                   Ramp,
                   Range,
                   Select,
                   SizeVar,
                   StringImm,
                   Sub,
                   Var,
                   const,
                   convert,
)
from .expr import ir_range as _ir_range
from .function import PrimFunc
from .functor import StmtExprMutator, StmtExprVisitor, post_order_visit, pre_order_visit, substitute
from .op import BUILTINS as _BUILTINS
from .op import (
                   abs,
                   access_ptr,
                   all,
                   any,
                   call_builtin,
                   call_extern,
                   call_intrin,
                   call_llvm_pure_intrin,
                   call_packed,
                   cast,
                   div,
                   floordiv,
                   floormod,
                   if_then_else,
                   likely,
                   max,
                   max_value,
                   min,
                   min_value,
                   ret,
                   truncdiv,
                   truncmod,
)
from .py_functor import PyStmtExprMutator, PyStmtExprVisitor
from .stmt import (
                   Allocate,
                   AllocateConst,
                   AssertStmt,
                   AttrStmt,
                   Block,
                   BlockRealize,
                   BufferStore,
                   Evaluate,
                   For,
                   ForKind,
                   IfThenElse,
                   LetStmt,
                   MatchBufferRegion,
                   SeqStmt,
                   Stmt,
                   seq,
)

globals().update({_name: getattr(op, _name) for _name in op.MATH_INTRINSICS})  # tir.exp ... tir.atan2
globals().update(_BUILTINS)  # tir.tvm_access_ptr, tir.type_annotation ... (see tir.op.BUILTINS)
_ir.Range = _ir_range  # tvm.ir.Range builds this floor's Range node (ir sits below tir)


def build(mod_or_func: _Any, target: _Any = "llvm", pipeline: _Any = "default") -> _Any:
    """``tvm.tir.build`` (TVM 0.27: ``tvm.tirx.build``): compile a TIR module or one PrimFunc to a
    runtime module -- the same as :func:`minitvm.build` for TIR.

    TVM's API keeps it on the tir floor, but compiling is the target floor's work, one floor up:
    this is one of the upward calls the floors allow (``tests/test_import_floors.py``).
    """
    from ..target.tir_build import build as build_tir  # lazy: upward by design, see the docstring

    return build_tir(mod_or_func, target, pipeline)


# name -> the submodule that defines it, loaded on first use
_LAZY = {"IndexMap": "index_map", "BlockRV": "schedule", "LoopRV": "schedule", "Schedule": "schedule",
         "ScheduleError": "schedule", "TensorIntrin": "schedule", "Trace": "schedule",
         "ScheduleState": "schedule", "StmtSRef": "schedule"}
_HERE = _Path(__file__).parent


def __getattr__(name: str) -> _Any:
    """``tir.Schedule``, ``tir.IndexMap`` and, as in TVM after ``import tvm``, every submodule
    (``tir.transform``, ``tir.analysis`` ...) without importing it first."""
    if name in _LAZY:
        value = getattr(_importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    if (_HERE / name / "__init__.py").exists() or (_HERE / f"{name}.py").exists():
        return _importlib.import_module(f"{__name__}.{name}")  # the import binds it in globals()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {p.stem for p in _HERE.iterdir() if not p.stem.startswith("_")})
