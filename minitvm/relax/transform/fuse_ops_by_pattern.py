"""FuseOpsByPattern: group what a pattern matches into ``Composite`` functions (TVM's BYOC entry).

    patterns = [("ccompiler.matmul_relu", is_op("relax.nn.relu")(is_op("relax.matmul")(wildcard(), wildcard())))]
    mod = relax.transform.FuseOpsByPattern(patterns, annotate_codegen=True)(mod)

Each pattern is a :class:`FusionPattern` (or the tuple of its arguments): a name
``"<codegen>.<what>"``, a :mod:`relax.dpl` pattern, the sub-patterns worth naming
(``annotation_patterns``) and an optional ``check(PatternCheckContext) -> bool`` that may refuse
a match.  Patterns are tried one after the other, the first of the list first; for each, every
binding of a call is matched (looking back through the bindings before it, as TVM's matcher
does), and what the pattern's call patterns matched joins the group of the matched binding:
the bindings a wildcard matched stay out.  A later match that swallows a whole earlier group
takes it in (a maximal match); one that covers only part of it is dropped.  Every group
becomes a private function ``attrs {"Composite": name, "Primitive": True}`` named after its
operators (``fused_relax_matmul_relax_nn_relu``), called where its last binding was -- the
machinery of :mod:`.fuse_ops`.  ``bind_constants=True`` keeps the constants a group reads in
its body; False makes them parameters.

``annotate_codegen=True`` then wraps each composite function called from the module's
functions in a public function ``attrs {"Codegen": "<codegen>", "global_symbol": "<name>_<codegen>"}``
whose body defines the composite function locally and calls it: the shape
:class:`RunCodegen` hands to an external code generator.  Without it, run
:class:`MergeCompositeFunctions` to put neighbouring composite calls of one backend in one
such function.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, module_pass
from ..block_builder import BlockBuilder, _NameTable
from ..dpl.pattern import CallPattern, DFPattern, TupleGetItemPattern
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    Function,
    SeqExpr,
    Var,
    VarBinding,
    _set_struct_info,
)
from ..expr_functor import ExprMutator, ExprVisitor
from .fuse_ops import _leaves_below, make_grouped_functions

__all__ = ["FuseOpsByPattern", "FusionPattern", "PatternCheckContext", "get_codegen_name"]


class PatternCheckContext:
    """What a :class:`FusionPattern`'s ``check`` sees of one match (TVM's fields).

    ``matched_expr``: the call the whole pattern matched; ``annotated_expr``: name -> the
    expression each annotation pattern matched; ``matched_bindings``: variable -> value of the
    bindings the match would fuse (the matched call's included); ``var_usages``: variable of the
    dataflow block -> the variables whose bindings read it; ``value_to_bound_var``: value -> the
    variable bound to it, for the bindings up to the match.
    """

    __slots__ = ("matched_expr", "annotated_expr", "matched_bindings", "var_usages", "value_to_bound_var")

    def __init__(self, matched_expr: Any, annotated_expr: dict[str, Any], matched_bindings: dict[Var, Any],
                 var_usages: dict[Var, list[Var]], value_to_bound_var: dict[Any, Var]) -> None:
        self.matched_expr = matched_expr
        self.annotated_expr = annotated_expr
        self.matched_bindings = matched_bindings
        self.var_usages = var_usages
        self.value_to_bound_var = value_to_bound_var


class FusionPattern:
    """A named pattern for :class:`FuseOpsByPattern`: ``FusionPattern(name, pattern,
    annotation_patterns=None, check=None, attrs_getter=None)``; ``attrs_getter(annotated_expr)``
    returns more attributes for the composite function."""

    def __init__(self, name: str, pattern: DFPattern, annotation_patterns: Mapping[str, DFPattern] | None = None,
                 check: Callable[[PatternCheckContext], bool] | None = None,
                 attrs_getter: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"FusionPattern: the name must be a non-empty str such as 'ccompiler.matmul', got {name!r}")
        if not isinstance(pattern, DFPattern):
            raise TypeError(f"FusionPattern {name!r}: pattern must be a relax.dpl pattern, "
                            f"got {type(pattern).__name__}")
        annotations = dict(annotation_patterns or {})
        for key, sub in annotations.items():
            if not isinstance(key, str) or not isinstance(sub, DFPattern):
                raise TypeError(f"FusionPattern {name!r}: annotation_patterns maps names to patterns, got "
                                f"{key!r}: {sub!r}")
        for what, fn in (("check", check), ("attrs_getter", attrs_getter)):
            if fn is not None and not callable(fn):
                raise TypeError(f"FusionPattern {name!r}: {what} must be callable, got {fn!r}")
        self.name = name
        self.pattern = pattern
        self.annotation_patterns = annotations
        self.check = check
        self.attrs_getter = attrs_getter

    def __repr__(self) -> str:
        return f"FusionPattern({self.name!r}, {self.pattern!r})"


def get_codegen_name(composite_name: str) -> str:
    """The backend of a composite function: its name up to the first dot (``"ccompiler"``)."""
    if "." not in composite_name:
        raise ValueError(f"the pattern name {composite_name!r} should start with a codegen name and a dot "
                         "(e.g. 'ccompiler.matmul')")
    return composite_name.split(".", 1)[0]


# -- partitioning ------------------------------------------------------------------------------

class _Group:
    """A union-find group of bindings; ``attrs`` become the fused function's attributes."""

    __slots__ = ("parent", "num_nodes", "attrs", "members")

    def __init__(self, first: Var) -> None:
        self.parent: _Group | None = None
        self.num_nodes = 1
        self.attrs: dict[str, Any] = {}
        self.members: list[Var] = [first]

    def root(self) -> _Group:
        g = self
        while g.parent is not None:
            g = g.parent
        return g


def _use_def(block: DataflowBlock) -> dict[Var, list[Var]]:
    """Each variable read in ``block`` (or defined there) -> the variables whose bindings read it."""
    users: dict[Var, list[Var]] = {}
    for b in block.bindings:
        for v in _leaves_below(b.value):
            if isinstance(v, Var):
                users.setdefault(v, []).append(b.var)
        users.setdefault(b.var, [])
    return users


class _PatternPartitioner(ExprVisitor):
    """One pattern over one function: the group of every variable it defines (TVM's
    PatternBasedPartitioner)."""

    def __init__(self, fp: FusionPattern) -> None:
        self.fp = fp
        self.group_of: dict[int, _Group] = {}
        self.var_of: dict[int, Var] = {}  # id -> the variable, to report a clash
        self.bindings: dict[Var, Any] = {}
        self.value_to_var: dict[Any, Var] = {}
        self.use_def: dict[Var, list[Var]] = {}

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        self.use_def = _use_def(block)
        super().visit_dataflow_block_(block)
        self.use_def = {}

    def visit_var_def_(self, var: Var) -> None:
        self.group_of[id(var)] = _Group(var)
        self.var_of[id(var)] = var

    visit_dataflow_var_def_ = visit_var_def_

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.bindings[binding.var] = binding.value
        self.value_to_var[binding.value] = binding.var
        if not isinstance(binding.value, Call):
            super().visit_var_binding_(binding)
            return
        self.visit_var_def(binding.var)
        self._match(binding)

    def _match(self, binding: VarBinding) -> None:
        call = binding.value
        matched = self.fp.pattern.extract_matched_expr(call, self.bindings)
        if matched is None:
            return
        context = self._context(call, matched)
        if self.fp.check is not None and not self.fp.check(context):
            return
        inner = [e for p, e in matched.items()
                 if (isinstance(p, CallPattern) and e is not call) or isinstance(p, TupleGetItemPattern)]
        inner_vars = [self.value_to_var[e] for e in inner if e in self.value_to_var]
        covered = {id(v) for v in inner_vars} | {id(binding.var)}
        for v in inner_vars:
            earlier = self.group_of[id(v)].root()
            # an earlier match is taken in whole or the new one is dropped: half of it would split it
            if earlier.num_nodes > 1 and any(id(m) not in covered for m in earlier.members):
                return
        parent = self.group_of[id(binding.var)].root()
        parent.attrs["Composite"] = self.fp.name
        if self.fp.attrs_getter is not None:
            parent.attrs.update(self.fp.attrs_getter(context.annotated_expr))
        for v in inner_vars:
            g = self.group_of[id(v)].root()
            if g is not parent:
                g.parent = parent
                parent.num_nodes += g.num_nodes
                parent.members += g.members

    def _context(self, call: Call, matched: dict[DFPattern, Any]) -> PatternCheckContext:
        annotated = {name: matched[p] for name, p in self.fp.annotation_patterns.items() if p in matched}
        fused = {self.value_to_var[e]: e for p, e in matched.items()
                 if isinstance(p, (CallPattern, TupleGetItemPattern)) and e in self.value_to_var}
        return PatternCheckContext(call, annotated, fused, self.use_def, dict(self.value_to_var))


def _is_fusable_target(func: Any) -> bool:
    attrs = getattr(func, "attrs", None) or {}
    return isinstance(func, Function) and not (attrs.get("Primitive") or attrs.get("Composite")
                                               or attrs.get("Codegen"))


def _entry_functions(mod: IRModule, names: Sequence[str]) -> list[tuple[GlobalVar, Function]]:
    if not names:
        return [(gv, f) for gv, f in mod.functions.items() if _is_fusable_target(f)]
    out = []
    for name in names:
        if name not in mod:
            raise ValueError(f"FuseOpsByPattern: entry function {name!r} is not in the module "
                             f"(it has {', '.join(mod.keys())})")
        gv = mod.get_global_var(name)
        if not isinstance(mod[gv], Function):
            raise ValueError(f"FuseOpsByPattern: entry function {name!r} must be a Relax function")
        out.append((gv, mod[gv]))
    return out


def _partition(fp: FusionPattern, targets: list[tuple[GlobalVar, Function]]) -> dict[int, _Group]:
    group_of: dict[int, _Group] = {}
    for gv, func in targets:
        part = _PatternPartitioner(fp)
        part.visit_expr(func)
        for key, group in part.group_of.items():
            if key in group_of:
                raise ValueError(f"FuseOpsByPattern: the variable {part.var_of[key].name_hint!r} is defined in more "
                                 f"than one function (again in {gv.name_hint!r}): the module is not in single "
                                 "static assignment form")
            group_of[key] = group
    return {key: g.root() for key, g in group_of.items()}


# -- annotate_codegen ---------------------------------------------------------------------------

def _wrap_composite(func: Function, codegen: str, symbol: str) -> Function:
    """``func`` defined and called inside a public function marked for ``codegen``."""
    inner = func.without_attr("Primitive")
    params = [Var(p.name_hint, p.struct_info) for p in func.params]
    local = Var("local_func", inner.struct_info)
    output = Var("output", inner.ret_struct_info)
    call = Call(local, params)
    _set_struct_info(call, inner.ret_struct_info)
    body = SeqExpr((BindingBlock([VarBinding(local, inner), VarBinding(output, call)]),), output)
    wrapper = Function(params, body, func.ret_struct_info, inner.is_pure,
                       {"Codegen": codegen, "global_symbol": symbol})
    return BlockBuilder().normalize(wrapper)


class _CallRenamer(ExprMutator):
    """Calls of the GlobalVars in ``renamed`` call their replacements."""

    def __init__(self, mod: IRModule, renamed: dict[GlobalVar, GlobalVar]) -> None:
        super().__init__(mod)
        self.renamed = renamed

    def visit_call_(self, op: Call) -> Any:
        new = super().visit_call_(op)
        if isinstance(op.op, GlobalVar) and op.op in self.renamed:
            new = Call(self.renamed[op.op], list(new.args), new.attrs, new.sinfo_args)
            _set_struct_info(new, op.struct_info)
        return new


def annotate_codegen(mod: IRModule) -> IRModule:
    """Every composite function a non-composite function calls, wrapped for its codegen (TVM's
    CompositeFunctionAnnotator); the composite functions wrapped leave the module."""
    callers = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, Function)
               and not (f.attrs.get("Composite") or f.attrs.get("Codegen"))]
    called = {id(ref): ref for _, f in callers for ref in _global_vars_called(f)}
    renamed: dict[GlobalVar, GlobalVar] = {}
    wrapped: dict[GlobalVar, Function] = {}
    taken = set(mod.keys())
    for gv, func in mod.functions.items():
        composite = isinstance(func, Function) and func.attrs.get("Composite")
        if not composite or id(gv) not in called:
            continue
        codegen = get_codegen_name(str(composite))
        symbol = fresh_name(f"{gv.name_hint}_{codegen}", taken)
        renamed[gv] = GlobalVar(symbol)
        wrapped[renamed[gv]] = _wrap_composite(func, codegen, symbol)
    if not renamed:
        return mod
    renamer = _CallRenamer(mod, renamed)
    funcs = {gv: f for gv, f in mod.functions.items() if gv not in renamed}
    for gv, f in callers:
        funcs[gv] = renamer.visit_expr(f)
    funcs.update(wrapped)
    return IRModule(funcs, mod.attrs, mod.global_infos)


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base1``, ``base2`` ... whichever ``taken`` lacks (then taken), as BlockBuilder names."""
    name = _NameTable(lambda n: n in taken).get(base)
    taken.add(name)
    return name


def _global_vars_called(func: Function) -> list[GlobalVar]:
    found: list[GlobalVar] = []

    class _Calls(ExprVisitor):
        def visit_call_(self, op: Call) -> None:
            if isinstance(op.op, GlobalVar):
                found.append(op.op)
            super().visit_call_(op)

    _Calls().visit_expr(func)
    return found


def _as_fusion_pattern(item: Any) -> FusionPattern:
    if isinstance(item, FusionPattern):
        return item
    if isinstance(item, tuple):
        return FusionPattern(*item)
    raise ValueError(f"FuseOpsByPattern: invalid pattern {item!r}: give a FusionPattern or a tuple "
                     "(name, pattern[, annotation_patterns[, check]])")


@module_pass(opt_level=0, name="FuseOpsByPattern")
class FuseOpsByPattern:
    """Group what each pattern matches into ``Composite`` functions (see the module docstring):
    ``FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False, entry_functions=None)``."""

    def __init__(self, patterns: Sequence[Any], bind_constants: bool = True, annotate_codegen: bool = False,
                 entry_functions: Sequence[str] | None = None) -> None:
        self.patterns = [_as_fusion_pattern(p) for p in patterns]
        self.bind_constants = bool(bind_constants)
        self.annotate_codegen = bool(annotate_codegen)
        self.entry_functions = [entry_functions] if isinstance(entry_functions, str) else list(entry_functions or [])

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for fp in self.patterns:
            targets = _entry_functions(mod, self.entry_functions)
            group_of = _partition(fp, targets)
            if any(g.attrs for g in group_of.values()):
                mod = make_grouped_functions(mod, group_of, targets, lift_constants=not self.bind_constants,
                                             pass_name="FuseOpsByPattern")
        return annotate_codegen(mod) if self.annotate_codegen else mod
