"""TensorIR: the loop-level IR that kernels are written, scheduled and compiled in."""

from . import op
from .buffer import Buffer, BufferRegion, decl_buffer
from .expr import (EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, BufferLoad, Call, Cast, CmpOp, Div,
                   FloatImm, FloorDiv, FloorMod, IntImm, IterVar, Let, Max, Min, Mod, Mul, Not,
                   Or, PrimExpr, Range, Select, SizeVar, StringImm, Sub, Var, const, convert)
from .function import PrimFunc
from .functor import (StmtExprMutator, StmtExprVisitor, post_order_visit, pre_order_visit,
                      substitute)
from .op import (abs, cast, ceil, cos, erf, exp, exp2, floor, floordiv, floormod, if_then_else,
                 log, log2, max, max_value, min, min_value, pow, round, rsqrt, sigmoid, sin, sqrt,
                 tanh, truncdiv, truncmod)
from .stmt import (Allocate, AssertStmt, Block, BlockRealize, BufferStore, Evaluate, For, ForKind,
                   IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, Stmt, seq)
from .schedule import BlockRV, LoopRV, Schedule, ScheduleError, TensorIntrin, Trace
