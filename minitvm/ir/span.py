"""Where an IR node came from in the user's source: TVM's ``tvm.ir.Span``.

The TVMScript parser stamps the statements a learner writes (buffer stores, blocks) with
their file and line, so that an error found later -- an out-of-bounds index proven while
lowering -- can say "at line 12 of my_kernel.py".  Spans never take part in structural
equality or hashing (fields named ``span`` are skipped), and a span is not a Node, so the
visitors and mutators pass it along untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Span"]


@dataclass(frozen=True)
class Span:
    """A position in a source file (1-based line and column), with the text of that line."""

    source_name: str
    line: int
    column: int = 0
    line_text: str = ""

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}"
