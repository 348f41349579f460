"""BlockBuilder: write Relax functions one binding at a time.

    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv0 = bb.emit(relax.op.matmul(x, w))          # lv = R.matmul(x, w)
            gv = bb.emit_output(relax.op.nn.relu(lv0))
        bb.emit_func_output(gv)
    mod = bb.get()

Every expression emitted is *normalized* first: nested calls are bound to their own
variables (so each binding does one thing) and every call gets its struct info from
its operator's ``FInferStructInfo``.  ``emit_te`` turns a tensor-expression function
into a PrimFunc of the module and emits the ``R.call_tir`` of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Callable, Iterator, Sequence

from ..ir.deep import share_thread_local
from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from ..ir.structural import structural_equal, structural_hash
from ..tir.expr import IntImm
from ..tir.expr import Var as TirVar
from ..tir.function import PrimFunc
from .analysis.struct_info_analysis import (
    definable_tir_vars_in_struct_info,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    is_base_of,
    struct_info_lca,
)
from .expr import (
    NON_VAR_LEAVES,
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    _set_struct_info,
    is_leaf,
    is_normalized,
    mark_normalized,
    struct_info_of,
)
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    StructInfo,
    StructInfoError,
    TupleStructInfo,
    struct_info_text,
)
from .te_convert import te_to_call_tir

__all__ = ["BlockBuilder"]


@dataclasses.dataclass
class _BlockFrame:
    is_dataflow: bool
    bindings: list = dataclasses.field(default_factory=list)
    #: id(argument expression) -> (it, the variable normalizing bound it to): the same
    #: expression normalized twice in one block is bound once (TVM's normalize_binding_map)
    normalized: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _FunctionFrame:
    name: str
    params: list | None
    attrs: dict
    is_pure: bool
    private: bool
    blocks: list = dataclasses.field(default_factory=list)
    output_emitted: bool = False
    #: id(DataflowVar) -> the Var ``bb.emit_output(that DataflowVar)`` bound it to
    emitted_outputs: dict = dataclasses.field(default_factory=dict)


class _NameTable:
    """``lv``, ``lv1``, ``lv2`` ... : a fresh name for each request of a prefix."""

    def __init__(self, taken: Callable[[str], bool] = lambda name: False) -> None:
        self.used: set[str] = set()
        self.taken = taken

    def peek(self, prefix: str) -> str:
        """The name :meth:`get` would return next, without taking it."""
        candidate, n = prefix, 0
        while candidate in self.used or self.taken(candidate):
            n += 1
            candidate = f"{prefix}{n}"
        return candidate

    def get(self, prefix: str) -> str:
        candidate = self.peek(prefix)
        self.used.add(candidate)
        return candidate


def _outline(func: Any) -> tuple:
    """What structurally equal functions share and is quick to read (a Relax function's
    parameters in brief; a PrimFunc's parameter count and buffer dtypes and constant shapes, in
    any order): hashing a kernel costs ~1 ms."""
    params = getattr(func, "params", None)
    if not isinstance(func, PrimFunc):
        if params is None:
            return ()
        return tuple(_sinfo_outline(getattr(p, "struct_info", None)) for p in params)
    return (len(params), tuple(sorted((str(b.dtype), tuple(_dim(d) for d in b.shape))
                                      for b in func.buffer_map.values())))


def _sinfo_outline(sinfo: Any) -> tuple:
    """A Relax parameter's struct info in brief: its kind, dtype, rank and constant dimensions."""
    shape = getattr(sinfo, "shape", None)
    dims = tuple(_dim(d) for d in shape.values) if isinstance(shape, ShapeExpr) else None
    return (type(sinfo).__name__, str(getattr(sinfo, "dtype", "")), getattr(sinfo, "ndim", None), dims)


def _dim(d: Any) -> int:
    return d.value if isinstance(d, IntImm) else d if isinstance(d, int) else -1


class BlockBuilder:
    """Builds Relax functions into an IRModule (``BlockBuilder(mod)`` extends ``mod``)."""

    #: apply each operator's FNormalize (the TVMScript parser turns it off: a script's IR is kept as written)
    op_normalization = True

    def __init__(self, mod: IRModule | None = None) -> None:
        self._mod = IRModule(mod.functions, mod.attrs, mod.global_infos) if mod is not None else IRModule()
        self._func: _FunctionFrame | None = None
        self._blocks: list[_BlockFrame] = []
        self._bindings: dict[int, tuple[Var, Any]] = {}
        # one table for the builder's lifetime, as TVM's: a second function's first binding
        # is ``lv1`` when the first function had ``lv``
        self._local_names = _NameTable()
        self._global_names = _NameTable(lambda name: name in self._mod)
        #: id(function) -> [function, outline, structural hash]: add_func compares outlines, then
        #: hashes, before the full structural_equal (a model's hundreds of calls would otherwise
        #: compare every kernel), and hashes only functions whose outlines meet
        self._func_hashes: dict[int, list] = {}

    _current = share_thread_local(threading.local())

    @classmethod
    def current(cls) -> "BlockBuilder | None":
        """The builder whose ``with bb.function(...)`` (or ``with bb:``) scope is open, or None."""
        stack = getattr(cls._current, "stack", None)
        return stack[-1] if stack else None

    def _push_current(self) -> None:
        if not hasattr(BlockBuilder._current, "stack"):
            BlockBuilder._current.stack = []
        BlockBuilder._current.stack.append(self)

    def _pop_current(self) -> None:
        stack = BlockBuilder._current.stack
        if stack and stack[-1] is self:
            stack.pop()

    def __enter__(self) -> "BlockBuilder":
        self._push_current()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pop_current()

    # -- scopes ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def function(self, name: str, params: Sequence[Var] | Var | None = None,
                 attrs: dict | None = None, pure: bool = True, private: bool = False) -> Iterator[None]:
        """``with bb.function("main", [x, w]):`` … ``bb.emit_func_output(out)``.

        Parameters may instead be given to :meth:`emit_func_output`.  A function that is
        not ``private`` gets the ``global_symbol`` attribute (it is visible from outside).
        """
        if self._func is not None:
            raise RuntimeError(f"bb.function({name!r}) inside bb.function({self._func.name!r}): "
                               "functions cannot be nested; build the inner one separately")
        if isinstance(params, Var):
            params = [params]
        self._func = _FunctionFrame(name, None if params is None else list(params), dict(attrs or {}),
                                    pure, private)
        self._local_names.used.update(p.name for p in self._func.params or ())
        depth = len(self._blocks)
        self.begin_binding_block()
        self._push_current()
        try:
            yield
            if not self._func.output_emitted:
                raise RuntimeError(f"bb.function({name!r}) ended without bb.emit_func_output(...)")
        finally:
            self._pop_current()
            del self._blocks[depth:]
            self._func = None

    @contextlib.contextmanager
    def testing_scope(self, def_vars: Sequence[Any]) -> Iterator[None]:
        """A scope for unit tests in which the symbolic variables ``def_vars`` count as defined
        (TVM's).  minitvm's builder erases undefined variables per function (at
        ``emit_func_output``), not per scope, so nothing inside depends on the list; it is
        checked to hold only ``tir.Var``s."""
        bad = [v for v in def_vars if not isinstance(v, TirVar)]
        if bad:
            raise TypeError(f"bb.testing_scope: def_vars must be tir.Var, got {bad[0]!r}")
        self._push_current()
        try:
            yield
        finally:
            self._pop_current()

    @contextlib.contextmanager
    def dataflow(self) -> Iterator[None]:
        """``with bb.dataflow():`` — bindings inside form a DataflowBlock; mark what leaves
        it with :meth:`emit_output`."""
        if self._func is None:
            raise RuntimeError("bb.dataflow() must be inside `with bb.function(...)`")
        if self.current_block_is_dataflow():
            raise RuntimeError("bb.dataflow() inside another dataflow block")
        self._close_block_into_function()
        self.begin_dataflow_block()
        depth = len(self._blocks)
        try:
            yield
        finally:
            if len(self._blocks) >= depth:
                del self._blocks[depth:]
                self._close_block_into_function()
                self.begin_binding_block()

    def _close_block_into_function(self) -> None:
        block = self.end_block()
        if block.bindings:
            self._func.blocks.append(block)

    # -- the block stack (also used by ExprMutator) ----------------------------------------
    def begin_binding_block(self) -> None:
        self._blocks.append(_BlockFrame(False))

    def begin_dataflow_block(self) -> None:
        self._blocks.append(_BlockFrame(True))

    def end_block(self) -> BindingBlock:
        """Close the innermost open block and return it."""
        if not self._blocks:
            raise RuntimeError("end_block: no block is open")
        frame = self._blocks.pop()
        cls = DataflowBlock if frame.is_dataflow else BindingBlock
        return cls(tuple(frame.bindings))

    # TVM's spellings of the three above
    _begin_binding_block = begin_binding_block
    _begin_dataflow_block = begin_dataflow_block
    _end_block = end_block

    def current_block_is_dataflow(self) -> bool:
        return bool(self._blocks) and self._blocks[-1].is_dataflow

    def _current_block(self, what: str) -> _BlockFrame:
        if not self._blocks:
            raise RuntimeError(f"{what} needs an open block: use `with bb.function(...)` "
                               "(and `with bb.dataflow()`)")
        return self._blocks[-1]

    # -- emitting --------------------------------------------------------------------------
    def emit(self, expr: Any, name_hint: str = "") -> Var:
        """Bind ``expr`` (normalized) to a new variable: a DataflowVar inside a dataflow block."""
        block = self._current_block("bb.emit")
        prefix = name_hint or ("lv" if block.is_dataflow else "gv")
        try:
            value = self.normalize(_python_tuple(expr))
        except StructInfoError as err:  # say which binding of which function, too
            where = f"binding {self._local_names.peek(prefix)}"
            if self._func is not None:
                where += f" of function {self._func.name}"
            # the same class: a dtype clash stays the TypeError TVM reports
            raise type(err)(f"{err} (in {where})") from None
        if isinstance(value, SeqExpr) and self._func is not None:
            value = self._inline_seq(value)
        cls = DataflowVar if block.is_dataflow else Var
        var = cls(self._local_names.get(prefix), self._sinfo(value, "bb.emit"))
        self.emit_normalized(VarBinding(var, value))
        return var

    def _inline_seq(self, seq: SeqExpr) -> Any:
        """Emit the bindings of ``seq`` into the function being built and return its result,
        as TVM's builder does with an emitted SeqExpr: a block of the other kind (bindings
        inside a dataflow block, or the reverse) splits the current block around it."""
        for block in seq.blocks:
            kind = isinstance(block, DataflowBlock)
            here = self._blocks[-1].is_dataflow
            if kind != here:
                self._close_block_into_function()
                self._blocks.append(_BlockFrame(kind))
            for binding in block.bindings:
                self._local_names.used.add(binding.var.name)
                self.emit_normalized(binding)
            if kind != here:
                self._close_block_into_function()
                self._blocks.append(_BlockFrame(here))
        return seq.body

    def emit_output(self, output: Any, name_hint: str = "") -> Var:
        """Bind ``output`` to a variable visible after the dataflow block."""
        if not self.current_block_is_dataflow():
            raise RuntimeError("bb.emit_output is only allowed inside `with bb.dataflow()`")
        value = self.normalize(_python_tuple(output))
        var = Var(self._local_names.get(name_hint or "gv"), self._sinfo(value, "bb.emit_output"))
        self.emit_normalized(VarBinding(var, value))
        if isinstance(value, DataflowVar) and self._func is not None:
            self._func.emitted_outputs.setdefault(id(value), (value, var))
        return var

    def _emitted_output(self, expr: Any) -> Any:
        """``expr`` with each DataflowVar that ``bb.emit_output`` turned into a returned Var
        replaced by that Var: TVM's builder lets ``bb.emit_func_output(lv)`` name the dataflow
        variable (the MLC course's ``from_fx`` does), and the function returns the output."""
        emitted = self._func.emitted_outputs if self._func is not None else {}
        if isinstance(expr, DataflowVar):
            entry = emitted.get(id(expr))
            return entry[1] if entry is not None and entry[0] is expr else expr
        if isinstance(expr, Tuple):
            fields = [self._emitted_output(f) for f in expr.fields]
            return expr if _same(fields, expr.fields) else self.normalize(Tuple(fields))
        return expr

    def match_cast(self, value: Any, struct_info: StructInfo, name_hint: str = "") -> Var:
        """``R.match_cast(value, struct_info)``: a variable with the more precise struct info
        (checked at run time); new symbolic dimensions in ``struct_info`` are defined here."""
        if not isinstance(struct_info, StructInfo):
            raise TypeError(f"bb.match_cast: expected a StructInfo, got {struct_info!r}")
        block = self._current_block("bb.match_cast")
        value = self._normalize_arg(self.normalize(value))
        cls = DataflowVar if block.is_dataflow else Var
        var = cls(self._local_names.get(name_hint or ("lv" if block.is_dataflow else "gv")), struct_info)
        self.emit_normalized(MatchCast(var, value, struct_info))
        return var

    def emit_normalized(self, binding: Binding) -> None:
        """Append an already normalized binding to the current block."""
        block = self._current_block("bb.emit_normalized")
        if isinstance(binding.var, DataflowVar) and not block.is_dataflow:
            raise RuntimeError(f"DataflowVar {binding.var.name} cannot be bound outside a dataflow block")
        block.bindings.append(binding)
        self._bindings[id(binding.var)] = (binding.var, binding.value)

    def lookup_binding(self, var: Var) -> Any:
        """The value ``var`` was bound to in this builder, or None."""
        entry = self._bindings.get(id(var))
        return entry[1] if entry is not None and entry[0] is var else None

    def emit_func_output(self, output: Any, params: Sequence[Var] | Var | None = None) -> GlobalVar:
        """Finish the function: ``output`` is its result (a list becomes a tuple)."""
        frame = self._func
        if frame is None:
            raise RuntimeError("bb.emit_func_output must be inside `with bb.function(...)`")
        if frame.output_emitted:
            raise RuntimeError(f"bb.emit_func_output called twice in function {frame.name!r}")
        if self.current_block_is_dataflow():
            raise RuntimeError("bb.emit_func_output must come after the `with bb.dataflow()` block")
        if isinstance(params, Var):
            params = [params]
        if params is not None:
            if frame.params is not None:
                raise RuntimeError(f"function {frame.name!r}: parameters given both to bb.function "
                                   "and to bb.emit_func_output")
            frame.params = list(params)
        if frame.params is None:
            raise RuntimeError(f"function {frame.name!r} has no parameters: pass params to "
                               "bb.function or bb.emit_func_output")
        output = self._emitted_output(self.normalize(_python_tuple(output)))
        leaked = [v for v in ([output] if not isinstance(output, Tuple) else output.fields)
                  if isinstance(v, DataflowVar)]
        if leaked:
            raise RuntimeError(f"the function output {leaked[0].name} is a DataflowVar that "
                               "bb.emit_output did not emit; emit it with bb.emit_output inside "
                               "the dataflow block")
        self._close_block_into_function()
        self.begin_binding_block()  # keeps the stack balanced for the enclosing `with`
        body = SeqExpr(tuple(frame.blocks), output)
        attrs = dict(frame.attrs)
        if not frame.private:
            attrs.setdefault("global_symbol", frame.name)
        func = self._make_function(frame.params, body, None, frame.is_pure, attrs)
        frame.output_emitted = True
        self._mod._put(frame.name, func)
        return self._mod.get_global_var(frame.name)

    # -- module ----------------------------------------------------------------------------
    def get(self) -> IRModule:
        """The module built so far (a copy)."""
        # after bb.emit_func_output the function is in the module already (TVM's tests call
        # bb.get() there); before it, it would be missing
        if self._func is not None and not self._func.output_emitted:
            raise RuntimeError(f"bb.get() inside bb.function({self._func.name!r}) before bb.emit_func_output; "
                               "call it after the `with`")
        return IRModule(self._mod.functions, self._mod.attrs, self._mod.global_infos)

    finalize = get

    def get_unique_name(self, name_prefix: str) -> str:
        """A global name not used in the module (``prefix``, ``prefix1`` ...)."""
        return self._global_names.get(name_prefix)

    def add_func(self, func: Any, func_name: str) -> GlobalVar:
        """Add a function under a fresh name (an identical existing function is reused)."""
        outline, key = self._func_memo(func)[1], None
        for gv, existing in self._mod.functions.items():
            if type(existing) is type(func) and self._func_memo(existing)[1] == outline:
                key = self._func_hash(func) if key is None else key
                if self._func_hash(existing) == key and structural_equal(existing, func):
                    return gv
        gv = GlobalVar(self.get_unique_name(func_name))
        self._mod._put(gv, func)
        return gv

    def _func_memo(self, func: Any) -> list:
        """[func, its outline, its structural hash or None until asked], remembered by identity."""
        entry = self._func_hashes.get(id(func))
        if entry is None or entry[0] is not func:
            entry = self._func_hashes[id(func)] = [func, _outline(func), None]
        return entry

    def _func_hash(self, func: Any) -> int:
        entry = self._func_memo(func)
        if entry[2] is None:
            entry[2] = structural_hash(func)
        return entry[2]

    def update_func(self, gv: GlobalVar, updated_func: Any) -> None:
        """Replace (or add) the function named by ``gv``."""
        self._mod._put(gv, updated_func)

    # -- TE -----------------------------------------------------------------------------------
    def call_te(self, func: Callable, *args: Any, **kwargs: Any) -> Call:
        """``R.call_tir`` of the PrimFunc made from the tensor-expression function ``func``.

        Tensor arguments become ``te.placeholder``s of their shapes (symbolic dimensions
        stay the same ``tir.Var`` in every placeholder); ``primfunc_name_hint`` names the
        PrimFunc (default: the function's name), ``primfunc_attrs`` adds attributes.
        """
        return te_to_call_tir(self, func, args, kwargs)

    def call_te_with_grad(self, func: Callable, *args: Any, te_grad_name: str,
                          te_grad_kwargs: dict | None = None, **kwargs: Any) -> Call:
        """:meth:`call_te` as ``R.call_tir_with_grad``: its gradient is the TE function
        registered as ``te_grad_name`` (``relax.training.utils.register_te_gradient``)."""
        # lazy: cycle -- relax.op builds on this module
        from .op.base import call_tir_with_grad

        call = self.call_te(func, *args, **kwargs)
        tir_vars = call.args[2] if len(call.args) > 2 else None
        return call_tir_with_grad(call.args[0], call.args[1], call.sinfo_args[0], te_grad_name,
                                  te_grad_kwargs, tir_vars)

    def emit_te(self, func: Callable, *args: Any, **kwargs: Any) -> Var:
        """Emit :meth:`call_te`: ``lv = bb.emit_te(topi.nn.relu, x)``."""
        name_hint = kwargs.pop("name_hint", "")
        return self.emit(self.call_te(func, *args, **kwargs), name_hint)

    # -- normalization -----------------------------------------------------------------------
    def normalize(self, expr: Any) -> Any:
        """``expr`` with struct info everywhere; nested calls are bound to variables when a
        block is open (A-normal form)."""
        if isinstance(expr, (GlobalVar, Op)):
            return expr
        if not isinstance(expr, Expr):
            raise TypeError(f"cannot normalize {type(expr).__name__}: {expr!r} is not a Relax expression")
        if isinstance(expr, Var):
            if expr.struct_info is None:
                raise StructInfoError(f"variable {expr.name} has no struct info")
            return expr
        if isinstance(expr, Call):
            return self._normalize_call(expr)
        if isinstance(expr, Tuple):
            fields = [self._normalize_arg(f) for f in expr.fields]
            return expr if _same(fields, expr.fields) else self.normalize(Tuple(fields))
        if isinstance(expr, TupleGetItem):
            return self._normalize_get_item(expr)
        if isinstance(expr, SeqExpr):
            return self._normalize_seq(expr)
        if isinstance(expr, If):
            return self._normalize_if(expr)
        if isinstance(expr, Function):
            return self._normalize_function(expr)
        return expr  # other leaves know their struct info from construction

    def _normalize_arg(self, expr: Any) -> Any:
        """Normalize, then bind a non-leaf to a variable when a block is open."""
        if self._blocks:
            seen = self._blocks[-1].normalized.get(id(expr))
            if seen is not None and seen[0] is expr:
                return seen[1]
        original = expr
        expr = self.normalize(expr)
        if is_leaf(expr) or isinstance(expr, Function) or not self._blocks:
            return expr
        var = self.emit(expr)
        self._blocks[-1].normalized[id(original)] = (original, var)
        return var

    def _normalize_call(self, call: Call) -> Call:
        op = call.op if isinstance(call.op, (Op, GlobalVar)) else self._normalize_arg(call.op)
        # arguments that normalize to themselves (most calls have only such) are not visited
        args = call.args if all(_normal_leaf(a) for a in call.args) else [self._normalize_arg(a) for a in call.args]
        if op is not call.op or not _same(args, call.args):
            call = Call(op, args, call.attrs, call.sinfo_args)
        fnormalize = op.get_attr("FNormalize") if isinstance(op, Op) and self.op_normalization else None
        if fnormalize is not None:  # the operator's own canonical form (TVM's FNormalize)
            new = fnormalize(self, call)
            if new is not call:
                call = Call(new.op, [self._normalize_arg(a) for a in new.args], new.attrs, new.sinfo_args)
        if struct_info_of(call) is None:
            _set_struct_info(call, self._infer_call(call))
        return call

    def _infer_call(self, call: Call) -> StructInfo:
        op = call.op
        if isinstance(op, Op):
            infer = op.get_attr("FInferStructInfo")
            if infer is None:
                raise StructInfoError(f"operator {op.name} has no FInferStructInfo registered")
            sinfo = infer(call, self)
            if not isinstance(sinfo, StructInfo):
                raise TypeError(f"FInferStructInfo of {op.name} returned {sinfo!r}, not a StructInfo")
            return sinfo
        callee = self._callee_struct_info(op)
        if not isinstance(callee, FuncStructInfo):
            raise StructInfoError(f"cannot call {op!r}: its struct info {struct_info_text(callee)} "
                                  "is not a function")
        if callee.is_opaque and call.sinfo_args:
            return call.sinfo_args[0]
        return derive_call_ret_struct_info(callee, call, self)

    def _callee_struct_info(self, op: Any) -> StructInfo:
        if isinstance(op, GlobalVar):
            func = self._mod.functions.get(op)
            if func is None and op.name_hint in self._mod:
                func = self._mod[op.name_hint]
            if isinstance(func, Function):
                return self._sinfo(func, f"function {op.name_hint}")
            if isinstance(func, PrimFunc):
                raise StructInfoError(f"@{op.name_hint} is a PrimFunc: call it with R.call_tir")
            if isinstance(struct_info_of(op), FuncStructInfo):  # a function not added yet (a pass lifting it)
                return struct_info_of(op)
            return FuncStructInfo.opaque_func(ObjectStructInfo())
        return self._sinfo(op, "callee")

    def _normalize_get_item(self, expr: TupleGetItem) -> Any:
        tup = self._normalize_arg(expr.tuple_value)
        sinfo = self._sinfo(tup, "TupleGetItem")
        if not isinstance(sinfo, TupleStructInfo):
            raise StructInfoError(f"cannot take item {expr.index} of {struct_info_text(sinfo)}: not a tuple")
        new = expr if tup is expr.tuple_value else TupleGetItem(tup, expr.index)
        if struct_info_of(new) is None:
            _set_struct_info(new, sinfo.fields[expr.index])
        return new

    def _normalize_seq(self, seq: SeqExpr) -> SeqExpr:
        blocks = []
        for block in seq.blocks:
            if isinstance(block, DataflowBlock):
                self.begin_dataflow_block()
            else:
                self.begin_binding_block()
            for binding in block.bindings:
                value = self.normalize(binding.value)
                if isinstance(binding, MatchCast):
                    value = self._normalize_arg(value)
                    new = binding if value is binding.value else MatchCast(binding.var, value, binding.struct_info)
                else:
                    _fill_var_struct_info(binding.var, self._sinfo(value, f"binding of {binding.var.name}"))
                    new = binding if value is binding.value else VarBinding(binding.var, value)
                self.emit_normalized(new)
            new_block = self.end_block()
            blocks.append(block if _same(new_block.bindings, block.bindings) else new_block)
        # as TVM's normalizer, a body that is not a leaf (nor a tuple) is bound to a variable
        # of a trailing block, a dataflow one when the enclosing block is
        if self._blocks and self.current_block_is_dataflow():
            self.begin_dataflow_block()
        else:
            self.begin_binding_block()
        body = self.normalize(seq.body)
        if not (is_leaf(body) or isinstance(body, (Tuple, Function))):
            body = self.emit(body)
        prologue = self.end_block()
        if prologue.bindings:
            blocks.append(prologue)
        blocks = _merge_blocks(blocks)
        if _same(blocks, seq.blocks) and body is seq.body:
            new_seq = seq
        else:
            new_seq = SeqExpr(tuple(blocks), body)
        if struct_info_of(new_seq) is None:
            _set_struct_info(new_seq, self._sinfo(body, "SeqExpr body"))
        return new_seq

    def _normalize_scope(self, expr: Any) -> SeqExpr:
        """A branch or function body: always a SeqExpr, its bindings kept inside it."""
        seq = expr if isinstance(expr, SeqExpr) else SeqExpr((), expr)
        saved, self._blocks = self._blocks, []
        try:
            return self._normalize_seq(seq)
        finally:
            self._blocks = saved

    def _normalize_if(self, expr: If) -> If:
        cond = self._normalize_arg(expr.cond)
        then, other = self._normalize_scope(expr.true_branch), self._normalize_scope(expr.false_branch)
        new = expr if (cond is expr.cond and then is expr.true_branch and other is expr.false_branch) \
            else If(cond, then, other)
        if struct_info_of(new) is None:
            _set_struct_info(new, struct_info_lca(then.struct_info, other.struct_info))
        return new

    def _normalize_function(self, func: Function) -> Function:
        if is_normalized(func):  # normalizing is idempotent: nothing to walk
            return func
        for p in func.params:
            if p.struct_info is None:
                raise StructInfoError(f"parameter {p.name} of a function has no struct info")
        body = self._normalize_scope(func.body)
        if body is not func.body or struct_info_of(func) is None:
            func = self._make_function(func.params, body, func.ret_struct_info, func.is_pure, func.attrs)
        if self.op_normalization:
            mark_normalized(func)
        return func

    def _make_function(self, params: Sequence[Var], body: SeqExpr, ret: StructInfo | None,
                       is_pure: bool, attrs: dict) -> Function:
        body_sinfo = struct_info_of(body)
        if ret is None or body_sinfo is not None:
            defined = {id(v) for p in params for v in definable_tir_vars_in_struct_info(p.struct_info)}
            param_ids = {id(p) for p in params}
            derived = erase_to_well_defined(self._sinfo(body, "function body"),
                                            lambda v: v if id(v) in defined else None,
                                            lambda v: v if id(v) in param_ids else None)
            # as TVM's Function: the body's struct info when there is no annotation, or when it
            # is more precise than the annotation
            if ret is None or (is_base_of(ret, derived) and not is_base_of(derived, ret)):
                ret = derived
        return Function(tuple(params), body, ret, is_pure, attrs)

    @staticmethod
    def _sinfo(expr: Any, where: str) -> StructInfo:
        sinfo = struct_info_of(expr)
        if sinfo is None:
            raise StructInfoError(f"{where}: {expr!r} has no struct info")
        return sinfo


#: leaves that normalizing returns as they are (a variable too, once it has struct info); a set
#: of exact classes: asked for every argument of every call normalized
_PLAIN_LEAVES = frozenset(NON_VAR_LEAVES)


def _normal_leaf(arg: Any) -> bool:
    cls = type(arg)
    return cls in _PLAIN_LEAVES or ((cls is Var or cls is DataflowVar) and arg.struct_info is not None)


def _merge_blocks(blocks: list[BindingBlock]) -> list[BindingBlock]:
    """Empty blocks dropped, neighbours of the same kind joined into one (TVM's normalizer)."""
    merged: list[BindingBlock] = []
    for block in blocks:
        if not block.bindings:
            continue
        if merged and type(merged[-1]) is type(block):
            merged[-1] = type(block)(tuple(merged[-1].bindings) + tuple(block.bindings))
        else:
            merged.append(block)
    return merged


def _python_tuple(expr: Any) -> Any:
    """A (nested) Python list or tuple of Relax expressions as a Relax Tuple, as TVM's builder
    takes them in emit, emit_output and emit_func_output."""
    if isinstance(expr, (list, tuple)):
        return Tuple([_python_tuple(e) for e in expr])
    return expr


def _same(new: Sequence, old: Sequence) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


def _fill_var_struct_info(var: Var, sinfo: StructInfo) -> None:
    """A variable written without struct info takes its value's, once (as TVM's normalizer)."""
    if var.struct_info is None:
        object.__setattr__(var, "struct_info", sinfo)

