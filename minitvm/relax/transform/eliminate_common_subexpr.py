"""EliminateCommonSubexpr: a value bound twice is computed once (TVM's algorithm).

::

    lv0 = R.add(x, y)          lv0 = R.add(x, y)
    lv1 = R.add(x, y)    ->    lv1 = lv0
    gv  = R.multiply(lv0, lv1) gv  = R.multiply(lv0, lv0)

Every binding, in dataflow blocks and outside them, is looked up by its value (after the
replacements made so far; a ``match_cast`` also by its target struct info, since it defines
symbolic variables): a value seen before becomes a trivial binding of the first variable
bound to it, and later uses read that variable.  ``CanonicalizeBindings`` removes the
trivial bindings.  Never merged: values with an impure call (two effects stay two),
allocations, and with ``call_only=True`` anything but calls.  A DataflowVar is not offered
after its block ends; each ``If`` branch and each inner function is a scope of its own.

::

    mod = relax.transform.EliminateCommonSubexpr()(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from ...transform import PassContext, module_pass
from ..analysis.purity import contains_impure_call
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    MatchCast,
    SeqExpr,
    VarBinding,
    has_scope,
    is_normalized,
)
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr"]

_ALLOCATORS = frozenset({"relax.builtin.alloc_tensor", "relax.memory.alloc_storage", "relax.memory.alloc_tensor"})


def eliminate_common_subexpr(func: Function, mod: IRModule | None = None, call_only: bool = False,
                             hashes: dict[int, tuple[Any, int]] | None = None) -> Function:
    """``func`` with each repeated pure value bound once.  ``hashes`` (id of a value -> (value,
    structural hash)) carries the hashes over to the next call on a function that kept most of
    its values (a rewrite repeated until nothing changes)."""
    cse = _CSE(mod, call_only, hashes)
    if cse.nothing_repeated(func):
        return func  # what the rewrite would return, without rebuilding every binding
    return cse.visit_expr(func)


class _CSE(ExprMutator):
    def __init__(self, mod: IRModule, call_only: bool, hashes: dict[int, tuple[Any, int]] | None = None) -> None:
        super().__init__(mod)
        self.mod = mod
        self.call_only = call_only
        # structural hash -> [(value, match_cast struct info or None, [variables bound to it])]
        self.seen: dict[int, list[tuple[Any, Any, list]]] = {}
        self.hashes = {} if hashes is None else hashes

    def _key(self, value: Any, cast: Any) -> int:
        """The structural hash of ``(value, cast)``: the same object hashes alike wherever it is
        bound (a free variable hashes by identity), so a value's hash is remembered."""
        if cast is not None:
            return structural_hash((value, cast))
        entry = self.hashes.get(id(value))
        if entry is None or entry[0] is not value:
            entry = self.hashes[id(value)] = (value, structural_hash((value, None)))
        return entry[1]

    def nothing_repeated(self, func: Any) -> bool:
        """Whether the rewrite would change nothing in ``func``: it is normalized, binds no
        function or branch (each a scope of its own), and no two of its mergeable values are
        equal.  (Conservative: two equal values the rewrite keeps apart answer False.)"""
        if not is_normalized(func) or not isinstance(func.body, SeqExpr) or has_scope(func.body.body):
            return False
        values: dict[int, list[tuple[Any, Any, list]]] = {}  # as ``seen``, without the variables
        for block in func.body.blocks:
            for b in block.bindings:
                if has_scope(b.value):
                    return False
                cast = b.struct_info if isinstance(b, MatchCast) else None
                if not self._mergeable(b.value):
                    continue
                key = self._key(b.value, cast)
                if _equal_entry(values.get(key, ()), b.value, cast) is not None:
                    return False
                values.setdefault(key, []).append((b.value, cast, []))
        return True

    def _mergeable(self, value: Any) -> bool:
        if self.call_only and not isinstance(value, Call):
            return False
        if contains_impure_call(value, mod=self.mod):
            return False
        return not (isinstance(value, Call) and isinstance(value.op, Op) and value.op.name in _ALLOCATORS)

    def _entry(self, key: int, value: Any, cast: Any) -> tuple[Any, Any, list] | None:
        return _equal_entry(self.seen.get(key, ()), value, cast)

    def _visit(self, binding: Any) -> None:
        value = self.visit_expr(binding.value)
        cast = binding.struct_info if isinstance(binding, MatchCast) else None
        if self._mergeable(value):
            key = self._key(value, cast)  # once: the lookup and the new entry share it
            entry = self._entry(key, value, cast)
            if entry is not None and entry[2]:
                first = entry[2][0]
                self.set_var_remap(binding.var, first)
                entry[2].append(binding.var)
                self.builder_.emit_normalized(VarBinding(binding.var, first))
                return
            if entry is None:
                self.seen.setdefault(key, []).append((value, cast, [binding.var]))
            else:
                entry[2].append(binding.var)
        if value is binding.value:
            self.builder_.emit_normalized(binding)
        elif cast is None:
            self.builder_.emit_normalized(VarBinding(binding.var, value))
        else:
            self.builder_.emit_normalized(MatchCast(binding.var, value, cast))

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self._visit(binding)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self._visit(binding)

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        saved = dict(self.var_remap_)
        out = super().visit_dataflow_block_(block)
        for entries in self.seen.values():  # the block's DataflowVars are out of scope now
            for entry in entries:
                entry[2][:] = [v for v in entry[2] if not isinstance(v, DataflowVar)]
        self.var_remap_ = saved
        return out

    def _scoped(self, expr: Any) -> Any:
        saved_remap, saved_seen = dict(self.var_remap_), self.seen
        self.seen = {k: [(v, c, list(vs)) for v, c, vs in entries] for k, entries in saved_seen.items()}
        try:
            return self.visit_with_new_scope(expr)
        finally:
            self.var_remap_, self.seen = saved_remap, saved_seen

    def visit_if_(self, op: If) -> Any:
        cond = self.visit_expr(op.cond)
        then, other = self._scoped(op.true_branch), self._scoped(op.false_branch)
        if cond is op.cond and then is op.true_branch and other is op.false_branch:
            return op
        return If(cond, then, other)

    def visit_function_(self, op: Function) -> Any:
        if self.seen or self.var_remap_:  # an inner function: nothing crosses its boundary
            return _CSE(self.mod, self.call_only).visit_expr(op)
        return super().visit_function_(op)


def _equal_entry(entries: Any, value: Any, cast: Any) -> tuple[Any, Any, list] | None:
    """The entry (value, match_cast struct info or None, variables) of ``entries`` -- one hash's
    -- whose value and cast equal ``value`` and ``cast``, or None."""
    for entry in entries:
        if structural_equal(entry[0], value) and structural_equal(entry[1], cast):
            return entry
    return None


@module_pass(opt_level=1, name="EliminateCommonSubexpr")
class EliminateCommonSubexpr:
    """Bind each repeated pure value once: ``EliminateCommonSubexpr(call_only=False)(mod)``."""

    def __init__(self, call_only: bool = False):
        self.call_only = call_only

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda f, m: eliminate_common_subexpr(f, m, self.call_only))
