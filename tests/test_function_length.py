"""No function in minitvm/ runs over 80 lines unless its docstring says why (issue 15: a newcomer
reads a primitive as a few named steps)."""

from __future__ import annotations

import ast

from package_source import PACKAGE_DIR, package_files, parsed

LIMIT = 80


def test_no_function_over_80_lines_without_a_reason():
    long = []
    for path in package_files():
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                reason = "lines" in (ast.get_docstring(node) or "")  # e.g. "... is 95 lines because ..."
                if lines > LIMIT and not reason:
                    long.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 80 lines; split them into named steps or say why in the docstring:\n" + \
        "\n".join(long)
