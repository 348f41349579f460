"""Relax expressions: the graph-level IR of whole models.

A Relax function is a sequence of binding blocks (``lv = R.add(x, y)``) ending in a
result.  Every expression carries ``struct_info`` — what is known about its value
(a tensor of shape ``(n, 784)`` and dtype float32, a tuple, a function ...).  Leaves
know it at construction; calls learn it when a :class:`~minitvm.relax.BlockBuilder`
normalizes them, exactly once (the one annotation set after construction, as in TVM).

Structural equality maps variables at their definitions: function parameters,
``VarBinding.var`` and ``MatchCast.var``.  Symbolic shape variables (``tir.Var("n",
"int64")``) are defined where they first appear in a parameter's struct info or in a
``MatchCast`` struct info.
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np

from ..error import TVMError
from ..ir.module import GlobalVar
from ..ir.node import Node, defines, node, renamed_keywords
from ..ir.op import Op
from ..runtime.ndarray import as_numpy
from ..tir.expr import IntImm, PrimExpr, convert
from ..tir.function import PrimFunc

__all__ = [
    "Expr", "Var", "DataflowVar", "Constant", "ConstantData", "Attrs", "Call", "Tuple", "TupleGetItem",
    "ShapeExpr", "PrimValue", "StringImm", "DataTypeImm", "If", "Function", "ExternFunc", "extern",
    "SeqExpr", "Binding", "VarBinding", "MatchCast", "BindingBlock", "DataflowBlock",
    "const", "is_leaf", "struct_info_of", "make_shape",
]


class Expr(Node):
    """Base of Relax expressions; Python operators build Relax calls (``x + y``)."""

    __slots__ = ()

    @property
    def struct_info(self) -> Any:
        """What is known about the value; raises when the expression was never normalized."""
        sinfo = self.__dict__.get("_sinfo")
        if sinfo is None:
            raise ValueError(
                f"{type(self).__name__} has no struct_info yet: normalize it first "
                "(bb.normalize(expr) or bb.emit(expr))")
        return sinfo

    # TVM spells the raw field struct_info_; None when not yet known
    @property
    def struct_info_(self) -> Any:
        return struct_info_of(self)

    # TVM 0.27 calls struct info an expression's type: ``expr.ty`` is the same field (minitvm.eras)
    ty = struct_info_

    # -- operators build calls (TVM's ExprWithOp) ---------------------------------------
    def __add__(self, other: Any) -> "Call":
        return _op.add(self, other)

    def __sub__(self, other: Any) -> "Call":
        return _op.subtract(self, other)

    def __mul__(self, other: Any) -> "Call":
        return _op.multiply(self, other)

    def __truediv__(self, other: Any) -> "Call":
        return _op.divide(self, other)

    def __floordiv__(self, other: Any) -> "Call":
        return _op.floor_divide(self, other)

    def __pow__(self, other: Any) -> "Call":
        return _op.power(self, other)

    def __neg__(self) -> "Call":
        return _op.negative(self)

    def __lt__(self, other: Any) -> "Call":
        return _op.less(self, other)

    def __le__(self, other: Any) -> "Call":
        return _op.less_equal(self, other)

    def __gt__(self, other: Any) -> "Call":
        return _op.greater(self, other)

    def __ge__(self, other: Any) -> "Call":
        return _op.greater_equal(self, other)

    def astype(self, dtype: str) -> "Call":
        """``x.astype("float16")``: ``relax.op.astype(x, dtype)``."""
        return _op.astype(self, dtype)

    def __getitem__(self, index: int) -> "TupleGetItem":
        return TupleGetItem(self, index)

    # -- a tensor's DLPack fields at run time (TVM's R.Tensor accessors: relax.inspect.*) --------
    def _inspected_tensor(self, field: str) -> "Expr":
        sinfo = struct_info_of(self)
        if sinfo is not None and not isinstance(sinfo, _si.TensorStructInfo):
            raise _NotATensor(f"{field} reads a tensor's DLTensor at run time, but {self!r} has struct info {sinfo}")
        return self

    @property
    def dtype(self) -> "_DTypeFields":
        """``x.dtype.type_code`` / ``.bits`` / ``.lanes``: the tensor's dtype fields at run time."""
        return _DTypeFields(self._inspected_tensor("dtype"))

    @property
    def ndim(self) -> "Call":
        return _op.inspect.tensor_ndim(self._inspected_tensor("ndim"))

    @property
    def shape(self) -> "_AxisFields":
        """``x.shape[i]``: the extent of axis ``i`` at run time."""
        return _AxisFields(self._inspected_tensor("shape"), "shape")

    @property
    def strides(self) -> "_AxisFields":
        """``x.strides[i]``: the stride (in elements) of axis ``i`` at run time."""
        return _AxisFields(self._inspected_tensor("strides"), "strides")

    @property
    def byte_offset(self) -> "Call":
        return _op.inspect.tensor_byte_offset(self._inspected_tensor("byte_offset"))

    @property
    def elem_offset(self) -> "Call":
        return _op.inspect.tensor_elem_offset(self._inspected_tensor("elem_offset"))

    def __iter__(self):
        # without this, Python would iterate through __getitem__ forever
        sinfo = struct_info_of(self)
        if isinstance(sinfo, _si.TupleStructInfo):
            return iter([TupleGetItem(self, i) for i in range(len(sinfo.fields))])
        raise TypeError(f"{self!r} is not iterable: only tuple-valued expressions are")

    def __call__(self, *args: Any, attrs: dict | None = None) -> "Call":
        return Call(self, args, attrs)


class ShapeDtypeError(TVMError, TypeError):
    """A shape dimension that is not int64 (TVM raises TVMError; a TypeError too, as it is one)."""


def struct_info_of(expr: Any) -> Any:
    """The struct info of ``expr`` when known, else None (never raises)."""
    if isinstance(expr, Var):
        return expr.struct_info
    if isinstance(expr, Node):
        return expr.__dict__.get("_sinfo")
    return None


def is_normalized(func: Any) -> bool:
    """Whether ``func`` is a Function known to be normalized (a BlockBuilder applying FNormalize
    made it so): normalizing it again is the identity, as a rewrite that changes nothing is."""
    return isinstance(func, Function) and "_normalized" in func.__dict__


def mark_normalized(func: Function) -> None:
    """Record that ``func`` is normalized (see :func:`is_normalized`): nodes are immutable, so it
    stays so.  Every ExprMutator normalizes the function it returns; the mark lets that, and
    the passes that skip a rewrite changing nothing, return it without walking its body."""
    func.__dict__["_normalized"] = True


def _set_struct_info(expr: Expr, sinfo: Any) -> None:
    """Record ``sinfo`` on ``expr``; done once, by construction or normalization."""
    object.__setattr__(expr, "_sinfo", sinfo)


def _update_struct_info(expr: Any, sinfo: Any) -> None:
    """Set (or replace) the struct info of ``expr`` (TVM's ``relax.expr._update_struct_info``,
    which tests use to give a GlobalVar a signature)."""
    _check_struct_info("relax.expr._update_struct_info", sinfo)
    if isinstance(expr, Var):
        raise TypeError("relax.expr._update_struct_info: a Var's struct info is fixed at construction")
    _set_struct_info(expr, sinfo)


def _check_struct_info(owner: str, sinfo: Any) -> None:
    if sinfo is not None and not isinstance(sinfo, _si.StructInfo):
        raise TypeError(f"{owner}: struct_info must be a StructInfo "
                        f"(e.g. relax.TensorStructInfo((n, 4), 'float32')), got {sinfo!r}")


# -- variables ---------------------------------------------------------------------------

@node(binds=True)
class Var(Expr):
    """A variable: a function parameter or the left side of a binding.

    ``name`` is only a hint for printing (``name_hint`` in TVM's spelling); two
    variables are different whenever they are different objects.
    """

    name: str
    struct_info: Any = None  # StructInfo

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.name, str):
            raise TypeError(f"relax.Var: the name must be a str, got {self.name!r}")
        _check_struct_info(f"relax.Var {self.name!r}", self.struct_info)

    @property
    def name_hint(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


@node(binds=True)
class DataflowVar(Var):
    """A variable visible only inside its dataflow block."""


DataflowVar.__repr__ = Var.__repr__  # (the node decorator gave it the generic one)
# TVM's keywords: ``Var(name_hint="x")``, and TVM 0.27's ``Var("x", ty=...)``
for _var_cls in (Var, DataflowVar):
    renamed_keywords(_var_cls, {"ty": "struct_info", "name_hint": "name"})


# -- leaves ------------------------------------------------------------------------------

#: elements :meth:`ConstantData.__eq__` compares before digesting two same-shaped arrays
_HEAD_ELEMENTS = 16


class ConstantData:
    """The array held by a :class:`Constant` (``.numpy()`` as TVM's NDArray), compared by
    value so that structural equality and hashing work on constants."""

    __slots__ = ("_array", "_digest")

    def __init__(self, array: Any):
        arr = np.array(as_numpy(array), copy=True)
        arr.setflags(write=False)
        object.__setattr__(self, "_array", arr)

    @classmethod
    def adopt(cls, array: np.ndarray) -> "ConstantData":
        """``array`` itself, made read-only, when it owns its memory (else a copy): for an array
        a pass has just computed and hands over, writing it no more.  (A compile folding and
        packing ResNet-18's 45 MB of weights spent ~0.1 s copying them.)"""
        if not isinstance(array, np.ndarray) or array.base is not None or not array.flags.owndata:
            return cls(array)
        data = object.__new__(cls)
        array.setflags(write=False)
        object.__setattr__(data, "_array", array)
        return data

    def numpy(self) -> np.ndarray:
        return self._array.copy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._array if dtype is None else self._array.astype(dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def dtype(self) -> str:
        return str(self._array.dtype)

    def _fingerprint(self) -> bytes:
        """A digest of the bytes, worked out once (the array is read-only): two constants of
        one shape then differ without copying either (EliminateCommonSubexpr compares every
        pair of same-shaped weights of a model)."""
        try:
            return self._digest
        except AttributeError:
            digest = hashlib.blake2b(self._array.tobytes(), digest_size=16).digest()
            object.__setattr__(self, "_digest", digest)
            return digest

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, ConstantData):
            return NotImplemented
        a, b = self._array, other._array
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        # the first elements tell most same-shaped weights apart before a digest reads all bytes
        head = min(a.size, _HEAD_ELEMENTS)
        if a.reshape(-1)[:head].tobytes() != b.reshape(-1)[:head].tobytes():
            return False
        if self._fingerprint() != other._fingerprint():
            return False
        return a.tobytes() == b.tobytes()  # (equal digests: the bytes decide)

    def __hash__(self) -> int:
        return hash((self.dtype, self.shape, self._fingerprint()))

    def __repr__(self) -> str:
        return f"ConstantData(shape={self.shape}, dtype={self.dtype})"


@node
class Constant(Expr):
    """A constant tensor (its struct info is its exact shape and dtype)."""

    data: Any  # ConstantData (numpy arrays and NDArrays are converted)

    def __post_init__(self) -> None:
        if not isinstance(self.data, ConstantData):
            object.__setattr__(self, "data", ConstantData(self.data))
        _set_struct_info(self, _si.TensorStructInfo(list(self.data.shape), self.data.dtype))

    def __repr__(self) -> str:
        return f"Constant(shape={self.data.shape}, dtype={self.data.dtype})"


def make_shape(shape: list | tuple) -> "ShapeExpr":
    """``relax.expr.make_shape([1, 2, n])``: a ShapeExpr of the values (TVM's helper)."""
    if isinstance(shape, (list, tuple)):
        return ShapeExpr(shape)
    raise TypeError(f"make_shape expects a list or tuple of shape values, but received type {type(shape).__name__}")


def const(value: Any, dtype: str | None = None) -> Constant:
    """A Relax constant from a number, a nested list, a numpy array or an NDArray.

    Python ints become int32 and floats float32 unless ``dtype`` says otherwise.
    """
    if hasattr(value, "numpy") or isinstance(value, (np.ndarray, np.generic)):  # NDArray, torch, numpy
        arr = as_numpy(value)
        arr = arr.astype(dtype, copy=False) if dtype else arr
    else:
        if dtype is None:
            probe = np.asarray(value)
            if probe.dtype == np.bool_:
                dtype = "bool"
            elif np.issubdtype(probe.dtype, np.integer):
                dtype = "int32"
            elif np.issubdtype(probe.dtype, np.floating):
                dtype = "float32"
            else:
                raise TypeError(f"relax.const: cannot make a constant from {value!r}")
        arr = np.asarray(value, dtype=dtype)
    return Constant(arr)


def _shape_value(v: Any, where: str) -> PrimExpr:
    """One shape dimension as an int64 PrimExpr (Relax shapes are int64, as in TVM)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer, PrimExpr)):
        raise TypeError(f"{where}: dimension {v!r} is not an int or an integer PrimExpr")
    e = convert(int(v) if isinstance(v, np.integer) else v, "int64" if not isinstance(v, PrimExpr) else None)
    if isinstance(e, IntImm):
        return e if e.dtype == "int64" else IntImm("int64", e.value)
    if e.dtype != "int64":
        name = getattr(e, "name", None) or repr(e)
        hint = f"; declare it as tir.Var({name!r}, \"int64\")" if hasattr(e, "name") else ""
        raise ShapeDtypeError(f"{where}: dimension {name} has dtype {e.dtype}, but Relax shapes are int64{hint} "
                              "(the value in ShapeStructInfo can only have dtype of int64, as TVM says)")
    return e


@node
class ShapeExpr(Expr):
    """A shape value ``R.shape([n, 4])``: integer PrimExprs (int64)."""

    values: tuple

    def __post_init__(self) -> None:
        if isinstance(self.values, (int, PrimExpr)):
            raise TypeError(f"relax.ShapeExpr: values must be a list of dimensions, got {self.values!r}")
        values = tuple(_shape_value(v, "relax.ShapeExpr") for v in self.values)
        object.__setattr__(self, "values", values)
        _set_struct_info(self, _si.ShapeStructInfo(values))

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> PrimExpr:  # type: ignore[override]
        return _checked_item(self.values, index, "ShapeExpr")

    def __iter__(self):
        return iter(self.values)

    def __repr__(self) -> str:
        return f"R.shape([{', '.join(_dim_text(v) for v in self.values)}])"


def _dim_text(v: PrimExpr) -> str:
    if isinstance(v, IntImm):
        return str(v.value)
    name = getattr(v, "name", None)
    return name if isinstance(name, str) else repr(v)


@node
class PrimValue(Expr):
    """A scalar (a PrimExpr) used as a Relax value: ``R.prim_value(3)``."""

    value: PrimExpr

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, int) and not isinstance(value, bool):
            value = IntImm("int64", value)
        object.__setattr__(self, "value", convert(value))
        _set_struct_info(self, _si.PrimStructInfo(value=self.value))


@node
class StringImm(Expr):
    """A string constant (an argument of packed functions)."""

    value: str

    def __post_init__(self) -> None:
        _set_struct_info(self, _si.ObjectStructInfo())


@node
class DataTypeImm(Expr):
    """A dtype given as a value (``R.dtype("float32")``)."""

    value: str

    def __post_init__(self) -> None:
        _set_struct_info(self, _si.ObjectStructInfo())


@node
class ExternFunc(Expr):
    """A function implemented outside the IR, found by name in the runtime registry."""

    global_symbol: str

    def __post_init__(self) -> None:
        _set_struct_info(self, _si.FuncStructInfo.opaque_func())


def extern(name: str, struct_info: Any = None) -> ExternFunc:
    """``relax.extern("env.linear")``: the packed function registered as ``name``, as an
    expression (optionally with a ``FuncStructInfo`` describing it)."""
    func = ExternFunc(name)
    if struct_info is not None:
        if not isinstance(struct_info, _si.FuncStructInfo):
            raise TypeError(f"relax.extern({name!r}): struct_info must be a FuncStructInfo, got {struct_info!r}")
        _set_struct_info(func, struct_info)
    return func


# -- compound expressions --------------------------------------------------------------

def _as_expr(value: Any, where: str) -> Any:
    """Accept Relax exprs, Ops and GlobalVars (and PrimFuncs, which TVM's nodes accept so
    the well-formed check can refuse them); wrap Python/numpy numbers and PrimExprs."""
    if isinstance(value, (Expr, Op, GlobalVar, PrimFunc)):
        return value
    if isinstance(value, PrimExpr):
        return PrimValue(value)
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        return const(value)
    if isinstance(value, (list, tuple)):
        return Tuple([_as_expr(v, where) for v in value])
    raise TypeError(f"{where}: expected a Relax expression, got {type(value).__name__}: {value!r}")


class Attrs(dict):
    """Operator attributes: a dict whose keys also read as fields (``call.attrs.out_dtype``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"attrs have no field {name!r}; they have: {', '.join(sorted(self))}") from None


@node
class Call(Expr):
    """``op(args)``: an operator, a function (GlobalVar/Var) or an ExternFunc applied to
    arguments.  ``sinfo_args`` carry struct info some ops need (call_tir's output)."""

    op: Any
    args: tuple = ()
    attrs: Any = None
    sinfo_args: tuple = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.op, str):
            raise TypeError(f"relax.Call: op must be an Op, GlobalVar or Expr, got the string "
                            f"{self.op!r}; use tvm.ir.Op.get({self.op!r}) or relax.ExternFunc")
        if not isinstance(self.op, (Expr, Op, GlobalVar)):
            raise TypeError(f"relax.Call: op must be an Op, GlobalVar or Expr, got {self.op!r}")
        op_sinfo = struct_info_of(self.op) if isinstance(self.op, Expr) else None
        # as TVM: only a function (or an opaque object, which may hold one) can be called
        if op_sinfo is not None and not isinstance(op_sinfo, (_si.FuncStructInfo, _si.ObjectStructInfo)):
            raise ValueError(f"relax.Call expects its operator to have FuncStructInfo, but operator "
                             f"{_op_name(self.op)} has struct info {op_sinfo}")
        args = tuple(_as_expr(a, f"relax.Call({_op_name(self.op)})") for a in (self.args or ()))
        object.__setattr__(self, "args", args)
        if isinstance(self.attrs, dict) and not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", Attrs(self.attrs))
        object.__setattr__(self, "sinfo_args", tuple(self.sinfo_args or ()))
        for s in self.sinfo_args:
            _check_struct_info("relax.Call sinfo_args", s)

    def __repr__(self) -> str:
        return f"Call({_op_name(self.op)}, {len(self.args)} args)"

    @property
    def ty_args(self) -> tuple:
        """TVM 0.27's name for ``sinfo_args``."""
        return self.sinfo_args


renamed_keywords(Call, {"ty_args": "sinfo_args"})


def _op_name(op: Any) -> str:
    if isinstance(op, Op):
        return op.name
    if isinstance(op, (GlobalVar, Var)):
        return op.name_hint
    if isinstance(op, ExternFunc):
        return op.global_symbol
    return type(op).__name__


@node
class Tuple(Expr):
    """``(a, b, ...)`` of Relax values."""

    fields: tuple = ()

    def __post_init__(self) -> None:
        fields = tuple(_as_expr(f, "relax.Tuple") for f in self.fields)
        object.__setattr__(self, "fields", fields)
        sinfos = [struct_info_of(f) for f in fields]
        if all(s is not None for s in sinfos):
            _set_struct_info(self, _si.TupleStructInfo(sinfos))

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, index: int) -> Any:  # the field itself, as TVM's Tuple
        return _checked_item(self.fields, index, "Tuple")

    def __iter__(self):
        return iter(self.fields)


def _checked_item(items: Sequence[Any], index: Any, kind: str) -> Any:
    """``items[index]`` with TVM's message for an int index out of range."""
    if isinstance(index, int) and not -len(items) <= index < len(items):
        raise IndexError(f"{kind} index out of range")
    return items[index]


@node
class TupleGetItem(Expr):
    """``tuple_value[index]``."""

    tuple_value: Any
    index: int

    def __post_init__(self) -> None:
        if not isinstance(self.index, int) or isinstance(self.index, bool):
            raise TypeError(f"relax.TupleGetItem: index must be an int, got {self.index!r}")
        sinfo = struct_info_of(self.tuple_value)
        if isinstance(sinfo, _si.TupleStructInfo):
            if not 0 <= self.index < len(sinfo.fields):
                raise IndexError(f"relax.TupleGetItem: index {self.index} out of range for a "
                                 f"tuple of {len(sinfo.fields)} fields")
            _set_struct_info(self, sinfo.fields[self.index])


@node
class If(Expr):
    """``if cond: true_branch else: false_branch`` (branches are SeqExprs once normalized)."""

    cond: Any
    true_branch: Any
    false_branch: Any


# -- bindings, blocks, functions -------------------------------------------------------

class Binding(Node):
    """Base of the two ways a block defines a variable."""

    __slots__ = ()


@node
class VarBinding(Binding):
    """``var = value``."""

    var: Var = defines()
    value: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise TypeError(f"relax.VarBinding: var must be a relax.Var, got {self.var!r}")


@node
class MatchCast(Binding):
    """``var = R.match_cast(value, struct_info)``: check ``value`` at run time and give it
    a more precise struct info; new symbolic variables in ``struct_info`` are defined here."""

    var: Var = defines()
    value: Any = None
    struct_info: Any = defines(default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise TypeError(f"relax.MatchCast: var must be a relax.Var, got {self.var!r}")
        _check_struct_info("relax.MatchCast", self.struct_info)

    @property
    def ty(self) -> Any:
        """TVM 0.27's name for the struct info the value is cast to."""
        return self.struct_info


renamed_keywords(MatchCast, {"ty": "struct_info"})


@node
class BindingBlock(Node):
    """Bindings executed in order (may have side effects)."""

    bindings: tuple = ()


@node
class DataflowBlock(BindingBlock):
    """Pure bindings without control flow; only its outputs (non-dataflow vars) escape."""


@node
class SeqExpr(Expr):
    """Blocks of bindings followed by a result expression."""

    blocks: tuple = ()
    body: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for b in self.blocks:
            if not isinstance(b, BindingBlock):
                raise TypeError(f"relax.SeqExpr: blocks must be BindingBlocks, got {b!r}")
        body_sinfo = struct_info_of(self.body)
        if body_sinfo is not None:
            _set_struct_info(self, body_sinfo)


@node
class Function(Expr):
    """A Relax function: parameters, a body (a SeqExpr), the struct info of its result."""

    params: tuple = defines(default=())
    body: Any = None
    ret_struct_info: Any = None
    is_pure: bool = True
    attrs: Any = None  # dict

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})
        for p in self.params:
            if not isinstance(p, Var) or isinstance(p, DataflowVar):
                raise TypeError(f"relax.Function: parameters must be relax.Var (not DataflowVar), got {p!r}")
        _check_struct_info("relax.Function ret_struct_info", self.ret_struct_info)
        params_sinfo = [p.struct_info for p in self.params]
        if self.ret_struct_info is not None and all(s is not None for s in params_sinfo):
            _set_struct_info(self, _si.FuncStructInfo(params_sinfo, self.ret_struct_info, self.is_pure))

    def with_attr(self, key: str | dict, value: Any = None) -> "Function":
        """A copy with attribute ``key`` set to ``value`` (or, given a dict, each of its entries)."""
        return self.with_attrs(dict(key) if isinstance(key, dict) else {key: value})

    def with_attrs(self, attrs: dict) -> "Function":
        return Function(self.params, self.body, self.ret_struct_info, self.is_pure,
                        {**self.attrs, **attrs})

    def without_attr(self, key: str) -> "Function":
        return Function(self.params, self.body, self.ret_struct_info, self.is_pure,
                        {k: v for k, v in self.attrs.items() if k != key})

    def bind_params(self, binding_map: dict) -> "Function":
        """This function with some parameters replaced (TVM's ``Function.bind_params``).

        Keys are parameters (``relax.Var``) or their names; values are Relax expressions,
        or arrays (numpy, NDArray) that become constants.  Bound parameters leave the
        parameter list; symbolic dimensions a constant fixes are substituted too.
        """

        # the same code as the BindParams pass
        # lazy: cycle -- relax.transform builds on this module (and on relax.analysis, which imports it)
        from .transform.bind_params import bind_params

        return bind_params(self, binding_map)

    def inline_functions(self, function_map: dict) -> "Function":
        """This function with calls of the given functions replaced by their bodies (TVM's
        ``Function.inline_functions``); keys are GlobalVars or their names."""
        # lazy: cycle -- relax.transform builds on this module
        from .transform.inline_private_functions import inline_functions

        return inline_functions(self, function_map)

    def bind_symbolic_vars(self, binding_map: dict) -> "Function":
        """This function with symbolic variables replaced (TVM's ``Function.bind_symbolic_vars``).

        Keys are the function's ``tir.Var``s or their names (a name two variables share is
        refused), values ints or PrimExprs; a key that is not a symbolic variable of the
        function, a variable given twice, or a replacement that leaves a variable used but
        never defined is a ``TVMError``."""
        # lazy: cycle -- relax.analysis and relax.transform build on this module
        from ..error import TVMError
        from .analysis import defined_symbolic_vars, free_symbolic_vars
        from .transform.bind_symbolic_vars import bind_function_symbolic_vars

        known = {id(v): v for v in [*defined_symbolic_vars(self), *free_symbolic_vars(self)]}
        table: dict[int, Any] = {}
        for key, value in binding_map.items():
            if isinstance(key, str):
                named = [v for v in known.values() if v.name == key]
                if len(named) != 1:
                    raise TVMError(f"bind_symbolic_vars: {len(named) or 'no'} symbolic variables are named "
                                   f"{key!r}; {'pass the tir.Var itself' if named else 'nothing to bind'}")
                var = named[0]
            elif id(key) in known:
                var = key
            else:
                raise TVMError(f"bind_symbolic_vars: {key!r} is not a symbolic variable of the function")
            if id(var) in table:
                raise TVMError(f"bind_symbolic_vars: {var.name} is given twice (as a tir.Var and by name)")
            table[id(var)] = value
        out = bind_function_symbolic_vars(self, table)
        before = {id(v) for v in free_symbolic_vars(self)}
        undefined = [v.name for v in free_symbolic_vars(out) if id(v) not in before]
        if undefined:
            raise TVMError(f"bind_symbolic_vars: after the replacement {', '.join(undefined)} "
                           "would be used but never defined")
        return out

    def __repr__(self) -> str:
        name = self.attrs.get("global_symbol", "")
        return f"Function({name!r}, params=[{', '.join(p.name for p in self.params)}])"

    @property
    def ret_ty(self) -> Any:
        """TVM 0.27's name for ``ret_struct_info``."""
        return self.ret_struct_info


renamed_keywords(Function, {"ret_ty": "ret_struct_info"})


class _NotATensor(TypeError, AttributeError):
    """A tensor accessor on a value that is not a tensor (an AttributeError too, so
    ``hasattr(tuple_var, "shape")`` is False rather than an error)."""


class _DTypeFields:
    """``x.dtype``: its ``type_code``, ``bits`` and ``lanes`` are Relax calls."""

    def __init__(self, tensor: Expr) -> None:
        self.tensor = tensor

    @property
    def type_code(self) -> "Call":
        return _op.inspect.tensor_dtype_code(self.tensor)

    @property
    def bits(self) -> "Call":
        return _op.inspect.tensor_dtype_bits(self.tensor)

    @property
    def lanes(self) -> "Call":
        return _op.inspect.tensor_dtype_lanes(self.tensor)


class _AxisFields:
    """``x.shape`` / ``x.strides``: indexing gives the field of one axis as a Relax call."""

    def __init__(self, tensor: Expr, field: str) -> None:
        self.tensor, self.field = tensor, field

    def __getitem__(self, axis: Any) -> "Call":
        get = _op.inspect.tensor_shape_i if self.field == "shape" else _op.inspect.tensor_stride_i
        return get(self.tensor, axis)


def has_scope(expr: Any) -> bool:
    """Whether ``expr`` (a normalized binding's value) holds a function or a branch: a scope of
    its own, which a rewrite walks inside."""
    if isinstance(expr, (Function, If, SeqExpr)):
        return True
    if isinstance(expr, Call):
        return has_scope(expr.op) or any(has_scope(a) for a in expr.args)
    if isinstance(expr, Tuple):
        return any(has_scope(f) for f in expr.fields)
    if isinstance(expr, TupleGetItem):
        return has_scope(expr.tuple_value)
    return False


#: the leaves that are no variable (literals, references): with variables and tuples of leaves,
#: what a call's arguments are in normal form
NON_VAR_LEAVES = (Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar, Op)


def is_leaf(expr: Any) -> bool:
    """Expressions that may appear as call arguments in normal form (no nested calls)."""
    if isinstance(expr, (Var, *NON_VAR_LEAVES)):
        return True
    if isinstance(expr, Tuple):
        return all(is_leaf(f) for f in expr.fields)
    return False


# Expr's methods build ops (``x + y`` is ``relax.op.add``) and attach struct info; those modules
# build on the nodes above, so they are imported here, after them, as modules whose names are
# looked up when a method runs.
from . import op as _op  # noqa: E402
from . import struct_info as _si  # noqa: E402
