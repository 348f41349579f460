"""Calls across IR levels: ``call_tir`` (a TensorIR PrimFunc in destination-passing
style), ``call_dps_packed`` (an external function in that style) and
``call_pure_packed`` (an external function that returns its result)."""

from __future__ import annotations

from typing import Any, Sequence

from ...ir.module import GlobalVar
from ...ir.op import Op
from ...ir.structural import structural_equal
from ..expr import Call, Expr, ExternFunc, ShapeExpr, StringImm, Tuple, TupleGetItem, Var, _as_expr, struct_info_of
from ..struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    StructInfoError,
    TensorStructInfo,
    TupleStructInfo,
)
from .registry import OpPattern, make_call, register

__all__ = ["call_tir", "call_tir_inplace", "call_tir_with_grad", "call_dps_packed", "call_pure_packed",
           "call_py_func", "print", "assert_op", "call_builtin_with_ctx", "null_value", "call_inplace_packed"]


def _out_sinfo(out_sinfo: Any, op_name: str) -> StructInfo:
    """One TensorStructInfo, or a list of them (several outputs form a tuple)."""
    if isinstance(out_sinfo, StructInfo):
        out_sinfo = [out_sinfo]
    if not isinstance(out_sinfo, (list, tuple)) or not out_sinfo:
        raise TypeError(f"{op_name}: out_sinfo must be a TensorStructInfo or a list of them, got {out_sinfo!r}")
    for s in out_sinfo:
        if not isinstance(s, TensorStructInfo):
            raise TypeError(f"{op_name}: every output struct info must be a TensorStructInfo, got {s!r}")
    return out_sinfo[0] if len(out_sinfo) == 1 else TupleStructInfo(list(out_sinfo))


def _args_tuple(args: Any) -> Expr:
    if isinstance(args, (list, tuple)):
        return Tuple(list(args))
    if isinstance(args, Expr) and isinstance(struct_info_of(args), TensorStructInfo):
        return Tuple([args])
    return args


def _infer_dps(call: Call, op_name: str, callee_kinds: tuple, callee_text: str) -> StructInfo:
    if len(call.args) not in (2, 3):
        raise StructInfoError(f"{op_name} takes the callee, a tuple of arguments and optionally "
                              f"the symbolic variables, got {len(call.args)} arguments")
    if not isinstance(call.args[0], callee_kinds):
        raise StructInfoError(f"{op_name}: the callee must be {callee_text}, got {call.args[0]!r}")
    if not isinstance(struct_info_of(call.args[1]), TupleStructInfo):
        raise StructInfoError(f"{op_name}: the arguments must be a tuple")
    if len(call.args) == 3 and not isinstance(struct_info_of(call.args[2]), ShapeStructInfo):
        raise StructInfoError(f"{op_name}: tir_vars must be a shape (R.shape([...]))")
    if len(call.sinfo_args) != 1:
        raise StructInfoError(f"{op_name} needs exactly one output struct info, got {len(call.sinfo_args)}")
    return call.sinfo_args[0]


@register("relax.call_tir", pattern=OpPattern.OPAQUE)
def _infer_call_tir(call: Call, ctx: Any) -> StructInfo:
    """Call a PrimFunc that writes its outputs into buffers allocated by the caller."""
    return _infer_dps(call, "relax.call_tir", (GlobalVar,), "a GlobalVar of a PrimFunc")


@register("relax.call_tir_inplace", pattern=OpPattern.OPAQUE)
def _infer_call_tir_inplace(call: Call, ctx: Any) -> StructInfo:
    """A PrimFunc that writes some outputs over its inputs (``inplace_indices``; -1: a new
    tensor the caller allocates).  The indices are checked by its FNormalize, as TVM does:
    TVMScript keeps a call as written, and the well-formed check reports it."""
    return _infer_dps(call, "relax.call_tir_inplace", (GlobalVar,), "a GlobalVar of a PrimFunc")


def _check_inplace_indices(call: Call) -> None:
    """Each output has an index; the indices name distinct arguments (or -1), at least one
    does, and an output written over an argument has its shape and dtype."""
    out = call.sinfo_args[0] if len(call.sinfo_args) == 1 else None
    if out is None or len(call.args) < 2 or not isinstance(call.args[1], Tuple):
        return  # FInferStructInfo names the problem
    indices = list((call.attrs or {}).get("inplace_indices", ()))
    outs = list(out.fields) if isinstance(out, TupleStructInfo) else [out]
    if len(indices) != len(outs):
        raise StructInfoError(f"relax.call_tir_inplace: {len(indices)} inplace_indices for {len(outs)} outputs")
    if all(i == -1 for i in indices):
        raise StructInfoError("relax.call_tir_inplace: every inplace_index is -1 (all outputs fresh); at least one "
                              "output must be written over an argument, or use R.call_tir")
    inputs = [struct_info_of(f) for f in call.args[1].fields]
    seen: set[int] = set()
    for k, (i, o) in enumerate(zip(indices, outs)):
        if i == -1:
            continue
        if not 0 <= i < len(inputs):
            raise StructInfoError(f"relax.call_tir_inplace: inplace index {i} is not an argument index "
                                  f"(0..{len(inputs) - 1}) or -1")
        if i in seen:
            raise StructInfoError(f"relax.call_tir_inplace: argument {i} is written in place twice")
        seen.add(i)
        arg = inputs[i]
        if not (isinstance(arg, TensorStructInfo) and arg.dtype == o.dtype
                and (arg.shape_values is None or o.shape_values is None
                     or structural_equal(list(arg.shape_values), list(o.shape_values)))):
            raise StructInfoError(f"relax.call_tir_inplace: output {k} ({o!r}) is written over argument {i} "
                                  f"({arg!r}), which has a different shape or dtype")


def _normalize_call_tir_inplace(bb: Any, call: Call) -> Call:
    new = _inline_arg_tuple(bb, call)
    _check_inplace_indices(new)
    return new


def _inline_arg_tuple(bb: Any, call: Call) -> Call:
    """FNormalize of call_tir / call_tir_inplace: the arguments as an in-line tuple (a variable
    bound to a tuple gives that tuple, any other tuple-valued expression its items)."""
    if len(call.args) < 2 or isinstance(call.args[1], Tuple):
        return call
    args = call.args[1]
    bound = bb.lookup_binding(args) if bb is not None and isinstance(args, Var) else None
    if isinstance(bound, Tuple):
        tup = Tuple(list(bound.fields))
    else:
        sinfo = struct_info_of(args)
        if not isinstance(sinfo, TupleStructInfo):
            return call  # FInferStructInfo names the problem
        tup = Tuple([TupleGetItem(args, i) for i in range(len(sinfo.fields))])
    return Call(call.op, [call.args[0], tup, *call.args[2:]], call.attrs, call.sinfo_args)


@register("relax.call_tir_with_grad", pattern=OpPattern.OPAQUE)
def _infer_call_tir_with_grad(call: Call, ctx: Any) -> StructInfo:
    """call_tir whose gradient is the TE function registered as ``te_grad_name``."""
    return _infer_dps(call, "relax.call_tir_with_grad", (GlobalVar,), "a GlobalVar of a PrimFunc")


for _name in ("relax.call_tir", "relax.call_tir_with_grad"):
    Op.get(_name).set_attr("FNormalize", _inline_arg_tuple)
Op.get("relax.call_tir_inplace").set_attr("FNormalize", _normalize_call_tir_inplace)


@register("relax.call_dps_packed", pattern=OpPattern.OPAQUE)
def _infer_call_dps_packed(call: Call, ctx: Any) -> StructInfo:
    """Call an external function that writes its outputs into caller-allocated tensors."""
    return _infer_dps(call, "relax.call_dps_packed", (ExternFunc,), "an ExternFunc")


@register("relax.call_pure_packed", pattern=OpPattern.OPAQUE)
def _infer_call_pure_packed(call: Call, ctx: Any) -> StructInfo:
    """Call an external function known to be free of side effects."""
    if not call.args or not isinstance(call.args[0], ExternFunc):
        raise StructInfoError("relax.call_pure_packed: the first argument must be an ExternFunc")
    if len(call.sinfo_args) != 1:
        raise StructInfoError("relax.call_pure_packed needs exactly one result struct info")
    return call.sinfo_args[0]


def call_tir(gvar: GlobalVar, args: Any, out_sinfo: Any = None, tir_vars: Any = None, *,
             out_ty: Any = None) -> Call:
    """``R.call_tir(gvar, (x, w), out_sinfo=R.Tensor((n, 128), "float32"))``.

    ``tir_vars`` (a ShapeExpr or list of PrimExprs) passes symbolic values the PrimFunc
    takes as trailing scalar parameters.  ``out_ty`` is the newer spelling of ``out_sinfo``.
    """
    out_sinfo = out_sinfo if out_sinfo is not None else out_ty
    if out_sinfo is None:
        raise TypeError("relax.call_tir: out_sinfo is required")
    if not isinstance(gvar, GlobalVar):
        raise TypeError(f"relax.call_tir: expected the GlobalVar of a PrimFunc, got {gvar!r}")
    call_args: list[Any] = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        call_args.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(list(tir_vars)))
    return make_call("relax.call_tir", *call_args, sinfo_args=[_out_sinfo(out_sinfo, "relax.call_tir")])


def call_tir_with_grad(gvar: GlobalVar, args: Any, out_sinfo: Any, te_grad_name: str,
                       te_grad_kwargs: dict | None = None, tir_vars: Any = None) -> Call:
    """``R.call_tir_with_grad(gvar, (x,), out_sinfo=..., te_grad_name="f_grad")``: call_tir
    whose gradient (for ``relax.transform.Gradient``) is the TE function registered with
    ``relax.training.utils.register_te_gradient(te_grad_name)``, given ``te_grad_kwargs``."""
    if not isinstance(gvar, GlobalVar):
        raise TypeError(f"relax.call_tir_with_grad: expected the GlobalVar of a PrimFunc, got {gvar!r}")
    call_args: list[Any] = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        call_args.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(list(tir_vars)))
    attrs = {"te_grad_name": str(te_grad_name), "te_grad_kwargs": dict(te_grad_kwargs or {})}
    return make_call("relax.call_tir_with_grad", *call_args, attrs=attrs,
                     sinfo_args=[_out_sinfo(out_sinfo, "relax.call_tir_with_grad")])


def call_tir_inplace(gvar: GlobalVar, args: Any, inplace_indices: Any, out_sinfo: Any = None,
                     tir_vars: Any = None, *, out_ty: Any = None) -> Call:
    """``R.call_tir_inplace(gvar, (x, y), inplace_indices=[0], out_sinfo=...)``: like call_tir,
    but output ``k`` is argument ``inplace_indices[k]`` itself, overwritten by the PrimFunc
    (-1: a fresh output, passed after the arguments as call_tir's outputs are).  ``out_ty`` is
    TVM 0.27's spelling of ``out_sinfo``."""
    out_sinfo = out_sinfo if out_sinfo is not None else out_ty
    if out_sinfo is None:
        raise TypeError("relax.call_tir_inplace: out_sinfo is required")
    if not isinstance(gvar, GlobalVar):
        raise TypeError(f"relax.call_tir_inplace: expected the GlobalVar of a PrimFunc, got {gvar!r}")
    indices = [int(i) for i in (inplace_indices if isinstance(inplace_indices, (list, tuple))
                                else [inplace_indices])]
    call_args: list[Any] = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        call_args.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(list(tir_vars)))
    return make_call("relax.call_tir_inplace", *call_args, attrs={"inplace_indices": tuple(indices)},
                     sinfo_args=[_out_sinfo(out_sinfo, "relax.call_tir_inplace")])


def call_dps_packed(func: str | ExternFunc, args: Any, out_sinfo: Any = None, *, out_ty: Any = None) -> Call:
    """Call the registered function ``func`` in destination-passing style (``out_ty``: TVM 0.27's
    spelling of ``out_sinfo``)."""
    out_sinfo = out_sinfo if out_sinfo is not None else out_ty
    if out_sinfo is None:
        raise TypeError("relax.call_dps_packed: out_sinfo is required")
    callee = ExternFunc(func) if isinstance(func, str) else func
    return make_call("relax.call_dps_packed", callee, _args_tuple(args),
                     sinfo_args=[_out_sinfo(out_sinfo, "relax.call_dps_packed")])


def call_pure_packed(func: str | ExternFunc, *args: Any, sinfo_args: Any) -> Call:
    """Call the registered function ``func`` and declare it pure; ``sinfo_args`` is the
    struct info of its result."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    elif isinstance(sinfo_args, Sequence) and len(sinfo_args) > 1:
        sinfo_args = [TupleStructInfo(list(sinfo_args))]
    return make_call("relax.call_pure_packed", callee, *args, sinfo_args=list(sinfo_args))


@register("relax.call_inplace_packed", pattern=OpPattern.OPAQUE)
def _infer_call_inplace_packed(call: Call, ctx: Any) -> StructInfo:
    """Call a registered function that writes some results over its arguments (``inplace_indices``:
    per result, the argument it overwrites, -1 a new value); pure, as TVM declares it."""
    if not call.args or not isinstance(call.args[0], ExternFunc):
        raise StructInfoError("relax.call_inplace_packed: the first argument must be an ExternFunc")
    if len(call.sinfo_args) != 1:
        raise StructInfoError("relax.call_inplace_packed needs exactly one result struct info")
    indices = tuple((call.attrs or {}).get("inplace_indices", ()))
    out = call.sinfo_args[0]
    outs = out.fields if isinstance(out, TupleStructInfo) else [out]
    if len(indices) != len(outs):
        raise StructInfoError(f"relax.call_inplace_packed: {len(indices)} inplace_indices for {len(outs)} results")
    for i in indices:
        if i != -1 and not 0 <= i < len(call.args) - 1:
            raise StructInfoError(f"relax.call_inplace_packed: inplace index {i} is not an argument "
                                  f"(there are {len(call.args) - 1})")
    if all(i == -1 for i in indices):
        raise StructInfoError("relax.call_inplace_packed: at least one inplace index must be an argument "
                              "(else use R.call_pure_packed)")
    return out


def call_inplace_packed(func: str | ExternFunc, *args: Any, inplace_indices: Any,
                        sinfo_args: Any) -> Call:
    """``R.call_inplace_packed("f", x, y, inplace_indices=[0], sinfo_args=...)``."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    indices = [int(i) for i in (inplace_indices if isinstance(inplace_indices, (list, tuple))
                                else [inplace_indices])]
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    elif isinstance(sinfo_args, Sequence) and len(sinfo_args) > 1:
        sinfo_args = [TupleStructInfo(list(sinfo_args))]
    return make_call("relax.call_inplace_packed", callee, *args, attrs={"inplace_indices": tuple(indices)},
                     sinfo_args=list(sinfo_args))


@register("relax.call_builtin_with_ctx", pattern=OpPattern.OPAQUE, pure=False)
def _infer_call_builtin_with_ctx(call: Call, ctx: Any) -> StructInfo:
    """Call a VM builtin, TVM's VM passing itself first (minitvm's builtins need no such context);
    impure, as some builtins are."""
    if len(call.args) != 2 or not isinstance(call.args[0], ExternFunc) or not isinstance(call.args[1], Tuple):
        raise StructInfoError("relax.call_builtin_with_ctx takes an ExternFunc and a tuple of its arguments")
    return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()


def call_builtin_with_ctx(func: str | ExternFunc, args: Any, *, sinfo_args: Any = None) -> Call:
    """``R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap", [R.prim_value(2)], sinfo_args=...)``."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    return make_call("relax.call_builtin_with_ctx", callee, _args_tuple(args), sinfo_args=list(sinfo_args or ()))


@register("relax.null_value", pattern=OpPattern.OPAQUE, num_inputs=0)
def _infer_null_value(call: Call, ctx: Any) -> StructInfo:
    """The empty value (TVM's null object): what VMShapeLower binds the shape heap to when a
    function needs none, and what nn's IOEffect starts its token from."""
    if call.args:
        raise StructInfoError("relax.null_value takes no arguments")
    return ObjectStructInfo()


def null_value() -> Call:
    """``R.null_value()``."""
    return make_call("relax.null_value")


@register("relax.call_py_func", pattern=OpPattern.OPAQUE)
def _infer_call_py_func(call: Call, ctx: Any) -> StructInfo:
    """Call a Python function of the module (an ``@I.pyfunc`` of a BasePyModule) by name; the VM
    calls back into Python for it."""
    if len(call.args) != 2:
        raise StructInfoError(f"relax.call_py_func takes the function name and a tuple of arguments, "
                              f"got {len(call.args)} arguments")
    if not isinstance(call.args[0], StringImm):
        raise StructInfoError("relax.call_py_func expects the first argument to be a string literal "
                              f"naming the Python function, got {call.args[0]!r}")
    if not isinstance(struct_info_of(call.args[1]), TupleStructInfo):
        raise StructInfoError("relax.call_py_func expects the second argument to be a tuple of relax Expr")
    if len(call.sinfo_args) != 1:
        raise StructInfoError(f"relax.call_py_func needs exactly one output struct info, got {len(call.sinfo_args)}")
    return call.sinfo_args[0]


def call_py_func(func_name: str, args: Any, out_ty: Any = None, *, out_sinfo: Any = None) -> Call:
    """``R.call_py_func("silu", (x,), out_ty=R.Tensor((4, 8), "float32"))``: call the Python
    function ``func_name`` of the module (TVM 0.27); ``out_ty`` describes what it returns
    (one TensorStructInfo, or a list of them for a tuple)."""
    out_ty = out_ty if out_ty is not None else out_sinfo
    if out_ty is None:
        raise TypeError("relax.call_py_func: out_ty is required")
    if isinstance(func_name, StringImm):
        func_name = func_name.value
    if not isinstance(func_name, str):
        raise TypeError(f"relax.call_py_func: the function name must be a str, got {func_name!r}")
    out = _out_sinfo(out_ty, "relax.call_py_func")
    for s in (out.fields if isinstance(out, TupleStructInfo) else [out]):
        if not isinstance(s.shape, ShapeExpr):  # as TVM: each output's shape written out
            raise TypeError("relax.call_py_func: out_ty should have a defined ShapeExpr as shape "
                            f"(R.Tensor((4, 8), \"float32\")), got {s!r}")
    return make_call("relax.call_py_func", StringImm(func_name), _args_tuple(args), sinfo_args=[out])


def _format_arg(format: Any, op_name: str) -> StringImm:  # noqa: A002 - TVM's keyword
    if isinstance(format, StringImm):
        return format
    if not isinstance(format, str):
        raise TypeError(f"{op_name}: format must be a string, got {format!r}")
    return StringImm(format)


@register("relax.print", pure=False)
def _infer_print(call: Call, ctx: Any) -> StructInfo:
    """Print values at run time (``format`` uses ``{}`` for each value); returns nothing."""
    if not call.args or not isinstance(call.args[0], StringImm):
        raise StructInfoError("relax.print: the first argument must be the format string")
    return TupleStructInfo([])


@register("relax.assert_op", pure=False)
def _infer_assert_op(call: Call, ctx: Any) -> StructInfo:
    """Stop the program with the formatted message when ``condition`` is false."""
    if len(call.args) < 2 or not isinstance(call.args[1], StringImm):
        raise StructInfoError("relax.assert_op takes a condition, the format string and its arguments")
    cond = struct_info_of(call.args[0])
    ok = (isinstance(cond, TensorStructInfo) and cond.dtype == "bool" and cond.ndim in (0, -1)) or \
        (isinstance(cond, PrimStructInfo) and cond.dtype == "bool")
    if not ok:
        raise StructInfoError(f"relax.assert_op: the condition must be a bool scalar (a 0-d tensor or "
                              f"R.Prim(\"bool\")), got {cond!r}")
    return TupleStructInfo([])


def print(*values: Any, format: Any = "") -> Call:  # noqa: A001, A002 - TVM's names
    """``R.print(x, format="x: {}")``: print at run time (an impure call)."""
    return make_call("relax.print", _format_arg(format, "relax.print"),
                     *[_as_expr(v, "relax.print") for v in values])


def assert_op(condition: Any, format_args: Any = None, format: Any = "") -> Call:  # noqa: A002
    """``R.assert_op(cond, x, format="x: {}")``: fail at run time when ``cond`` is false."""
    if format_args is None:
        format_args = []
    elif not isinstance(format_args, (list, tuple)):
        format_args = [format_args]
    return make_call("relax.assert_op", _as_expr(condition, "relax.assert_op"),
                     _format_arg(format, "relax.assert_op"),
                     *[_as_expr(v, "relax.assert_op") for v in format_args])


@register("relax.tensor_to_shape", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_tensor_to_shape(call: Call, ctx: Any) -> StructInfo:
    """A shape of as many dimensions as the 1-d tensor has elements (unknown when its length is)."""
    sinfo = struct_info_of(call.args[0]) if len(call.args) == 1 else None
    if not isinstance(sinfo, TensorStructInfo) or sinfo.ndim != 1:
        raise StructInfoError(f"relax.tensor_to_shape expects one 1-d tensor, got "
                              f"{', '.join(map(str, call.args)) or 'no argument'}")
    values = sinfo.shape_values
    length = values[0] if values is not None else None
    return ShapeStructInfo(ndim=length.value if hasattr(length, "value") else -1)


def tensor_to_shape(expr: Expr) -> Call:
    """The values of a 1-d integer tensor as a shape (read at run time, for data-dependent shapes)."""
    return make_call("relax.tensor_to_shape", expr)


@register("relax.shape_of", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_shape_of(call: Call, ctx: Any) -> StructInfo:
    """The tensor's shape: its dimensions when the struct info writes them out, else only its rank."""
    sinfo = struct_info_of(call.args[0])
    if not isinstance(sinfo, TensorStructInfo):
        raise StructInfoError(f"relax.shape_of expects a tensor, got {sinfo}; use R.match_cast if necessary")
    values = sinfo.shape_values if isinstance(sinfo.shape, ShapeExpr) else None
    return ShapeStructInfo(values=values) if values is not None else ShapeStructInfo(ndim=sinfo.ndim)


def shape_of(expr: Expr) -> Call:
    """``R.shape_of(x)``: the shape of tensor ``x`` at run time."""
    return make_call("relax.shape_of", expr)


@register("relax.shape_to_tensor", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_shape_to_tensor(call: Call, ctx: Any) -> StructInfo:
    """A 1-d int64 tensor of as many elements as the shape has dimensions."""
    sinfo = struct_info_of(call.args[0])
    if not isinstance(sinfo, ShapeStructInfo):
        raise StructInfoError(f"relax.shape_to_tensor expects a shape, got {sinfo}")
    return TensorStructInfo([sinfo.ndim] if sinfo.ndim != -1 else None, "int64", ndim=1)


def shape_to_tensor(expr: Expr) -> Call:
    """``R.shape_to_tensor(s)``: a shape's dimensions as a 1-d int64 tensor."""
    return make_call("relax.shape_to_tensor", expr)


__all__ += ["tensor_to_shape", "shape_of", "shape_to_tensor"]
