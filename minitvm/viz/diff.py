"""IR text with the changed lines marked: what a pass or a primitive did.

``diff(before, after)`` returns an object that prints as a unified diff in a terminal. In
Jupyter it shows only the changed hunks, stacked, with a few lines of context around each
(removed lines red, added lines green), and a toggle that opens the whole text side by side;
both sit in boxes that scroll sideways rather than widen the notebook.
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

    def hunks(self, context: int = 3) -> list[list[tuple[str, str]]]:
        """The changed places: per hunk, (mark, line) with mark ``-`` removed, ``+`` added or
        `` `` context, ``context`` unchanged lines around each change."""
        matcher = difflib.SequenceMatcher(a=self.before, b=self.after, autojunk=False)
        out = []
        for group in matcher.get_grouped_opcodes(context):
            hunk: list[tuple[str, str]] = []
            for op, a0, a1, b0, b1 in group:
                if op == "equal":
                    hunk += [(" ", x) for x in self.before[a0:a1]]
                    continue
                hunk += [("-", x) for x in self.before[a0:a1]]
                hunk += [("+", y) for y in self.after[b0:b1]]
            out.append(hunk)
        return out

    def _repr_html_(self) -> str:
        if not self.changed:
            return '<div class="minitvm-diff"><i>no change</i></div>'
        colours = {"-": "#ffe3e3", "+": "#d3f9d8", " ": ""}
        rows = []
        for k, hunk in enumerate(self.hunks()):
            if k:
                rows.append(f'<tr><td style="{_TD}color:#868e96">⋯</td><td style="{_TD}"></td></tr>')
            rows += [f'<tr class="{"removed" if m == "-" else "added" if m == "+" else "equal"}" '
                     f'style="background:{colours[m]}"><td style="{_TD}">{m}</td>'
                     f'<td style="{_TD}">{html.escape(line)}</td></tr>'
                     for m, line in hunk]
        legend = (f'<div style="font-size:12px"><span style="background:#ffe3e3">&nbsp;- {html.escape(self.labels[0])}'
                  f'&nbsp;</span> <span style="background:#d3f9d8">&nbsp;+ {html.escape(self.labels[1])}&nbsp;</span>'
                  "</div>")
        return (f'<div class="minitvm-diff" style="max-width:100%">{legend}'
                f'<div style="overflow-x:auto">{_TABLE}{"".join(rows)}</table></div>'
                f"<details><summary>the whole text, side by side</summary>"
                f'<div style="overflow-x:auto">{self._side_by_side()}</div></details></div>')

    def _side_by_side(self) -> str:
        colours = {"removed": ("#ffe3e3", ""), "added": ("", "#d3f9d8"),
                   "changed": ("#ffe3e3", "#d3f9d8"), "equal": ("", "")}
        cells = []
        for tag, left, right in self.rows():
            lc, rc = colours[tag]
            cells.append(f'<tr class="{tag}"><td style="{_TD}background:{lc}">{html.escape(left)}</td>'
                         f'<td style="{_TD}background:{rc}">{html.escape(right)}</td></tr>')
        head = "".join(f'<th style="{_TD}">{html.escape(x)}</th>' for x in self.labels)
        return f"{_TABLE}<tr>{head}</tr>{''.join(cells)}</table>"


#: one look for both tables: monospace lines, never wrapped (the box around them scrolls)
_TABLE = '<table style="font-family:monospace;white-space:pre;font-size:12px;text-align:left;line-height:1.25">'
#: and on every cell: JupyterLab's own rule for table cells (right-aligned, wrapped) beats the table's
_TD = "text-align:left;white-space:pre;padding:0 6px;"


def diff(before: Any, after: Any, labels: tuple[str, str] = ("before", "after")) -> IRDiff:
    """Compare two IR objects (or texts) line by line."""
    return IRDiff(before, after, labels)
