"""Relax function and binding-block frames, and the emitters acting on the innermost one."""

from __future__ import annotations

import builtins
from typing import Any

from ....relax.analysis import is_base_of
from ....relax.block_builder import BlockBuilder
from ....relax.expr import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    MatchCast,
    SeqExpr,
    Var,
    VarBinding,
)
from ....relax.expr_functor import ExprMutator
from ....relax.struct_info import StructInfo
from ... import relax as _script_relax
from ..base import IRBuilder, IRBuilderFrame
from ..ir import IRModuleFrame

__all__ = ["function", "arg", "func_name", "func_attr", "func_ret_struct_info", "func_ret_value",
           "dataflow", "output", "emit", "emit_match_cast", "emit_var_binding", "py_print",
           "FunctionFrame", "BlockFrame"]

py_print = builtins.print  # TVM's name for Python's print beside R.print

# TVMScript's struct-info annotations are the parser's; TVM's builder module has none of them
_ANNOTATIONS = {"Tensor", "Shape", "Tuple", "Object", "Prim", "Callable", "Any"}


class FunctionFrame(IRBuilderFrame):
    def __init__(self, is_pure: bool = True, is_private: bool = False) -> None:
        super().__init__()
        self.is_pure = is_pure if isinstance(is_pure, bool) else True  # @R.function on a def
        self.is_private = is_private
        self.name: str | None = None
        self.params: list[Var] = []
        self.attrs: dict = {}
        self.ret_sinfo: StructInfo | None = None
        self.ret_value: Expr | None = None
        self.blocks: list[BindingBlock] = []

    def finish(self, builder: IRBuilder) -> None:
        if self.ret_value is None:
            raise ValueError("R.function: no return value; call R.func_ret_value(...)")
        _close_plain_block(self)
        attrs = dict(self.attrs)
        if self.name is not None and not self.is_private:
            attrs.setdefault("global_symbol", self.name)
        body = BlockBuilder().normalize(SeqExpr(self.blocks, self.ret_value))
        ret = self.ret_sinfo
        if ret is not None and is_base_of(ret, body.struct_info_):
            ret = body.struct_info_  # as TVM's Function: a body more precise than the annotation wins
        func = BlockBuilder().normalize(Function(self.params, body, ret, self.is_pure, attrs))
        module = builder.find_frame(IRModuleFrame)
        if module is not None:
            module.add_function(self.name or "main", func)
        else:
            builder.add(func)


class BlockFrame(IRBuilderFrame):
    """``with R.dataflow() as df:`` -- a dataflow block.  Its bindings define dataflow
    variables; when it closes, those named by ``R.output`` are bound to new ordinary
    variables instead, listed in ``df.output_vars`` (what code after the block uses)."""

    def __init__(self) -> None:
        super().__init__()
        self.outputs: list[Var] = []
        self.output_vars: list[Var] = []

    def finish(self, builder: IRBuilder) -> None:
        func = _function_frame("R.dataflow")
        _close_plain_block(func)
        remap = {id(v): Var(v.name, v.struct_info_) for v in self.outputs}
        func.blocks.append(DataflowBlock([_remapped(b, remap) for b in self.stmts]))
        self.output_vars = [remap[id(v)] for v in self.outputs]


class _Remap(ExprMutator):
    def __init__(self, remap: dict) -> None:
        super().__init__()
        self.remap = remap

    def visit_var_(self, var: Var) -> Expr:
        return self.remap.get(id(var), var)


def _remapped(binding: Any, remap: dict) -> Any:
    value = _Remap(remap).visit_expr(binding.value)
    var = remap.get(id(binding.var), binding.var)
    if isinstance(binding, MatchCast):
        return MatchCast(var, value, binding.struct_info)
    return VarBinding(var, value)


def _function_frame(what: str) -> FunctionFrame:
    frame = IRBuilder.current().find_frame(FunctionFrame)
    if frame is None:
        raise ValueError(f"{what} must be inside R.function()")
    return frame


def _close_plain_block(func: FunctionFrame) -> None:
    """Bindings emitted straight into the function form a plain binding block."""
    if func.stmts:
        func.blocks.append(BindingBlock(list(func.stmts)))
        func.stmts.clear()


def _innermost() -> FunctionFrame | BlockFrame:
    frame = IRBuilder.current()._frames[-1] if IRBuilder.current()._frames else None
    if not isinstance(frame, (FunctionFrame, BlockFrame)):
        raise ValueError("R.emit must be inside R.function() or R.dataflow()")
    return frame


def _new_var(struct_info: StructInfo) -> Var:
    """A dataflow variable inside R.dataflow(), else an ordinary one (named later, if at all)."""
    return DataflowVar("", struct_info) if isinstance(_innermost(), BlockFrame) else Var("", struct_info)


def _bind(binding: Any) -> Var:
    _innermost().stmts.append(binding)
    return binding.var


# -- the function frame ------------------------------------------------------------------------

def function(is_pure: bool = True, is_private: bool = False) -> FunctionFrame:
    """``with R.function():`` -- a Relax function of the parameters and bindings inside."""
    return FunctionFrame(is_pure, is_private)


def arg(name: str, struct_info: StructInfo) -> Var:
    """A parameter of the function being built."""
    var = Var(name, struct_info)
    _function_frame("R.arg").params.append(var)
    return var


def func_name(name: str) -> None:
    _function_frame("R.func_name").name = name


def func_attr(attrs: dict) -> None:
    _function_frame("R.func_attr").attrs.update(attrs)


def func_ret_struct_info(ret_sinfo: StructInfo) -> None:
    _function_frame("R.func_ret_struct_info").ret_sinfo = ret_sinfo


def func_ret_value(value: Expr) -> None:
    frame = _function_frame("R.func_ret_value")
    if frame.ret_value is not None:
        raise ValueError("R.func_ret_value: the function already has a return value")
    frame.ret_value = value


# -- blocks and bindings -----------------------------------------------------------------------

def dataflow() -> BlockFrame:
    return BlockFrame()


def output(*vars: Var) -> None:
    """The variables of the dataflow block used after it."""
    frame = IRBuilder.current().find_frame(BlockFrame)
    if frame is None:
        raise ValueError("R.output must be inside R.dataflow()")
    frame.outputs.extend(vars)


def emit(value: Expr, annotate_struct_info: StructInfo | None = None) -> Var:
    """Bind ``value`` to a fresh variable (its struct info inferred, or ``annotate_struct_info``)."""
    value = BlockBuilder().normalize(value)
    return _bind(VarBinding(_new_var(annotate_struct_info or value.struct_info_), value))


def emit_match_cast(value: Expr, struct_info: StructInfo) -> Var:
    """Bind ``value`` matched against ``struct_info`` (defining its symbolic variables)."""
    value = BlockBuilder().normalize(value)
    return _bind(MatchCast(_new_var(struct_info), value, struct_info))


def emit_var_binding(value: VarBinding) -> Var:
    return _bind(value)


def __getattr__(name: str) -> Any:
    """The operators and helpers of TVMScript's ``R`` (``R.add``, ``R.call_dps_packed`` ...)."""
    if name in _ANNOTATIONS or name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_script_relax, name)


