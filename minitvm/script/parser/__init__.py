"""The TVMScript parser for TensorIR: Python syntax tree -> ``tir.PrimFunc``.

The parser never runs the decorated function.  It walks the function's ``ast``:
statements it translates one by one (``for`` -> ``For``, ``with T.block`` ->
``BlockRealize``, ``A[i] = v`` -> ``BufferStore``, ``if`` -> ``IfThenElse`` ...);
expressions it *evaluates* against a scope of names (loop variables, buffers,
then the function's closure and globals), so ``T.*`` helpers and plain Python
values (``n = 128`` defined outside) work as they would in Python.

Name binding rules inside a prim func (kept deliberately simple):

* ``x = <PrimExpr>`` makes a ``LetStmt`` whose body is the rest of the enclosing body;
  ``x: T.int32 = ...`` does the same with a declared dtype;
* ``x = <anything else>`` (a Python number, a tuple ...) just binds the Python name;
  ``x = T.meta_var(expr)`` binds a PrimExpr that way too (no LetStmt);
* ``Y = T.alloc_buffer(...)``, ``vi = T.axis.spatial(...)``, ``n = T.int32()``,
  ``A = T.match_buffer(a, ...)`` declare what their right-hand side says.

Every mistake in the script is reported as a :class:`TVMScriptError` at the culprit node; a
failure of minitvm's own code met on the way (a ``KeyError``, ``AssertionError`` ... where no
script operation raised it) is minitvm's bug, raised as :class:`~minitvm.error.InternalError`
chained to it (:meth:`_TIRParser.fail`, :func:`.diagnostics.blames_script`).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import inspect
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NoReturn

from ...arith import Analyzer
from ...eras import SCRIPT_NAME_ERAS, era_of, script_import_era
from ...error import InternalError
from ...ir import dtype as _dt
from ...ir.deep import deep
from ...ir.structural import structural_equal
from ...ir.type import PrimType
from ...tir import op as _op
from ...tir.analysis import free_scalar_vars, get_block_read_write_region
from ...tir.buffer import Buffer, BufferRegion
from ...tir.expr import BufferLoad, IntImm, IterVar, PrimExpr, Ramp, Range, Var, const, convert
from ...tir.function import PrimFunc
from ...tir.functor import pre_order_visit
from ...tir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    MatchBufferRegion,
    Stmt,
    seq,
)
from .. import data_mode as _data
from .. import tir as T
from ..diagnostics import Source, TVMScriptError, blames_script

__all__ = ["parse_python_function", "parse_prim_func_ast", "DeferredFunction"]


def __getattr__(name: str) -> Any:
    """TVM's ``tvm.script.parser`` is a package: ``from tvm.script.parser import tir as T``,
    ``relax``, ``ir`` and ``ir_module`` work here too (loaded lazily: relax parses via this module)."""
    if name in ("relax", "ir", "ir_module"):
        script = importlib.import_module(__name__.rpartition(".")[0])
        return getattr(script, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


tir = tirx = T  # TVM 0.27 names the TIR namespace tirx


@dataclass
class DeferredFunction:
    """A function decorated inside an ``@I.ir_module`` class, parsed later by the module."""

    func: Callable
    dialect: str
    options: dict
    extra_vars: dict

    @property
    def __wrapped__(self) -> Callable:
        """The Python function, so ``inspect.getsource`` finds its text (TVM leaves a class
        body's decorated function a plain function)."""
        return self.func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.func.__name__} is a TVMScript function of an @I.ir_module class; "
                        "decorate the class with @I.ir_module and call the built module instead")


@deep
def parse_python_function(func: Callable, private: bool = False, extra_vars: dict | None = None,
                          check_well_formed: bool = True) -> PrimFunc:
    """Parse a Python function object decorated with ``@T.prim_func``."""
    source = Source.from_object(func)
    fdef = _function_def(source.parse(), func.__name__)
    namespace = dict(func.__globals__)
    namespace.update(extra_vars or {})
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled
                pass
    return parse_prim_func_ast(fdef, source, namespace, private=private,
                               annotations=getattr(func, "__annotations__", None),
                               check_well_formed=check_well_formed)


def _function_def(tree: ast.Module, name: str) -> ast.FunctionDef:
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            return stmt
    raise TVMScriptError(f"no function definition named {name!r} found in its source")


def parse_prim_func_ast(fdef: ast.FunctionDef, source: Source, namespace: dict, private: bool = False,
                        annotations: dict | None = None, name: str | None = None,
                        check_well_formed: bool = True) -> PrimFunc:
    """Parse one ``def`` (an ast node of ``source``) as a PrimFunc; names resolve in ``namespace``.
    ``check_well_formed`` (as TVM's) refuses a function that uses a variable nothing defines."""
    with T.parsing():
        func = _TIRParser(source, namespace).parse_function(fdef, private, annotations or {}, name)
    # (a block's view binds its offset variable, as TVM's well-formedness check has it)
    undefined = free_scalar_vars(func, views_define=True) if check_well_formed else []
    if undefined:
        names = ", ".join(v.name for v in undefined)
        raise source.error(fdef, f"the function is not well formed: {names} used but defined by no parameter, "
                                 "buffer shape, loop, let or block iterator (check_well_formed=False skips "
                                 "this check)")
    return func


# -- frames: what the statements being parsed belong to ---------------------------------------


@dataclass
class _FunctionFrame:
    attrs: dict = field(default_factory=dict)
    root_alloc_buffers: list = field(default_factory=list)
    buffer_map: dict = field(default_factory=dict)
    params: list = field(default_factory=list)
    # T.env_thread variables (by id) -> [tag, the IterVar of their first launch or None]
    env_threads: dict = field(default_factory=dict)


@dataclass
class _BlockFrame:
    name: str
    iter_vars: list = field(default_factory=list)
    iter_values: list = field(default_factory=list)
    predicate: PrimExpr | None = None
    reads: tuple | None = None
    writes: tuple | None = None
    alloc_buffers: list = field(default_factory=list)
    match_buffers: list = field(default_factory=list)
    annotations: dict = field(default_factory=dict)
    init: Stmt | None = None


@dataclass
class _NeedsRest:
    """A statement whose body is the rest of the enclosing body (Let, Assert, Allocate)."""

    build: Callable[[Stmt], Stmt]


_UNSUPPORTED = {
    ast.While: "while loop (loops are `for ... in T.grid(...)` / `range(...)`)",
    ast.FunctionDef: "nested function definition",
    ast.AsyncFunctionDef: "async function",
    ast.ClassDef: "class definition",
    ast.Try: "try statement",
    ast.Raise: "raise statement",
    ast.Break: "break (TIR loops always run to the end)",
    ast.Continue: "continue",
    ast.Delete: "del statement",
    ast.Import: "import statement",
    ast.ImportFrom: "import statement",
    ast.Global: "global statement",
    ast.Nonlocal: "nonlocal statement",
}

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitXor: operator.xor,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}

# with a PrimExpr on either side, build through tir.op in source order (Python would reflect
# `6 < i` into `i > 6`, which prints back differently)
_EXPR_BINOPS = {
    ast.Add: _op.add, ast.Sub: _op.sub, ast.Mult: _op.mul, ast.Div: _op.div,
    ast.FloorDiv: _op.floordiv, ast.Mod: _op.floormod, ast.Pow: _op.pow,
}
_EXPR_CMPOPS = {
    ast.Eq: _op.equal, ast.NotEq: _op.not_equal, ast.Lt: _op.less, ast.LtE: _op.less_equal,
    ast.Gt: _op.greater, ast.GtE: _op.greater_equal,
}

_TRUE = IntImm("bool", 1)


def _is_expr(v: Any) -> bool:
    return isinstance(v, PrimExpr)


def _operand(v: Any) -> Any:
    """An operand of arithmetic: a buffer slice (``A[0:4]``) is the vector it loads, as in TVM."""
    return v.as_prim_expr() if isinstance(v, BufferRegion) else v


def _vector_index(index: slice, dim: PrimExpr) -> PrimExpr:
    """A slice as a vector index, as TVM's buffer access reads one: ``i:i + 4`` is
    ``T.Ramp(i, 1, 4)``, ``i:i + 8:2`` is ``T.Ramp(i, 2, 4)``, one lane is the start itself."""
    start = convert(0 if index.start is None else index.start, dim.dtype if index.start is None else None)
    stop = dim if index.stop is None else convert(index.stop)
    step = 1 if index.step is None else index.step
    step = const(step, start.dtype) if isinstance(step, int) else convert(step)
    lanes = Analyzer().simplify(_op.floordiv(stop - start + step - 1, step))
    if not isinstance(lanes, IntImm) or lanes.value < 1:
        raise TypeError(f"the slice {start}:{stop}:{step} needs a constant positive number of lanes, "
                        f"got {lanes}")
    return start if lanes.value == 1 else Ramp(start, step, lanes.value)


class _TIRParser:
    def __init__(self, source: Source, namespace: dict):
        self.source = source
        self.namespace = namespace
        self.scopes: list[dict[str, Any]] = []
        self.frames: list[_FunctionFrame | _BlockFrame] = []
        self.loop_ranges: dict[int, Range] = {}  # loop var id -> its range, for T.axis.remap
        self.macro_depth = 0  # > 0 while a T.macro body is pasted in
        self.block_names: set[str] = set()  # of this function (a macro's repeated blocks get _1, _2 ...)
        self.data_only = _data.active()  # text from a file: build TVMScript, evaluate no Python
        # the eras the text's own spelling names (``T.sblock``: 0.27, ``T.block``: 0.23), so that the
        # function prints back as it was written (minitvm.eras)
        self.eras_seen: set[str] = set()

    # -- errors and names -------------------------------------------------------------------------
    def error(self, node: ast.AST, reason: str) -> TVMScriptError:
        return self.source.error(node, reason)

    def fail(self, node: ast.AST, e: Exception) -> NoReturn:
        """Raise ``e``, caught while parsing ``node``: the script's mistake as a TVMScriptError at
        ``node``, anything else as minitvm's InternalError chained to ``e`` (its traceback kept)."""
        if isinstance(e, (TVMScriptError, InternalError)):
            raise e
        if self.blames_script(e):
            raise self.error(node, _explain(e)) from None  # the learner needs the place, not our stack
        raise self.source.internal_error(node, e) from e

    def blames_script(self, e: Exception) -> bool:
        return blames_script(e, _SCRIPT_OPERATIONS)

    def bind(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value

    def lookup(self, node: ast.Name) -> Any:
        name = node.id
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.namespace:
            return self.namespace[name]
        if hasattr(builtins, name):
            if self.data_only and name not in _data.BUILTINS:
                raise self.error(node, _data.refusal(node))
            return getattr(builtins, name)
        raise self.error(node, f"unknown name {name!r}")

    def _flat_scope(self) -> dict:
        names = dict(self.namespace)
        for scope in self.scopes:
            names.update(scope)
        return names

    # -- the function ---------------------------------------------------------------------------
    def parse_function(self, fdef: ast.FunctionDef, private: bool, annotations: dict,
                       name: str | None) -> PrimFunc:
        frame = _FunctionFrame()
        self.frames.append(frame)
        self.scopes.append({})
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fdef, "a prim func takes plain parameters only (no *args, **kwargs, /, *)")
        for arg in args.args:
            self._parse_param(arg, annotations.get(arg.arg))
        body = self.visit_body(fdef.body) or Evaluate(IntImm("int32", 0))
        has_block = _contains_block(body)
        single_root = (isinstance(body, BlockRealize) and not body.iter_values
                       and not frame.root_alloc_buffers)
        if (has_block or frame.root_alloc_buffers) and not single_root:
            root = Block("root", (), tuple(frame.root_alloc_buffers), (), (), (), None, body, {})
            body = BlockRealize((), _TRUE, root)
        attrs = dict(frame.attrs)
        if private and "global_symbol" in attrs:
            raise self.error(fdef, f"{fdef.name} is private (not exported), so it cannot also have a "
                                   "global_symbol attribute")
        if not private and "global_symbol" not in attrs:
            attrs["global_symbol"] = name or fdef.name
        self.scopes.pop()
        self.frames.pop()
        # parameter order, whether a buffer came from an annotation or from T.match_buffer
        buffer_map = {p: frame.buffer_map[p] for p in frame.params if p in frame.buffer_map}
        return PrimFunc(tuple(frame.params), buffer_map, body, self._ret_type(fdef), attrs, self._era())

    def _ret_type(self, fdef: ast.FunctionDef) -> PrimType | None:
        """``-> T.int32``: the scalar a function returns with ``T.ret`` (TVM's ``ret_type``);
        ``-> None`` or nothing: no value."""
        if fdef.returns is None:
            return None
        value = self.eval(fdef.returns)
        if value is None:
            return None
        dtype = getattr(value, "dtype", None)
        if not isinstance(value, T.ScalarType) or dtype == "handle":
            raise self.error(fdef.returns, f"a prim func returns a scalar, written -> T.int32 or -> T.float32; "
                                           f"got {value!r}")
        return PrimType(dtype)

    def _era(self) -> str | None:
        """The function's era: what its block spelling says, else the text's import of the TIR
        script module (a printed module's ``# from minitvm.script import tirx as T``)."""
        if self.eras_seen:
            return era_of(self.eras_seen)
        return era_of({e for e in map(script_import_era, self.source.file_lines) if e is not None})

    def _parse_param(self, arg: ast.arg, evaluated: Any) -> None:
        frame = self.frames[-1]
        if arg.annotation is None:
            raise self.error(arg, f"parameter {arg.arg!r} needs a type: T.Buffer((128, 128), \"float32\"), "
                                  "T.int32, T.handle ...")
        # Python already evaluated annotations when it ran `def` (names used only there are in
        # no closure), so prefer that value; re-evaluate when annotations are postponed strings.
        ann = evaluated if evaluated is not None and not isinstance(evaluated, str) else \
            self.eval(arg.annotation)
        if isinstance(ann, T.BufferSpec):
            param = Var(arg.arg, "handle")
            try:
                buffer = ann.make(arg.arg)
            except Exception as e:
                self.fail(arg.annotation, e)
            frame.params.append(param)
            frame.buffer_map[param] = buffer
            self.bind(arg.arg, buffer)
        elif T.is_pointer(ann):  # x: T.handle("float32"): a handle parameter of that pointer type
            var = Var(arg.arg, "handle", ann.type_annotation)
            frame.params.append(var)
            self.bind(arg.arg, var)
        elif isinstance(ann, T.ScalarType):
            var = Var(arg.arg, ann.dtype)
            frame.params.append(var)
            self.bind(arg.arg, var)
        else:
            raise self.error(arg.annotation, f"parameter {arg.arg!r}: expected T.Buffer(...) or a scalar "
                                             f"type like T.int32, got {ann!r}")

    # -- statements ---------------------------------------------------------------------------
    def visit_body(self, stmts: list[ast.stmt]) -> Stmt | None:
        out: list[Stmt] = []
        for index, node in enumerate(stmts):
            result = self.visit_stmt(node)
            if isinstance(result, _NeedsRest):
                rest = self.visit_body(stmts[index + 1:]) or Evaluate(IntImm("int32", 0))
                out.append(result.build(rest))
                break
            if result is not None:
                out.append(result)
        return seq(*out) if out else None

    def visit_scoped_body(self, stmts: list[ast.stmt]) -> Stmt:
        self.scopes.append({})
        try:
            return self.visit_body(stmts) or Evaluate(IntImm("int32", 0))
        finally:
            self.scopes.pop()

    def visit_stmt(self, node: ast.stmt) -> Any:
        handler = {
            ast.For: self.visit_for, ast.With: self.visit_with, ast.Assign: self.visit_assign,
            ast.AnnAssign: self.visit_ann_assign, ast.AugAssign: self.visit_aug_assign,
            ast.Expr: self.visit_expr_stmt, ast.If: self.visit_if, ast.Assert: self.visit_assert,
            ast.Pass: lambda n: None, ast.Return: self.visit_return,
        }.get(type(node))
        if handler is None:
            what = _UNSUPPORTED.get(type(node), type(node).__name__)
            raise self.error(node, f"unsupported Python syntax: {what}")
        try:
            return handler(node)
        except Exception as e:  # a check deep in the IR constructors: blame the whole statement
            self.fail(node, e)

    def visit_for(self, node: ast.For) -> Stmt:
        if node.orelse:
            raise self.error(node.orelse[0], "unsupported Python syntax: for ... else")
        specs = self._loop_specs(node.iter)
        names = self._loop_target_names(node, len(specs))
        self.scopes.append({})
        loop_vars = []
        for (name, _), spec in zip(names, specs):
            var = Var(name, spec.extent.dtype)
            loop_vars.append(var)
            self.loop_ranges[id(var)] = Range(spec.min, spec.extent)
        # as Python unpacks: `for i, j in`, `for *outer, k in`, or one name for all (`for ijk in`)
        groups: dict[str, list] = {}
        for (name, grouped), var in zip(names, loop_vars):
            if grouped:
                groups.setdefault(name, []).append(var)
            else:
                self.bind(name, var)
        for name, group in groups.items():
            self.bind(name, tuple(group))
        try:
            body = self.visit_body(node.body) or Evaluate(IntImm("int32", 0))
        finally:
            self.scopes.pop()
            for var in loop_vars:
                del self.loop_ranges[id(var)]
        for var, spec in reversed(list(zip(loop_vars, specs))):
            body = For(var, spec.min, spec.extent, spec.kind, body, spec.thread, dict(spec.annotations))
        return body

    def _loop_target_names(self, node: ast.For, count: int) -> list[tuple[str, bool]]:
        """One (name, grouped) per loop: grouped names collect several loop variables in a tuple."""
        target = node.target
        if isinstance(target, ast.Name):
            if count == 1:
                return [(target.id, False)]
            return [(target.id, True)] * count
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        plain = [e.value if isinstance(e, ast.Starred) else e for e in elts]
        if not all(isinstance(e, ast.Name) for e in plain) or len(starred) > 1:
            raise self.error(target, "loop variables must be plain names")
        if not starred:
            if len(elts) != count:
                raise self.error(target, f"{count} loops ({ast.unparse(node.iter)}) but "
                                         f"{len(elts)} loop variables")
            return [(e.id, False) for e in plain]
        k = starred[0]
        rest = count - (len(elts) - 1)
        if rest < 0:
            raise self.error(target, f"{count} loops ({ast.unparse(node.iter)}) but at least "
                                     f"{len(elts) - 1} loop variables")
        return ([(e.id, False) for e in plain[:k]] + [(plain[k].id, True)] * rest
                + [(e.id, False) for e in plain[k + 1:]])

    def _loop_specs(self, iter_node: ast.expr) -> list:
        is_range = (isinstance(iter_node, ast.Call) and isinstance(iter_node.func, ast.Name)
                    and iter_node.func.id == "range" and self._is_builtin_name("range"))
        if is_range:  # `range(n)` / `range(a, b)` are serial loops
            args = [self.eval(a) for a in iter_node.args]
            try:
                value = T.serial(*args)
            except Exception as e:
                self.fail(iter_node, e)
        else:
            value = self.eval(iter_node)
        if isinstance(value, T.LoopSpec):
            return [value]
        if isinstance(value, list) and value and all(isinstance(v, T.LoopSpec) for v in value):
            return value
        raise self.error(iter_node, "a prim func loop iterates over T.grid(...), range(...), T.serial(...), "
                                    "T.parallel(...), T.vectorized(...) or T.unroll(...)")

    def _is_builtin_name(self, name: str) -> bool:
        return not any(name in s for s in self.scopes) and name not in self.namespace

    def visit_with(self, node: ast.With) -> Stmt | None:
        if len(node.items) != 1:
            raise self.error(node, "expected `with T.block(\"name\"):` or `with T.init():`")
        ctx = self.eval(node.items[0].context_expr)
        target = node.items[0].optional_vars
        if isinstance(ctx, (T.LaunchThreadDecl, T.AttrDecl)):
            if target is not None and not (isinstance(target, ast.Name) and isinstance(ctx, T.LaunchThreadDecl)):
                raise self.error(target, "only `with T.launch_thread(...) as name:` names a variable")
            self.scopes.append({})
            try:
                wrap = self._scoped_attr(ctx, target.id if target is not None else None, node)
                body = self.visit_body(node.body) or Evaluate(IntImm("int32", 0))
            finally:
                self.scopes.pop()
            return wrap(body)
        if isinstance(ctx, (T.LetStmtDecl, T.AllocateDecl)):
            return self._scoped_with(ctx, target, node)
        if isinstance(ctx, T.AssertDecl) and target is None:
            return AssertStmt(ctx.condition, ctx.message, self.visit_scoped_body(node.body))
        if target is not None:
            raise self.error(target, "`with ... as name` is only for T.launch_thread, T.LetStmt and T.allocate")
        if isinstance(ctx, T.BlockSpec):
            return self.visit_block(node, ctx)
        if isinstance(ctx, T.InitSpec):
            frame = self.frames[-1]
            if not isinstance(frame, _BlockFrame):
                raise self.error(node.items[0].context_expr, "T.init() belongs inside a T.block")
            if frame.init is not None:
                raise self.error(node.items[0].context_expr, "a block has at most one T.init()")
            frame.init = self.visit_scoped_body(node.body)
            return None
        raise self.error(node.items[0].context_expr,
                         f"`with` needs T.block(\"name\") or T.init(), got {ctx!r}")

    def _scoped_with(self, decl: Any, target: ast.expr | None, node: ast.With) -> Stmt:
        """``with T.LetStmt(value) as x:`` / ``with T.allocate(...) as buf:`` over the with body."""
        if target is not None and not isinstance(target, ast.Name):
            raise self.error(target, "`with ... as` needs a plain name")
        name = target.id if target is not None else None
        self.scopes.append({})
        try:
            if isinstance(decl, T.LetStmtDecl):
                var = decl.var if decl.named or name is None else Var(name, decl.value.dtype)
                if name is not None:
                    self.bind(name, var)
                body = self.visit_body(node.body) or Evaluate(IntImm("int32", 0))
                return LetStmt(var, decl.value, body)
            buffer = self._make_buffer(decl.spec, name or "buffer", node)
            if name is not None:
                self.bind(name, buffer)
            body = self.visit_body(node.body) or Evaluate(IntImm("int32", 0))
            return Allocate(buffer, body)
        finally:
            self.scopes.pop()

    def _scoped_attr(self, decl: Any, name: str | None, node: ast.AST) -> Callable[[Stmt], Stmt]:
        """The AttrStmt a T.launch_thread / T.attr wraps its body in (a thread launch binds
        ``name`` to the thread index in the current scope)."""
        if isinstance(decl, T.AttrDecl):
            return lambda body: AttrStmt(decl.node, decl.key, decl.value, body)
        iv = self._launch(decl, name, node)
        key = "virtual_thread" if iv.thread_tag == "vthread" else "thread_extent"
        return lambda body: AttrStmt(iv, key, decl.extent, body)

    def _launch(self, decl: Any, name: str | None, node: ast.AST) -> IterVar:
        """The thread IterVar of a launch: new for a tag, shared by every launch of an env_thread."""
        extent = decl.extent
        if isinstance(decl.thread, str):
            var = Var(name or decl.thread.replace(".", "_"), extent.dtype)
            iv = IterVar(Range(const(0, extent.dtype), extent), var, IterVar.ThreadIndex, decl.thread)
        else:
            entry = self.frames[0].env_threads.get(id(decl.thread))
            if entry is None:
                raise self.error(node, f"{decl.thread.name} is not a thread variable made by T.env_thread")
            iv = entry[1]
            if iv is None:
                iv = entry[1] = IterVar(Range(const(0, extent.dtype), extent), decl.thread,
                                        IterVar.ThreadIndex, entry[0])
            elif not structural_equal(iv.dom.extent, extent):
                raise self.error(node, f"thread {decl.thread.name} ({entry[0]}) is launched with extent "
                                       f"{extent} but was launched before with {iv.dom.extent}")
        if name is not None:
            self.bind(name, iv.var)
        return iv

    def visit_block(self, node: ast.With, spec: T.BlockSpec) -> Stmt:
        if self.macro_depth and spec.name in self.block_names:  # as TVM: op, op_1, op_2 ...
            k = 1
            while f"{spec.name}_{k}" in self.block_names:
                k += 1
            spec = T.BlockSpec(f"{spec.name}_{k}")
        self.block_names.add(spec.name)
        frame = _BlockFrame(spec.name)
        self.frames.append(frame)
        try:
            body = self.visit_scoped_body(node.body)
        finally:
            self.frames.pop()
        block = Block(spec.name, tuple(frame.iter_vars), tuple(frame.alloc_buffers),
                      tuple(frame.match_buffers), (), (), frame.init, body, dict(frame.annotations))
        if frame.reads is None or frame.writes is None:
            visible = [v for scope in self.scopes for v in scope.values() if isinstance(v, Buffer)]
            reads, writes = get_block_read_write_region(block, visible)
            frame.reads = tuple(reads) if frame.reads is None else frame.reads
            frame.writes = tuple(writes) if frame.writes is None else frame.writes
        block = Block(spec.name, tuple(frame.iter_vars), tuple(frame.alloc_buffers),
                      tuple(frame.match_buffers), frame.reads, frame.writes, frame.init, body,
                      dict(frame.annotations))
        predicate = frame.predicate if frame.predicate is not None else _TRUE
        return BlockRealize(tuple(frame.iter_values), predicate, block, span=self.source.span(node))

    def visit_assign(self, node: ast.Assign) -> Any:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self._buffer_store(target, self.eval(node.value), node.value)
        value = self.eval(node.value)
        if isinstance(target, ast.Tuple):
            return self._assign_tuple(target, value, node.value)
        if not isinstance(target, ast.Name):
            raise self.error(target, "can only assign to a name or a buffer element like A[i, j]")
        return self._assign_name(target, value, node.value)

    def _assign_tuple(self, target: ast.Tuple, value: Any, value_node: ast.expr) -> None:
        names = target.elts
        if not all(isinstance(n, ast.Name) for n in names):
            raise self.error(target, "can only unpack into plain names")
        if isinstance(value, T.RemapDecl):
            if len(value.kinds) != len(names):
                raise self.error(target, f"T.axis.remap kinds {value.kinds!r} define {len(value.kinds)} "
                                         f"variables but {len(names)} names are assigned")
            for name_node, kind, binding in zip(names, value.kinds, value.bindings):
                rng = self.loop_ranges.get(id(binding)) if isinstance(binding, Var) else None
                if rng is None:
                    raise self.error(value_node, f"T.axis.remap binds loop variables of enclosing loops; "
                                                 f"{binding} is not one")
                self._declare_axis(name_node, T._kind_of(kind), rng, binding)
            return None
        if isinstance(value, T.MetaVar):  # `a, b = T.meta_var((x, y))`: Python names only
            value = value.value
            if isinstance(value, (tuple, list)) and len(value) == len(names):
                for name_node, v in zip(names, value):
                    self.bind(name_node.id, v)
                return None
        if isinstance(value, (tuple, list)) and len(value) == len(names):
            # as TVM: each element binds as if assigned alone (`m, n = T.int64(), T.int64()`
            # declares two variables, a PrimExpr element makes a LetStmt)
            pending = [self._assign_name(name_node, v, value_node) for name_node, v in zip(names, value)]
            lets = [p for p in pending if isinstance(p, _NeedsRest)]
            if not lets:
                return None

            def build(rest: Stmt) -> Stmt:
                for let in reversed(lets):
                    rest = let.build(rest)
                return rest
            return _NeedsRest(build)
        if isinstance(value, (tuple, list)):
            raise self.error(target, f"cannot unpack {len(value)} values into {len(names)} names")
        raise self.error(value_node, "unpacking assignment needs T.axis.remap(...) or a tuple of values")

    def _declare_axis(self, name_node: ast.Name, kind: str, dom: Range, binding: PrimExpr) -> None:
        frame = self.frames[-1]
        if not isinstance(frame, _BlockFrame):
            raise self.error(name_node, "block iteration variables (T.axis.*) belong inside a T.block")
        if any(iv.var.name == name_node.id for iv in frame.iter_vars):
            raise self.error(name_node, f"block axis {name_node.id} is defined twice in this block (as TVM, "
                                        "each T.axis names a new iteration variable)")
        var = Var(name_node.id, binding.dtype)
        frame.iter_vars.append(IterVar(dom, var, kind))
        frame.iter_values.append(binding)
        self.bind(name_node.id, var)

    def _axis_dom(self, dom: Any, dtype: str, node: ast.expr) -> Range:
        if isinstance(dom, Range):
            return dom
        if isinstance(dom, (tuple, list)) and len(dom) == 2:
            begin, end = _op._promote(dom[0], dom[1])
            return Range(begin, T.extent_between(begin, end))
        if isinstance(dom, (int, PrimExpr)) and not isinstance(dom, bool):
            extent = convert(dom, dtype) if isinstance(dom, int) else dom
            return Range(const(0, extent.dtype), extent)
        raise self.error(node, f"an axis domain is an extent, (begin, end) or T.Range, got {dom!r}")

    def _assign_name(self, target: ast.Name, value: Any, value_node: ast.expr) -> Any:
        name = target.id
        frame = self.frames[-1]
        if isinstance(value, T.AxisDecl):
            self._declare_axis(target, value.kind, self._axis_dom(value.dom, value.binding.dtype, value_node),
                               value.binding)
            return None
        if isinstance(value, T.RemapDecl):
            if len(value.kinds) != 1:
                raise self.error(value_node, f"T.axis.remap kinds {value.kinds!r} define {len(value.kinds)} "
                                             "variables but 1 name is assigned")
            return self._assign_tuple(ast.Tuple(elts=[target], lineno=target.lineno,
                                                col_offset=target.col_offset), value, value_node)
        if isinstance(value, T.AllocBufferDecl):
            owner = frame.root_alloc_buffers if isinstance(frame, _FunctionFrame) else frame.alloc_buffers
            if any(b.name == name for b in owner):
                raise self.error(target, f"buffer {name} is allocated twice in the same block (as TVM, a "
                                         "block's buffers need distinct names)")
            buffer = self._make_buffer(value.spec, name, value_node)
            owner.append(buffer)
            self.bind(name, buffer)
            return None
        if isinstance(value, T.AllocateDecl):
            buffer = self._make_buffer(value.spec, name, value_node)
            self.bind(name, buffer)
            return _NeedsRest(lambda rest: Allocate(buffer, rest))
        if isinstance(value, T.AllocateConstDecl):
            var = Var(name, "handle")
            self.bind(name, var)
            return _NeedsRest(lambda rest: AllocateConst(var, value.dtype, value.extents, value.data, rest,
                                                         dict(value.annotations)))
        if isinstance(value, T.MatchBufferDecl):
            return self._match_buffer(target, value, value_node)
        if isinstance(value, T.BufferSpec):
            # `A_flat = T.Buffer((16384,), data=A.data)`: another view of memory (lowered IR)
            self.bind(name, self._make_buffer(value, name, value_node))
            return None
        if isinstance(value, T.ScalarVarDecl):
            self.bind(name, value.make(name))
            return None
        if isinstance(value, T.EnvThreadDecl):
            var = Var(name, value.dtype)
            self.frames[0].env_threads[id(var)] = [value.tag, None]
            self.bind(name, var)
            return None
        if isinstance(value, T.LaunchThreadDecl):  # `tx = T.launch_thread("threadIdx.x", 32)`
            return _NeedsRest(self._scoped_attr(value, name, value_node))
        if isinstance(value, T.MetaVar):
            self.bind(name, value.value)
            return None
        if type(value) is Var and not any(v is value for scope in self.scopes for v in scope.values()):
            # a fresh variable (`off = te.var("elem_offset")`) is named, not let-bound, as in TVM: it is
            # then defined where it is used first (a buffer's elem_offset ...)
            self.bind(name, value)
            return None
        if isinstance(value, PrimExpr):
            var = Var(name, value.dtype)
            self.bind(name, var)
            return _NeedsRest(lambda rest: LetStmt(var, value, rest))
        if isinstance(value, (T.LoopSpec, T.BlockSpec, T.InitSpec, T.ReadsDecl, T.WritesDecl,
                              T.WhereDecl, T.FuncAttrDecl, T.AttrDecl, Stmt)):
            raise self.error(value_node, f"{ast.unparse(value_node)} cannot be assigned to a name")
        self.bind(name, value)  # a Python value (number, tuple, buffer alias ...)
        return None

    def _make_buffer(self, spec: T.BufferSpec, name: str, node: ast.expr) -> Buffer:
        try:
            return spec.make(name)
        except Exception as e:
            self.fail(node, e)

    def _match_buffer(self, target: ast.Name, decl: T.MatchBufferDecl, node: ast.expr) -> None:
        frame = self.frames[-1]
        buffer = self._make_buffer(decl.spec, target.id, node)
        if isinstance(decl.source, BufferRegion):
            if not isinstance(frame, _BlockFrame):
                raise self.error(node, "T.match_buffer of a buffer region belongs inside a T.block")
            frame.match_buffers.append(MatchBufferRegion(buffer, decl.source))
        else:
            if not isinstance(frame, _FunctionFrame) or decl.source not in frame.params:
                raise self.error(node, "T.match_buffer(a, ...) takes a T.handle parameter of this function")
            if decl.source in frame.buffer_map:
                raise self.error(node, f"parameter {decl.source.name} already has a buffer")
            frame.buffer_map[decl.source] = buffer
        self.bind(target.id, buffer)
        return None

    def visit_ann_assign(self, node: ast.AnnAssign) -> Any:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "an annotated assignment needs a plain name (x: T.int32 = ...)")
        ann = self.eval(node.annotation)
        pointer = ann.type_annotation if T.is_pointer(ann) else None
        if pointer is not None:  # p: T.handle("float32") = ...: a handle let of that pointer type
            ann = T.ScalarType("handle")
        if not isinstance(ann, (T.ScalarType, T.LetAnnotation)):
            raise self.error(node.annotation, f"expected a scalar type like T.int32, got {ann!r}")
        if node.value is None:
            raise self.error(node, f"{node.target.id}: {ann!r} needs a value (x: T.int32 = ...)")
        value = self.eval(node.value)
        if isinstance(value, T.MetaVar):
            value = value.value
        if isinstance(ann, T.LetAnnotation):  # x: T.let[T.int32] = value (TVM 0.27): the same let
            if not _is_expr(value):
                value = convert(value)
            try:
                ann = T.ScalarType(ann.dtype(value))
            except (TypeError, ValueError) as e:
                self.fail(node.annotation, e)
        value = _op.cast(value, ann.dtype) if not _is_expr(value) or value.dtype != ann.dtype else value
        var = Var(node.target.id, ann.dtype, pointer)
        self.bind(node.target.id, var)
        return _NeedsRest(lambda rest: LetStmt(var, value, rest))

    def visit_aug_assign(self, node: ast.AugAssign) -> Stmt:
        if not isinstance(node.target, ast.Subscript):
            raise self.error(node.target, "TIR variables cannot be updated in place; "
                                          "accumulate into a buffer element (A[i] += x)")
        current = self.eval(ast.Subscript(value=node.target.value, slice=node.target.slice,
                                          ctx=ast.Load(), lineno=node.target.lineno,
                                          col_offset=node.target.col_offset,
                                          end_lineno=node.target.end_lineno,
                                          end_col_offset=node.target.end_col_offset))
        rhs = self.eval(node.value)
        try:
            value = _BINOPS[type(node.op)](current, rhs)
        except Exception as e:
            self.fail(node, e)
        return self._buffer_store(node.target, value, node.value)

    def _buffer_store(self, target: ast.Subscript, value: Any, value_node: ast.expr) -> Stmt:
        buffer = self.eval(target.value)
        if not isinstance(buffer, Buffer):
            raise self.error(target.value, f"can only store into a buffer; {ast.unparse(target.value)} "
                                           f"is {type(buffer).__name__}")
        indices = self._indices(target, buffer)
        # a slice stores a vector (B[0:4] = ...), as TVM: its lanes are the slice's elements
        indices = [_vector_index(i, dim) if isinstance(i, slice) else i for i, dim in zip(indices, buffer.shape)]
        value = _operand(value)
        lanes = max((_dt.lanes(i.dtype) for i in indices if _is_expr(i)), default=1)
        if lanes > 1:
            return self._vector_store(buffer, value, indices, lanes, target, value_node)
        if _is_expr(value) and _dt.lanes(value.dtype) > 1:
            raise self.error(value_node, f"{buffer.name}[...] is one element; the value is a vector "
                                         f"({value.dtype}): store it into a slice of as many lanes")
        if not _is_expr(value):
            try:
                value = const(value, buffer.dtype)
            except Exception as e:
                if not self.blames_script(e):
                    self.fail(value_node, e)
                raise self.error(value_node, f"cannot store {value!r} into {buffer.dtype} buffer "
                                             f"{buffer.name}") from None
        if value.dtype != buffer.dtype:
            if "handle" in (value.dtype, buffer.dtype):
                raise self.error(value_node, f"cannot store a {value.dtype} value into {buffer.dtype} buffer "
                                             f"{buffer.name}")
            value = _op.cast(value, buffer.dtype)  # as TVM's BufferStore: converted to the buffer's type
        return BufferStore(buffer, value, tuple(indices), span=self.source.span(target))

    def _vector_store(self, buffer: Buffer, value: Any, indices: list, lanes: int, target: ast.Subscript,
                      value_node: ast.expr) -> Stmt:
        """``B[0:4] = value``: ``value`` must be a vector of as many lanes (its lanes converted to the
        buffer's type)."""
        value = convert(value) if not _is_expr(value) else value
        if _dt.lanes(value.dtype) != lanes:
            raise self.error(value_node, f"storing {lanes} lanes into {buffer.name} needs a vector of {lanes} "
                                         f"lanes, got {value.dtype}")
        if _dt.element(value.dtype) != buffer.dtype:
            value = _op.cast(value, _dt.with_lanes(buffer.dtype, lanes))
        return BufferStore(buffer, value, tuple(indices), span=self.source.span(target))

    def visit_return(self, node: ast.Return) -> Stmt:
        """``return x``: TVM's ``T.ret(x)``, the scalar a ``-> T.int32`` function returns."""
        if node.value is None:
            raise self.error(node, "a prim func's return needs a value (return x is T.ret(x)); a function "
                                   "that returns nothing writes its results into buffers")
        value = self.eval(node.value)
        if not isinstance(value, (PrimExpr, int, float)):
            raise self.error(node.value, f"a prim func returns a scalar (return x is T.ret(x)), not {value!r}; "
                                         "results that are arrays are written into buffers")
        return Evaluate(_op.ret(value))

    def visit_expr_stmt(self, node: ast.Expr) -> Any:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring
        value = self.eval(node.value)
        frame = self.frames[-1]
        block_decls = (T.ReadsDecl, T.WritesDecl, T.WhereDecl, T.BlockAttrDecl)
        if isinstance(value, block_decls):
            if not isinstance(frame, _BlockFrame):
                what = ast.unparse(node.value.func) if isinstance(node.value, ast.Call) else "this"
                raise self.error(node.value, f"{what} belongs inside a T.block")
            field = {T.ReadsDecl: "reads", T.WritesDecl: "writes", T.WhereDecl: "predicate"}.get(type(value))
            if field is not None and getattr(frame, field) is not None:
                what = {"predicate": "T.where"}.get(field, f"T.{field}")
                raise self.error(node.value, f"{what} is given twice in this block (TVM takes one)")
            if isinstance(value, T.ReadsDecl):
                frame.reads = value.regions
            elif isinstance(value, T.WritesDecl):
                frame.writes = value.regions
            elif isinstance(value, T.WhereDecl):
                frame.predicate = value.predicate
            else:
                clash = [k for k, v in value.attrs.items() if k in frame.annotations
                         and not structural_equal(frame.annotations[k], v)]
                if clash:
                    raise self.error(node.value, f"block attribute {clash[0]!r} is given two different values")
                frame.annotations.update(value.attrs)
            return None
        if isinstance(value, T.FuncAttrDecl):
            if not isinstance(frame, _FunctionFrame) or len(self.scopes) != 1:
                raise self.error(node.value, "T.func_attr belongs at the top of the function body")
            frame.attrs.update(value.attrs)
            return None
        if isinstance(value, T.LetStmtDecl):
            return _NeedsRest(lambda rest: LetStmt(value.var, value.value, rest))
        if isinstance(value, (T.LaunchThreadDecl, T.AttrDecl)):  # over the rest of the body
            return _NeedsRest(self._scoped_attr(value, None, node.value))
        if isinstance(value, Stmt):
            return value
        if isinstance(value, PrimExpr):
            return Evaluate(value)
        if value is None:
            return None  # a Python call run for its effect (print ...)
        raise self.error(node.value, f"this expression has no effect in a prim func (it is {value!r})")

    def visit_if(self, node: ast.If) -> Stmt | None:
        cond = self.eval(node.test)
        if not _is_expr(cond):
            # a Python-level condition (e.g. on a closure constant) picks a branch while parsing
            return self.visit_body(node.body if cond else node.orelse)
        if cond.dtype != "bool":
            raise self.error(node.test, f"an if condition must be a boolean expression, got {cond.dtype}")
        then_case = self.visit_scoped_body(node.body)
        else_case = self.visit_scoped_body(node.orelse) if node.orelse else None
        return IfThenElse(cond, then_case, else_case)

    def visit_assert(self, node: ast.Assert) -> _NeedsRest:
        cond = convert(self.eval(node.test))
        message = self.eval(node.msg) if node.msg is not None else "assertion failed"
        if not isinstance(message, str):
            raise self.error(node.msg, "an assert message must be a string")
        return _NeedsRest(lambda rest: AssertStmt(cond, message, rest))

    # -- expressions --------------------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        handler = getattr(self, "eval_" + type(node).__name__, None)
        try:
            if handler is None:
                if self.data_only:
                    raise self.error(node, _data.refusal(node))
                return self.eval_python(node)
            return handler(node)
        except Exception as e:
            self.fail(node, e)

    def eval_python(self, node: ast.expr) -> Any:
        """Comprehensions, f-strings, lambdas ...: plain Python over the current names."""
        code = compile(ast.fix_missing_locations(ast.Expression(body=node)), self.source.filename, "eval")
        return builtins.eval(code, self._flat_scope())

    def eval_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def eval_Name(self, node: ast.Name) -> Any:
        return self.lookup(node)

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        value = self.eval(node.value)
        try:
            return self.attribute(value, node)
        except AttributeError:
            owner = ast.unparse(node.value)
            raise self.error(node, f"{owner} has no attribute {node.attr!r}") from None

    def attribute(self, value: Any, node: ast.Attribute) -> Any:
        """``value.<node.attr>``; in data mode only what TVMScript reads (``T.block``, ``A.data``)."""
        if value is T and node.attr in SCRIPT_NAME_ERAS:
            self.eras_seen.add(SCRIPT_NAME_ERAS[node.attr])
        if not self.data_only:
            return getattr(value, node.attr)
        found, why = _data.read_attribute(value, node.attr)
        if why is not None:
            raise self.error(node, _data.refusal(node, why))
        return found

    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._elements(node.elts))

    def eval_List(self, node: ast.List) -> list:
        return self._elements(node.elts)

    def _elements(self, elts: list[ast.expr]) -> list:
        out: list = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.eval(e.value))
            else:
                out.append(self.eval(e))
        return out

    def eval_Dict(self, node: ast.Dict) -> dict:
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                out[self.eval(k)] = self.eval(v)
        return out

    def eval_Call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        if self.data_only and (why := _data.check_call(func)) is not None:
            raise self.error(node, _data.refusal(node.func, why))
        args = self._elements(node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        if isinstance(func, (T.Macro, T.BoundMacro)):
            return self.expand_macro(func, args, kwargs, node)
        return func(*args, **kwargs)

    def expand_macro(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> Stmt | None:
        """The statements of a ``T.macro`` body with its parameters bound to the arguments."""
        with self.macro_scope(func, args, kwargs, node) as body:
            self.macro_depth += 1
            try:
                return self.visit_body(body)
            finally:
                self.macro_depth -= 1

    @contextlib.contextmanager
    def macro_scope(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> Iterator[list[ast.stmt]]:
        """Parse inside a macro's body (given to the ``with``): its parameters bound to the
        arguments, its names resolved where it was defined (hygienic) or where it is called."""
        macro = func.macro if isinstance(func, T.BoundMacro) else func
        if isinstance(func, T.BoundMacro):
            args = [func.obj, *args]
        try:
            bound = inspect.signature(macro.func).bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"macro {macro.__name__}: {e}") from None
        bound.apply_defaults()
        source = Source.from_object(macro.func)
        fdef = _function_def(source.parse(), macro.func.__name__)
        saved = self.source, self.namespace, self.scopes
        self.source = source
        if macro.hygienic:  # names resolve where the macro was defined, its own stay inside
            self.namespace, self.scopes = macro.namespace, [dict(bound.arguments)]
        else:  # names resolve where it is called
            self.namespace = {**macro.namespace, **self.namespace}
            self.scopes = [*self.scopes, dict(bound.arguments)]
        try:
            yield fdef.body
        finally:
            self.source, self.namespace, self.scopes = saved

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        a, b = _operand(self.eval(node.left)), _operand(self.eval(node.right))
        fn = _BINOPS.get(type(node.op))
        if fn is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        if (_is_expr(a) or _is_expr(b)) and type(node.op) in _EXPR_BINOPS:
            return _EXPR_BINOPS[type(node.op)](a, b)
        if self.data_only and not (_is_expr(a) or _is_expr(b)):
            why = _data.check_python_binop(type(node.op), a, b)
            if why is not None:
                raise self.error(node, _data.refusal(node, why))
        return fn(a, b)

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = _operand(self.eval(node.operand))
        if isinstance(node.op, ast.Not):
            return _op.logical_not(v) if _is_expr(v) else not v
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        return _op.logical_not(v) if _is_expr(v) and v.dtype == "bool" else ~v

    def eval_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [_operand(self.eval(v)) for v in node.values]
        if not any(_is_expr(v) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return result
        combine = _op.logical_and if isinstance(node.op, ast.And) else _op.logical_or
        result = values[0]
        for v in values[1:]:
            result = combine(result, v)
        return result

    def eval_Compare(self, node: ast.Compare) -> Any:
        left = _operand(self.eval(node.left))
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            fn = _CMPOPS.get(type(op_node))
            if fn is None:
                raise self.error(node, f"unsupported comparison {type(op_node).__name__} in a prim func")
            right = _operand(self.eval(right_node))
            this = _EXPR_CMPOPS[type(op_node)](left, right) if _is_expr(left) or _is_expr(right) \
                else fn(left, right)
            if result is None:
                result = this
            elif _is_expr(result) or _is_expr(this):
                result = _op.logical_and(result, this)
            else:
                result = result and this
            left = right
        return result

    def eval_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.eval(node.test)
        if not _is_expr(cond):
            return self.eval(node.body) if cond else self.eval(node.orelse)
        return _op.if_then_else(cond, self.eval(node.body), self.eval(node.orelse))

    def eval_Subscript(self, node: ast.Subscript) -> Any:
        value = self.eval(node.value)
        if isinstance(value, Buffer):
            indices = self._indices(node, value)
            if any(isinstance(i, slice) and i.step not in (None, 1) for i in indices):
                # a strided slice is a vector load (A[0:8:2]), as TVM reads it
                return BufferLoad(value, tuple(_vector_index(i, dim) if isinstance(i, slice) else i
                                               for i, dim in zip(indices, value.shape)))
            if any(isinstance(i, slice) for i in indices):
                return BufferRegion(value, tuple(
                    self._slice_range(i, dim) for i, dim in zip(indices, value.shape)))
            return BufferLoad(value, tuple(indices))
        return value[self._subscript_key(node.slice)]

    def _subscript_key(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            return slice(*(None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            key: list = []
            for e in node.elts:
                if isinstance(e, ast.Starred):  # A[(*spatial, k)]
                    key.extend(self.eval(e.value))
                else:
                    key.append(self._subscript_key(e))
            return tuple(key)
        return self.eval(node)

    def _indices(self, node: ast.Subscript, buffer: Buffer) -> list:
        key = self._subscript_key(node.slice)
        key = list(key) if isinstance(key, tuple) else [key]
        if len(key) != buffer.ndim:
            raise self.error(node, f"buffer {buffer.name} has {buffer.ndim} dimensions, "
                                   f"indexed with {len(key)}")
        out = []
        for k in key:
            if isinstance(k, slice):
                out.append(k)
                continue
            k = convert(k)
            if not _dt.is_int(k.dtype):
                raise self.error(node.slice, f"buffer {buffer.name} is indexed with a {k.dtype} value; "
                                             "indices must be integers")
            out.append(k)
        return out

    def _slice_range(self, index: Any, dim: PrimExpr) -> Range:
        if not isinstance(index, slice):
            return Range(index, const(1, index.dtype))
        if index.step not in (None, 1):
            raise ValueError("a buffer region cannot have a step")
        begin = convert(0 if index.start is None else index.start, dim.dtype if index.start is None else None)
        end = dim if index.stop is None else convert(index.stop)
        begin, end = _op._promote(begin, end)
        return Range(begin, T.extent_between(begin, end))


#: the parser's code that performs a Python operation the script wrote (a call, ``t[i]``,
#: ``a + b`` of Python values ...): an exception raised there, or in the script's own code it
#: runs, is the script's mistake whatever its type (see :func:`diagnostics.blames_script`)
_SCRIPT_OPERATIONS = frozenset(f.__code__ for f in (
    _TIRParser.eval_python, _TIRParser.eval_Call, _TIRParser.eval_Subscript, _TIRParser._subscript_key,
    _TIRParser._elements, _TIRParser.eval_Dict, _TIRParser.eval_BinOp, _TIRParser.eval_UnaryOp,
    _TIRParser.eval_BoolOp, _TIRParser.eval_Compare, _TIRParser.eval_IfExp, _TIRParser.attribute,
    _TIRParser.visit_if, _TIRParser.visit_aug_assign))


def _contains_block(stmt: Stmt) -> bool:
    found = []

    def visit(n: Any) -> bool:
        if isinstance(n, (Block, BlockRealize)):
            found.append(n)
        return not found and not isinstance(n, PrimExpr)

    pre_order_visit(stmt, visit)
    return bool(found)


def _explain(e: Exception) -> str:
    text = str(e) if not isinstance(e, KeyError) else str(e.args[0]) if e.args else "key error"
    return text or type(e).__name__


