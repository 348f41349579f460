"""Side-by-side IR text with the changed lines marked: what a pass or a primitive did.

``diff(before, after)`` returns an object that prints as a unified diff in a terminal and
shows as a two-column HTML table in Jupyter (removed lines red on the left, added lines
green on the right).
"""

from __future__ import annotations

import difflib
import html
from typing import Any

__all__ = ["diff", "IRDiff"]


def _text(x: Any) -> str:
    return x if isinstance(x, str) else x.script()


class IRDiff:
    """The difference between two IR texts (from nodes, modules or strings)."""

    def __init__(self, before: Any, after: Any, labels: tuple[str, str] = ("before", "after")):
        self.before = _text(before).splitlines()
        self.after = _text(after).splitlines()
        self.labels = labels

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def rows(self) -> list[tuple[str, str, str]]:
        """(tag, left line, right line) with tag one of equal, removed, added, changed."""
        rows: list[tuple[str, str, str]] = []
        matcher = difflib.SequenceMatcher(a=self.before, b=self.after, autojunk=False)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            if op == "equal":
                rows += [("equal", x, x) for x in self.before[a0:a1]]
            elif op == "delete":
                rows += [("removed", x, "") for x in self.before[a0:a1]]
            elif op == "insert":
                rows += [("added", "", y) for y in self.after[b0:b1]]
            else:
                left, right = self.before[a0:a1], self.after[b0:b1]
                for k in range(max(len(left), len(right))):
                    rows.append(("changed", left[k] if k < len(left) else "", right[k] if k < len(right) else ""))
        return rows

    def __str__(self) -> str:
        lines = difflib.unified_diff(self.before, self.after, *self.labels, lineterm="")
        return "\n".join(lines) or "(no change)"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colours = {"removed": ("#ffe3e3", ""), "added": ("", "#d3f9d8"),
                   "changed": ("#ffe3e3", "#d3f9d8"), "equal": ("", "")}
        cells = []
        for tag, left, right in self.rows():
            lc, rc = colours[tag]
            cells.append(f'<tr class="{tag}"><td style="background:{lc}">{html.escape(left)}</td>'
                         f'<td style="background:{rc}">{html.escape(right)}</td></tr>')
        head = "".join(f"<th>{html.escape(x)}</th>" for x in self.labels)
        return ('<table class="minitvm-diff" style="font-family:monospace;white-space:pre;'
                f'font-size:12px;text-align:left"><tr>{head}</tr>{"".join(cells)}</table>')


def diff(before: Any, after: Any, labels: tuple[str, str] = ("before", "after")) -> IRDiff:
    """Compare two IR objects (or texts) line by line."""
    return IRDiff(before, after, labels)
