"""MergeCompositeFunctions: neighbouring composite calls of one backend become one offloaded function.

After ``FuseOpsByPattern(patterns)`` (without ``annotate_codegen``) ``main`` calls one private
``Composite`` function per match.  This pass walks ``main``'s bindings in order (TVM's
CompositeGroupsBuilder) and gives each a group: a call of a composite function joins the group
of each argument computed by the same backend (``"ccompiler"`` of ``"ccompiler.matmul"``),
unless another argument's group depends on that one -- merging would then make a cycle; a
tuple, or an item of one, read only through items, joins its fields' group when that group is
offloaded; anything else is a group of its own.  Each offloaded group becomes one function
``attrs {"Codegen": "<backend>", "global_symbol": "<name>_<backend>"}`` (named after the
composite functions it calls, ``fused_relax_matmul_relax_matmul1_ccompiler``) whose body,
no longer a dataflow block, defines each composite function it calls locally -- an external
code generator needs nothing else from the module.  Unused functions are then removed
(``DeadCodeElimination(["main"])``), as TVM does.

    mod = relax.transform.FuseOpsByPattern(patterns)(mod)
    mod = relax.transform.MergeCompositeFunctions()(mod)
    mod = relax.transform.RunCodegen()(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, module_pass
from ..expr import Call, Function, Tuple, TupleGetItem, Var
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._util import CopyWithNewVars
from .dead_code_elimination import DeadCodeElimination
from .fuse_ops import _leaves_below, make_grouped_functions
from .fuse_ops_by_pattern import _CallRenamer, fresh_name, get_codegen_name
from .to_non_dataflow import _rewrite as to_non_dataflow

__all__ = ["MergeCompositeFunctions"]


class _Group:
    __slots__ = ("parent", "num_nodes", "attrs")

    def __init__(self, codegen: str | None = None) -> None:
        self.parent: _Group | None = None
        self.num_nodes = 1
        self.attrs = {"Codegen": codegen} if codegen else {}

    def root(self) -> _Group:
        g = self
        while g.parent is not None:
            g = g.parent
        return g

    @property
    def codegen(self) -> str | None:
        return self.root().attrs.get("Codegen")


def _flat_tensor_tuple(expr: Any) -> bool:
    sinfo = getattr(expr, "struct_info_", None)
    return isinstance(sinfo, TupleStructInfo) and bool(sinfo.fields) and all(
        isinstance(f, TensorStructInfo) for f in sinfo.fields)


class _GroupsBuilder:
    """The group of every variable of ``main`` (see the module docstring)."""

    def __init__(self, mod: IRModule, func: Function) -> None:
        self.mod = mod
        self.memo: dict[int, _Group] = {}
        self.deps: dict[_Group, set[_Group]] = {}  # root group -> the root groups it reads, transitively
        self.bound: dict[Var, Any] = {}
        self.users: dict[Var, list[Var]] = {}
        self.outputs = {id(v) for v in _leaves_below(func.body.body) if isinstance(v, Var)}
        for p in func.params:
            self.memo[id(p)] = _Group()
        bindings = [b for block in func.body.blocks for b in block.bindings]
        for b in bindings:
            self.bound[b.var] = b.value
            for v in _leaves_below(b.value):
                if isinstance(v, Var):
                    self.users.setdefault(v, []).append(b.var)
        for b in bindings:
            self.memo[id(b.var)] = self.visit(b.var, b.value)

    def group_of(self, expr: Any) -> _Group:
        if id(expr) not in self.memo:  # a constant, a shape: a group of its own
            self.memo[id(expr)] = _Group()
        return self.memo[id(expr)]

    def visit(self, var: Var, value: Any) -> _Group:
        if isinstance(value, Var):
            return self.group_of(value)
        if isinstance(value, Call):
            return self.visit_call(value)
        if isinstance(value, Tuple):
            return self.visit_tuple(var, value)
        if isinstance(value, TupleGetItem):
            return self.visit_get_item(value)
        return _Group()

    def codegen_of_callee(self, callee: Any) -> str | None:
        func = self.mod.functions.get(callee) if isinstance(callee, GlobalVar) else None
        composite = getattr(func, "attrs", {}).get("Composite") if isinstance(func, Function) else None
        return get_codegen_name(str(composite)) if composite else None

    def visit_call(self, call: Call) -> _Group:
        args = [a for a in call.args if not isinstance(a, GlobalVar)]
        codegen = self.codegen_of_callee(call.op)
        to_merge: list[_Group] = []
        if codegen is not None:
            parent_deps = set().union(*(self.deps.get(self.group_of(a).root(), set()) for a in args))
            for a in args:
                g = self.group_of(a).root()
                # a parent group of the same backend that no other parent depends on: no cycle
                if g.codegen == codegen and g not in parent_deps and g not in to_merge:
                    to_merge.append(g)
        if not to_merge:
            group = _Group(codegen)
        else:
            group = to_merge[0]
            group.num_nodes += 1
            for other in to_merge[1:]:
                self.merge(other, group)
        self.update_deps(group, args)
        return group

    def visit_tuple(self, var: Var, tup: Tuple) -> _Group:
        if not _flat_tensor_tuple(tup):
            return _Group()
        roots = {id(self.group_of(f).root()): self.group_of(f).root() for f in tup.fields}
        if len(roots) == 1 and self.only_read_by_items(var):
            (group,) = roots.values()
            if group.codegen:
                group.num_nodes += 1
                return group
        group = _Group()
        self.update_deps(group, list(tup.fields))
        return group

    def visit_get_item(self, item: TupleGetItem) -> _Group:
        tup = item.tuple_value
        if not _flat_tensor_tuple(tup):
            return _Group()
        group = self.group_of(tup).root()
        if isinstance(tup, Var) and self.only_read_by_items(tup) and group.codegen:
            group.num_nodes += 1
            return group
        group = _Group()
        self.update_deps(group, [tup])
        return group

    def only_read_by_items(self, var: Var) -> bool:
        """``var`` (a tuple) is read only as ``var[i]``, through aliases, and is no output."""
        pending, seen, has_item = [var], set(), False
        while pending:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if id(current) in self.outputs:
                return False
            if isinstance(self.bound.get(current), Var):
                pending.append(self.bound[current])
            for user in self.users.get(current, []):
                value = self.bound.get(user)
                if isinstance(value, TupleGetItem) and value.tuple_value is current:
                    has_item = True
                elif value is current:
                    pending.append(user)
                else:
                    return False
        return has_item

    def merge(self, src: _Group, dst: _Group) -> None:
        src, dst = src.root(), dst.root()
        if src is dst:
            return
        src.parent = dst
        dst.num_nodes += src.num_nodes
        self.deps.setdefault(dst, set()).update(self.deps.pop(src, set()))
        for deps in self.deps.values():
            if src in deps:
                deps.discard(src)
                deps.add(dst)

    def update_deps(self, group: _Group, args: list[Any]) -> None:
        root = group.root()
        for a in args:
            for leaf in (a.fields if isinstance(a, Tuple) else [a]):
                arg_root = self.group_of(leaf).root()
                if arg_root is not root:
                    self.deps.setdefault(root, set()).add(arg_root)
                    self.deps[root] |= self.deps.get(arg_root, set())


class _CompositeInliner(ExprMutator):
    """Calls of the module's composite functions call a local copy of each, bound once."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.local: dict[GlobalVar, Var] = {}

    def visit_call_(self, op: Call) -> Any:
        func = self.mod.functions.get(op.op) if isinstance(op.op, GlobalVar) else None
        if not (isinstance(func, Function) and func.attrs.get("Composite")):
            return super().visit_call_(op)
        if op.op not in self.local:
            copy = CopyWithNewVars().visit_expr(func).without_attr("Primitive")
            self.local[op.op] = self.builder_.emit(copy)
        return Call(self.local[op.op], [self.visit_expr(a) for a in op.args])


def _offloaded(mod: IRModule, func: Function, symbol: str) -> Function:
    """The grouped function, self-contained: composite functions local, no dataflow block."""
    new = _CompositeInliner(mod).visit_expr(to_non_dataflow(func, mod))
    return new.without_attr("Primitive").with_attr("global_symbol", symbol)


@module_pass(opt_level=0, name="MergeCompositeFunctions")
class MergeCompositeFunctions:
    """Group the composite functions ``main`` calls into offloaded functions, one per run of
    neighbouring calls of a backend: ``MergeCompositeFunctions()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if "main" not in mod or not isinstance(mod["main"], Function):
            raise ValueError(f"MergeCompositeFunctions works on the Relax function 'main'; the module has "
                             f"{', '.join(mod.keys()) or 'no function'}")
        main_gv = mod.get_global_var("main")
        builder = _GroupsBuilder(mod, mod[main_gv])
        group_of = {key: g.root() for key, g in builder.memo.items()}
        grouped = make_grouped_functions(mod, group_of, [(main_gv, mod[main_gv])],
                                         pass_name="MergeCompositeFunctions")
        renamed: dict[GlobalVar, GlobalVar] = {}
        offloaded: dict[GlobalVar, Function] = {}
        taken = set(grouped.keys())
        for gv in _callees(grouped[main_gv]):
            func = grouped.functions.get(gv)
            codegen = func.attrs.get("Codegen") if isinstance(func, Function) else None
            if codegen is None or gv in renamed:
                continue
            symbol = fresh_name(f"{gv.name_hint}_{codegen}", taken)
            renamed[gv] = GlobalVar(symbol)
            offloaded[renamed[gv]] = _offloaded(grouped, func, symbol)
        funcs = {gv: f for gv, f in grouped.functions.items() if gv not in renamed}
        funcs[main_gv] = _CallRenamer(grouped, renamed).visit_expr(grouped[main_gv])
        funcs.update(offloaded)
        return DeadCodeElimination(["main"])(IRModule(funcs, grouped.attrs, grouped.global_infos))


def _callees(func: Function) -> list[GlobalVar]:
    """The GlobalVars ``func`` calls, in binding order."""
    return [b.value.op for block in func.body.blocks for b in block.bindings
            if isinstance(b.value, Call) and isinstance(b.value.op, GlobalVar)]
