"""The printer's Doc tree and its Python layout (``minitvm.script.printer.doc`` / ``doc_printer``),
and access paths (``minitvm_ffi.access_path``), as TVM's ``tvm.script.printer`` behaves."""

import ast

import pytest

from minitvm.script.printer.doc import (
    AssignDoc,
    CallDoc,
    ClassDoc,
    ExprStmtDoc,
    FunctionDoc,
    IdDoc,
    IfDoc,
    LambdaDoc,
    LiteralDoc,
    OperationDoc,
    OperationKind,
    ScopeDoc,
    StmtBlockDoc,
    TupleDoc,
)
from minitvm.script.printer.doc_printer import to_python_script
from minitvm_ffi.access_path import AccessKind, AccessPath

K = OperationKind
x, y, z = IdDoc("x"), IdDoc("y"), IdDoc("z")


def op(kind, *operands):
    return OperationDoc(kind, list(operands))


@pytest.mark.parametrize("doc, text", [
    (op(K.Pow, op(K.Pow, x, y), z), "(x ** y) ** z"),
    (op(K.Pow, op(K.USub, x), op(K.USub, y)), "(-x) ** -y"),
    (op(K.Sub, x, op(K.Sub, y, z)), "x - (y - z)"),
    (op(K.Sub, op(K.Sub, x, y), z), "x - y - z"),
    (op(K.Or, op(K.And, x, y), z), "x and y or z"),
    (op(K.Not, op(K.IfThenElse, x, y, z)), "not (y if x else z)"),
    (op(K.IfThenElse, x, op(K.IfThenElse, y, y, y), z), "y if y else y if x else z"),
    (LambdaDoc([x, y], op(K.Add, z, z)).call(x, y), "(lambda x, y: z + z)(x, y)"),
    (op(K.Add, x, y)[z][op(K.Add, z, z)].attr("name"), "(x + y)[z][z + z].name"),
    (LiteralDoc('a"\n'), r'"a\"\n"'),
    (LiteralDoc(2.0), "2.0"),
    (LiteralDoc(True), "True"),
])
def test_expression_layout(doc, text):
    assert to_python_script(doc) == text


def test_printed_expressions_mean_what_the_tree_says():
    # Python evaluates the printed text to the value the tree computes (parentheses right)
    env = {"x": 7, "y": 3, "z": 2}
    cases = [(op(K.Sub, IdDoc("x"), op(K.Sub, IdDoc("y"), IdDoc("z"))), 7 - (3 - 2)),
             (op(K.Pow, op(K.Mult, IdDoc("x"), IdDoc("y")), IdDoc("z")), (7 * 3) ** 2),
             (op(K.FloorDiv, IdDoc("x"), op(K.Mod, IdDoc("y"), IdDoc("z"))), 7 // (3 % 2)),
             (op(K.LShift, IdDoc("x"), op(K.Add, IdDoc("y"), IdDoc("z"))), 7 << (3 + 2))]
    for doc, want in cases:
        assert eval(compile(ast.parse(to_python_script(doc), mode="eval"), "<doc>", "eval"), env) == want


def test_statements_and_comments():
    body = [AssignDoc(IdDoc("y"), op(K.Add, x, LiteralDoc(1)))]
    func = FunctionDoc(IdDoc("f"), [AssignDoc(x, None, IdDoc("int"))], [IdDoc("wrap")], LiteralDoc(None), body)
    func.comment = "line 1\n\nline 3"
    cls = ClassDoc(IdDoc("C"), [], [func])
    assert to_python_script(cls) == (
        'class C:\n    @wrap\n    def f(x: int) -> None:\n        """\n        line 1\n\n        line 3\n'
        '        """\n        y = x + 1')
    stmt = IfDoc(x, [], [ExprStmtDoc(y)])
    stmt.comment = "why"
    assert to_python_script(stmt) == "# why\nif x:\n    pass\nelse:\n    y"
    assign = AssignDoc(TupleDoc([x, y]), z)
    assign.comment = "two\nlines"
    with pytest.raises(ValueError, match="cannot have newline"):
        to_python_script(assign)
    assert to_python_script(ScopeDoc(None, CallDoc(IdDoc("ctx")), [])) == "with ctx():\n    pass"


def test_constructors_refuse_what_tvm_refuses():
    with pytest.raises(ValueError):
        AssignDoc(x, None, None)
    with pytest.raises(ValueError):
        AssignDoc(TupleDoc([x, y]), z, IdDoc("int"))
    with pytest.raises(ValueError):
        IfDoc(x, [], [])
    with pytest.raises(RuntimeError, match="iterable"):
        list(x)


def test_access_paths():
    root = AccessPath.root()
    p = root.attr("body").array_item(2).map_item("k").attr_missing("x")
    assert str(p) == '<root>.body[2]["k"][<missing:"x">]' and p.depth == 4
    assert p.step.kind == AccessKind.ATTR_MISSING and str(p.parent) == '<root>.body[2]["k"]'
    assert root.attr("body") == AccessPath.root().attr("body")
    assert hash(root.attr("body")) == hash(AccessPath.root().attr("body"))
    assert root.attr("body").is_prefix_of(p) and not p.is_prefix_of(root.attr("body"))
    assert [str(s) for s in p.to_steps()] == [".body", "[2]", '["k"]', '[<missing:"x">]']
    with pytest.raises(ValueError):
        AccessPath()


def _named(name, path):
    doc = IdDoc(name)
    doc.source_paths = [AccessPath.root().attr(path)]
    return doc


def test_underline_deepest_prefix_with_context_and_line_numbers():
    stmts = [ExprStmtDoc(_named(f"v{i}", "a" if i == 6 else "b")) for i in range(10)]
    deeper = IdDoc("v_deep")
    deeper.source_paths = [AccessPath.root().attr("a").attr("x")]
    block = StmtBlockDoc(stmts + [ExprStmtDoc(deeper)])
    want = AccessPath.root().attr("a").attr("x").array_item(0)
    # the deeper path wins over "a", and 1 line of context each side is kept
    assert to_python_script(block, print_line_numbers=True, num_context_lines=1, path_to_underline=[want]) == (
        "(... 9 lines skipped ...)\n10 v9\n11 v_deep\n   ^^^^^^")
    # without the deeper Doc, "a" is the best prefix; a lone skipped line prints as itself
    block = StmtBlockDoc(stmts)
    assert to_python_script(block, num_context_lines=2, path_to_underline=[want]) == (
        "(... 4 lines skipped ...)\nv4\nv5\nv6\n^^\nv7\nv8\nv9")
