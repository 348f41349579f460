"""ExecBuilder: assemble bytecode by hand (and, later, from the Relax VM code generator).

::

    eb = ExecBuilder()
    with eb.function("forward", ["x", "w"]):
        y = eb.emit_call("my_matmul", [eb.r(0), eb.r(1)])   # a fresh register, %2
        eb.emit_ret(y)
    exe = eb.get()

Registers, constants and immediates are written ``eb.r(i)``, ``eb.c(value)`` (adds the value
to the constant pool) and ``eb.imm(k)``.  Jumps take a relative offset or a :class:`Label`,
placed later with :meth:`ExecBuilder.place`.  Calling a name that a later ``function``
defines works: the name is resolved when the Executable is finished.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ..module import Module
from .bytecode import Arg, Call, Const, FuncRef, Goto, If, Imm, Instruction, ParamInfo, Reg, Ret, VMFunction
from .executable import Executable

__all__ = ["ExecBuilder", "Label"]


class Label:
    """A jump target inside the function being built."""

    __slots__ = ("name", "pc")

    def __init__(self, name: str = ""):
        self.name = name
        self.pc: int | None = None

    def __repr__(self) -> str:
        return f"Label({self.name!r} at {self.pc})"


class ExecBuilder:
    """Builds an :class:`Executable` one function and one instruction at a time."""

    def __init__(self, lib: Module | None = None):
        self._exe = Executable(lib=lib)
        self._func: VMFunction | None = None
        self._next_reg = 0
        self._fixups: list[tuple[int, Label]] = []

    # -- functions --------------------------------------------------------------------------------
    @contextmanager
    def function(self, name: str, params: list[str],
                 param_info: list[ParamInfo | None] | None = None) -> Iterator["ExecBuilder"]:
        """Build the bytecode function ``name``; its parameters are registers ``0..len(params)-1``."""
        if self._func is not None:
            raise RuntimeError(f"ExecBuilder: function {self._func.name!r} is still open")
        info = None
        if param_info is not None:
            info = [p if p is not None else ParamInfo() for p in param_info]
        self._func = VMFunction(name, list(params), len(params), [], info)
        self._next_reg = len(params)
        self._fixups = []
        try:
            yield self
            self._finish()
        finally:
            self._func = None

    def _finish(self) -> None:
        func = self._current()
        for pc, label in self._fixups:
            if label.pc is None:
                raise ValueError(f"ExecBuilder: label {label.name!r} in {func.name!r} was never placed")
            ins = func.instructions[pc]
            offset = label.pc - pc
            func.instructions[pc] = Goto(offset) if isinstance(ins, Goto) else If(ins.cond, offset)
        func.num_registers = max(func.num_registers, self._next_reg)
        self._exe.add_function(func)

    def _current(self) -> VMFunction:
        if self._func is None:
            raise RuntimeError("ExecBuilder: emit inside `with eb.function(...)`")
        return self._func

    # -- operands ---------------------------------------------------------------------------------
    def r(self, index: int) -> Reg:
        """Register ``index`` (grows the frame if needed)."""
        self._next_reg = max(self._next_reg, index + 1)
        return Reg(index)

    def new_register(self) -> Reg:
        """A register not used so far in this function."""
        self._next_reg += 1
        return Reg(self._next_reg - 1)

    def c(self, value: Any) -> Const:
        """The constant ``value`` (added to the pool, shared if equal to one already there)."""
        return Const(self._exe.add_constant(value))

    def func_ref(self, func_name: str) -> Const:
        """The function ``func_name`` as a value (a :class:`FuncRef` constant; the name joins the
        function table, so the VM resolves it like a callee)."""
        self._exe.add_extern(func_name)
        return self.c(FuncRef(func_name))

    @staticmethod
    def imm(value: int) -> Imm:
        return Imm(int(value))

    def label(self, name: str = "") -> Label:
        return Label(name)

    def place(self, label: Label) -> None:
        """The next emitted instruction is where ``label`` jumps to."""
        label.pc = len(self._current().instructions)

    # -- instructions -----------------------------------------------------------------------------
    def _emit(self, ins: Instruction) -> int:
        func = self._current()
        func.instructions.append(ins)
        return len(func.instructions) - 1

    def emit_call(self, func_name: str, args: list[Arg | Any] = (), dst: Reg | int | None | bool = True) -> Reg | None:
        """Call ``func_name``; the result goes to ``dst`` (True: a fresh register, None: dropped).

        Arguments that are not Reg/Const/Imm become constants.  Returns the destination.
        """
        operands = tuple(a if isinstance(a, (Reg, Const, Imm)) else self.c(a) for a in args)
        if dst is True:
            dst = self.new_register()
        elif isinstance(dst, int) and not isinstance(dst, bool):
            dst = self.r(dst)
        elif dst is False:
            dst = None
        index = self._exe.add_extern(func_name)
        self._emit(Call(None if dst is None else dst.index, index, operands))
        return dst

    def emit_ret(self, src: Reg | int) -> None:
        self._emit(Ret(src.index if isinstance(src, Reg) else int(src)))

    def emit_goto(self, target: Label | int) -> None:
        """Jump to ``target``: a Label or a relative offset."""
        if isinstance(target, Label):
            self._fixups.append((self._emit(Goto(1)), target))
        else:
            self._emit(Goto(int(target)))

    def emit_if(self, cond: Reg | int, false_target: Label | int) -> None:
        """Continue if ``cond`` is true, else jump to ``false_target`` (a Label or an offset)."""
        cond_index = cond.index if isinstance(cond, Reg) else int(cond)
        if isinstance(false_target, Label):
            self._fixups.append((self._emit(If(cond_index, 1)), false_target))
        else:
            self._emit(If(cond_index, int(false_target)))

    # -- result -----------------------------------------------------------------------------------
    def get(self) -> Executable:
        """The finished Executable (verified)."""
        if self._func is not None:
            raise RuntimeError(f"ExecBuilder: function {self._func.name!r} is still open")
        self._exe.verify()
        return self._exe
