"""The Relax virtual machine, runtime half: bytecode, Executable, VirtualMachine.

The compiler turns each Relax function into a *VM function*: a list of instructions for a
small register machine.  This package defines that format and runs it; it needs nothing
from the IR, so a saved executable runs without the compiler.

The machine
-----------
Each call of a VM function gets a frame of ``num_registers`` registers; the arguments
arrive in registers ``0 .. len(params)-1``.  There are four instructions:

============================  =====================================================
``Call(dst, func, args)``     ``%dst = func_table[func](*args)``; an argument is a
                              register ``%i``, a constant ``c[i]`` or an immediate
                              int ``i<k>``; ``dst`` None drops the result
``Ret(src)``                  return ``%src`` to the caller
``Goto(offset)``              jump ``offset`` instructions (relative)
``If(cond, false_offset)``    if ``%cond`` is true go on, else jump ``false_offset``
============================  =====================================================

Everything else -- allocating memory, checking shapes, building tuples, running kernels
-- is a ``Call``.  The function table names what calls can reach: other VM functions,
kernels of the compiled library (destination-passing style: outputs are allocated first
and passed as the last arguments), and global packed functions, among them the builtins
of :mod:`.builtins` (``vm.builtin.alloc_storage``, ``alloc_tensor``, ``match_shape``,
``make_shape`` ...).  Symbolic dimensions (``n``) live in a per-call *shape heap*; see
:mod:`.builtins`.

A VM function also carries a :class:`ParamInfo` per parameter (kind, ndim, dtype, shape
with symbolic names), checked when Python calls the function, so a wrong argument is
reported by name before anything runs::

    forward: argument 'x' expects shape (1, 784), got (2, 784)

Files
-----
``Executable.save(path)`` writes ``MINITVM-EXEC``, a format version, JSON metadata (the
bytecode, the function table, the constants' descriptions, the kernel library's format)
and binary sections (tensor constants' raw bytes, the kernel payload), with a CRC-32 and a
MAC under this installation's key; :func:`load_executable` reads it back, and refuses a file
another installation signed unless ``trust=True`` (its kernels run as machine code).  See
:mod:`.executable`.

Example::

    eb = ExecBuilder()
    with eb.function("double", ["x"], [ParamInfo.tensor(("n",), "float32")]):
        y = eb.emit_call("my.add", [eb.r(0), eb.r(0)])
        eb.emit_ret(y)
    vm = VirtualMachine(eb.get(), minitvm.cpu())
    vm["double"](np.ones(3, "float32"))
"""

from . import builtins
from .builder import ExecBuilder, Label
from .builtins import ShapeTuple, Storage
from .bytecode import Call, Const, Goto, If, Imm, ParamInfo, Reg, Ret, VMFunction
from .executable import FORMAT_VERSION, HEADER_SIZE, MAGIC, Executable, load_executable, load_module, pack_executable
from .native import EntryPlan, NativeEntry
from .vm import ProfileReport, VirtualMachine, VMInstrumentReturnKind

__all__ = ["VirtualMachine", "VMInstrumentReturnKind", "Executable", "ExecBuilder", "Label", "load_executable",
           "load_module", "pack_executable", "HEADER_SIZE",
           "ProfileReport",
           "VMFunction", "ParamInfo", "Call", "Ret", "Goto", "If", "Reg", "Const", "Imm",
           "ShapeTuple", "Storage", "builtins", "MAGIC", "FORMAT_VERSION", "EntryPlan", "NativeEntry"]
