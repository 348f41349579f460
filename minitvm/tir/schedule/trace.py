"""The trace: every primitive a schedule applied, printable as Python that replays it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BlockRV", "LoopRV", "ExprRV", "Instruction", "Trace"]


class BlockRV:
    """A reference to a block (by name, in one function) that survives schedule steps."""

    def __init__(self, name: str, func_name: str):
        self.name, self.func_name = name, func_name

    def __repr__(self) -> str:
        return f"BlockRV({self.name!r})"


class LoopRV:
    """A reference to a loop, by its loop variable, in one function."""

    def __init__(self, loop_var: Any, func_name: str):
        self.loop_var, self.func_name = loop_var, func_name

    def __repr__(self) -> str:
        return f"LoopRV({self.loop_var.name!r})"


class ExprRV(int):
    """A sampled integer (a tile size, a choice) that the trace remembers as a decision."""


@dataclass
class Instruction:
    kind: str
    inputs: dict[str, Any]
    outputs: list[Any]


def _lambda_text(fn: Any) -> str:
    """An index map as ``lambda i0, i1: (...)`` text, by applying it to fresh variables."""
    import inspect

    from ..expr import Var

    names = list(inspect.signature(fn).parameters)
    params = [Var(n) for n in names]
    result = fn(*params)
    result = result if isinstance(result, (tuple, list)) else (result,)
    body = ", ".join(e.script() if hasattr(e, "script") else repr(e) for e in result)
    return f"lambda {', '.join(names)}: ({body},)" if len(result) == 1 else f"lambda {', '.join(names)}: ({body})"


class Trace:
    """The instructions in order; ``str(trace)`` / ``trace.show()`` is runnable Python."""

    def __init__(self) -> None:
        self.insts: list[Instruction] = []

    def append(self, inst: Instruction) -> None:
        self.insts.append(inst)

    def copy(self) -> "Trace":
        t = Trace()
        t.insts = list(self.insts)
        return t

    def __len__(self) -> int:
        return len(self.insts)

    def as_python(self) -> list[str]:
        names: dict[int, str] = {}

        def name_of(x: Any) -> str:
            if isinstance(x, (BlockRV, LoopRV, ExprRV)):
                key = id(x)
                if key not in names:
                    prefix = "b" if isinstance(x, BlockRV) else "l" if isinstance(x, LoopRV) else "v"
                    names[key] = f"{prefix}{len(names)}"
                return names[key]
            if isinstance(x, (list, tuple)):
                inner = ", ".join(name_of(e) for e in x)
                return f"[{inner}]"
            if callable(x):
                return _lambda_text(x)
            return repr(x)

        lines = []
        for inst in self.insts:
            args = ", ".join(name_of(v)[1:-1] if k.startswith("*") else f"{k}={name_of(v)}"
                             for k, v in inst.inputs.items())
            call = f"sch.{inst.kind}({args})"
            if inst.outputs:
                outs = ", ".join(name_of(o) for o in inst.outputs)
                lines.append(f"{outs} = {call}")
            else:
                lines.append(call)
        return lines

    def __str__(self) -> str:
        return "\n".join(["# from minitvm import tir", "# sch = tir.Schedule(mod)"] + self.as_python())

    def show(self) -> None:
        print(str(self))

    def _repr_html_(self) -> str:
        """The trace as highlighted Python in Jupyter (the same highlighter as TVMScript)."""
        from minitvm.script.printer import to_html  # upward call, lazily, as Node._repr_html_ does

        return to_html(str(self))

    def apply_to_schedule(self, sch: Any, remove_postproc: bool = False) -> None:
        """Replay every instruction on another schedule (of an equal function)."""
        mapping: dict[int, Any] = {}

        def resolve(x: Any) -> Any:
            if isinstance(x, (BlockRV, LoopRV, ExprRV)):
                return mapping.get(id(x), x)
            if isinstance(x, list):
                return [resolve(e) for e in x]
            return x

        for inst in self.insts:
            positional = [resolve(e) for k, v in inst.inputs.items() if k.startswith("*") for e in v]
            inputs = {k: resolve(v) for k, v in inst.inputs.items() if not k.startswith("*")}
            if inst.kind == "sample_perfect_tile":
                inputs["decision"] = [int(o) for o in inst.outputs]
            elif inst.kind == "sample_categorical":
                inputs["decision"] = inst.outputs[0].index
            result = getattr(sch, inst.kind)(*positional, **inputs)
            outs = result if isinstance(result, (list, tuple)) else [result] if result is not None else []
            for old, new in zip(inst.outputs, outs):
                mapping[id(old)] = new
