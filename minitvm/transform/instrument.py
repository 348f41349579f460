"""Pass instruments: objects that watch passes run (time them, print or record the IR)."""

from __future__ import annotations

import time

from ..ir.module import IRModule
from .pass_infra import ModulePass, PassContext, PassInfo

__all__ = ["PassInstrument", "PassTimingInstrument", "PassPrintingInstrument", "PassRecordingInstrument",
           "PrintIR"]


class PassInstrument:
    """Subclass and override any of the hooks; all default to doing nothing."""

    def enter_pass_ctx(self) -> None: ...
    def exit_pass_ctx(self) -> None: ...

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None: ...
    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None: ...


class PassTimingInstrument(PassInstrument):
    """Wall time of every pass; ``render()`` gives a table (nested passes indented)."""

    def __init__(self) -> None:
        self.records: list[tuple[int, str, float]] = []
        self._starts: list[float] = []

    def enter_pass_ctx(self) -> None:
        self.records = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._starts.append(time.perf_counter())

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        start = self._starts.pop()
        self.records.append((len(self._starts), info.name, time.perf_counter() - start))

    def render(self) -> str:
        lines = ["pass timing (ms):"]
        lines += [f"{'  ' * depth}{name}: {secs * 1e3:.3f}" for depth, name, secs in self.records]
        return "\n".join(lines)


class PassRecordingInstrument(PassInstrument):
    """Keeps every pass's module before and after, with its time (what the pass stepper shows).

    ``records`` holds one :class:`PassRecord` per pass run, in the order they finished; a
    Sequential finishes after the passes inside it.
    """

    def __init__(self) -> None:
        self.records: list[PassRecord] = []
        self._stack: list[list] = []  # [module before, start time, ran passes inside?]

    def enter_pass_ctx(self) -> None:
        self.records = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._stack.append([mod, time.perf_counter(), False])

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        before, start, had_inner = self._stack.pop()
        if self._stack:
            self._stack[-1][2] = True
        self.records.append(PassRecord(info.name, len(self._stack), before, mod,
                                       time.perf_counter() - start, not had_inner))

    def leaves(self) -> list["PassRecord"]:
        """The passes that did the work (not the Sequentials around them), in order."""
        return [r for r in self.records if r.is_leaf]


class PassRecord:
    """One pass run: its name, nesting depth, the module before and after, seconds."""

    def __init__(self, name: str, depth: int, before: IRModule, after: IRModule, seconds: float,
                 is_leaf: bool):
        self.name, self.depth, self.before, self.after = name, depth, before, after
        self.seconds, self.is_leaf = seconds, is_leaf

    @property
    def changed(self) -> bool:
        return self.after is not self.before

    def __repr__(self) -> str:
        return f"PassRecord({self.name}, {self.seconds * 1e3:.2f} ms{', no change' if not self.changed else ''})"


class PassPrintingInstrument(PassInstrument):
    """Print the module before and/or after the named passes."""

    def __init__(self, print_before_pass_names: list[str] | None = None,
                 print_after_pass_names: list[str] | None = None):
        self.before = set(print_before_pass_names or ())
        self.after = set(print_after_pass_names or ())

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        if info.name in self.before:
            print(f"Before Running Pass: {info.name}\n{mod.script()}")

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if info.name in self.after:
            print(f"After Running Pass: {info.name}\n{mod.script()}")


def PrintIR(header: str = "", show_meta_data: bool = False) -> ModulePass:  # noqa: N802 - TVM name
    """A pass that prints the module and returns it unchanged (``show_meta_data``: large
    constants printed in full instead of as ``metadata[...]`` references)."""

    def print_ir(mod: IRModule, ctx: PassContext) -> IRModule:
        text = mod.script(show_meta=show_meta_data)
        print(f"PrintIR({header}):\n{text}" if header else text)
        return mod

    return ModulePass(print_ir, PassInfo(0, "PrintIR"))


