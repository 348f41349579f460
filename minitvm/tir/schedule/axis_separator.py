"""set_axis_separator: group a buffer's axes into separately flattened physical axes.

``axis_separators=[1]`` on a 2-D buffer says that axis 0 and axis 1 flatten into two
physical dimensions instead of one (TVM uses it for texture memory).  The primitive only
changes the buffer's declaration (its ``T.alloc_buffer``, or the function's signature for a
parameter) and every use of it; ``T.match_buffer`` views of it get the same separators when
they have as many axes (else as many zeros, as TVM does).  On the CPU the groups are laid
out one after another, so the compiled code reads the same memory as before.
"""

from __future__ import annotations

from typing import Any

from ...ir import replace
from ..buffer import Buffer
from ..function import PrimFunc
from ..stmt import Block
from .block_annotate import BufferReplacer
from .error import ScheduleError
from .tree import walk_stmts

__all__ = ["set_axis_separator", "defining_site"]


def defining_site(func: PrimFunc, buffer: Buffer) -> tuple[str, Block | None]:
    """Where ``buffer`` is declared: ("alloc", block), ("match", block) or ("param", None)."""
    for s, _ in walk_stmts(func.body):
        if isinstance(s, Block):
            if any(b is buffer for b in s.alloc_buffers):
                return "alloc", s
            if any(m.buffer is buffer for m in s.match_buffers):
                return "match", s
    if any(b is buffer for b in func.buffer_map.values()):
        return "param", None
    raise ScheduleError(f"buffer {buffer.name} is neither allocated in the function nor one of its parameters")


def set_axis_separator(func: PrimFunc, buffer: Buffer, axis_separators: list[Any]) -> PrimFunc:
    """``func`` with ``buffer`` declared (and used) with the given axis separators."""
    seps = tuple(int(getattr(a, "value", a)) for a in axis_separators)
    for a in seps:
        if not 0 <= a <= buffer.ndim:
            raise ScheduleError(f"axis separator {a} of buffer {buffer.name} is outside its "
                                f"{buffer.ndim} axes")
    if list(seps) != sorted(seps):
        raise ScheduleError(f"axis separators of buffer {buffer.name} must be in increasing order, "
                            f"got {list(seps)}")
    kind, _ = defining_site(func, buffer)
    if kind == "match":
        raise ScheduleError(f"cannot set the axis separators of {buffer.name}: it is defined by a "
                            "T.match_buffer of a block; it must be a function parameter or allocated "
                            "by a block")
    new = replace(buffer, axis_separators=seps)

    def on_match(view: Buffer, source: Buffer) -> Buffer:
        same_rank = view.ndim == source.ndim
        return replace(view, axis_separators=source.axis_separators if same_rank
                       else (0,) * len(source.axis_separators))

    body = BufferReplacer({id(buffer): new}, on_match).visit(func.body)
    buffer_map = {p: (new if b is buffer else b) for p, b in func.buffer_map.items()}
    return replace(func, body=body, buffer_map=buffer_map)
