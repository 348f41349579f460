"""The TVMScript namespace for modules: ``from minitvm.script import ir as I``.

``@I.ir_module`` turns a class whose methods are TVMScript functions into an
``IRModule``.  Each dialect (TensorIR, Relax) registers the decorator that
marks its functions and a parser for them; the module decorator creates one
``GlobalVar`` per function first, so a dialect whose functions call each other can
resolve those names while parsing.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Any, Callable

from ..ir.deep import deep
from ..ir.global_info import _PARSING, DummyGlobalInfo, VDevice
from ..ir.global_info import lookup_vdevice as _lookup_vdevice
from ..ir.module import GlobalVar, IRModule
from ..ir.structural import structural_equal
from ..relax.base_py_module import make_module_factory
from ..relax.expr import ExternFunc, Function
from ..tir.function import PrimFunc
from . import tir as T
from .diagnostics import Source, TVMScriptError
from .parser import DeferredFunction, _TIRParser, parse_prim_func_ast

__all__ = ["ir_module", "pyfunc", "GlobalVar", "module_attrs", "register_function_parser", "FunctionParser",
           "module_global_infos", "vdevice", "dummy_global_info", "lookup_vdevice", "Range"]

#: ``I.Range(begin, end)``: a range as TVM prints one outside a function (same node as T.Range)
Range = T.Range


@dataclass(frozen=True)
class FunctionParser:
    """How one dialect parses its functions.

    ``parse(fdef, source, namespace, options, global_vars, name)`` returns the function;
    ``fdef`` is the ``ast.FunctionDef``, ``options`` the decorator's keyword arguments and
    ``global_vars`` maps every function name of the module to its GlobalVar.
    """

    dialect: str
    decorator: Callable
    parse: Callable[..., Any]
    #: optional ``declare(fdef, source, namespace, options, global_vars, name)``, run for every
    #: function of a module before any is parsed (Relax records each signature on its GlobalVar,
    #: so functions can call each other in any order)
    declare: Callable[..., Any] | None = None


class ModuleRef:
    """``cls`` inside a function of an ``@I.ir_module`` class: ``cls.name`` is a GlobalVar."""

    def __init__(self, global_vars: dict[str, GlobalVar]):
        self._global_vars = global_vars

    def __getattr__(self, name: str) -> GlobalVar:
        if name.startswith("__"):
            raise AttributeError(name)
        gv = self._global_vars.get(name)
        if gv is None:
            known = ", ".join(sorted(self._global_vars)) or "(none)"
            raise AttributeError(f"the module has no function {name!r}; it has: {known}")
        return gv


#: functions a module's parsers generate while parsing (``R.emit_te`` makes PrimFuncs):
#: one dict GlobalVar -> function per module being built, innermost last
_GENERATED: list[dict] = []


def add_generated_function(func: Any, name_hint: str, global_vars: dict[str, GlobalVar]) -> GlobalVar:
    """Add ``func`` to the module being parsed under a name no function of it uses (an
    identical function generated before is reused); ``global_vars`` learns the new name."""

    if not _GENERATED:
        raise TVMScriptError(f"{name_hint}: R.emit_te adds a PrimFunc to the module, so it needs an "
                             "@I.ir_module class around the function")
    generated = _GENERATED[-1]
    for gv, existing in generated.items():
        if type(existing) is type(func) and structural_equal(existing, func):
            return gv
    name, i = name_hint, 0
    while name in global_vars:
        i += 1
        name = f"{name_hint}{i}"
    gv = global_vars[name] = GlobalVar(name)
    generated[gv] = func
    return gv


_PARSERS: dict[str, FunctionParser] = {}


def register_function_parser(dialect: str, decorator: Callable, parse: Callable[..., Any],
                             declare: Callable[..., Any] | None = None) -> None:
    """Let ``@I.ir_module`` (and ``from_source``) parse functions marked with ``decorator``."""
    _PARSERS[dialect] = FunctionParser(dialect, decorator, parse, declare)


def parser_for_decorator(decorator: Any) -> FunctionParser | None:
    for p in _PARSERS.values():
        if p.decorator is decorator:
            return p
    return None


def parser_for_dialect(dialect: str) -> FunctionParser:
    return _PARSERS[dialect]


def _parse_tir(fdef: ast.FunctionDef, source: Source, namespace: dict, options: dict,
               global_vars: dict, name: str, annotations: dict | None = None) -> Any:

    return parse_prim_func_ast(fdef, source, namespace, private=bool(options.get("private", False)),
                               annotations=annotations, name=name,
                               check_well_formed=bool(options.get("check_well_formed", True)))


def _register_builtin_dialects() -> None:
    register_function_parser("tir", T.prim_func, _parse_tir)


_register_builtin_dialects()


def module_attrs(attrs: dict) -> None:
    """Inside an ``@I.ir_module`` class body: attributes of the module."""
    if not isinstance(attrs, dict):
        raise TypeError("I.module_attrs takes a dict")
    sys._getframe(1).f_locals["__module_attrs__"] = dict(attrs)


def module_global_infos(global_infos: dict) -> None:
    """Inside an ``@I.ir_module`` class body: the module's global infos
    (``{"vdevice": [I.vdevice("llvm"), ...]}``)."""
    if not isinstance(global_infos, dict) or not all(isinstance(v, (list, tuple)) for v in global_infos.values()):
        raise TypeError("I.module_global_infos takes a dict of name -> list of global infos")
    sys._getframe(1).f_locals["__module_global_infos__"] = {str(k): list(v) for k, v in global_infos.items()}


def vdevice(target: Any = None, vdevice_id: int = 0, memory_scope: str = "global") -> VDevice:
    """``I.vdevice("llvm", 0, "global")``: a virtual device for ``I.module_global_infos``."""
    return VDevice(target, vdevice_id, memory_scope)


def dummy_global_info() -> DummyGlobalInfo:
    return DummyGlobalInfo()


def lookup_vdevice(target_kind: str | None = None, device_index: int = -1) -> VDevice:
    """The ``device_index``-th virtual device of ``target_kind`` in the module being parsed."""
    return _lookup_vdevice(str(target_kind), device_index)


def ir_module(cls: type | None = None, *, check_well_formed: bool = True, s_tir: bool = False) -> Any:
    """Build an ``IRModule`` from a class whose methods are ``@T.prim_func`` / ``@R.function``
    functions; ``@I.ir_module(check_well_formed=False)`` skips the Relax functions'
    well-formedness checks.  ``s_tir`` (TVM 0.27: check PrimFuncs as schedulable TIR, with
    blocks) changes nothing here: one checker accepts both forms."""

    def build(c: type) -> IRModule:
        try:
            mod = _build_module(c, DeferredFunction, check_well_formed)
        except TVMScriptError as err:
            raise err.with_traceback(None) from None
        return _named(_with_pyfuncs(mod, c), c.__name__)

    return build if cls is None else build(cls)


def _named(result: Any, name: str) -> Any:
    """The decorated result keeps the Python name it was defined under (``Module.__name__``), as
    TVM's decorators set it; the IR's own fields are untouched."""
    try:
        object.__setattr__(result, "__name__", name)
    except (AttributeError, TypeError):  # an object with no instance dict keeps no name
        pass
    return result


def _build_module(cls: type, deferred_type: type, check_well_formed: bool = True) -> IRModule:
    # struct infos name the module's virtual devices ("llvm:0") while its functions are parsed
    global_infos = vars(cls).get("__module_global_infos__") or {}
    _PARSING.append(global_infos)
    try:
        mod = _build_functions(cls, deferred_type, check_well_formed)
    finally:
        _PARSING.pop()
    return IRModule(mod.functions, mod.attrs, global_infos)


@deep
def _build_functions(cls: type, deferred_type: type, check_well_formed: bool) -> IRModule:
    members = {k: v for k, v in vars(cls).items() if not k.startswith("__")}
    global_vars = {name: GlobalVar(name) for name, v in members.items()
                   if isinstance(v, deferred_type) or _is_function_node(v)}
    functions = {}
    pending = []
    for name, value in members.items():
        if isinstance(value, deferred_type):
            func = value.func
            source = Source.from_object(func)
            fdef = next(s for s in source.parse().body if isinstance(s, ast.FunctionDef))
            namespace = dict(func.__globals__)
            namespace.update(value.extra_vars)
            namespace[cls.__name__] = ModuleRef(global_vars)  # `Module.func` inside `class Module`
            parser = parser_for_dialect(value.dialect)
            if parser.declare is not None:
                parser.declare(fdef, source, namespace, value.options, global_vars, name)
            pending.append((name, value, fdef, source, namespace, parser))
        elif _is_function_node(value):
            functions[global_vars[name]] = value
    _GENERATED.append({})
    try:
        for name, value, fdef, source, namespace, parser in pending:
            options = value.options if check_well_formed else {**value.options, "check_well_formed": False}
            functions[global_vars[name]] = parser.parse(
                fdef, source, namespace, options, global_vars, name,
                annotations=getattr(value.func, "__annotations__", None))
    finally:
        functions.update(_GENERATED.pop())
    return IRModule(functions, vars(cls).get("__module_attrs__"))


def pyfunc(func: Callable) -> Callable:
    """``@I.pyfunc``: a plain Python method of an ``@I.ir_module`` class deriving from
    ``BasePyModule`` (TVM 0.27); the module holds it as ``R.ExternFunc(name)``."""
    func.dispatch_token = "pyfunc"
    return func


def _with_pyfuncs(mod: IRModule, cls: type) -> Any:
    """``mod``, or for a class deriving from BasePyModule the factory of its modules."""
    pyfuncs = {k: v for k, v in vars(cls).items() if getattr(v, "dispatch_token", None) == "pyfunc"}
    if not any(base.__name__ == "BasePyModule" for base in cls.__mro__[1:]):
        if pyfuncs:
            raise TVMScriptError(f"@I.pyfunc are only allowed in classes that inherit from BasePyModule. "
                                 f"Class '{cls.__name__}' does not inherit from BasePyModule "
                                 f"(its @I.pyfunc: {', '.join(pyfuncs)}).")
        return mod

    return make_module_factory(mod, pyfuncs, cls)


def _is_function_node(value: Any) -> bool:
    # (an ExternFunc written in the class body is a module function too, as in TVM)
    return isinstance(value, (PrimFunc, Function, ExternFunc))


@deep
def parse_module_class(cdef: ast.ClassDef, source: Source, namespace: dict,
                       check_well_formed: bool = True) -> IRModule:
    """``from_source`` of a module: parse a class definition's methods by their decorators."""

    evaluator = _TIRParser(source, namespace)
    evaluator.scopes.append({})
    global_vars = {s.name: GlobalVar(s.name) for s in cdef.body if isinstance(s, ast.FunctionDef)}
    namespace = {**namespace, cdef.name: ModuleRef(global_vars)}  # `Module.func` inside `class Module`
    functions = {}
    attrs = None
    decorated = {}
    # the module's virtual devices first: struct infos of every function may name them
    global_infos = {}
    for stmt in cdef.body:
        if _is_call_of(stmt, evaluator, module_global_infos):
            global_infos = {str(k): list(v) for k, v in evaluator.eval(stmt.value.args[0]).items()}
    _PARSING.append(global_infos)
    try:
        for stmt in cdef.body:
            if isinstance(stmt, ast.FunctionDef):
                parser, options = function_decorator(stmt, evaluator)
                if not check_well_formed:
                    options = {**options, "check_well_formed": False}
                decorated[stmt.name] = (parser, options)
                if parser.declare is not None:
                    parser.declare(stmt, source, namespace, options, global_vars, stmt.name)
        _GENERATED.append({})
        try:
            attrs = _parse_class_body(cdef, source, namespace, evaluator, decorated, global_vars, functions)
        finally:
            functions.update(_GENERATED.pop())
    finally:
        _PARSING.pop()
    return IRModule(functions, attrs, global_infos)


def _is_call_of(stmt: ast.stmt, evaluator: Any, func: Callable) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and evaluator.eval(stmt.value.func) is func)


def _parse_class_body(cdef: ast.ClassDef, source: Source, namespace: dict, evaluator: Any,
                      decorated: dict, global_vars: dict, functions: dict) -> dict | None:
    attrs = None
    for stmt in cdef.body:
        if isinstance(stmt, ast.FunctionDef):
            parser, options = decorated[stmt.name]
            functions[global_vars[stmt.name]] = parser.parse(stmt, source, namespace, options,
                                                             global_vars, stmt.name)
        elif _is_call_of(stmt, evaluator, module_attrs):
            attrs = evaluator.eval(stmt.value.args[0])
        elif _is_call_of(stmt, evaluator, module_global_infos):
            continue  # read before the functions
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
              and _is_function_node(value := _try_eval(evaluator, stmt.value))):
            # `my_ext = R.ExternFunc("my_ext")`: a module function written as a value
            gv = global_vars.setdefault(stmt.targets[0].id, GlobalVar(stmt.targets[0].id))
            functions[gv] = value
        else:
            raise source.error(stmt, "an @I.ir_module class holds decorated functions only")
    return attrs


def _try_eval(evaluator: Any, node: ast.expr) -> Any:
    try:
        return evaluator.eval(node)
    except TVMScriptError:
        return None  # not a module function: reported as a statement the class cannot hold


def function_decorator(fdef: ast.FunctionDef, evaluator: Any) -> tuple[FunctionParser, dict]:
    """Which dialect parses ``fdef`` (from its decorator) and the decorator's options."""
    for deco in fdef.decorator_list:
        target, options = deco, {}
        if isinstance(deco, ast.Call):
            target = deco.func
            options = {kw.arg: evaluator.eval(kw.value) for kw in deco.keywords}
        parser = parser_for_decorator(evaluator.eval(target))
        if parser is not None:
            return parser, options
    raise evaluator.source.error(
        fdef, f"function {fdef.name!r} needs a dialect decorator such as @T.prim_func")
