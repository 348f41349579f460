"""One dispatch style over IR trees (design notes, section 4): a class that picks a method by
the node's class calls it ``visit_<node>_`` (``tir.functor.method_name``), as TVM's functors
do.  This test reads minitvm's source with ``ast`` and finds every ``getattr(self, <a string
made from type(x).__name__>)``: the only ones left are walkers over *Python* syntax trees,
whose methods are named after the ``ast`` classes (``eval_Call``, as ``ast.NodeVisitor``
names ``visit_Call``)."""

from __future__ import annotations

import ast
import re

from package_source import PACKAGE_DIR, package_files, parsed, source

#: file -> why it may build method names from class names itself
PYTHON_AST_WALKERS = {
    "minitvm/script/parser/__init__.py": "evaluates Python ast nodes of a TVMScript function (eval_<ast class>)",
}


def _builds_name_from_type(node: ast.AST) -> bool:
    """``"prefix_" + type(x).__name__`` or ``f"prefix_{type(x).__name__}"``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "__name__" and isinstance(sub.value, ast.Call) \
                and isinstance(sub.value.func, ast.Name) and sub.value.func.id == "type":
            return True
    return False


def dispatch_sites() -> list[str]:
    """``file:line`` of every getattr(self, <name from a class name>) in minitvm."""
    found = []
    for path in package_files():
        tree = parsed(path)
        rel = path.relative_to(PACKAGE_DIR.parent).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self" \
                    and _builds_name_from_type(node.args[1]):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_only_python_ast_walkers_name_methods_after_classes_themselves():
    sites = dispatch_sites()
    other = [s for s in sites if s.split(":")[0] not in PYTHON_AST_WALKERS]
    assert other == [], ("these dispatch on f'<prefix>_{type(node).__name__}'; name the methods "
                         f"visit_<node>_ and look them up with tir.functor.method_name: {other}")
    assert {s.split(":")[0] for s in sites} == set(PYTHON_AST_WALKERS)  # the list stays true


def test_the_check_sees_the_old_style():
    src = 'class E:\n    def go(self, e):\n        return getattr(self, "expr_" + type(e).__name__)(e)\n'
    call = next(n for n in ast.walk(ast.parse(src))
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "getattr")
    assert _builds_name_from_type(call.args[1])
    new = ast.parse("getattr(self, method_name(type(e)), None)").body[0].value
    assert not _builds_name_from_type(new.args[1])


def test_no_method_is_left_in_the_old_naming():
    """A method still spelled ``expr_Add`` / ``stmt_For`` / ``v_Call`` (say, from a branch written
    before the rename) would never be called now: the lookups ask for ``visit_<node>_``."""
    old = re.compile(r"^\s+def ((?:expr|stmt|v)_[A-Z]\w*)\(", re.M)
    stale = [f"{path.relative_to(PACKAGE_DIR.parent).as_posix()}: {m.group(1)}"
             for path in package_files() for m in old.finditer(source(path))]
    assert stale == [], f"rename these to visit_<node>_ (tir.functor.method_name of the node's class): {stale}"
