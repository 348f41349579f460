"""FoldConstant: compute at compile time what depends only on constants.

* ``R.call_tir(f, (c0, c1), out_sinfo=...)`` whose arguments are all constants (or
  variables bound to constants) and whose output shape is static: the PrimFunc ``f`` is
  compiled with ``minitvm.build`` and run on the constant data; the call becomes
  ``R.const(result)`` (a tuple of constants for several outputs).
* A high-level operator call (``R.add(c0, c1)``) with constant arguments, inside a
  dataflow block, is legalized on the side (its ``FLegalize``, as LegalizeOps would) and folded the same way; the module
  gets no new PrimFunc.  Ops without a legalization are left alone.
* ``t[i]`` of a tuple of known values becomes the value.
* Uses of a variable bound to a constant read the constant itself; bindings left unused
  then go (:func:`relax.analysis.remove_all_unused`, as in TVM).  The PrimFuncs no longer
  called stay in the module: ``DeadCodeElimination`` removes them.

::

    mod = relax.transform.FoldConstant()(mod)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...runtime import ndarray as nd
from ...target import Target
from ...target.tir_build import build_kernels, in_notebook
from ...tir.expr import BufferLoad, FloatImm, IntImm, Select
from ...tir.expr import Call as TirCall
from ...tir.function import PrimFunc
from ...tir.functor import StmtExprVisitor, post_order_visit
from ...tir.stmt import BufferStore, For
from ...transform import PassContext, module_pass
from ..analysis.remove_unused import remove_all_unused
from ..block_builder import BlockBuilder
from ..expr import Call, Constant, DataflowVar, Function, SeqExpr, ShapeExpr, Tuple, TupleGetItem, Var
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._numpy_copy import copy_with_numpy, may_copy_with_numpy
from ._util import map_functions
from .legalize_ops import legalize_call

__all__ = ["FoldConstant"]


def _static_outputs(sinfo: Any) -> list[TensorStructInfo] | None:
    outs = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
    for s in outs:
        if not isinstance(s, TensorStructInfo) or s.is_unknown_dtype or s.static_shape is None:
            return None
    return outs


class _Folder(ExprMutator):
    def __init__(self, mod: IRModule, kernels: dict) -> None:
        super().__init__(mod)
        self.mod = mod
        self.kernels = kernels  # PrimFunc object id -> (PrimFunc, compiled kernel)

    # -- constants flow into their uses ---------------------------------------------------
    def _const_of(self, e: Any) -> Any:
        if isinstance(e, Var):
            bound = self.lookup_binding(e)
            if isinstance(bound, Constant):
                return bound
        return e

    def visit_var_(self, op: Var) -> Any:
        return self._const_of(ExprMutator.visit_var_(self, op))

    def visit_dataflow_var_(self, op: DataflowVar) -> Any:
        return self._const_of(ExprMutator.visit_dataflow_var_(self, op))

    def visit_tuple_getitem_(self, op: TupleGetItem) -> Any:
        new = ExprMutator.visit_tuple_getitem_(self, op)
        tup = new.tuple_value
        if isinstance(tup, Var):
            tup = self.lookup_binding(tup)
        if isinstance(tup, Tuple):
            return tup.fields[new.index]
        return new

    def visit_call_(self, op: Call) -> Any:
        call = self.visit_expr_post_order(op)
        if not isinstance(call, Call) or not isinstance(call.op, Op):
            return call
        if call.op.name == "relax.call_tir":
            folded = self._fold_call_tir(call, self.mod)
        else:
            folded = self._fold_op(call)
        return call if folded is None else folded

    # -- folding ------------------------------------------------------------------------
    def _fold_op(self, call: Call) -> Any:
        # as TVM, high-level operators fold only inside dataflow blocks (call_tir anywhere)
        if not self.builder_.current_block_is_dataflow():
            return None
        if not call.op.get_attr("FPurity") or call.op.get_attr("FLegalize") is None:
            return None
        if not call.args or not all(isinstance(a, Constant) or _const_tuple(a) for a in call.args):
            return None

        scratch = BlockBuilder(self.mod)
        scratch.begin_binding_block()
        try:
            lowered = legalize_call(scratch, call)
        except NotImplementedError:  # a legalization's refusal (these attributes have none): not
            return None  # folded, and LegalizeOps says so if it meets the call; any other error is a bug
        finally:
            emitted = scratch.end_block()
        if emitted.bindings or not (isinstance(lowered, Call) and isinstance(lowered.op, Op)
                                    and lowered.op.name == "relax.call_tir"):
            return None
        return self._fold_call_tir(lowered, scratch.get())

    def _fold_call_tir(self, call: Call, mod: IRModule) -> Any:
        gv, args = call.args[0], call.args[1]
        if not isinstance(gv, GlobalVar) or gv not in mod or not isinstance(mod[gv], PrimFunc):
            return None
        if not isinstance(args, Tuple) or not all(isinstance(a, Constant) for a in args.fields):
            return None
        scalars: list[int] = []
        if len(call.args) == 3:
            tir_vars = call.args[2]
            if not isinstance(tir_vars, ShapeExpr) or not all(isinstance(v, IntImm) for v in tir_vars.values):
                return None
            scalars = [v.value for v in tir_vars.values]
        outs = _static_outputs(call.sinfo_args[0])
        if outs is None:
            return None
        inputs = [a.data.numpy() for a in args.fields]
        results = _copied_with_numpy(mod[gv], inputs, outs) if not scalars else None
        if results is None:
            results = _run(self._kernel(mod[gv]), inputs, outs, scalars)
        consts = [Constant(r) for r in results]
        return consts[0] if not isinstance(call.sinfo_args[0], TupleStructInfo) else Tuple(consts)

    def _kernel(self, func: PrimFunc) -> Any:
        entry = self.kernels.get(id(func))
        if entry is None:
            named = _exported_as(func, "fold_constant_kernel")
            entry = self.kernels[id(func)] = (func, _build(named, [func])["fold_constant_kernel"])
        return entry[1]


def _copied_with_numpy(func: PrimFunc, inputs: list[np.ndarray], outs: list[TensorStructInfo]) -> list | None:
    """A kernel that only moves data, run with numpy (see :mod:`._numpy_copy`; None: refused)."""
    if not _numpy_copies(func):
        return None
    return copy_with_numpy(func, inputs, [(tuple(d.value for d in s.shape_values), s.dtype) for s in outs])


def _numpy_copies(func: PrimFunc) -> bool:
    """Whether the folder offers ``func`` to numpy instead of building it (it may still refuse)."""
    return _moves_data_only(func) and may_copy_with_numpy(func)


def _exported_as(func: PrimFunc, symbol: str) -> PrimFunc:
    attrs = dict(func.attrs)
    attrs["global_symbol"] = symbol
    return PrimFunc(func.params, func.buffer_map, func.body, func.ret_type, attrs)


#: LLVM's optimization level for kernels that only move data (weight layouts, transposes, pads):
#: they run once on a few MB, and O1 compiles them in less time than O3 (nothing computed, so
#: nothing the level could round differently)
MOVING_DATA_OPT_LEVEL = 1


#: stores at most this many (loop iterations of every store, summed): folded kernels this small
#: are compiled without LLVM's vectorizers.  It runs once, on little data, and vectorizing cost
#: more than it saved -- DeBERTa's 16 x 16 mask cast (``x != 0``) took 0.23 s of LLVM O3 (the
#: SLP vectorizer on the unrolled loop), 5 ms without.  Vectorizers reorder no float arithmetic
#: (the IR carries no reassociation flags): the folded values are the same bits.
SCALAR_FOLD_STORES = 1 << 16


def build(mod_or_func: Any, target: Any = "llvm") -> Any:
    """``tir.build`` (bounds checks as it decides), as one LLVM module: the kernels are needed
    at once, and a build in pieces would pay LLVM's set-up per piece."""
    return build_kernels(mod_or_func, target, checks_by_default=in_notebook(), one_module=True)


def _build(mod: Any, funcs: list[PrimFunc]) -> Any:
    """``build`` of folded kernels: LLVM's level by :func:`_target_for`, its vectorizers unless
    every kernel has at most :data:`SCALAR_FOLD_STORES` stores."""
    target = _target_for(funcs)
    if not all(_small(f) for f in funcs):
        return build(mod, target=target)
    with PassContext.current().with_config({"tir.disable_vectorize": True}):
        return build(mod, target=target)


def _small(func: PrimFunc) -> bool:
    return _stores(func.body) <= SCALAR_FOLD_STORES


def _stores(stmt: Any) -> int:
    """How many stores ``stmt`` executes (each store times the extents of the loops around it;
    a loop of unknown extent counts as more than any limit)."""
    counter = _StoreCounter()
    counter.visit(stmt)
    return counter.count


class _StoreCounter(StmtExprVisitor):
    def __init__(self) -> None:
        self.count = 0
        self.times = 1

    def visit_for_(self, op: For) -> None:
        outer = self.times
        self.times *= op.extent.value if isinstance(op.extent, IntImm) else 1 << 62
        try:
            self.visit(op.body)
        finally:
            self.times = outer

    def visit_buffer_store_(self, op: BufferStore) -> None:
        self.count += self.times


def _target_for(funcs: list[PrimFunc]) -> Any:
    if all(_moves_data_only(f) for f in funcs):
        return Target(f"llvm -opt-level={MOVING_DATA_OPT_LEVEL}")
    return Target("llvm")


def _moves_data_only(func: PrimFunc) -> bool:
    """Whether every store of ``func`` writes a loaded value or a constant of the stored buffer's
    dtype, perhaps chosen by a condition (``if_then_else(in_bounds, A[i], 0)``): no arithmetic
    on the values, so the result is the same bits however LLVM compiles it."""
    found = [True]

    def check(n: Any) -> None:
        if isinstance(n, BufferStore) and not _copied(n.value, n.buffer.dtype):
            found[0] = False

    post_order_visit(func.body, check)
    return found[0]


def _copied(value: Any, dtype: str) -> bool:
    if isinstance(value, (BufferLoad, IntImm, FloatImm)):
        return value.dtype == dtype
    if isinstance(value, Select):
        return _copied(value.true_value, dtype) and _copied(value.false_value, dtype)
    if isinstance(value, TirCall) and value.op == "tir.if_then_else" and len(value.args) == 3:
        return _copied(value.args[1], dtype) and _copied(value.args[2], dtype)
    return False


def _foldable_kernels(func: Function, mod: IRModule) -> list[PrimFunc]:
    """The PrimFuncs of ``mod`` that ``func`` calls (``call_tir``) with static outputs on constants
    alone, variables bound to constants, or the results of such calls (what folding makes
    constant: T5's relative-position buckets are a chain of 16 kernels, compiled one at a time
    as the folder met them, ~10 ms each): what the folder will compile.  (Calls on what other
    folds make constant, a tuple's item or a high-level op's, are found while folding.)"""
    found: dict[int, PrimFunc] = {}
    body = func.body
    if not isinstance(body, SeqExpr):
        return []
    constant_vars: set[int] = set()
    for block in body.blocks:
        for b in block.bindings:
            value = getattr(b, "value", None)
            if isinstance(value, Constant):
                constant_vars.add(id(b.var))
                continue
            if not (isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == "relax.call_tir"):
                continue
            gv, args = value.args[0], value.args[1]
            if (len(value.args) != 2 or not isinstance(gv, GlobalVar) or gv not in mod or not isinstance(args, Tuple)
                    or not isinstance(mod[gv], PrimFunc) or _static_outputs(value.sinfo_args[0]) is None):
                continue
            if all(isinstance(a, Constant) or id(a) in constant_vars for a in args.fields):
                found.setdefault(id(mod[gv]), mod[gv])
                constant_vars.add(id(b.var))
    return list(found.values())


def _build_together(funcs: list[PrimFunc], kernels: dict) -> None:
    """Compile ``funcs`` as few modules (one LLVM optimization and JIT each, not one per kernel:
    MobileNetV2 folds the layouts of 20 weights) into ``kernels`` (see :class:`_Folder`): one per
    LLVM set-up they ask for (:func:`_target_for`, :func:`_build`).  A module that does not build
    leaves its kernels to be built one by one (and fail there if they must)."""
    groups: dict[tuple[bool, bool], list[PrimFunc]] = {}
    for f in funcs:
        groups.setdefault((_small(f), _moves_data_only(f)), []).append(f)
    for group in groups.values():
        if len(group) < 2:
            continue  # (built alone when the folder meets it: the same one build)
        symbols = [f"fold_constant_kernel_{i}" for i in range(len(group))]
        try:
            lib = _build(IRModule({s: _exported_as(f, s) for s, f in zip(symbols, group)}), group)
        except Exception:  # noqa: BLE001 - one by one, the kernel at fault raises its own error
            continue
        for s, f in zip(symbols, group):
            kernels[id(f)] = (f, lib[s])


def _const_tuple(e: Any) -> bool:
    return isinstance(e, Tuple) and all(isinstance(f, Constant) for f in e.fields)


def _run(kernel: Any, inputs: list[np.ndarray], outs: list[TensorStructInfo], scalars: list[int]) -> list[np.ndarray]:
    arrays = [nd.array(np.require(a, requirements="C")) for a in inputs]
    arrays += [nd.empty(tuple(d.value for d in s.shape_values), s.dtype) for s in outs]
    kernel(*arrays, *scalars)
    return [a.numpy() for a in arrays[len(inputs):]]


@module_pass(opt_level=0, name="FoldConstant")
class FoldConstant:
    """Evaluate calls whose arguments are all constants at compile time: ``FoldConstant()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        kernels: dict = {}

        def fold(func: Function, m: IRModule) -> Function:
            # (kernels numpy copies need no build; one it refuses is built alone when met)
            together = [f for f in _foldable_kernels(func, m) if id(f) not in kernels and not _numpy_copies(f)]
            if len(together) > 1:
                _build_together(together, kernels)
            new = _Folder(m, kernels).visit_expr(func)
            return func if new is func else remove_all_unused(new, m)
        return map_functions(mod, fold)
