"""Checks TVM's schedule tests use (``tvm.tir.schedule.testing``): a schedule's trace, printed
as Python or serialized to JSON and replayed on a fresh schedule, must rebuild the same module
and the same trace."""

from __future__ import annotations

from typing import Any, Sequence

from ...ir import IRModule, assert_structural_equal
from ..function import PrimFunc
from .schedule import Schedule
from .trace import Trace


def assert_structural_equal_ignore_global_symbol(func1: PrimFunc, func2: PrimFunc, *args: Any,
                                                 **kwargs: Any) -> None:
    """``assert_structural_equal`` with both functions' ``global_symbol`` set to ``main``."""
    assert_structural_equal(func1.with_attr("global_symbol", "main"),
                            func2.with_attr("global_symbol", "main"), *args, **kwargs)


def verify_trace_roundtrip(sch: Schedule, mod: PrimFunc | IRModule, *, debug_mask: str | int = "all",
                           text_format: str | Sequence[str] = ("python", "json")) -> Schedule:
    """Replay ``sch``'s trace on a new schedule of ``mod`` through each text format ("python":
    exec the printed trace; "json": ``Trace.apply_json_to_schedule``); assert the replay
    reaches ``sch.mod`` and prints the same trace.  Returns the last replayed schedule."""
    if not isinstance(text_format, str):
        for fmt in text_format:
            new_sch = verify_trace_roundtrip(sch, mod, debug_mask=debug_mask, text_format=fmt)
        return new_sch
    if text_format not in ("python", "json"):
        raise ValueError(f"verify_trace_roundtrip: unknown text format {text_format!r} (python or json)")
    trace = sch.trace
    if trace is None:
        raise ValueError("verify_trace_roundtrip: the schedule records no trace")
    new_sch = Schedule(mod, debug_mask=debug_mask)
    if text_format == "json":
        Trace.apply_json_to_schedule(trace.as_json(), new_sch)
    else:
        from ... import tir  # lazy: the tir package loads its schedule modules lazily; at the top, a cycle

        namespace = dict(vars(tir))  # the printed trace names tir's functions (index maps)
        exec("\n".join(trace.as_python()), namespace, {"sch": new_sch})  # noqa: S102 - the trace's own text
    assert_structural_equal(new_sch.mod, sch.mod)
    assert trace.as_python() == new_sch.trace.as_python(), "the replayed trace prints differently"
    return new_sch
