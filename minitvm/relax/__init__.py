"""Relax: the graph-level IR — functions of bindings over tensors with struct info.

    from minitvm import relax, te
    bb = relax.BlockBuilder()
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 784), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.relu(x))
        bb.emit_func_output(gv)
    mod = bb.get()
"""

from ..ir.module import GlobalVar
from ..ir.op import Op
from . import analysis, expr_functor, op
from .block_builder import BlockBuilder
from .exec_builder import ExecBuilder  # noqa: F401 - TVM's hand-written bytecode
from .expr import (
                   Binding,
                   BindingBlock,
                   Call,
                   Constant,
                   DataflowBlock,
                   DataflowVar,
                   DataTypeImm,
                   Expr,
                   ExternFunc,
                   Function,
                   If,
                   MatchCast,
                   PrimValue,
                   SeqExpr,
                   ShapeExpr,
                   StringImm,
                   Tuple,
                   TupleGetItem,
                   Var,
                   VarBinding,
                   const,
                   extern,
)
from .expr_functor import ExprMutator, ExprVisitor, PyExprMutator, PyExprVisitor
from .op.base import call_dps_packed, call_pure_packed, call_tir, call_tir_inplace
from .struct_info import (
                   FuncStructInfo,
                   ObjectStructInfo,
                   PrimStructInfo,
                   ShapeStructInfo,
                   StructInfo,
                   StructInfoError,
                   TensorStructInfo,
                   TensorType,
                   TupleStructInfo,
                   get_shape_of,
)
from .vm_build import VirtualMachine, VMInstrumentReturnKind, build, get_pipeline, register_pipeline, transform, vm  # noqa: F401

# TVM 0.27 calls struct info "types" (relax.Type, relax.ShapeType ...): one object each (minitvm.eras)
Type = StructInfo
AnyType = ObjectType = ObjectStructInfo
ShapeType = ShapeStructInfo
TupleType = TupleStructInfo
FuncType = FuncStructInfo

__all__ = [
    # expressions
    "Expr", "Var", "DataflowVar", "Constant", "const", "Call", "Tuple", "TupleGetItem",
    "ShapeExpr", "PrimValue", "StringImm", "DataTypeImm", "If", "Function", "ExternFunc", "extern", "get_shape_of",
    "SeqExpr", "Binding", "VarBinding", "MatchCast", "BindingBlock", "DataflowBlock",
    "GlobalVar", "Op",
    # struct info
    "StructInfo", "ObjectStructInfo", "PrimStructInfo", "ShapeStructInfo", "TensorStructInfo",
    "TupleStructInfo", "FuncStructInfo", "TensorType", "StructInfoError",
    "Type", "AnyType", "ObjectType", "ShapeType", "TupleType", "FuncType",
    # building and rewriting
    "BlockBuilder", "ExprVisitor", "ExprMutator", "PyExprVisitor", "PyExprMutator",
    "call_tir", "call_tir_inplace", "call_dps_packed", "call_pure_packed",
    # subpackages
    "op", "analysis", "expr_functor",
]
# relax.frontend.nn, relax.frontend.detach_params; relax.dpl; relax.backend (the BYOC pattern registry)
# relax.training: losses, optimizers, SetupTrainer, Trainer
from . import backend, dpl, frontend, training, utils  # noqa: E402,F401
from .base_py_module import BasePyModule  # noqa: E402,F401 : TVM 0.27 exports it as relax.BasePyModule
