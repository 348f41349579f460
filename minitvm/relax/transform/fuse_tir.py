"""FuseTIR: each ``Primitive`` function FuseOps made becomes one PrimFunc.

A fused function is a chain of ``R.call_tir`` in one dataflow block::

    def fused_matmul_add_relu(x, w0, b0):            # Primitive
        lv = R.call_tir(cls.matmul, (x, w0), ...)
        lv1 = R.call_tir(cls.add, (lv, b0), ...)
        gv = R.call_tir(cls.relu, (lv1,), ...)

As TVM's FuseTIR, the pass first tidies the module: the tuple parameters of private
functions are expanded (``p`` -> ``p_0``, ``p_1``, the callers passing ``t[0]``, ``t[1]``),
bindings are canonicalized (``lv = ...; gv = lv`` -> ``gv = ...``), dead code and unused
parameters are removed.  Then it writes one PrimFunc
``fused_matmul_add_relu(x, w0, b0, compute_intermediate)`` whose root block holds the blocks
of ``matmul``, ``add`` and ``relu`` one after another:

* tensor parameters become buffers named after them (the handle parameters are ``p_x`` ...),
  scalar ones (``R.Prim`` / ``R.Shape`` of symbolic variables) trailing scalar parameters;
* each kernel output becomes a buffer named after the kernel's output buffer plus
  ``_intermediate`` (``T_matmul_intermediate``, then ``..._intermediate_1``): an
  ``alloc_buffer`` of the root block, unless the function returns it -- then it is an output
  parameter ``p_output0``, ``p_output1`` ... (a tuple result gives several);
* ``call_tir_inplace`` outputs are the argument buffers themselves; a fused function whose
  result is one of its own arguments is called with ``R.call_tir_inplace``;
* tuples inside the function (``TupleGetItem`` of a multi-output kernel) are followed buffer
  by buffer;
* each kernel body is copied with its buffers replaced and new loop/block variables (a kernel
  may be called twice); its symbolic variables are matched against the buffers they meet and
  its ``tir_vars`` scalars against the values passed; its own root ``alloc_buffers`` move,
  renewed, to the new root block; a repeated block name gets a number (``T_add``, ``T_add1``);
  a block reading one buffer through two regions keeps the first;
* the PrimFunc has its own symbolic variables (none shared with the Relax functions).

Calls ``cls.fused_matmul_add_relu(x, w0, b0)`` become
``R.call_tir(cls.fused_matmul_add_relu, (x, w0, b0), out_sinfo=...)`` (scalar arguments as
``tir_vars``); the Primitive functions are replaced, and ``DeadCodeElimination`` removes the
kernels nothing calls any more.  A Primitive function this cannot merge (a match_cast, an
operator that is not ``call_tir``, a kernel whose body is not a root block) is left as it is.

    mod = relax.transform.FuseTIR()(relax.transform.FuseOps()(mod))
"""

from __future__ import annotations

from typing import Any

from ...error import TVMError
from ...ir.module import GlobalVar, IRModule
from ...ir.node import replace
from ...ir.structural import structural_equal
from ...tir.buffer import Buffer, BufferRegion, decl_buffer
from ...tir.expr import BufferLoad, IntImm, IterVar, Var
from ...tir.function import PrimFunc
from ...tir.functor import StmtExprMutator, post_order_visit, substitute
from ...tir.stmt import Block, BlockRealize, BufferStore, For, LetStmt, seq
from ...transform import PassContext, module_pass
from ..analysis.struct_info_analysis import definable_tir_vars_in_struct_info, tir_vars_in_struct_info
from ..analysis.vars import free_vars
from ..expr import (
    BindingBlock,
    Call,
    Function,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    VarBinding,
    _set_struct_info,
)
from ..expr import Var as RelaxVar
from ..expr_functor import ExprMutator
from ..op.base import call_tir, call_tir_inplace
from ..struct_info import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ._util import map_functions
from .canonicalize_bindings import CanonicalizeBindings
from .dead_code_elimination import DeadCodeElimination

__all__ = ["FuseTIR"]


class _BufferRenamer(StmtExprMutator):
    """Replace buffers (loads, stores, read/write regions) and rename blocks."""

    def __init__(self, buffers: dict[int, Buffer], taken_names: set[str]) -> None:
        self.buffers = buffers
        self.taken = taken_names

    def _buf(self, b: Buffer) -> Buffer:
        return self.buffers.get(id(b), b)

    def visit_buffer_load_(self, op: BufferLoad) -> Any:
        op = self.visit_children(op)
        new = self._buf(op.buffer)
        return op if new is op.buffer else replace(op, buffer=new)

    def visit_buffer_store_(self, op: BufferStore) -> Any:
        op = self.visit_children(op)
        new = self._buf(op.buffer)
        return op if new is op.buffer else replace(op, buffer=new)

    def visit_buffer_region_(self, op: BufferRegion) -> Any:
        op = self.visit_children(op)
        new = self._buf(op.buffer)
        return op if new is op.buffer else replace(op, buffer=new)

    def visit_block_(self, op: Block) -> Any:
        op = self.visit_children(op)
        name = _numbered(op.name_hint, self.taken)
        # two regions of one kernel may now be of one buffer: listed once (as TVM does)
        reads, writes = _union_regions(op.reads), _union_regions(op.writes)
        if name == op.name_hint and len(reads) == len(op.reads) and len(writes) == len(op.writes):
            return op
        return replace(op, name_hint=name, reads=reads, writes=writes)


def _union_regions(regions: tuple) -> tuple:
    """One region per buffer, the first listed (TVM's FuseTIR does the same: a kernel reading
    two arguments that are now one buffer keeps the first access)."""
    out: list = []
    for r in regions:
        if not any(r.buffer is o.buffer for o in out):
            out.append(r)
    return tuple(out)


def _numbered(name: str, taken: set[str]) -> str:
    """``name``, or when taken the first free ``base<k>`` counting on from its trailing
    number (``T_add`` -> ``T_add1``, ``compute1`` -> ``compute2``), as TVM's FuseTIR names
    repeated blocks."""
    candidate = name
    if candidate in taken:
        base = name.rstrip("0123456789")
        k = int(name[len(base):]) + 1 if len(base) < len(name) else 1
        while f"{base}{k}" in taken:
            k += 1
        candidate = f"{base}{k}"
    taken.add(candidate)
    return candidate








def _unique(name: str, taken: set[str]) -> str:
    """``name``, else ``name_1``, then ``name_1_2`` ... (TVM's intermediate-buffer names)."""
    candidate, n = name, 0
    while candidate in taken:
        n += 1
        candidate = f"{candidate}_{n}"
    taken.add(candidate)
    return candidate


def _defined_vars(stmt: Any) -> list[Var]:
    """The loop, block and let variables ``stmt`` defines."""
    found: list[Var] = []

    def visit(n: Any) -> None:
        if isinstance(n, For):
            found.append(n.loop_var)
        elif isinstance(n, IterVar):
            found.append(n.var)
        elif isinstance(n, LetStmt):
            found.append(n.var)

    post_order_visit(stmt, visit)
    return found


def _fresh_vars(stmt: Any) -> Any:
    """``stmt`` with new variables where it defines some: a kernel called twice in one group
    must not define the same loop variable twice in the fused PrimFunc."""
    return substitute(stmt, {v: Var(v.name, v.dtype) for v in _defined_vars(stmt)})


class _Unsupported(Exception):
    """The Primitive function is not something FuseTIR can merge (it is then left as it is)."""


def _match_dims(pattern: Any, value: Any, binding: dict[int, tuple[Var, Any]]) -> None:
    """Bind the kernel's symbolic variables in ``pattern`` to the parts of ``value``
    (``n`` -> ``m``, ``n * 2`` against ``m * 2`` -> ``n`` -> ``m``); first binding wins."""
    if isinstance(pattern, Var):
        binding.setdefault(id(pattern), (pattern, value))
    elif type(pattern) is type(value) and hasattr(pattern, "a") and hasattr(pattern, "b"):
        _match_dims(pattern.a, value.a, binding)
        _match_dims(pattern.b, value.b, binding)


def _n_tensors(sinfo: Any) -> int:
    if isinstance(sinfo, TupleStructInfo):
        return sum(_n_tensors(f) for f in sinfo.fields)
    return 1


class _FusedBuilder:
    """Builds the PrimFunc of one Primitive function (TVM's FusedTIRConstructor)."""

    def __init__(self, func: Function, mod: IRModule) -> None:
        self.func, self.mod = func, mod
        self.sym: dict[int, Var] = {}  # id(relax-side symbolic var) -> the fused function's own
        self.buffers_of: dict[int, list[Buffer]] = {}  # id(relax expr) -> the buffers holding it
        self.allocs: list[Buffer] = []
        self.stmts: list[Any] = []
        self.block_names: set[str] = set()

    def own(self, expr: Any) -> Any:
        """``expr`` over the fused function's own symbolic variables (fresh ones, so the
        PrimFunc shares no variable with the Relax functions)."""
        def fresh(v: Var) -> Var:
            if id(v) not in self.sym:
                self.sym[id(v)] = Var(v.name, v.dtype)
            return self.sym[id(v)]
        return substitute(expr, lambda v: fresh(v) if isinstance(v, Var) else None)

    def shape_of(self, sinfo: Any) -> tuple:
        if not (isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None
                and not sinfo.is_unknown_dtype):
            raise _Unsupported("a tensor without a known shape and dtype")
        return tuple(self.own(d) for d in sinfo.shape_values)

    def kernel_buffers(self) -> dict[int, Buffer]:
        """The kernel buffer each value meets (its scope and axis separators carry over to
        the fused parameter); one value meeting two different buffers is an error, as in TVM."""
        met: dict[int, Buffer] = {}

        def meet(expr: Any, buf: Buffer) -> None:
            if id(expr) in met and not structural_equal(met[id(expr)], buf, map_free_vars=True):
                raise TVMError(f"FuseTIR: Inconsistent buffers {met[id(expr)]} and {buf} mapped to the same "
                               f"relax var: {expr}")
            met[id(expr)] = buf

        for block in self.func.body.blocks:
            for b in block.bindings:
                call = b.value
                if not (isinstance(call, Call) and getattr(call.op, "name", None) in
                        ("relax.call_tir", "relax.call_tir_inplace") and call.args[0] in self.mod):
                    continue
                kernel = self.mod[call.args[0]]
                if not isinstance(kernel, PrimFunc) or not isinstance(call.args[1], Tuple):
                    continue
                args = list(call.args[1].fields)
                for p, a in zip(kernel.params, args):
                    if p in kernel.buffer_map:
                        meet(a, kernel.buffer_map[p])
                out_idx = self.output_indices(call, len(args))
                results = list(b.var.fields) if isinstance(b.var, Tuple) else [b.var]
                for i, p in enumerate(kernel.params):
                    if p in kernel.buffer_map and i in out_idx and out_idx.index(i) < len(results):
                        meet(results[out_idx.index(i)], kernel.buffer_map[p])
        return met

    @staticmethod
    def output_indices(call: Call, n_in: int) -> list[int]:
        """Which kernel parameters are the call's outputs (in-place ones are arguments)."""
        if call.op.name == "relax.call_tir_inplace":
            idx, nxt = [], n_in
            for i in call.attrs["inplace_indices"]:
                idx.append(int(i) if int(i) >= 0 else nxt)
                nxt += int(i) < 0
            return idx
        out = call.sinfo_args[0]
        return list(range(n_in, n_in + (len(out.fields) if isinstance(out, TupleStructInfo) else 1)))

    def build(self) -> tuple[PrimFunc, list[int]]:
        body = self.func.body
        if not isinstance(body, SeqExpr):
            raise _Unsupported("the body is not a sequence of bindings")
        met = self.kernel_buffers()
        buffer_params: list[tuple[Var, Buffer]] = []
        scalar_params: list[Var] = []
        for p in self.func.params:
            sinfo = p.struct_info
            if isinstance(sinfo, TensorStructInfo):
                kb = met.get(id(p))
                buf = decl_buffer(self.shape_of(sinfo), sinfo.dtype, p.name_hint,
                                  scope=kb.scope if kb is not None else "global",
                                  axis_separators=kb.axis_separators if kb is not None else None)
                self.buffers_of[id(p)] = [buf]
                buffer_params.append((Var(f"p_{buf.name}", "handle"), buf))
            elif isinstance(sinfo, PrimStructInfo) and isinstance(sinfo.value, Var):
                scalar_params.append(self.own(sinfo.value))
            elif isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None \
                    and all(isinstance(v, Var) for v in sinfo.values):
                scalar_params.extend(self.own(v) for v in sinfo.values)
            else:
                raise _Unsupported(f"parameter {p.name_hint} of struct info {sinfo}")
        for block in body.blocks:
            for b in block.bindings:
                if not isinstance(b, VarBinding):
                    raise _Unsupported("a match_cast")
                self.buffers_of[id(b.var)] = self.visit(b.value)
        outputs = self.visit(body.body)
        param_index = {id(buf): k for k, (_, buf) in enumerate(buffer_params)}
        params = [v for v, _ in buffer_params]
        buffer_map = dict(buffer_params)
        inplace: list[int] = []
        out_ids: set[int] = set()
        n_out = 0
        for buf in outputs:
            if id(buf) in param_index:  # written in place into an argument
                if param_index[id(buf)] in inplace:
                    raise _Unsupported("an argument written in place twice")
                inplace.append(param_index[id(buf)])
                continue
            handle = Var(f"p_output{n_out}", "handle")
            n_out += 1
            params.append(handle)
            buffer_map[handle] = buf
            out_ids.add(id(buf))
        params.extend(scalar_params)
        allocs = [b for b in self.allocs if id(b) not in out_ids]
        root = Block("root", iter_vars=(), alloc_buffers=tuple(allocs), reads=(), writes=(), body=seq(*self.stmts))
        realize = BlockRealize((), IntImm("bool", 1), root)
        return PrimFunc(tuple(params), buffer_map, realize, None, {"tir.noalias": True}), inplace

    def visit(self, expr: Any) -> list[Buffer]:
        if isinstance(expr, RelaxVar):
            if id(expr) not in self.buffers_of:
                raise _Unsupported(f"{expr.name_hint} is not a tensor this function computes")
            return self.buffers_of[id(expr)]
        if isinstance(expr, Tuple):
            return [b for f in expr.fields for b in self.visit(f)]
        if isinstance(expr, TupleGetItem):
            whole = self.visit(expr.tuple_value)
            fields = expr.tuple_value.struct_info.fields
            begin = sum(_n_tensors(f) for f in fields[:expr.index])
            return whole[begin:begin + _n_tensors(fields[expr.index])]
        if isinstance(expr, Call) and getattr(expr.op, "name", None) in ("relax.call_tir", "relax.call_tir_inplace"):
            return self.visit_call(expr)
        raise _Unsupported(f"{type(expr).__name__} in a Primitive function")

    def visit_call(self, call: Call) -> list[Buffer]:
        kernel = self.mod[call.args[0]] if call.args[0] in self.mod else None
        if not isinstance(kernel, PrimFunc) or not isinstance(kernel.body, BlockRealize) \
                or kernel.body.block.name_hint != "root":
            raise _Unsupported("a kernel whose body is not a root block")
        args = list(call.args[1].fields) if isinstance(call.args[1], Tuple) else [call.args[1]]
        in_buffers = [b for a in args for b in self.visit(a)]
        n_in = len(args)
        out_sinfo = call.sinfo_args[0]
        out_sinfos = list(out_sinfo.fields) if isinstance(out_sinfo, TupleStructInfo) else [out_sinfo]
        idx = self.output_indices(call, n_in)
        mapping: dict[int, Buffer] = {}
        dims: dict[int, tuple[Var, Any]] = {}
        params = list(kernel.params)
        if len(in_buffers) != n_in or any(p not in kernel.buffer_map for p in params[:n_in]):
            raise _Unsupported("a kernel argument that is not one tensor")
        for p, target in zip(params[:n_in], in_buffers):
            kb = kernel.buffer_map[p]
            if kb.ndim != target.ndim:
                raise _Unsupported("an argument of another rank than the kernel's buffer")
            for kd, d in zip(kb.shape, target.shape):
                _match_dims(kd, d, dims)
            mapping[id(kb)] = target
        root = kernel.body.block
        taken = {b.name for b in self.allocs}
        outputs: list[Buffer] = []
        for i, sinfo in zip(idx, out_sinfos):
            if i < n_in:
                outputs.append(in_buffers[i])
                continue
            if i >= len(params) or params[i] not in kernel.buffer_map:
                raise _Unsupported("an output that is not a buffer parameter")
            kb = kernel.buffer_map[params[i]]
            shape = self.shape_of(sinfo)
            name = _unique(f"{kb.name}_intermediate", taken | {b.name for b in root.alloc_buffers})
            # the kernel's buffer with the call's shape (scope, axis separators kept)
            buf = replace(kb, data=Var(name, "handle"), shape=shape, name=name)
            for kd, d in zip(kb.shape, shape):
                _match_dims(kd, d, dims)
            mapping[id(kb)] = buf
            outputs.append(buf)
        if len(call.args) > 2:  # tir_vars: the kernel's trailing scalar parameters
            values = call.args[2].values if isinstance(call.args[2], ShapeExpr) else None
            if values is None:
                raise _Unsupported("tir_vars that are not an R.shape")
            for p, v in zip(params[len(params) - len(values):], values):
                dims.setdefault(id(p), (p, self.own(v)))
        dim_map = dict(dims.values())
        for buf in root.alloc_buffers:  # the kernel's own temporaries: a new buffer per call
            mapping[id(buf)] = replace(buf, data=Var(buf.data.name, buf.data.dtype),
                                       shape=tuple(substitute(d, dim_map) for d in buf.shape))
            self.allocs.append(mapping[id(buf)])
        self.allocs.extend(b for b, i in zip(outputs, idx) if i >= n_in)
        kernel_body = substitute(_fresh_vars(root.body), dim_map)
        self.stmts.append(_BufferRenamer(mapping, self.block_names).visit(kernel_body))
        return outputs


def fuse_primitive(func: Function, mod: IRModule) -> tuple[PrimFunc, list[int]] | None:
    """The PrimFunc doing what the Primitive function ``func`` does and the indices of the
    arguments it writes in place, or None when this pass cannot merge it."""
    try:
        return _FusedBuilder(func, mod).build()
    except _Unsupported:
        return None


class _CallsToCallTIR(ExprMutator):
    def __init__(self, mod: IRModule, fused: dict[GlobalVar, tuple[Function, list[int]]]) -> None:
        super().__init__(mod)
        self.fused = fused

    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if not (isinstance(call.op, GlobalVar) and call.op in self.fused):
            return call
        func, inplace = self.fused[call.op]
        tensors, tir_vars = [], []
        for a in call.args:
            sinfo = a.struct_info
            if isinstance(sinfo, ShapeStructInfo):
                tir_vars.extend(sinfo.values)
            elif isinstance(sinfo, PrimStructInfo):
                tir_vars.append(sinfo.value)
            else:
                tensors.append(a)
        shape = ShapeExpr(tir_vars) if tir_vars else None
        sinfo = op.struct_info  # (re-deriving it from the callee may lose symbolic shapes)
        if not isinstance(sinfo, (TensorStructInfo, TupleStructInfo)) and not tir_vars_in_struct_info(
                func.ret_struct_info):
            sinfo = func.ret_struct_info  # the call's result was left unknown; the callee's is static
        out = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else sinfo
        if inplace:
            return call_tir_inplace(call.op, tensors, inplace, out, shape)
        return call_tir(call.op, tensors, out, shape)


def _is_exposed(func: Function) -> bool:
    return bool(func.attrs and func.attrs.get("global_symbol"))


def _replace_callees(mod: IRModule, new_funcs: dict[GlobalVar, tuple[GlobalVar, Function]],
                     update_args: Any) -> IRModule:
    """``mod`` with the private functions in ``new_funcs`` replaced (under a new GlobalVar of
    the same name) and every call of them rewritten by ``update_args(old_gv, args)``."""
    replacements = {old: new for old, (new, _) in new_funcs.items()}

    class _CallSites(ExprMutator):
        def _bind_fields(self, args: list) -> list:
            """Fields of tuples bound first, each shared sub-expression once (as the
            normalizer binds a call's non-leaf arguments)."""
            memo: dict[int, Any] = {}

            def leaf(e: Any) -> Any:
                if not isinstance(e, TupleGetItem):
                    return e
                if id(e) not in memo:
                    memo[id(e)] = self.builder_.emit(TupleGetItem(leaf(e.tuple_value), e.index))
                return memo[id(e)]

            return [leaf(a) for a in args]

        def visit_call_(self, op: Call) -> Any:
            call = super().visit_call_(op)
            if isinstance(call.op, GlobalVar) and call.op in replacements:
                args = self._bind_fields(update_args(call.op, list(call.args)))
                new = Call(replacements[call.op], args, call.attrs, call.sinfo_args)
                # the result is the same value: keep its struct info (the callee's result may
                # be in terms of its own symbolic variables)
                _set_struct_info(new, op.struct_info)
                return new
            return call

    functions = {}
    for gv, func in mod.functions.items():
        if gv in new_funcs:
            new_gv, new_func = new_funcs[gv]
            functions[new_gv] = new_func
        else:
            functions[gv] = func
    out = IRModule(functions, mod.attrs, mod.global_infos)
    return map_functions(out, lambda f, m: _CallSites(m).visit_expr(f))


def expand_tuple_arguments(mod: IRModule) -> IRModule:
    """TVM's ExpandTupleArguments (without its cleanup): a private function's tuple parameter
    ``p`` becomes one parameter per field (``p_0``, ``p_1`` ..., nested tuples recursively),
    rebuilt as ``p = (p_0, p_1)`` at the top of its body; callers pass ``t[0], t[1]``."""
    new_funcs: dict[GlobalVar, tuple[GlobalVar, Function]] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, Function) or _is_exposed(func):
            continue
        if not any(isinstance(p.struct_info, TupleStructInfo) for p in func.params):
            continue
        params: list[Var] = []
        bindings: list[VarBinding] = []

        def expand(param: Var, params: list = params, bindings: list = bindings) -> None:
            sinfo = param.struct_info
            if isinstance(sinfo, TupleStructInfo):
                fields = []
                for i, field in enumerate(sinfo.fields):
                    new = RelaxVar(f"{param.name_hint}_{i}", field)
                    fields.append(new)
                    expand(new)
                tup = Tuple(fields)
                _set_struct_info(tup, sinfo)
                bindings.append(VarBinding(param, tup))
            else:
                params.append(param)

        for p in func.params:
            expand(p)
        body = SeqExpr((BindingBlock(tuple(bindings)), *func.body.blocks), func.body.body) \
            if isinstance(func.body, SeqExpr) else SeqExpr((BindingBlock(tuple(bindings)),), func.body)
        new_func = Function(params, body, func.ret_struct_info, func.is_pure, func.attrs)
        new_funcs[gv] = (GlobalVar(gv.name_hint), new_func)
    if not new_funcs:
        return mod

    def flatten(_: GlobalVar, args: list) -> list:
        out: list = []

        def expand_arg(arg: Any) -> None:
            sinfo = arg.struct_info
            if isinstance(sinfo, TupleStructInfo):
                for i in range(len(sinfo.fields)):
                    expand_arg(TupleGetItem(arg, i))
            else:
                out.append(arg)

        for a in args:
            expand_arg(a)
        return out

    return _replace_callees(mod, new_funcs, flatten)


def remove_unused_parameters(mod: IRModule) -> IRModule:
    """TVM's RemoveUnusedParameters: a private function's parameters its body never reads go,
    and the callers stop passing them."""
    new_funcs: dict[GlobalVar, tuple[GlobalVar, Function]] = {}
    masks: dict[GlobalVar, list[bool]] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, Function) or _is_exposed(func):
            continue
        used = {id(v) for v in free_vars(func.body)}
        mask = [id(p) in used for p in func.params]
        if all(mask):
            continue
        kept = [p for p, m in zip(func.params, mask) if m]
        defined = {id(v) for p in kept for v in definable_tir_vars_in_struct_info(p.struct_info)}
        needed = [v for p in func.params for v in definable_tir_vars_in_struct_info(p.struct_info)
                  if id(v) not in defined]
        if needed:
            continue  # a dropped parameter defines a symbolic variable: kept (no PrimValue params here)
        new_funcs[gv] = (GlobalVar(gv.name_hint), Function(kept, func.body, func.ret_struct_info, func.is_pure,
                                                           func.attrs))
        masks[gv] = mask
    if not new_funcs:
        return mod
    return _replace_callees(mod, new_funcs, lambda gv, args: [a for a, m in zip(args, masks[gv]) if m])


@module_pass(opt_level=0, name="FuseTIR")
class FuseTIR:
    """Merge each ``Primitive`` function's PrimFuncs into one PrimFunc: ``FuseTIR()(mod)``.

    As TVM's FuseTIR, it first flattens the tuple parameters of private functions
    (ExpandTupleArguments), canonicalizes bindings, removes dead code and unused parameters,
    and ends with DeadCodeElimination."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if not any(isinstance(f, Function) and f.attrs.get("Primitive") for f in mod.functions.values()):
            # nothing to fuse (e.g. a module already lowered for the VM, whose direct PrimFunc
            # calls the cleanup passes cannot re-normalize): only the final cleanup
            return DeadCodeElimination()(mod)
        mod = DeadCodeElimination()(CanonicalizeBindings()(expand_tuple_arguments(mod)))
        mod = remove_unused_parameters(mod)
        return _fuse_tir(mod)


def _fuse_tir(mod: IRModule) -> IRModule:
    fused: dict[GlobalVar, tuple[Function, list[int]]] = {}
    prim_funcs: dict[GlobalVar, PrimFunc] = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function) and func.attrs.get("Primitive"):
            result = fuse_primitive(func, mod)
            if result is not None:
                fused[gv] = (func, result[1])
                prim_funcs[gv] = result[0]
    if fused:
        mod = map_functions(mod, lambda f, m: f if f.attrs.get("Primitive") else
                            _CallsToCallTIR(m, fused).visit_expr(f))
        mod = IRModule({gv: prim_funcs.get(gv, f) for gv, f in mod.functions.items()}, mod.attrs, mod.global_infos)
    return DeadCodeElimination()(mod)
