"""TensorIR: the loop-level IR that kernels are written, scheduled and compiled in."""

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
from .index_map import IndexMap
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
                   cast,
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
from .schedule import BlockRV, LoopRV, Schedule, ScheduleError, TensorIntrin, Trace
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

from . import transform  # noqa: E402 - as TVM: ``tvm.tir.transform`` is there after ``import tvm``


def build(mod_or_func: _Any, target: _Any = "llvm", pipeline: _Any = "default") -> _Any:
    """``tvm.tir.build`` (TVM 0.27: ``tvm.tirx.build``): compile a TIR module or one PrimFunc to a
    runtime module -- the same as :func:`minitvm.build` for TIR.

    TVM's API keeps it on the tir floor, but compiling is the target floor's work, one floor up:
    this is one of the upward calls the floors allow (``tests/test_import_floors.py``).
    """
    from ..target.tir_build import build as build_tir  # lazy: upward by design, see the docstring

    return build_tir(mod_or_func, target, pipeline)
