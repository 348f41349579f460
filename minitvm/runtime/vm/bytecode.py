"""The VM's bytecode: four instructions over numbered registers, one frame per call.

A function's frame has ``num_registers`` slots; parameters arrive in registers
``0 .. len(params) - 1``.  An instruction argument is one of

* ``Reg(i)``   -- the value in register ``i`` of the current frame (printed ``%i``),
* ``Const(i)`` -- constant ``i`` of the Executable (printed ``c[i]``),
* ``Imm(v)``   -- the Python int ``v`` itself (printed ``i<v>``).

The instructions (``pc`` is the index of the current instruction):

* ``Call(dst, func_index, args)`` -- call entry ``func_index`` of the function table with
  ``args``; store the result in register ``dst`` (``None``: discard it).  ``pc += 1``.
* ``Ret(src)``                     -- return register ``src`` from this frame.
* ``Goto(offset)``                 -- ``pc += offset`` (relative, may be negative, never 0).
* ``If(cond, false_offset)``       -- if register ``cond`` is true ``pc += 1``, else
  ``pc += false_offset``.

Everything here is plain data (ints, strings, tuples) so that a function round-trips
through JSON with :meth:`VMFunction.to_json` / :meth:`VMFunction.from_json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from ..arguments import format_dims
from .builtins import check_dtype

__all__ = ["Reg", "Const", "Imm", "Arg", "Call", "Ret", "Goto", "If", "Instruction",
           "ParamInfo", "VMFunction", "format_dims", "FuncRef"]


@dataclass(frozen=True, slots=True)
class FuncRef:
    """A constant naming an entry of the function table, used as a value (TVM's ``FuncIdx``
    argument): the VM passes the function itself, e.g. kernels handed to
    ``vm.builtin.paged_attention_kv_cache_create``.  Printed ``@name``."""

    name: str

    def __str__(self) -> str:
        return f"@{self.name}"


# -- instruction arguments ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reg:
    """A register of the current frame."""

    index: int

    def __str__(self) -> str:
        return f"%{self.index}"


@dataclass(frozen=True, slots=True)
class Const:
    """An entry of the Executable's constant pool."""

    index: int

    def __str__(self) -> str:
        return f"c[{self.index}]"


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate integer, stored in the instruction itself."""

    value: int

    def __str__(self) -> str:
        return f"i{self.value}"


Arg = Union[Reg, Const, Imm]
_ARG_TAGS = {Reg: "r", Const: "c", Imm: "i"}
_TAG_ARGS = {tag: cls for cls, tag in _ARG_TAGS.items()}


# -- instructions ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """``dst = func_table[func_index](*args)``."""

    dst: int | None
    func_index: int
    args: tuple[Arg, ...] = ()


@dataclass(frozen=True, slots=True)
class Ret:
    """Return the value of register ``src``."""

    src: int


@dataclass(frozen=True, slots=True)
class Goto:
    """Jump ``offset`` instructions (relative to this one)."""

    offset: int


@dataclass(frozen=True, slots=True)
class If:
    """Fall through when register ``cond`` is true, else jump ``false_offset``."""

    cond: int
    false_offset: int


Instruction = Union[Call, Ret, Goto, If]


# -- parameter descriptions ---------------------------------------------------------------------------

_KINDS = ("tensor", "shape", "tuple", "any")


@dataclass(frozen=True)
class ParamInfo:
    """What one parameter must be, checked when a function is entered from outside.

    kind   -- "tensor", "shape" (a tuple of ints), "tuple" (of ``fields``) or "any".
    ndim   -- number of dimensions (tensor) or of values (shape); -1 = unchecked.
    dtype  -- element type of a tensor; "" = unchecked.
    shape  -- per dimension: an int, a symbolic name such as "n", or None (unchecked);
              None for the whole shape = unchecked.  A name binds at its first use and
              must agree everywhere else in the same call.
    fields -- ParamInfo of each element of a tuple (None = unchecked).
    """

    kind: str = "any"
    ndim: int = -1
    dtype: str = ""
    shape: tuple | None = None
    fields: tuple["ParamInfo", ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"ParamInfo: kind must be one of {', '.join(_KINDS)}, got {self.kind!r}")
        if self.shape is not None:
            shape = tuple(self.shape)
            for d in shape:
                if not (d is None or isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool))):
                    raise TypeError(f"ParamInfo: a dimension is an int, a name or None, got {d!r}")
            object.__setattr__(self, "shape", shape)
            if self.ndim == -1:
                object.__setattr__(self, "ndim", len(shape))
            elif self.ndim != len(shape):
                raise ValueError(f"ParamInfo: ndim={self.ndim} but shape {format_dims(shape)} has "
                                 f"{len(shape)} dimensions")
        if self.fields is not None:
            object.__setattr__(self, "fields", tuple(self.fields))

    @staticmethod
    def tensor(shape: tuple | None = None, dtype: str = "", ndim: int = -1) -> "ParamInfo":
        return ParamInfo("tensor", ndim, dtype, shape)

    @staticmethod
    def shape_of(values: tuple | None = None, ndim: int = -1) -> "ParamInfo":
        return ParamInfo("shape", ndim, "", values)

    @staticmethod
    def tuple_of(*fields: "ParamInfo") -> "ParamInfo":
        return ParamInfo("tuple", fields=fields)

    def __str__(self) -> str:
        if self.kind == "tensor":
            dims = format_dims(self.shape) if self.shape is not None else (
                f"ndim={self.ndim}" if self.ndim >= 0 else "?")
            return f"Tensor({dims}{', ' + self.dtype if self.dtype else ''})"
        if self.kind == "shape":
            return f"Shape({format_dims(self.shape) if self.shape is not None else self.ndim})"
        if self.kind == "tuple":
            return "Tuple(" + ", ".join(str(f) for f in self.fields or ()) + ")"
        return "Any"

    def to_json(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind}
        if self.ndim != -1:
            out["ndim"] = self.ndim
        if self.dtype:
            out["dtype"] = self.dtype
        if self.shape is not None:
            out["shape"] = list(self.shape)
        if self.fields is not None:
            out["fields"] = [f.to_json() for f in self.fields]
        return out

    @staticmethod
    def from_json(data: dict) -> "ParamInfo":
        fields = data.get("fields")
        shape = data.get("shape")
        return ParamInfo(str(data["kind"]), int(data.get("ndim", -1)), str(data.get("dtype", "")),
                         None if shape is None else tuple(shape),
                         None if fields is None else tuple(ParamInfo.from_json(f) for f in fields))


# -- functions ---------------------------------------------------------------------------------------


@dataclass
class VMFunction:
    """A bytecode function: its parameters, frame size and instructions."""

    name: str
    params: list[str]
    num_registers: int
    instructions: list[Instruction] = field(default_factory=list)
    param_info: list[ParamInfo] | None = None

    def verify(self, num_constants: int, num_functions: int) -> None:
        """Check every reference is in range and control cannot fall off the end.

        Raises ``ValueError`` naming the function and the instruction; the VM runs this once
        when it loads an Executable, so the interpreter loop never meets a bad index.
        """
        where = f"function {self.name!r}"
        if self.num_registers < len(self.params):
            raise ValueError(f"{where}: {len(self.params)} parameters need at least that many registers, "
                             f"it has {self.num_registers}")
        if self.param_info is not None and len(self.param_info) != len(self.params):
            raise ValueError(f"{where}: {len(self.params)} parameters but {len(self.param_info)} ParamInfo")
        for name, info in zip(self.params, self.param_info or ()):
            _verify_param_dtypes(info, f"{where}, parameter {name!r}")
        if not self.instructions:
            raise ValueError(f"{where} has no instructions")
        n = len(self.instructions)

        def reg(i: Any, pc: int) -> None:
            if not isinstance(i, int) or not 0 <= i < self.num_registers:
                raise ValueError(f"{where}, instruction {pc}: register {i!r} is out of range "
                                 f"(the frame has {self.num_registers})")

        def jump(pc: int, offset: Any) -> None:
            if not isinstance(offset, int) or offset == 0 or not 0 <= pc + offset < n:
                raise ValueError(f"{where}, instruction {pc}: jump by {offset!r} leaves the function "
                                 f"(instructions 0..{n - 1})")

        for pc, ins in enumerate(self.instructions):
            if isinstance(ins, Call):
                if ins.dst is not None:
                    reg(ins.dst, pc)
                if not isinstance(ins.func_index, int) or not 0 <= ins.func_index < num_functions:
                    raise ValueError(f"{where}, instruction {pc}: function index {ins.func_index!r} is "
                                     f"out of range (the table has {num_functions})")
                for a in ins.args:
                    if isinstance(a, Reg):
                        reg(a.index, pc)
                    elif isinstance(a, Const):
                        if not isinstance(a.index, int) or not 0 <= a.index < num_constants:
                            raise ValueError(f"{where}, instruction {pc}: constant {a.index!r} is out of "
                                             f"range (there are {num_constants})")
                    elif isinstance(a, Imm):
                        if not isinstance(a.value, int):
                            raise ValueError(f"{where}, instruction {pc}: immediate {a.value!r} is not an int")
                    else:
                        raise ValueError(f"{where}, instruction {pc}: bad argument {a!r}")
            elif isinstance(ins, Ret):
                reg(ins.src, pc)
            elif isinstance(ins, Goto):
                jump(pc, ins.offset)
            elif isinstance(ins, If):
                reg(ins.cond, pc)
                jump(pc, ins.false_offset)
            else:
                raise ValueError(f"{where}, instruction {pc}: unknown instruction {ins!r}")
        if not isinstance(self.instructions[-1], (Ret, Goto)):
            raise ValueError(f"{where}: the last instruction must be ret or goto, so that control "
                             "cannot run past the end")

    # -- printing ---------------------------------------------------------------------------------
    def as_text(self, func_names: list[str] | None = None) -> str:
        """The listing: a header, then one instruction per line.

        ``func_names`` (the Executable's table) turns function indices into names.
        """
        def callee(i: int) -> str:
            return func_names[i] if func_names is not None and 0 <= i < len(func_names) else f"f[{i}]"

        lines = [f"@{self.name}:"]
        params = []
        for i, p in enumerate(self.params):
            info = self.param_info[i] if self.param_info else None
            params.append(f"%{i} {p}" + (f": {info}" if info is not None and info.kind != "any" else ""))
        lines.append(f"  # params: {', '.join(params) or '(none)'}; registers: {self.num_registers}")
        for pc, ins in enumerate(self.instructions):
            if isinstance(ins, Call):
                dst = "-" if ins.dst is None else f"%{ins.dst}"
                text = f"call  {callee(ins.func_index)} in: {', '.join(str(a) for a in ins.args)} dst: {dst}"
            elif isinstance(ins, Ret):
                text = f"ret   %{ins.src}"
            elif isinstance(ins, Goto):
                text = f"goto  {ins.offset:+d}".ljust(24) + f"# to instruction {pc + ins.offset}"
            else:
                text = (f"if    %{ins.cond} else {ins.false_offset:+d}".ljust(24)
                        + f"# false: to instruction {pc + ins.false_offset}")
            lines.append(f"  {text}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()

    # -- serialization -----------------------------------------------------------------------------
    def to_json(self) -> dict:
        code: list[list] = []
        for ins in self.instructions:
            if isinstance(ins, Call):
                code.append(["call", ins.dst, ins.func_index,
                             [[_ARG_TAGS[type(a)], a.index if not isinstance(a, Imm) else a.value]
                              for a in ins.args]])
            elif isinstance(ins, Ret):
                code.append(["ret", ins.src])
            elif isinstance(ins, Goto):
                code.append(["goto", ins.offset])
            else:
                code.append(["if", ins.cond, ins.false_offset])
        out: dict[str, Any] = {"name": self.name, "params": list(self.params),
                               "num_registers": self.num_registers, "code": code}
        if self.param_info is not None:
            out["param_info"] = [p.to_json() for p in self.param_info]
        return out

    @staticmethod
    def from_json(data: dict) -> "VMFunction":
        """Rebuild a function from :meth:`to_json` output; bad data raises ValueError."""
        try:
            code: list[Instruction] = []
            for item in data["code"]:
                op = item[0]
                if op == "call":
                    args = tuple(_TAG_ARGS[tag](_int(v)) for tag, v in item[3])
                    code.append(Call(None if item[1] is None else _int(item[1]), _int(item[2]), args))
                elif op == "ret":
                    code.append(Ret(_int(item[1])))
                elif op == "goto":
                    code.append(Goto(_int(item[1])))
                elif op == "if":
                    code.append(If(_int(item[1]), _int(item[2])))
                else:
                    raise ValueError(f"unknown opcode {op!r}")
            info = data.get("param_info")
            return VMFunction(str(data["name"]), [str(p) for p in data["params"]], _int(data["num_registers"]),
                              code, None if info is None else [ParamInfo.from_json(p) for p in info])
        except (KeyError, IndexError, TypeError) as err:
            raise ValueError(f"malformed VM function: {type(err).__name__}: {err}") from err


def _verify_param_dtypes(info: Any, where: str) -> None:
    """A ParamInfo's dtypes (a tuple's fields too) are numeric numpy names, as the argument check
    compares them: a saved file with another is refused when it loads, not when it is called."""
    if not isinstance(info, ParamInfo):
        raise ValueError(f"{where}: expected a ParamInfo, got {type(info).__name__}")
    if info.dtype:
        if info.kind != "tensor":
            raise ValueError(f"{where}: a {info.kind} parameter has no dtype, got {info.dtype!r}")
        if check_dtype(info.dtype, where).name != info.dtype:
            raise ValueError(f"{where}: dtype {info.dtype!r} is not a dtype name (as float32, int64, bool)")
    for i, f in enumerate(info.fields or ()):
        _verify_param_dtypes(f, f"{where}[{i}]")


def _int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"expected an integer in the bytecode, got {v!r}")
    return v
