"""FuseOps: group ``call_tir`` bindings of a dataflow block into fused Relax functions.

After ``LegalizeOps`` and ``AnnotateTIROpPattern`` every kernel call is
``R.call_tir(cls.f, args, out_sinfo)`` and ``f`` carries an ``op_pattern``.  FuseOps
walks each dataflow block in order and lets a call join the group of the call that
produced one of its arguments when TVM's rules (in spirit) allow it:

* the producer's value has one consumer (this call) and is a DataflowVar: a value used
  by several bindings, or leaving the block (an ``R.output``), ends its group;
* the consumer's pattern fits the group's pattern (the largest pattern in it):

  ========================  =========================================================
  group                     may absorb a consumer that is
  ========================  =========================================================
  elementwise .. injective  elementwise, broadcast, injective (injective chains), or a
                            comm_reduce (the injective ops feed the reduction)
  comm_reduce,              elementwise or broadcast (an epilogue: ``matmul`` +
  out_ewise_fusable         ``add`` + ``relu``)
  opaque                    nothing; an opaque call also never joins a group
  ========================  =========================================================

When a call may join the groups of several of its arguments, those groups merge into
one, as long as it holds at most one reduction (comm_reduce / out_ewise_fusable).

Every group of two or more calls becomes a private Relax function with
``attrs {"Primitive": True}``, named ``fused_`` + the called PrimFuncs' names
(``fused_matmul_add_relu``); its parameters are the values the group reads from outside
and it returns the group's one output.  The group's bindings are replaced by one binding
of a new variable, ``lv = cls.fused_matmul_add_relu(x, w0, b0)``, where the last of them
was (named as TVM's FuseOps names it: ``lv``, ``lv1`` ... in a dataflow block, ``gv`` for a
block output); later uses read it.  A single call stays as it is.  ``FuseTIR`` then merges each fused function's
PrimFuncs into one.

Only calls with a single tensor output, no ``tir_vars`` and dimensions that are numbers or
symbolic variables (``(n, 128)``, what FuseTIR can merge) are grouped; others stand alone.

    mod = relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(mod))
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.expr import IntImm
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ...transform import PassContext, module_pass
from ..analysis.vars import all_vars
from ..block_builder import BlockBuilder, _NameTable
from ..expr import (
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    SeqExpr,
    Tuple,
    Var,
    VarBinding,
    _set_struct_info,
    struct_info_of,
)
from ..expr_functor import ExprMutator, ExprVisitor
from ..op.base import call_tir
from ..op.registry import OpPattern
from ..struct_info import TensorStructInfo

__all__ = ["FuseOps"]


def _kernel_call(binding: Any, mod: IRModule) -> tuple[GlobalVar, list, OpPattern] | None:
    """``(kernel, args, pattern)`` when ``binding`` is a call_tir FuseOps may group."""
    if not isinstance(binding, VarBinding):
        return None
    call = binding.value
    if not (isinstance(call, Call) and isinstance(call.op, Op) and call.op.name == "relax.call_tir"):
        return None
    if len(call.args) != 2 or not isinstance(call.args[1], Tuple):
        return None  # tir_vars, or the arguments as a tuple-valued variable
    if not isinstance(call.sinfo_args[0], TensorStructInfo):
        return None  # several outputs
    if not all(_shape_ok(struct_info_of(x)) for x in (*call.args[1].fields, call)):
        return None  # a dimension that is an expression: FuseTIR could not merge the kernels
    kernel = call.args[0]
    func = mod[kernel] if kernel in mod else None
    if not isinstance(func, PrimFunc) or "op_pattern" not in func.attrs:
        return None
    return kernel, list(call.args[1].fields), OpPattern(func.attrs["op_pattern"])


def _shape_ok(sinfo: Any) -> bool:
    """A tensor of known dtype whose dimensions are numbers or symbolic variables."""
    return (isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None and not sinfo.is_unknown_dtype
            and all(isinstance(d, (IntImm, TirVar)) for d in sinfo.shape_values))


def _can_absorb(group: OpPattern, consumer: OpPattern) -> bool:
    """May a group whose largest pattern is ``group`` take in a call of pattern ``consumer``?"""
    if consumer == OpPattern.OPAQUE or group == OpPattern.OPAQUE:
        return False
    if group <= OpPattern.INJECTIVE:
        return consumer <= OpPattern.COMM_REDUCE
    if group in (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE):
        return consumer <= OpPattern.BROADCAST
    return False


class _VarUses(ExprVisitor):
    """The variables an expression reads (by identity)."""

    def __init__(self) -> None:
        self.used: list[Var] = []

    def visit_var_(self, op: Var) -> None:
        self.used.append(op)

    def visit_dataflow_var_(self, op: DataflowVar) -> None:
        self.used.append(op)


def _used_vars(expr: Any) -> list[Var]:
    v = _VarUses()
    v.visit_expr(expr)
    return v.used


class _Group:
    def __init__(self, index: int, pattern: OpPattern) -> None:
        self.members = [index]  # binding indices, in block order
        self.pattern = pattern


def _partition(block: DataflowBlock, mod: IRModule) -> list[list[int]]:
    """The groups of two or more bindings of ``block`` (binding indices)."""
    bindings = block.bindings
    calls = [_kernel_call(b, mod) for b in bindings]
    consumers: dict[int, set[int]] = {}  # id(var) -> indices of the bindings reading it
    for i, b in enumerate(bindings):
        for v in _used_vars(b.value):
            consumers.setdefault(id(v), set()).add(i)
    defined_at = {id(b.var): i for i, b in enumerate(bindings)}
    group_of: dict[int, _Group] = {}

    for i, info in enumerate(calls):
        if info is None:
            continue
        _, args, pattern = info
        group = _Group(i, pattern)
        for arg in args:
            j = defined_at.get(id(arg))
            if j is None or calls[j] is None:
                continue  # a parameter, a constant, or a value from a binding we do not group
            producer = group_of[j]
            if (producer is group or not isinstance(arg, DataflowVar) or consumers.get(id(arg)) != {i}
                    or not _can_absorb(producer.pattern, pattern)):
                continue
            if min(producer.pattern, group.pattern) >= OpPattern.COMM_REDUCE:
                continue  # one reduction per group
            group.members = sorted(set(group.members) | set(producer.members))
            group.pattern = max(group.pattern, producer.pattern)
        for k in group.members:
            group_of[k] = group
    groups = {id(g): g for g in group_of.values()}.values()
    return [g.members for g in groups if len(g.members) > 1]


def _make_fused_function(bb: BlockBuilder, bindings: list, mod: IRModule) -> tuple[GlobalVar, list]:
    """A Primitive function computing ``bindings`` (a group); returns it and its arguments."""
    defined = {id(b.var) for b in bindings}
    inputs: list[Any] = []
    for b in bindings:
        for arg in b.value.args[1].fields:
            if id(arg) not in defined and not any(arg is x for x in inputs):
                inputs.append(arg)
    params = []
    remap: dict[int, Any] = {}
    for k, arg in enumerate(inputs):
        name = arg.name_hint if isinstance(arg, Var) else f"param_{k}"
        p = Var(name, arg.struct_info)
        params.append(p)
        remap[id(arg)] = p
    kernels = [b.value.args[0] for b in bindings]
    name = bb.get_unique_name("fused_" + "_".join(gv.name_hint for gv in kernels))
    with bb.function(name, params, attrs={"Primitive": True}, private=True):
        with bb.dataflow():
            out = None
            for n, b in enumerate(bindings):
                call = b.value
                args = [remap.get(id(a), a) for a in call.args[1].fields]
                new_call = call_tir(call.args[0], args, call.sinfo_args[0])
                if n + 1 < len(bindings):
                    remap[id(b.var)] = bb.emit(new_call, b.var.name_hint)
                else:
                    out = bb.emit_output(new_call, "gv")
        bb.emit_func_output(out)
    return bb.get().get_global_var(name), inputs


def _fuse_function(func: Function, bb: BlockBuilder, mod: IRModule) -> Function:
    body = func.body
    if not isinstance(body, SeqExpr):
        return func
    partitions = [_partition(block, mod) if isinstance(block, DataflowBlock) else [] for block in body.blocks]
    fused_away = {block.bindings[k].var for block, groups in zip(body.blocks, partitions)
                  for members in groups for k in members}
    names = {v.name_hint for v in all_vars(func) if v not in fused_away}
    fresh = _NameTable(lambda name: name in names)
    remap: dict[Var, Var] = {}  # the group's last variable -> the variable of the fused call
    new_blocks, changed = [], False
    for block, groups in zip(body.blocks, partitions):
        if not groups:
            new_blocks.append(block)
            continue
        changed = True
        replaced: dict[int, Any] = {}  # binding index -> new binding (None: dropped)
        for members in groups:
            group_bindings = [block.bindings[k] for k in members]
            gv, inputs = _make_fused_function(bb, group_bindings, mod)
            last = group_bindings[-1].var
            call = Call(gv, inputs)
            _set_struct_info(call, last.struct_info)
            # a new variable, as TVM's FuseOps emits the call: lv, lv1 ... (gv for an output)
            kind = DataflowVar if isinstance(last, DataflowVar) else Var
            remap[last] = kind(fresh.get("lv" if kind is DataflowVar else "gv"), last.struct_info)
            for k in members:
                replaced[k] = None
            replaced[members[-1]] = VarBinding(remap[last], call)
        new_bindings = [replaced.get(k, b) for k, b in enumerate(block.bindings)]
        new_blocks.append(DataflowBlock(tuple(b for b in new_bindings if b is not None)))
    if not changed:
        return func
    new = Function(func.params, SeqExpr(tuple(new_blocks), body.body), func.ret_struct_info, func.is_pure,
                   func.attrs)
    renamer = _Renamer(bb.get())
    for old, var in remap.items():
        renamer.set_var_remap(old, var)
    return renamer.visit_expr(new)


class _Renamer(ExprMutator):
    """Uses of a group's last variable read the fused call's; remaps chain (the mutator may
    in turn renew that variable when it re-derives its struct info)."""

    def _resolve(self, op: Var) -> Var:
        while op in self.var_remap_ and self.var_remap_[op] is not op:
            op = self.var_remap_[op]
        return op

    def visit_var_(self, op: Var) -> Any:
        return self._resolve(op)

    def visit_dataflow_var_(self, op: DataflowVar) -> Any:
        return self._resolve(op)


@module_pass(opt_level=0, name="FuseOps")
class FuseOps:
    """Group call_tir bindings into ``Primitive`` functions: ``FuseOps()(mod)``.

    Needs ``op_pattern`` on the PrimFuncs (run ``AnnotateTIROpPattern`` first); calls of
    PrimFuncs without one are left alone.
    """

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        bb = BlockBuilder(mod)
        changed = {}
        for gv, func in mod.functions.items():
            if isinstance(func, Function) and not func.attrs.get("Primitive"):
                new = _fuse_function(func, bb, mod)
                if new is not func:
                    changed[gv] = new
        if not changed:
            return mod
        out = bb.get()
        return IRModule({gv: changed.get(gv, f) for gv, f in out.functions.items()}, mod.attrs)
