"""The TVMScript parser for Relax: Python syntax tree -> ``relax.Function``.

As for TensorIR, the function is never run: its ``ast`` is walked statement by
statement and expressions are evaluated against the names in scope (parameters,
bound variables, symbolic dimensions, then the function's globals and closure).

* ``x = <expr>`` binds a new variable (a DataflowVar inside ``with R.dataflow()``
  unless ``R.output`` names it); ``x: R.Tensor(...) = <expr>`` also gives its struct info;
* ``x = R.match_cast(value, R.Tensor(...))`` makes a MatchCast binding;
* ``if c: ... else: ...`` whose branches both end by assigning the same name makes an If;
* ``return <expr>`` ends the function;
* ``n = T.int64()`` (or a string / unknown name in a shape annotation) declares a
  symbolic dimension; ``cls.name`` is the GlobalVar of another function of the module.

Expressions go through a :class:`~minitvm.relax.BlockBuilder` as soon as they are built,
so every call gets its struct info from its operator's inference; a failure there
(shapes that do not broadcast, a PrimFunc called without R.call_tir ...) is reported as a
:class:`TVMScriptError` with a caret under the call that failed.
"""

from __future__ import annotations

import ast
from typing import Any, Callable

from ..ir.deep import deep
from ..ir.module import GlobalVar
from ..ir.op import Op
from ..relax.analysis.struct_info_analysis import (
    derive_call_ret_struct_info,
    is_base_of,
    prove_dim_differ,
)
from ..relax.analysis.well_formed import well_formed_errors
from ..relax.block_builder import BlockBuilder
from ..relax.expr import (
    BindingBlock,
    Call,
    DataflowVar,
    Expr,
    ExternFunc,
    Function,
    If,
    MatchCast,
    SeqExpr,
    TupleGetItem,
    Var,
    VarBinding,
    _as_expr,
    _set_struct_info,
    is_leaf,
    struct_info_of,
)
from ..relax.expr import (
    Tuple as RelaxTuple,
)
from ..relax.struct_info import (
    FuncStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    struct_info_text,
)
from ..relax.te_convert import te_to_call_tir
from ..tir.expr import PrimExpr
from ..tir.expr import Var as TirVar
from . import relax as R
from . import tir as T
from .diagnostics import Source, TVMScriptError
from .ir import ModuleRef, add_generated_function, register_function_parser
from .parser import _function_def, _TIRParser

__all__ = ["parse_relax_function_ast", "parse_relax_python_function", "declare_relax_function"]


_SINFO_MAKERS = (R.Tensor, R.Shape, R.Prim, R.Tuple, R.Callable)


class _RelaxParser(_TIRParser):
    """Statements of a Relax function; expressions evaluated as in the TIR parser."""

    def __init__(self, source: Source, namespace: dict, global_vars: dict | None):
        super().__init__(source, namespace)
        self.global_vars = global_vars or {}
        self.module_ref = ModuleRef(self.global_vars)
        self.bb = BlockBuilder()
        self.bb.op_normalization = False  # FNormalize is not applied to parsed IR, as in TVM
        self.tir_vars: dict[str, TirVar] = {}  # symbolic dimensions of this function, by name
        self.in_sinfo = 0  # > 0 while evaluating the arguments of R.Tensor / R.Shape ...
        self.blocks: list[BindingBlock] = []  # finished blocks of the function body
        self.outputs: set[str] | None = None  # R.output names of the open dataflow block
        # the statement that binds each output last (an output rebound in the block: only its last
        # binding is the block's output Var, the earlier ones are DataflowVars, as TVM parses it)
        self.output_stmts: dict[str, ast.stmt] = {}
        self.current_stmt: ast.stmt | None = None
        self.attrs: dict = {}
        self.result: Any = None
        self.returned = False
        self.dataflow_only: set[str] = set()  # names of DataflowVars of closed dataflow blocks
        self.pure = True
        self.check_well_formed = True  # a contradicting annotation is refused at once

    # -- symbolic dimensions -------------------------------------------------------------------
    def tir_var(self, name: str) -> TirVar:
        var = self.tir_vars.get(name)
        if var is None:
            var = self.tir_vars[name] = TirVar(name, "int64")
        return var

    def resolve_dim(self, text: str) -> PrimExpr:
        """``"n"`` or ``"n * 2"`` written in a shape: names are this function's dimensions."""
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError:
            raise ValueError(f"symbolic dimension {text!r} is not an expression") from None
        sub = _TIRParser(Source.from_text(text), {"T": T})
        sub.scopes.append(_DimScope(self))
        try:
            return sub.eval(tree.body)
        except TVMScriptError as e:  # blamed on the annotation by the caller
            raise ValueError(f"symbolic dimension {text!r}: {e.reason}") from None

    def eval_Name(self, node: ast.Name) -> Any:
        try:
            return self.lookup(node)
        except TVMScriptError:
            if node.id == "cls":
                return self.module_ref
            if self.in_sinfo:  # `R.Tensor((m, 784))` with m defined nowhere: a new dimension
                var = self.tir_var(node.id)
                self.scopes[0][node.id] = var
                return var
            if node.id in self.dataflow_only:
                raise self.error(node, f"{node.id!r} is a DataflowVar of the dataflow block above: list "
                                       f"it in R.output(...) to use it after the block") from None
            raise

    def eval_Call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        if any(func is f for f in _SINFO_MAKERS):
            self.in_sinfo += 1
            try:
                result = super().eval_Call(node)
            finally:
                self.in_sinfo -= 1
        elif isinstance(func, (GlobalVar, Var)) and not self.in_sinfo:
            if node.keywords:
                raise self.error(node, "calls of Relax functions take positional arguments only")
            args = [self._relax_value(self.eval(a), a) for a in node.args]
            result = Call(func, args)
            callee = struct_info_of(func)
            if isinstance(func, GlobalVar) and isinstance(callee, FuncStructInfo):
                try:  # the callee's signature, declared before any function was parsed
                    _set_struct_info(result, derive_call_ret_struct_info(callee, result, self.bb))
                except Exception as e:
                    self.fail(node, e)
        else:
            result = super().eval_Call(node)
        if isinstance(result, R.EmitTEValue):
            result = self._emit_te(result, node)
        # R.func_attr({"relax.force_pure": True}) declares the function pure whatever it calls (TVM)
        checks_purity = self.pure and not self.attrs.get("relax.force_pure")
        if (isinstance(result, Call) and isinstance(result.op, ExternFunc) and checks_purity
                and not getattr(struct_info_of(result.op), "purity", False)):  # R.Callable(purity=True) is pure
            raise self.error(node, f"R.call_packed({result.op.global_symbol!r}, ...) may have side effects, "
                                   "which a pure function cannot have: use @R.function(pure=False), or "
                                   "R.call_pure_packed when the function is in fact pure")
        if (isinstance(result, Call) and isinstance(result.op, Op) and checks_purity
                and result.op.get_attr("FPurity") is False):
            raise self.error(node, f"{result.op.name} has side effects, which a pure function cannot have: "
                                   "use @R.function(pure=False)")
        if isinstance(result, Expr) and not isinstance(result, Var):
            result = self._normalize(result, node)
        return result

    def expand_macro(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        """``m(args)`` of an ``@R.macro``: its statements emitted here with its parameters
        bound to the arguments; the value of its ``return`` is the value of the call."""
        macro = func.macro if isinstance(func, T.BoundMacro) else func
        if getattr(macro, "dialect", "tir") != "relax":
            raise self.error(node, f"{macro!r} is a TIR macro; a Relax function calls R.macro macros")
        with self.macro_scope(func, args, kwargs, node) as body:
            ret = None
            if body and isinstance(body[-1], ast.Return):
                body, ret = body[:-1], body[-1]
            self.visit_stmts(body)
            return None if ret is None or ret.value is None else self.eval(ret.value)

    def _emit_te(self, value: R.EmitTEValue, node: ast.Call) -> Call:
        """``R.emit_te``: build the PrimFunc from the TE function, add it to the module being
        parsed (a fresh name), and give back its ``R.call_tir``."""

        parser = self

        class _AddToModule:
            """The parser's builder, except that functions go into the parsed module."""

            def __getattr__(self, name: str) -> Any:
                return getattr(parser.bb, name)

            def add_func(self, func: Any, name_hint: str) -> GlobalVar:
                return add_generated_function(func, name_hint, parser.global_vars)

        try:
            return te_to_call_tir(_AddToModule(), value.func, value.args, dict(value.kwargs))
        except TVMScriptError as e:
            raise self.error(node, e.reason) from None

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        value = self.eval(node.value)
        try:
            return self.attribute(value, node)
        except AttributeError as e:
            if value is R or isinstance(value, ModuleRef):
                raise self.error(node, str(e)) from None  # their own messages say what exists
            raise self.error(node, f"{ast.unparse(node.value)} has no attribute {node.attr!r}") from None

    def eval_Subscript(self, node: ast.Subscript) -> Any:
        result = super().eval_Subscript(node)
        if isinstance(result, Expr) and not isinstance(result, Var):
            result = self._normalize(result, node)
        return result

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        result = super().eval_BinOp(node)
        if isinstance(result, Expr) and not isinstance(result, Var):
            result = self._normalize(result, node)
        return result

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        result = super().eval_UnaryOp(node)
        if isinstance(result, Expr) and not isinstance(result, Var):
            result = self._normalize(result, node)
        return result

    def eval_Compare(self, node: ast.Compare) -> Any:
        result = super().eval_Compare(node)
        if isinstance(result, Expr) and not isinstance(result, Var):
            result = self._normalize(result, node)
        return result

    def _normalize(self, expr: Any, node: ast.AST) -> Any:
        """Struct info now, so an error points at the call that caused it."""
        try:
            return self.bb.normalize(expr)
        except Exception as e:
            self.fail(node, e)

    def _relax_value(self, value: Any, node: ast.AST) -> Any:
        """A Python value used as a Relax value (a tuple of vars becomes a relax.Tuple)."""
        if isinstance(value, (Expr, GlobalVar)):
            return value
        try:
            return self._normalize(_as_expr(value, "Relax value"), node)
        except Exception as e:
            self.fail(node, e)

    def annotation(self, node: ast.expr) -> StructInfo:
        self.in_sinfo += 1
        try:
            value = self.eval(node)
        finally:
            self.in_sinfo -= 1
        try:
            return R._sinfo(value, "annotation")
        except TypeError as e:
            raise self.error(node, str(e)) from None

    # -- the function ---------------------------------------------------------------------------
    def parse_signature(self, fdef: ast.FunctionDef) -> tuple[list[Var], StructInfo | None]:
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "a Relax function takes plain parameters only (no *args, **kwargs, /, *)")
        params = []
        for arg in args.args:
            if arg.annotation is None:
                raise self.error(arg, f"parameter {arg.arg!r} needs a struct-info annotation such as "
                                      "R.Tensor((1, 784), \"float32\")")
            sinfo = self.annotation(arg.annotation)
            var = Var(arg.arg, sinfo)
            params.append(var)
            self.bind(arg.arg, var)
        ret = None
        if isinstance(fdef.returns, ast.Constant) and fdef.returns.value is None:
            ret = TupleStructInfo([])  # `-> None`: the function returns R.Tuple(), as TVM reads it
        elif fdef.returns is not None:
            ret = self.annotation(fdef.returns)
        return params, ret

    def parse_function(self, fdef: ast.FunctionDef, options: dict, name: str | None) -> Function:
        token = R._DIM_RESOLVER.set(self.resolve_dim)
        self.pure = bool(options.get("pure", True))
        self.check_well_formed = bool(options.get("check_well_formed", True))
        try:
            self.scopes.append({"cls": self.module_ref})
            self.scopes.append({})
            params, ret = self.parse_signature(fdef)
            self.bb.begin_binding_block()
            self.visit_stmts(fdef.body)
            if not self.returned:
                raise self.error(fdef, f"Relax function {fdef.name!r} has no return statement")
            self.close_block()
            # normalized as TVM: a returned call is bound to a variable of a last block
            body = self._normalize(SeqExpr(tuple(self.blocks), self.result), fdef)
            attrs = dict(self.attrs)
            if options.get("private", False) and "global_symbol" in attrs:
                raise self.error(fdef, f"{fdef.name} is private (not exported), so it cannot also have a "
                                       "global_symbol attribute")
            if not options.get("private", False):
                attrs.setdefault("global_symbol", name or fdef.name)
            pure = bool(options.get("pure", True))
            try:
                # (a body more precise than the annotation gives the return struct info, as TVM)
                func = self.bb._make_function(params, body, ret, pure, attrs)
            except Exception as e:
                self.fail(fdef, e)
            # TVM checks no return annotation against the body: it is kept as written unless the
            # body is more precise (then the body's struct info is the function's result)
            if options.get("check_well_formed", True):
                errors = well_formed_errors(func)
                if errors:
                    raise self.error(fdef, "the function is not well formed: " + "; ".join(errors))
            return func
        finally:
            R._DIM_RESOLVER.reset(token)

    # -- blocks ---------------------------------------------------------------------------------
    def close_block(self) -> None:
        block = self.bb.end_block()
        if block.bindings:
            self.blocks.append(block)

    def visit_stmts(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if self.returned:
                raise self.error(stmt, "statements after `return` are not allowed")
            self.current_stmt = stmt
            self.visit_relax_stmt(stmt)

    def visit_relax_stmt(self, node: ast.stmt) -> None:
        handler = {
            ast.Assign: self.visit_assign, ast.AnnAssign: self.visit_ann_assign,
            ast.Expr: self.visit_expr_stmt, ast.With: self.visit_with, ast.Return: self.visit_return,
            ast.If: self.visit_if, ast.Pass: lambda n: None,
            # `nonlocal x` only makes Python keep x in the closure the parser reads names from
            ast.Nonlocal: lambda n: None,
            ast.FunctionDef: self.visit_local_function,
        }.get(type(node))
        if handler is None:
            raise self.error(node, f"unsupported Python syntax in a Relax function: {type(node).__name__}")
        try:
            handler(node)
        except Exception as e:
            self.fail(node, e)

    def visit_with(self, node: ast.With) -> None:
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise self.error(node, "expected `with R.dataflow():`")
        ctx = self.eval(node.items[0].context_expr)
        if not isinstance(ctx, R.DataflowScope):
            raise self.error(node.items[0].context_expr, f"`with` needs R.dataflow(), got {ctx!r}")
        if self.outputs is not None or self.bb.current_block_is_dataflow():
            raise self.error(node, "a dataflow block cannot be nested")
        self.outputs = self._output_names(node)
        # as TVM, `return` may end the dataflow block: what it returns is output implicitly
        body, ret = node.body, None
        if isinstance(body[-1], ast.Return):
            body, ret = body[:-1], body[-1]
            assigned = {t.id for st in body for t in _assigned_names(st)}
            self.outputs |= {n.id for n in ast.walk(ret) if isinstance(n, ast.Name) and n.id in assigned}
        self.output_stmts = {n.id: st for st in body for n in _assigned_names(st) if n.id in self.outputs}
        self.close_block()
        self.bb.begin_dataflow_block()
        self.scopes.append({})
        self.visit_stmts(body)
        dataflow_scope = self.scopes.pop()
        self.close_block()
        self.bb.begin_binding_block()
        # only the outputs stay visible after the block
        for name in sorted(self.outputs):
            if name not in dataflow_scope:
                raise self.error(node.body[-1], f"R.output({name}): {name!r} is not bound in this dataflow block")
            self.bind(name, dataflow_scope[name])
        self.dataflow_only |= set(dataflow_scope) - self.outputs
        self.outputs = None
        if ret is not None:
            self.visit_relax_stmt(ret)

    def _output_names(self, node: ast.With) -> set[str]:
        """The names ``R.output(...)`` lists: bound as Vars (not DataflowVars) in the block."""
        names: set[str] = set()
        for i, stmt in enumerate(node.body):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                try:
                    is_output = self.eval(stmt.value.func) is R.output
                except TVMScriptError:
                    continue
                if not is_output:
                    continue
                if i != len(node.body) - 1 - isinstance(node.body[-1], ast.Return):
                    raise self.error(stmt, "R.output(...) must be the last statement of the dataflow block")
                for arg in stmt.value.args:
                    if not isinstance(arg, ast.Name):
                        raise self.error(arg, "R.output takes the names of variables bound in the block")
                    names.add(arg.id)
        return names

    def visit_expr_stmt(self, node: ast.Expr) -> None:
        value = self.eval(node.value)
        if isinstance(value, R.OutputMarker):
            for var, arg in zip(value.vars, node.value.args):
                if not isinstance(var, Var) or isinstance(var, DataflowVar):
                    raise self.error(arg, f"R.output({ast.unparse(arg)}): not a variable bound in this "
                                          "dataflow block")
            return
        if isinstance(value, R.FuncAttrMarker):
            self.attrs.update(value.attrs)
            return
        if isinstance(value, Expr):  # a call for its side effect: bound to an unused variable
            var = self.emit(None, "_", value, None, node)
            sinfo = var.struct_info
            if not (isinstance(sinfo, TupleStructInfo) and not sinfo.fields):
                raise self.error(node, f"the value of {ast.unparse(node.value)} ({struct_info_text(sinfo)}) is "
                                       "not used: bind it to a name (only calls returning R.Tuple() can "
                                       "stand alone)")
            return
        if value is None or isinstance(value, (str, int, float)):
            return  # a docstring or a bare constant
        raise self.error(node, f"this statement has no effect in a Relax function: {ast.unparse(node)}")

    def visit_assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported")
        target = node.targets[0]
        if (isinstance(target, ast.Name) and target.id == "cls" and isinstance(node.value, ast.Name)):
            self.bind("cls", self.module_ref)  # TVM's `cls = Module` at the top of a function
            return
        value = self.eval(node.value)
        if isinstance(target, ast.Tuple):
            self._assign_unpacked(target, value, node.value)
            return
        if not isinstance(target, ast.Name):
            raise self.error(target, "can only assign to a name")
        self._assign(target, value, None, node.value)

    def _assign_unpacked(self, target: ast.Tuple, value: Any, value_node: ast.expr) -> None:
        """``a, b = value`` as TVM reads it: Python unpacking, then each name bound alone.

        A Python tuple (``m, n = T.int64(), T.int64()``) or a ``relax.Tuple`` gives its
        elements; any other Relax value with tuple struct info is bound once and each name
        gets a ``TupleGetItem`` of it (``lv0, lv1 = R.split(x, 2)``)."""
        names = target.elts
        if not all(isinstance(n, ast.Name) for n in names):
            raise self.error(target, "can only unpack into plain names")
        if len({n.id for n in names}) != len(names):
            raise self.error(target, "duplicate names in an unpacking assignment")
        if isinstance(value, RelaxTuple):
            items = list(value.fields)
        elif isinstance(value, (tuple, list)):
            items = list(value)
        elif isinstance(value, Expr):
            sinfo = struct_info_of(value)
            if not isinstance(sinfo, TupleStructInfo):
                raise self.error(value_node, f"cannot unpack a value of struct info "
                                             f"{struct_info_text(sinfo) if sinfo else 'unknown'}; "
                                             "only tuples unpack")
            if not isinstance(value, Var):
                value = self.emit(None, "lv", value, None, value_node)
            items = [self._normalize(TupleGetItem(value, i), value_node) for i in range(len(sinfo.fields))]
        else:
            raise self.error(value_node, f"cannot unpack {type(value).__name__}")
        if len(items) != len(names):
            raise self.error(target, f"cannot unpack {len(items)} values into {len(names)} names")
        for name_node, item in zip(names, items):
            self._assign(name_node, item, None, value_node)

    def visit_ann_assign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.error(node, "expected `name: R.Tensor(...) = value`")
        sinfo = self.annotation(node.annotation)
        before = self._bindings_so_far()
        value = self.eval(node.value)
        if isinstance(value, Call) and self._bindings_so_far() != before:
            # as TVM: the call's nested operands were bound, which rebuilds the call and infers
            # its struct info; the annotation is dropped unchecked
            # (`lv: R.Tensor((), "float32") = -lv * t.astype("float32")` binds a (3, 5) tensor)
            sinfo = None
        self._assign(node.target, value, sinfo, node.value)

    def _bindings_so_far(self) -> int:
        blocks = self.bb._blocks  # noqa: SLF001 (the parser drives this builder)
        return len(blocks[-1].bindings) if blocks else 0

    def _assign(self, target: ast.Name, value: Any, sinfo: StructInfo | None, value_node: ast.expr) -> None:
        if isinstance(value, T.ScalarVarDecl):  # n = T.int64(): a symbolic dimension
            if value.dtype != "int64":
                raise self.error(value_node, f"symbolic dimensions of Relax shapes are int64, not {value.dtype}")
            self.bind(target.id, self.tir_var(target.id))
            return
        existing = self.tir_vars.get(target.id)
        if isinstance(value, TirVar) and existing is not None and value.name == target.id \
                and value.dtype == existing.dtype:
            # `n = T.Var("n", "int64")` naming a dimension of the signature is that dimension,
            # as TVM's parser reads such a prelude
            self.bind(target.id, existing)
            return
        if isinstance(value, (TirVar, PrimExpr)) and not isinstance(value, Expr):
            self.bind(target.id, value)  # a PrimExpr used in later shapes (T.meta_var style)
            return
        if isinstance(value, R.MatchCastValue):
            self.emit_match_cast(target, value, value_node)
            return
        if not isinstance(value, (Expr, tuple, list)):
            self.bind(target.id, value)  # a plain Python value (a number, a helper ...)
            return
        self.emit(target, target.id, value, sinfo, value_node)

    def _new_var(self, name: str, sinfo: StructInfo) -> Var:
        output = name in (self.outputs or ()) and self.output_stmts.get(name) is self.current_stmt
        dataflow = self.bb.current_block_is_dataflow() and not output
        return (DataflowVar if dataflow else Var)(name, sinfo)

    def emit(self, target: ast.Name | None, name: str, value: Any, sinfo: StructInfo | None,
             value_node: ast.expr) -> Var:
        value = self._relax_value(value, value_node)
        if isinstance(value, GlobalVar):
            raise self.error(value_node, f"{value.name_hint} is a function of the module; bind a "
                                         "call of it instead")
        value_sinfo = struct_info_of(value)
        contradicted = sinfo is not None and value_sinfo is not None and _contradicts(sinfo, value_sinfo)
        if contradicted and self.check_well_formed:
            raise self.error(value_node, f"the value has struct info {struct_info_text(value_sinfo)}, "
                                         f"which does not match the annotation {struct_info_text(sinfo)}")
        # unchecked (check_well_formed=False), a wrong annotation is kept as written, as TVM's
        # parser does; relax.analysis.well_formed reports it
        if sinfo is not None and isinstance(value, Call):
            # as TVM: the annotation is the struct info of the call the statement makes
            # (`w: R.Tensor(ndim=2) = R.multiply(z, z)`); a value that already exists (a
            # variable, a constant, a tuple) keeps its own and the annotation only checks it
            value = Call(value.op, value.args, value.attrs, value.sinfo_args)
            _set_struct_info(value, sinfo)
        sinfo = sinfo if contradicted else struct_info_of(value)
        var = self._new_var(name, sinfo)
        self.bb.emit_normalized(VarBinding(var, value))
        if target is not None:
            self.bind(name, var)
        return var

    def emit_match_cast(self, target: ast.Name, mc: R.MatchCastValue, node: ast.expr) -> None:
        value = self._relax_value(mc.value, node)
        try:
            value = self.bb._normalize_arg(value)
        except Exception as e:
            self.fail(node, e)
        var = self._new_var(target.id, mc.struct_info)
        self.bb.emit_normalized(MatchCast(var, value, mc.struct_info))
        self.bind(target.id, var)

    def visit_return(self, node: ast.Return) -> None:
        if node.value is None:
            raise self.error(node, "a Relax function returns a value: `return gv`")
        if self.bb.current_block_is_dataflow():
            raise self.error(node, "`return` inside a dataflow block; return after the `with R.dataflow()`")
        value = self._relax_value(self.eval(node.value), node.value)
        if isinstance(value, DataflowVar):
            raise self.error(node.value, f"{value.name} is a DataflowVar: list it in R.output(...) to "
                                         "use it after the dataflow block")
        self.result = value
        self.returned = True
        self.return_node = node.value

    return_node: ast.AST | None = None

    # -- local functions --------------------------------------------------------------------------
    def visit_local_function(self, node: ast.FunctionDef) -> None:
        """``@R.function def f(...)`` inside a function: a private Relax function bound to the
        variable ``f`` (as TVM does); it reads the enclosing function's variables, and a
        function that calls itself gets its variable before its body is parsed."""
        if not node.decorator_list:
            raise self.error(node, f"local function {node.name!r} needs a decorator: @R.function")
        deco = node.decorator_list[-1]
        target, options = (deco.func, deco.keywords) if isinstance(deco, ast.Call) else (deco, [])
        dialect = self.eval(target)
        if dialect is T.prim_func:
            raise self.error(node, f"{node.name!r}: a PrimFunc cannot be defined inside a Relax function; "
                                   "make it a function of the module and call it with R.call_tir")
        if dialect is not R.function:
            raise self.error(deco, f"local function {node.name!r}: expected @R.function, got "
                                   f"@{ast.unparse(deco)}")
        opts = {kw.arg: self.eval(kw.value) for kw in options}
        # the enclosing function checks the well-formedness of the whole, free variables included
        opts.update(private=True, check_well_formed=False)
        inner = _RelaxParser(self.source, self.namespace, self.global_vars)
        visible: dict = {}
        for scope in self.scopes:
            visible.update(scope)
        visible.pop("cls", None)
        inner.scopes.append(visible)
        inner.tir_vars = self.tir_vars  # the enclosing function's dimensions keep their meaning
        reserved = None
        if visible.get(node.name) is None and _calls_itself(node):
            reserved = inner._reserve_recursive(node)
            visible[node.name] = reserved
        func = inner.parse_function(node, opts, node.name)
        if reserved is None:
            self.emit(ast.Name(node.name), node.name, func, None, node)
            return
        self.bb.emit_normalized(VarBinding(reserved, func))  # TVM binds the reserved variable itself
        self.bind(node.name, reserved)

    def _reserve_recursive(self, node: ast.FunctionDef) -> Var:
        """The variable a recursive local function calls itself through: its signature's struct
        info (``R.Tuple()`` as the result when the function has no return annotation)."""
        token = R._DIM_RESOLVER.set(self.resolve_dim)
        try:
            self.scopes.append({})
            params = [self.annotation(a.annotation) for a in node.args.args if a.annotation is not None]
            if len(params) != len(node.args.args):
                raise self.error(node, f"every parameter of {node.name!r} needs a struct-info annotation")
            ret = self.annotation(node.returns) if node.returns is not None else TupleStructInfo([])
            self.scopes.pop()
        finally:
            R._DIM_RESOLVER.reset(token)
        return Var(node.name, FuncStructInfo(params, ret))

    # -- if / else --------------------------------------------------------------------------------
    def visit_if(self, node: ast.If) -> None:
        if self.bb.current_block_is_dataflow():
            raise self.error(node, "`if` is not allowed inside a dataflow block")
        if not node.orelse:
            raise self.error(node, "a Relax `if` needs an `else` branch (both assign the result)")
        cond = self._relax_value(self.eval(node.test), node.test)
        then_name, then_seq, then_sinfo = self._branch(node.body, node, "_then")
        else_name, else_seq, else_sinfo = self._branch(node.orelse, node, "_else")
        if then_name != else_name:
            raise self.error(node, f"both branches must end by assigning the same name "
                                   f"(got {then_name!r} and {else_name!r})")
        expr = self._normalize(If(cond, then_seq, else_seq), node)
        sinfo = then_sinfo or else_sinfo
        target = ast.Name(then_name)
        self.emit(target, then_name, expr, sinfo, node.test)

    def _branch(self, stmts: list[ast.stmt], node: ast.If, suffix: str) -> tuple[str, SeqExpr, StructInfo | None]:
        """One branch, as TVM reads it: its statements, then its last binding gives the result
        (a leaf value directly; any other value, or a match_cast, bound to ``<name>_then`` /
        ``<name>_else``) and the name the If's variable takes."""
        self.scopes.append({})
        saved_blocks, saved_returned = self.blocks, self.returned
        self.blocks = []
        self.bb.begin_binding_block()
        try:
            self.visit_stmts(stmts)
            self.close_block()
            blocks = self.blocks
        finally:
            self.blocks, self.returned = saved_blocks, saved_returned
            self.scopes.pop()
        if not blocks:
            raise self.error(stmts[-1], "a branch of a Relax `if` ends by binding its result: `y = ...`")
        *blocks, last_block = blocks
        *bindings, last = last_block.bindings
        if isinstance(last.var, DataflowVar):
            raise self.error(stmts[-1], "the last binding of a branch must not be a DataflowVar")
        name = last.var.name
        if isinstance(last, VarBinding) and (is_leaf(last.value) or isinstance(last.value, RelaxTuple)):
            body = last.value
        else:
            out = Var(name + suffix, last.var.struct_info)
            bindings.append(MatchCast(out, last.value, last.struct_info) if isinstance(last, MatchCast)
                            else VarBinding(out, last.value))
            body = out
        if bindings:
            blocks.append(type(last_block)(tuple(bindings)))
        return name, SeqExpr(tuple(blocks), body), None


def _contradicts(annotation: StructInfo, actual: StructInfo) -> bool:
    """Whether an annotation is provably wrong for a value (TVM's well-formed check on
    annotations): another kind of value, another dtype or rank, or a dimension that differs
    for every value of the symbolic variables (``(10,)`` does not contradict ``(2 * n + 2,)``)."""
    if is_base_of(annotation, actual) or is_base_of(actual, annotation):
        return False
    if isinstance(annotation, TensorStructInfo) and isinstance(actual, TensorStructInfo):
        if not (annotation.is_unknown_dtype or actual.is_unknown_dtype) and annotation.dtype != actual.dtype:
            return True
        if not (annotation.is_unknown_ndim or actual.is_unknown_ndim) and annotation.ndim != actual.ndim:
            return True
        a, b = annotation.shape_values, actual.shape_values
        return a is not None and b is not None and any(prove_dim_differ(x, y) for x, y in zip(a, b))
    if isinstance(annotation, ShapeStructInfo) and isinstance(actual, ShapeStructInfo):
        if annotation.values is None or actual.values is None:
            return annotation.ndim != actual.ndim and -1 not in (annotation.ndim, actual.ndim)
        return len(annotation.values) != len(actual.values) or \
            any(prove_dim_differ(x, y) for x, y in zip(annotation.values, actual.values))
    if isinstance(annotation, TupleStructInfo) and isinstance(actual, TupleStructInfo):
        return len(annotation.fields) != len(actual.fields) or \
            any(_contradicts(x, y) for x, y in zip(annotation.fields, actual.fields))
    return True


def _assigned_names(stmt: ast.stmt) -> list[ast.Name]:
    """The names a statement of a dataflow block binds (``a = ...``, ``a, b = ...``, ``a: ... = ...``,
    ``def a``)."""
    if isinstance(stmt, ast.FunctionDef):  # a local `@R.function def f` binds f
        return [ast.Name(stmt.name)]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    return [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _calls_itself(fdef: ast.FunctionDef) -> bool:
    """Whether the body of ``fdef`` calls a function by ``fdef``'s own name."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fdef.name
               for stmt in fdef.body for n in ast.walk(stmt))


class _DimScope(dict):
    """Names inside a string dimension: the function's dimensions, new ones declared."""

    def __init__(self, parser: _RelaxParser):
        super().__init__()
        self.parser = parser

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name != "T"  # `"T.max(m, 20)"` calls TIR's max

    def __getitem__(self, name: str) -> TirVar:
        return self.parser.tir_var(name)


# -- entry points ---------------------------------------------------------------------------------

def parse_relax_function_ast(fdef: ast.FunctionDef, source: Source, namespace: dict, options: dict,
                             global_vars: dict | None, name: str | None, annotations: Any = None
                             ) -> Function:
    """Parse one ``def`` as a Relax function (``register_function_parser``'s signature)."""
    with T.parsing():
        func = _RelaxParser(source, namespace, global_vars).parse_function(fdef, options, name)
    gv = (global_vars or {}).get(name)
    if gv is not None and getattr(gv, "_sinfo", None) is None and func.struct_info is not None:
        # no return annotation: the signature is known now, and calls parsed later see it
        # (TVM's IRBuilder gives the GlobalVar the defined function's struct info)
        _set_struct_info(gv, func.struct_info)
    return func


def declare_relax_function(fdef: ast.FunctionDef, source: Source, namespace: dict, options: dict,
                           global_vars: dict, name: str) -> None:
    """Record the signature of a module's Relax function on its GlobalVar, so calls of it
    (``cls.helper(x)``) get their struct info before the helper itself is parsed."""
    parser = _RelaxParser(source, namespace, global_vars)
    token = R._DIM_RESOLVER.set(parser.resolve_dim)
    try:
        parser.scopes.append({})
        with T.parsing():
            params, ret = parser.parse_signature(fdef)
    finally:
        R._DIM_RESOLVER.reset(token)
    if ret is None:
        return  # without a return annotation the result is known only after parsing
    sinfo = FuncStructInfo([p.struct_info for p in params], ret, bool(options.get("pure", True)))
    _set_struct_info(global_vars[name], sinfo)


@deep
def parse_relax_python_function(func: Callable, options: dict, extra_vars: dict | None = None) -> Function:
    """Parse a Python function object decorated with ``@R.function`` (outside a module)."""
    source = Source.from_object(func)
    fdef = _function_def(source.parse(), func.__name__)
    namespace = dict(func.__globals__)
    namespace.update(extra_vars or {})
    if func.__closure__:
        for cell_name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                namespace[cell_name] = cell.cell_contents
            except ValueError:
                pass
    return parse_relax_function_ast(fdef, source, namespace, options, None, func.__name__)


def _register() -> None:
    register_function_parser("relax", R.function, parse_relax_function_ast, declare_relax_function)


_register()
