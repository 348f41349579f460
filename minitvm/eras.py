"""Both eras of TVM's names: the MLC course's (TVM 0.20-0.23) and today's (TVM 0.27).

TVM 0.27 moved TensorIR to ``tvm.tirx`` and its schedules to ``tvm.s_tir`` (with
``meta_schedule`` under it) and renamed blocks ``sblock``.  minitvm keeps one implementation and
answers to both spellings: a name of one era is the same object as its twin in the other
(``tests/test_eras.py`` checks every row below).  This module holds the module-level renames,
which the import system needs before any code runs; the attribute renames live next to their
objects (``T.sblock = T.block``, ``Schedule.get_sblock = get_block`` ...) and are listed in
:data:`ATTRIBUTE_RENAMES` so the test can find them.

It imports nothing from minitvm: ``minitvm/__init__.py`` installs :class:`EraFinder` first.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import re
import sys
from types import ModuleType

__all__ = ["MODULE_RENAMES", "ATTRIBUTE_RENAMES", "EraFinder", "canonical_module", "MLC_ERA", "TODAY_ERA",
           "default_era", "set_default_era",
           "ERAS", "SCRIPT_NAME_ERAS", "era_of", "script_import_era"]

#: the two eras, named by the TVM release whose spelling they use: the MLC course's (0.20-0.23,
#: ``T.block``) and today's (0.27, ``T.sblock``).  The printer writes a function in the era it was
#: written in (``PrimFunc.era``, set by the parser) and in today's where nothing says.
MLC_ERA, TODAY_ERA = "0.23", "0.27"
ERAS = (MLC_ERA, TODAY_ERA)

#: TVMScript names (``T.<name>``) that only one era spells: a function's era is read from these
SCRIPT_NAME_ERAS: dict[str, str] = {
    "block": MLC_ERA, "block_attr": MLC_ERA,
    "sblock": TODAY_ERA, "sblock_attr": TODAY_ERA, "sblock_alloc_buffer": TODAY_ERA,
}

#: ``from tvm.script import tirx as T`` (or the printer's commented header): the module names the era
_SCRIPT_IMPORT = re.compile(r"^\s*#?\s*from\s+\w+\.script\s+import\s+(tirx|tir)\s+as\s+\w+")


def script_import_era(line: str) -> str | None:
    """The era a line importing the TIR script module names (``tirx``: 0.27, ``tir``: 0.23), if it is one."""
    m = _SCRIPT_IMPORT.match(line)
    return None if m is None else TODAY_ERA if m.group(1) == "tirx" else MLC_ERA


def _checked_era(era: str, where: str) -> str:
    if era not in ERAS:
        raise ValueError(f"{where}: the eras are {', '.join(map(repr, ERAS))} (the MLC course's names and "
                         f"TVM 0.27's), not {era!r}")
    return era


#: the era of what nothing else dates (an IR built from Python calls, a trace): TVM 0.27's unless
#: the environment variable MINITVM_ERA or :func:`set_default_era` says otherwise -- code written
#: for TVM 0.23 (its own test files, run by ``benchmarks/tvm_tests.py``) reads its own names back
_DEFAULT_ERA = [_checked_era(os.environ.get("MINITVM_ERA") or TODAY_ERA, "MINITVM_ERA")]


def default_era() -> str:
    """The era printed where the IR does not say which one it was written in."""
    return _DEFAULT_ERA[0]


def set_default_era(era: str) -> None:
    """Print undated IR (and traces) in ``era``'s names from now on ("0.23" or "0.27")."""
    _DEFAULT_ERA[0] = _checked_era(era, "set_default_era")


def era_of(seen: set[str]) -> str | None:
    """The era of a text whose era-specific names say ``seen``: the one era, else unknown (None)."""
    return next(iter(seen)) if len(seen) == 1 else None

#: TVM 0.27 module path (as minitvm spells it) -> the module that implements it (or, for a module
#: that lives at its TVM 0.27 path, its older path -> that module).  A prefix rule:
#: ``minitvm.tirx.transform`` is ``minitvm.tir.transform`` and so on for every submodule.
MODULE_RENAMES: dict[str, str] = {
    "minitvm.tirx": "minitvm.tir",
    "minitvm.script.tirx": "minitvm.script.tir",
    "minitvm.s_tir.schedule": "minitvm.tir.schedule",
    "minitvm.s_tir.transform": "minitvm.tir.transform",
    "minitvm.s_tir.tensor_intrin": "minitvm.tir.tensor_intrin",
    "minitvm.s_tir.analysis": "minitvm.tir.analysis",
    "minitvm.s_tir.meta_schedule": "minitvm.meta_schedule",
    # the reverse direction: the module lives at TVM 0.27's path, the older one is the alias
    "minitvm.dlight": "minitvm.s_tir.dlight",
    "minitvm.support.utils": "minitvm.contrib.utils",
    "minitvm.relax.frontend.torch.exported_program_translator": "minitvm.relax.frontend.torch.exported_program",
}

#: (TVM 0.27 spelling, older spelling) of attributes; both resolve to one object
ATTRIBUTE_RENAMES: list[tuple[str, str]] = [
    ("minitvm.script.tirx:sblock", "minitvm.script.tir:block"),
    ("minitvm.script.tirx:sblock_alloc_buffer", "minitvm.script.tir:alloc_buffer"),
    ("minitvm.script.tirx:sblock_attr", "minitvm.script.tir:block_attr"),
    ("minitvm.s_tir:Schedule", "minitvm.tir:Schedule"),
    ("minitvm.s_tir:ScheduleError", "minitvm.tir:ScheduleError"),
    ("minitvm.s_tir:Trace", "minitvm.tir:Trace"),
    ("minitvm.s_tir:SBlockRV", "minitvm.tir:BlockRV"),
    ("minitvm.s_tir:TensorIntrin", "minitvm.tir:TensorIntrin"),
    ("minitvm.s_tir.schedule:SBlockRV", "minitvm.tir.schedule:BlockRV"),
    ("minitvm.tir:Schedule.get_sblock", "minitvm.tir:Schedule.get_block"),
    ("minitvm.tirx:build", "minitvm.tir:build"),
    ("minitvm.relax:Type", "minitvm.relax:StructInfo"),
    ("minitvm.relax:AnyType", "minitvm.relax:ObjectStructInfo"),
    ("minitvm.relax:ObjectType", "minitvm.relax:ObjectStructInfo"),
    ("minitvm.relax:ShapeType", "minitvm.relax:ShapeStructInfo"),
    ("minitvm.relax:TupleType", "minitvm.relax:TupleStructInfo"),
    ("minitvm.relax:FuncType", "minitvm.relax:FuncStructInfo"),
    ("minitvm.relax:Expr.ty", "minitvm.relax:Expr.struct_info_"),
    ("minitvm.runtime:tensor", "minitvm.runtime.ndarray:array"),
    ("minitvm.runtime:Tensor", "minitvm.runtime:NDArray"),
    ("minitvm_ffi:register_global_func", "minitvm:register_func"),
    ("minitvm_ffi:get_global_func", "minitvm:get_global_func"),
    ("minitvm_ffi:Function", "minitvm.runtime:PackedFunc"),
    ("minitvm_ffi:convert", "minitvm.runtime:convert"),
    ("minitvm_ffi:structural_equal", "minitvm.ir:structural_equal"),
    ("minitvm_ffi:Shape", "minitvm.runtime:ShapeTuple"),
    ("minitvm_ffi:Array", "minitvm.ir:Array"),
    ("minitvm_ffi:Map", "minitvm.ir:Map"),
    ("minitvm.support.utils:tempdir", "minitvm.contrib.utils:tempdir"),
    ("minitvm.relax.frontend.torch.exported_program_translator:ExportedProgramImporter",
     "minitvm.relax.frontend.torch.exported_program:ExportedProgramConverter"),
]


def canonical_module(name: str, renames: dict[str, str] = MODULE_RENAMES) -> str | None:
    """The module implementing ``name`` when ``name`` is a renamed path (else None)."""
    for new, old in renames.items():
        if name == new or name.startswith(new + "."):
            return old + name[len(new):]
    return None


class _Same(importlib.abc.Loader):
    """Hands the import system a module that is already loaded under its canonical name."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        # the import system stamped the alias spec on the module: give it its own back, or
        # relative imports inside it would resolve against the alias
        module.__spec__ = self.spec


class EraFinder(importlib.abc.MetaPathFinder):
    """Resolves ``import minitvm.tirx...`` and the other renamed paths to the one module (any
    prefix table: ``benchmarks/tvm_tutorials.py`` answers ``import tvm`` with minitvm this way)."""

    def __init__(self, renames: dict[str, str] = MODULE_RENAMES) -> None:
        self.renames = renames

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        canonical = canonical_module(fullname, self.renames)
        if canonical is None or fullname in sys.modules:
            return None
        module = importlib.import_module(canonical)
        return importlib.util.spec_from_loader(fullname, _Same(module))


def install() -> None:
    if not any(isinstance(f, EraFinder) and f.renames is MODULE_RENAMES for f in sys.meta_path):
        sys.meta_path.insert(0, EraFinder())
