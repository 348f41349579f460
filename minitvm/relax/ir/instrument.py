"""A pass instrument checking Relax well-formedness around every pass (TVM's
``tvm.relax.ir.instrument.WellFormedInstrument``; TVM's Relax tests apply it to every
transform they run)."""

from __future__ import annotations

from typing import Any

from ...ir import IRModule
from ..analysis.well_formed import well_formed_errors

#: passes that exist to repair ill-formed input, so their input is not checked
SKIPPED_PASSES = ("Normalize", "NormalizeGlobalVar", "ResolveGlobals")


class WellFormedInstrument:
    """Asserts the module is well formed before (unless ``validate_before_transform=False``)
    and after each pass, naming the pass and the first problem."""

    def __init__(self, check_struct_info: bool = True, validate_before_transform: bool = True) -> None:
        self.skip_pass_name = list(SKIPPED_PASSES)
        self.check_struct_info = check_struct_info
        self.validate_before_transform = validate_before_transform

    def run_before_pass(self, mod: IRModule, pass_info: Any) -> None:
        if self.validate_before_transform:
            self._check(mod, pass_info.name, "before")

    def run_after_pass(self, mod: IRModule, pass_info: Any) -> None:
        self._check(mod, pass_info.name, "after")

    def _check(self, mod: IRModule, pass_name: str, when: str) -> None:
        if pass_name in self.skip_pass_name or not isinstance(mod, IRModule):
            return
        errors = well_formed_errors(mod, self.check_struct_info)
        if errors:
            raise AssertionError(f"the module is not well formed {when} pass {pass_name}: {errors[0]}")
