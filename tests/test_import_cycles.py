"""Import circles and imports inside functions (issue 37, "Rooms that show the plan").

The graph: one node per module of ``minitvm/``, one edge per import that runs when the module is
imported (top level, class bodies, ``try``/``if`` blocks; not functions, not ``if TYPE_CHECKING``).
``from . import x`` and ``from pkg import x`` point at module ``x`` when it is one, else at the
package's ``__init__``; and since Python runs a package's ``__init__`` before any of its modules,
importing ``minitvm.tir.expr`` is an edge to ``minitvm.tir`` too (not to the importer's own
packages, which are already being imported).  A circle (strongly connected component) inside one
top-level package is reported as information; one that spans two (``ir`` -> ``tir`` -> ``script``
-> ``ir``) fails: the floors (tests/test_import_floors.py) say which way imports run, and a circle
between packages means one of them imports the other's half-loaded module.

Imports of minitvm's own modules inside functions hide such circles from this graph, so each one
says why it is there: ``# lazy: <reason>`` on its line or in the comment right above it or above
its group of imports (a cycle it avoids, an optional or heavy dependency, start-up time).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from package_source import package_files, parsed, source_lines
from test_import_floors import PACKAGE_DIR, _module_name, collect_imports

MODULES: dict[str, Path] = {_module_name(p): p for p in package_files()}
PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}
LAZY_REASON = re.compile(r"#\s*lazy:\s*\S")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_time_statements(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when a module with this body is imported."""
    found: list[ast.Import | ast.ImportFrom] = []
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found.append(stmt)
        elif isinstance(stmt, ast.If):
            found += import_time_statements(stmt.orelse if _is_type_checking(stmt.test) else stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            blocks = [stmt.body, stmt.orelse, stmt.finalbody] + [h.body for h in stmt.handlers]
            found += [imp for block in blocks for imp in import_time_statements(block)]
        elif isinstance(stmt, (ast.ClassDef, ast.With, ast.For, ast.While)):
            found += import_time_statements(stmt.body)
    return found


def _named_modules(node: ast.Import | ast.ImportFrom, importer: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = importer if importer in PACKAGES else importer.rpartition(".")[0]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
    return subs if len(subs) == len(node.names) else [base, *subs]


def _with_packages(module: str, importer: str) -> set[str]:
    """``module`` and the packages Python runs first, except the importer's own (already running)."""
    parts = module.split(".")
    chain = {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return {m for m in chain if m in MODULES and not (importer == m or importer.startswith(m + "."))}


@functools.cache
def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported minitvm module: line}, for imports that run at import time."""
    graph: dict[str, dict[str, int]] = {}
    for name, path in MODULES.items():
        edges = graph.setdefault(name, {})
        for node in import_time_statements(parsed(path).body):
            for target in _named_modules(node, name):
                if target.startswith("minitvm."):
                    for module in _with_packages(target, name):
                        edges.setdefault(module, node.lineno)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (a long import chain is deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            child = next(successors, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def import_circles() -> list[list[str]]:
    return [c for c in strongly_connected(import_graph()) if len(c) > 1]


def top_package(module: str) -> str:
    return module.split(".")[1]


def _describe(circle: list[str], graph: dict[str, dict[str, int]]) -> str:
    lines = []
    for module in circle:
        inside = {t: line for t, line in graph[module].items() if t in circle}
        lines += [f"  {MODULES[module].relative_to(PACKAGE_DIR.parent)}:{line}: {module} imports {t}"
                  for t, line in sorted(inside.items())]
    return "\n".join(lines)


def _comment_above(lines: list[str], line: int) -> list[str]:
    """The comment right above 1-based ``line`` (a block of ``#`` lines, nearest first), or above
    the group of import lines it belongs to: one reason may serve imports written together."""
    above = list(reversed(lines[: line - 1]))
    while above and above[0].lstrip().startswith(("from ", "import ")):
        above.pop(0)
    block = []
    for text in above:
        if not text.lstrip().startswith("#"):
            break
        block.append(text)
    return block


def test_strongly_connected_finds_circles():
    """A check of the checker, on a small graph: one circle of three, a self-free tail."""
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1, "d": 1}, "d": {}}
    assert sorted(strongly_connected(graph)) == [["a", "b", "c"], ["d"]]


def test_graph_sees_package_inits_and_relative_imports():
    graph = import_graph()
    # ``from ..tir.expr import ...`` in arith runs tir/__init__.py first
    assert {"minitvm.tir.expr", "minitvm.tir"} <= set(graph["minitvm.arith.analyzer"])
    # ``from . import op`` in tir/__init__.py is the module tir.op
    assert "minitvm.tir.op" in graph["minitvm.tir"]
    assert not any(t == "minitvm.tir" for t in graph["minitvm.tir.expr"])  # its own package is running


def test_no_import_circle_spans_two_packages():
    graph = import_graph()
    circles = import_circles()
    for circle in circles:  # information: circles inside one package (pytest -s shows them)
        packages = ", ".join(sorted({f"minitvm.{top_package(m)}" for m in circle}))
        print(f"import circle of {len(circle)} modules in {packages}: {', '.join(circle)}")
    spanning = [c for c in circles if len({top_package(m) for m in c}) > 1]
    assert not spanning, "import circles spanning packages (break them: move the code to the floor that " \
        "owns it, or import lazily with a '# lazy:' reason):\n" + \
        "\n\n".join(f"{sorted({top_package(m) for m in c})}:\n{_describe(c, graph)}" for c in spanning)


def test_every_import_inside_a_function_says_why():
    """An import of minitvm's own modules inside a function carries ``# lazy: <reason>`` on its
    line or in the comment right above it; everything else goes at the top of the module."""
    missing = []
    for imp in collect_imports():
        if not imp.lazy:
            continue
        lines = source_lines(PACKAGE_DIR.parent / imp.file)
        if not any(LAZY_REASON.search(line) for line in [lines[imp.line - 1], *_comment_above(lines, imp.line)]):
            missing.append(f"{imp.file}:{imp.line}: {lines[imp.line - 1].strip()}")
    assert not missing, (f"{len(missing)} imports inside functions without a '# lazy: <reason>' comment; move "
                         "each to the top of its module, or say why it cannot be:\n" + "\n".join(missing))
