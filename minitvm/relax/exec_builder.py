"""``relax.ExecBuilder``: TVM's calls for writing VM bytecode by hand, over minitvm's own
builder (:class:`minitvm.runtime.vm.builder.ExecBuilder`).

    ib = relax.ExecBuilder()
    with ib.function("func0", num_inputs=2):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    ex = ib.get()

As in TVM: jumps are relative offsets; ``dst=None`` drops the result; an argument that is not
a register, constant or immediate is added to the constant pool; a register read before any
instruction writes it is an error when the function closes; and the registers a function uses
are renumbered in order of first use after its parameters (TVM's "formalize"), so two
functions that differ only in register numbers are the same bytecode.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..base import TVMError
from ..runtime.ndarray import NDArray
from ..runtime.vm.builder import ExecBuilder as _Builder
from ..runtime.vm.builtins import ShapeTuple
from ..runtime.vm.bytecode import Call, Const, Goto, If, Imm, Reg, Ret, VMFunction
from ..runtime.vm.executable import Executable

__all__ = ["ExecBuilder"]


class ExecBuilder:
    """Builds a VM executable one bytecode instruction at a time (TVM's ``relax.ExecBuilder``)."""

    def __init__(self) -> None:
        self._eb = _Builder()
        self._num_inputs = 0

    @contextmanager
    def function(self, func_name: str, num_inputs: int = 0,
                 param_names: list[str] | None = None) -> Iterator[None]:
        """Instructions emitted inside make the VM function ``func_name``; its inputs are
        registers ``0 .. num_inputs-1``."""
        names = list(param_names) if param_names is not None else [f"i{i}" for i in range(num_inputs)]
        if len(names) != num_inputs:
            raise ValueError(f"ExecBuilder.function({func_name!r}): {len(names)} parameter names "
                             f"for {num_inputs} inputs")
        self._num_inputs = num_inputs
        with self._eb.function(func_name, names):
            yield
            func = self._eb._current()
            _check_defined(func, num_inputs)
            _formalize(func, num_inputs)
            self._eb._next_reg = func.num_registers

    # -- operands ---------------------------------------------------------------------------------
    def r(self, idx: int) -> Reg:
        return self._eb.r(idx)

    def imm(self, value: int) -> Imm:
        return self._eb.imm(value)

    def vm_state(self) -> "_VMState":
        """TVM's register holding the VM itself, passed first to the builtins that take it
        (``vm.builtin.alloc_storage``).  minitvm's builtins reach what they need without it, so
        :meth:`emit_call` leaves it out."""
        return _VM_STATE

    def c(self, idx: int) -> Const:
        """Constant number ``idx`` of the pool."""
        return Const(int(idx))

    def f(self, name: str) -> Const:
        """The function ``name`` as a value (for ``vm.builtin.make_closure``)."""
        return self._eb.func_ref(name)

    def convert_constant(self, value: Any) -> Const:
        """``value`` as a constant of the pool (equal strings, shapes and tensors are shared)."""
        value = _constant(value)
        if isinstance(value, NDArray):  # a tensor equal to one in the pool is that one, as in TVM
            data = value.numpy()
            for i, c in enumerate(self._eb._exe.constants):
                if isinstance(c, np.ndarray) and c.dtype == data.dtype and c.shape == data.shape \
                        and np.array_equal(c, data):
                    return Const(i)
        return self._eb.c(value)

    # -- instructions -----------------------------------------------------------------------------
    def emit_call(self, name: str, args: list[Any] | None = None, dst: Reg | None = None) -> None:
        """Call the function ``name``; its result goes to register ``dst`` (None: dropped)."""
        operands = [a if isinstance(a, (Reg, Const, Imm)) else self.convert_constant(a)
                    for a in args or () if a is not _VM_STATE]
        self._eb.emit_call(name, operands, dst=dst if dst is not None else None)

    def emit_ret(self, result: Reg) -> None:
        self._eb.emit_ret(result)

    def emit_goto(self, pc_offset: int) -> None:
        self._eb.emit_goto(int(pc_offset))

    def emit_if(self, cond: Reg, false_offset: int) -> None:
        """Go on when ``cond`` holds a true value, else jump ``false_offset`` instructions."""
        self._eb.emit_if(cond, int(false_offset))

    def get(self) -> Executable:
        return self._eb.get()


class _VMState:
    """The operand :meth:`ExecBuilder.vm_state` gives."""

    def __repr__(self) -> str:
        return "vm_state"


_VM_STATE = _VMState()


def _constant(value: Any) -> Any:
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value) \
            and not isinstance(value, ShapeTuple):
        return ShapeTuple(value)  # a tuple of ints is a shape, as TVM converts it
    if type(value).__name__ == "DataType":
        return str(value)
    return value


def _reads(ins: Any) -> list[int]:
    if isinstance(ins, Call):
        return [a.index for a in ins.args if isinstance(a, Reg)]
    if isinstance(ins, Ret):
        return [ins.src]
    if isinstance(ins, If):
        return [ins.cond]
    return []


def _check_defined(func: VMFunction, num_inputs: int) -> None:
    """Every register read is an input or written by an earlier instruction (in program order,
    as TVM's checker reads it)."""
    written = set(range(num_inputs))
    for pc, ins in enumerate(func.instructions):
        for reg in _reads(ins):
            if reg not in written:
                raise TVMError(f"ExecBuilder: function {func.name!r}, instruction {pc} reads register "
                               f"%{reg}, which nothing has written")
        if isinstance(ins, Call) and ins.dst is not None:
            written.add(ins.dst)


def _formalize(func: VMFunction, num_inputs: int) -> None:
    """Renumber the registers after the inputs in order of first use."""
    order: dict[int, int] = {i: i for i in range(num_inputs)}

    def new(reg: int) -> int:
        return order.setdefault(reg, len(order))

    out = []
    for ins in func.instructions:
        if isinstance(ins, Call):
            args = tuple(Reg(new(a.index)) if isinstance(a, Reg) else a for a in ins.args)
            out.append(Call(None if ins.dst is None else new(ins.dst), ins.func_index, args))
        elif isinstance(ins, Ret):
            out.append(Ret(new(ins.src)))
        elif isinstance(ins, If):
            out.append(If(new(ins.cond), ins.false_offset))
        else:
            assert isinstance(ins, Goto)
            out.append(ins)
    func.instructions[:] = out
    func.num_registers = max(len(order), num_inputs)


