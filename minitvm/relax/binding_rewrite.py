"""DataflowBlockRewrite: add, remove and redirect bindings of one dataflow block (TVM's
``relax.binding_rewrite.DataflowBlockRewrite``, a developer API).

Nodes are immutable, so each edit builds a new block and a new root function (read them with
``mutated_dfb`` / ``mutated_root_fn``; ``mutate_irmodule`` puts the new function in place of the
old one in a module).  The rewriter keeps the function's use-def chains to refuse what would
break the program: removing a variable still used, or one it never saw (unless
``allow_undef``), adding a variable already defined, redirecting uses of an unknown variable.
"""

from __future__ import annotations

from typing import Any

from ..error import TVMError
from ..ir.module import IRModule
from .analysis.purity import contains_impure_call
from .analysis.vars import used_vars
from .expr import Binding, DataflowBlock, DataflowVar, Function, MatchCast, SeqExpr, Var, VarBinding
from .expr_functor import ExprMutator, ExprVisitor

__all__ = ["DataflowBlockRewrite"]


class _UseDef(ExprVisitor):
    """Every variable a function defines (parameters included), mapped to the variables of the
    bindings that read it."""

    def __init__(self) -> None:
        self.users: dict[Var, list[Var]] = {}

    def visit_var_def_(self, var: Var) -> None:
        self.users.setdefault(var, [])

    def visit_dataflow_var_def_(self, var: DataflowVar) -> None:
        self.users.setdefault(var, [])

    def visit_binding(self, binding: Binding) -> None:
        super().visit_binding(binding)
        for v in used_vars(binding.value):
            users = self.users.setdefault(v, [])
            if binding.var not in users:
                users.append(binding.var)


class _BlockMutator(ExprMutator):
    """Rewrites a function, replacing the uses in ``remap`` and dropping the bindings of
    ``drop``; the block that stood for ``target`` is read back as ``caught``."""

    def __init__(self, target: DataflowBlock, remap: dict | None = None, drop: set | None = None,
                 replacement: DataflowBlock | None = None) -> None:
        super().__init__()
        self.target, self.drop, self.replacement = target, drop or set(), replacement
        self.caught: DataflowBlock = DataflowBlock([])
        for old, new in (remap or {}).items():
            self.set_var_remap(old, new)
        self.in_dataflow = False

    def visit_dataflow_block_(self, block: DataflowBlock) -> Any:
        if block is self.target and self.replacement is not None:
            self.caught = self.replacement
            return self.replacement
        saved, self.in_dataflow = self.in_dataflow, True
        try:
            new = super().visit_dataflow_block_(block)
        finally:
            self.in_dataflow = saved
        if block is self.target:
            self.caught = new
        return new

    def visit_var_binding_(self, binding: VarBinding) -> None:
        # outside a dataflow block an impure binding stays even when its result is unused
        if binding.var in self.drop and (self.in_dataflow or not contains_impure_call(binding.value)):
            return
        super().visit_var_binding_(binding)

    def rewrite_block(self, block: DataflowBlock) -> DataflowBlock:
        self.target = block
        new = self.visit_binding_block(block)
        return new if isinstance(new, DataflowBlock) else DataflowBlock(list(new.bindings))


class DataflowBlockRewrite:
    """A binding-level rewriter of the dataflow block ``dfb`` of the function ``root_fn``."""

    def __init__(self, dfb: DataflowBlock, root_fn: Function) -> None:
        if not isinstance(dfb, DataflowBlock):
            raise TypeError(f"DataflowBlockRewrite: expected a relax.DataflowBlock, got {type(dfb).__name__}")
        if not isinstance(root_fn, Function):
            raise TypeError(f"DataflowBlockRewrite: expected a relax.Function as root, got {type(root_fn).__name__}")
        self.func_name = getattr(root_fn, "__name__", None)
        self.dfb, self.root_fn, self._original = dfb, root_fn, root_fn
        collector = _UseDef()
        collector.visit_expr(root_fn)
        self._users = collector.users
        body = root_fn.body
        self._outputs = used_vars(body.body if isinstance(body, SeqExpr) else body)
        self._names = {v.name_hint for v in self._users}

    def _fresh_name(self) -> str:
        i = 0
        while f"tmp{i}" in self._names:
            i += 1
        return f"tmp{i}"

    def _apply(self, mutator: _BlockMutator) -> None:
        self.root_fn = mutator.visit_expr(self.root_fn)
        self.dfb = mutator.caught

    def replace_all_uses(self, old_var: Var, new_var: Var) -> None:
        """Make every use of ``old_var`` (in the block and the rest of the function) read ``new_var``."""
        for v in (old_var, new_var):
            if v not in self._users:
                raise TVMError(f"DataflowBlockRewrite.replace_all_uses: cannot find {v.name_hint} in the function")
        if old_var is new_var:
            return
        self._apply(_BlockMutator(self.dfb, remap={old_var: new_var}))
        users = self._users[new_var]
        users.extend(u for u in self._users[old_var] if u not in users)
        self._users[old_var] = []
        self._outputs = [new_var if v is old_var else v for v in self._outputs]

    def add_binding(self, binding: Binding) -> None:
        """Insert ``binding`` into the block, right after the last binding it reads."""
        if not isinstance(binding, (VarBinding, MatchCast)):
            raise TypeError(f"DataflowBlockRewrite.add_binding: expected a VarBinding or MatchCast, got "
                            f"{type(binding).__name__}")
        if binding.var in self._users:
            raise TVMError(f"DataflowBlockRewrite: {binding.var.name_hint} has been defined so cannot be added")
        reads = used_vars(binding.value)
        bindings = list(self.dfb.bindings)
        # as TVM: after the last binding read (position 1 when none is read)
        last = max((i for i, b in enumerate(bindings) if b.var in reads), default=0)
        bindings.insert(min(last + 1, len(bindings)), binding)
        new = DataflowBlock(bindings)
        self._apply(_BlockMutator(self.dfb, replacement=new))
        for v in reads:
            if v in self._users:
                self._users[v].append(binding.var)
        self._users[binding.var] = []
        self._names.add(binding.var.name_hint)

    def add(self, expr: Any, name: str | None = None, is_dfvar: bool = False) -> None:
        """Bind ``expr`` to a new variable (``name``, or ``tmp<N>``), a DataflowVar when
        ``is_dfvar`` and an output Var of the block otherwise."""
        var_type = DataflowVar if is_dfvar else Var
        self.add_binding(VarBinding(var_type(name or self._fresh_name(), expr.struct_info), expr))

    def remove_unused(self, var: Var, allow_undef: bool = False) -> None:
        """Remove the binding of ``var``, which nothing may read."""
        if var not in self._users:
            if allow_undef:
                return
            raise TVMError(f"DataflowBlockRewrite.remove_unused: {var.name_hint} undefined. Set allow_undef=True "
                           "to allow 'removing' undefined var")
        if self._users[var]:
            raise TVMError(f"DataflowBlockRewrite.remove_unused: {var.name_hint} is used by "
                           f"{len(self._users[var])} vars")
        mutator = _BlockMutator(self.dfb, drop={var})
        new = mutator.rewrite_block(self.dfb)
        self._apply(_BlockMutator(self.dfb, replacement=new))
        del self._users[var]

    def remove_all_unused(self) -> None:
        """Remove every binding whose variable nothing reads, transitively (other blocks of
        the function too)."""
        users = {v: list(u) for v, u in self._users.items()}
        unused: list[Var] = []
        changed = True
        while changed:
            changed = False
            for v, u in list(users.items()):
                if not u and v not in self._outputs:
                    unused.append(v)
                    del users[v]
                    for rest in users.values():
                        if v in rest:
                            rest.remove(v)
                    changed = True
        self._apply(_BlockMutator(self.dfb, drop=set(unused)))
        for v in unused:
            self._users.pop(v, None)

    def mutated_dfb(self) -> DataflowBlock:
        return self.dfb

    def mutated_root_fn(self) -> Function:
        return self.root_fn

    def mutate_irmodule(self, irmodule: IRModule) -> IRModule:
        """A copy of ``irmodule`` with the rewritten function in place of the original one."""
        for gv, func in irmodule.functions.items():
            if func is self._original:
                return irmodule.with_function(gv, self.root_fn)
        return IRModule(irmodule.functions, irmodule.attrs, irmodule.global_infos)
