"""The zoo's programs made once per test process and shared by the tests that need the same one:
``torch.export`` of a model costs seconds, and several tests read the same exported program
(the batch-2 export of a model is what the default-pipeline test compiles, what the operator
checks read and what the BatchNorm folding compiles).  An ExportedProgram is not changed by
its readers (``from_exported_program`` decomposes a copy); an Executable is shared, each test
gets its own VirtualMachine."""

from __future__ import annotations

import functools

import minitvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program
from minitvm.testing import zoo


@functools.cache
def exported(name: str, batch: int, dynamic_batch: bool = False):
    """``zoo.export`` of the model ``name`` (a dynamic batch is traced at 2 whatever ``batch``
    says, so ask for 2 to share it)."""
    return zoo.export(zoo.MODELS[name], batch, dynamic_batch=dynamic_batch)


def compile_zero_executable(mod):
    """The zero pipeline (legalize and fuse, no schedules), LLVM; the zero pipeline has run, so
    ``compile`` adds no Relax pipeline of its own (only the VM lowering)."""
    return minitvm.compile(relax.get_pipeline("zero")(mod), target="llvm", relax_pipeline=None)


def compile_zero(mod):
    """:func:`compile_zero_executable` in a VM on the CPU."""
    return relax.VirtualMachine(compile_zero_executable(mod), minitvm.cpu())


@functools.cache
def _dynamic_zero(name: str):
    mod = from_exported_program(exported(name, 2, dynamic_batch=True), unwrap_unit_return_tuple=True)
    return mod, compile_zero_executable(mod)


def dynamic_zero(name: str):
    """(the imported module, a fresh VM) of the model exported with a dynamic batch, compiled
    with the zero pipeline once per process."""
    mod, ex = _dynamic_zero(name)
    return mod, relax.VirtualMachine(ex, minitvm.cpu())
