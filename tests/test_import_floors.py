"""The import floors of minitvm (README, "How the code is laid out"; design notes, section 3).

Every import in ``minitvm/`` -- at module top level and inside functions, plus
``importlib.import_module("literal")`` -- is read with ``ast`` and must point at the same
floor or a lower one.  Two upward calls are allowed by design, each in one spot and lazily
(listed in ``ALLOWED_UPWARD``); violations not yet fixed are listed in ``KNOWN_VIOLATIONS``
with the reason, so that the list only shrinks.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from package_source import PACKAGE_DIR, package_files, parsed

import minitvm

REPO_DIR = PACKAGE_DIR.parent

# Floors, bottom up.  A module may import from its own floor and from the floors below it.
FLOORS: list[tuple[str, ...]] = [
    # node base, NDArray, pass infra; error and base (TVM's tvm.base) hold the error classes
    ("ir", "runtime", "transform", "error", "base", "contrib", "support", "eras", "rpc"),
    ("tir", "arith"),  # arith (simplifier, bounds) sits with tir: each uses the other's nodes
    ("te", "target"),
    ("topi",),
    ("relax",),
    ("script",),
    ("driver",),  # minitvm.build / minitvm.compile: Relax pipeline + TIR lowering + codegen + VM
    # testing (random inputs, model zoo, TIR builders, fuzzer) serves tests, chapters and viz and
    # uses every layer below, so it lives on the top floor beside the tools built on everything
    ("viz", "grade", "cli", "testing"),
    # meta_schedule (the tuner) measures compiled candidates (driver), tunes Relax models and draws
    # its results with viz: a tool on top of everything
    ("meta_schedule", "s_tir"),  # s_tir: TVM 0.27's home of schedules and the tuner (minitvm.eras)
]
FLOOR_OF = {pkg: level for level, pkgs in enumerate(FLOORS) for pkg in pkgs}
TOP = len(FLOORS)  # ``minitvm/__init__.py`` (the package root) re-exports everything

# The two upward calls the design allows: each is made lazily (inside a function), once.
# (file, imported module) -> why.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("minitvm/ir/node.py", "minitvm.script"):
        "every IR node prints itself (.script()/.show()/_repr_html_) through the TVMScript printer; "
        "ir.node.script_printer() is the one place that imports it",
    ("minitvm/tir/__init__.py", "minitvm.target"):
        "tvm.tir.build / tvm.tirx.build is TVM's name for compiling TIR; the compiling is the target "
        "floor's work, so tir.build reaches up once, lazily",
    # PassContext config naming passes: needs no upward import today -- passes declare their
    # config keys with transform.register_pass_config when their module is imported.
}

# Upward imports not yet fixed, each owned by another area; remove an entry with its import.
# (file, imported module) -> why it is still there.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    file: str  # repository-relative path
    line: int
    source: str  # importing module, dotted
    target: str  # imported module, dotted
    lazy: bool  # inside a function


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, package: str) -> list[str]:
    """The dotted modules a ``from ... import ...`` reads (a name may be a submodule)."""
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    if module == "minitvm":  # ``from minitvm import relax``: the floor is the named subpackage's
        return [_root_name(alias.name) for alias in node.names]
    return [module]


def _root_name(name: str) -> str:
    """The module behind ``minitvm.<name>``: a subpackage, a lazy alias of the root
    (``minitvm.nd`` is ``minitvm.runtime.ndarray``), or the root itself."""
    if name in minitvm._LAZY:
        return minitvm._LAZY[name][0]
    if name == "__version__":  # a constant the root defines before importing anything
        return "minitvm.ir"
    return f"minitvm.{name}" if (PACKAGE_DIR / name).is_dir() or (PACKAGE_DIR / f"{name}.py").exists() else "minitvm"


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _nodes_and_scope(tree: ast.AST):
    """Every node of ``tree`` with whether it sits inside a function (one walk of the tree)."""
    stack = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        yield node, inside
        inner = inside or isinstance(node, _FUNCTIONS)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


@functools.cache
def collect_imports() -> tuple[Import, ...]:
    """Every import of a minitvm module in the package (parsed once per test process)."""
    found: list[Import] = []
    for path in package_files():
        source = _module_name(path)
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        rel = path.relative_to(REPO_DIR).as_posix()
        for node, inside in _nodes_and_scope(parsed(path)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = _resolve(node, package)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "import_module" and node.args
                  and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                name = node.args[0].value
                targets = [package + name if name.startswith(".") else name]
            else:
                continue
            found.extend(Import(rel, node.lineno, source, t, inside)
                         for t in targets if t == "minitvm" or t.startswith("minitvm."))
    return tuple(found)


def floor_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return TOP
    if parts[1] not in FLOOR_OF:
        raise AssertionError(f"{module}: package minitvm.{parts[1]} has no floor; add it to FLOORS "
                             "in tests/test_import_floors.py and to the README")
    return FLOOR_OF[parts[1]]


def floor_name(module: str) -> str:
    level = floor_of(module)
    return "minitvm (root)" if level == TOP else f"{module.split('.')[1]} (floor {level})"


def _key(imp: Import) -> tuple[str, str]:
    return imp.file, ".".join(imp.target.split(".")[:2])


def upward_imports() -> list[Import]:
    return [imp for imp in collect_imports() if floor_of(imp.target) > floor_of(imp.source)]


def test_every_package_has_a_floor():
    for path in PACKAGE_DIR.iterdir():
        name = path.stem
        if (path.is_dir() and (path / "__init__.py").exists()) or (path.suffix == ".py" and name != "__init__"):
            floor_of(f"minitvm.{name}")


def test_collector_sees_imports_at_every_level():
    """A check of the checker: it finds top-level, function-level and relative imports."""
    imports = collect_imports()
    assert any(i.file == "minitvm/ir/node.py" and i.lazy and i.target.startswith("minitvm.script")
               for i in imports)
    assert any(i.file == "minitvm/tir/stmt.py" and not i.lazy and i.target.startswith("minitvm.tir.expr")
               for i in imports)


def test_no_import_runs_up_the_floors():
    problems = [
        f"{imp.file}:{imp.line}: {imp.source} ({floor_name(imp.source)}) imports {imp.target} "
        f"({floor_name(imp.target)}), a higher floor"
        for imp in upward_imports()
        if _key(imp) not in ALLOWED_UPWARD and _key(imp) not in KNOWN_VIOLATIONS
    ]
    assert not problems, ("imports that run up the floors (ir, runtime, transform -> tir -> te, target "
                          "-> topi -> relax -> script -> driver -> viz, grade, cli, testing):\n"
                          + "\n".join(problems))


def test_allowed_upward_calls_are_lazy_and_in_one_spot():
    upward = upward_imports()
    for key, why in ALLOWED_UPWARD.items():
        spots = [imp for imp in upward if _key(imp) == key]
        where = ", ".join(f"{imp.file}:{imp.line}" for imp in spots)
        assert len(spots) == 1, f"{key[0]} imports {key[1]} in {len(spots)} places ({where}); the design " \
                                f"allows one ({why})"
        assert spots[0].lazy, f"{where}: the upward import of {key[1]} must be inside a function"


def test_known_violations_are_still_there():
    """An allowlisted violation that was fixed must leave the list (it may not come back)."""
    present = {_key(imp) for imp in upward_imports()}
    stale = [f"{file} -> {target}" for file, target in KNOWN_VIOLATIONS if (file, target) not in present]
    assert not stale, "fixed; remove from KNOWN_VIOLATIONS in tests/test_import_floors.py: " + ", ".join(stale)
