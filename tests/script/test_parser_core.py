"""TVM's ``tvm.script.parser.core``: ``Source`` and ``ExprEvaluator`` over Python's syntax tree."""

import inspect

import pytest

from minitvm.script.parser.core import doc_core as doc
from minitvm.script.parser.core.diagnostics import Source
from minitvm.script.parser.core.evaluator import ExprEvaluator


def _calc(text, names=None):
    return ExprEvaluator.eval(None, names or {}, Source(text).as_ast().body[0].value)


def sample(a, b):
    return a + b


def test_source_of_a_function_and_of_text():
    source = Source(sample)
    assert source.source == inspect.getsource(sample) and source.start_column == 0
    assert source.source_name == __file__ and source.start_line == inspect.getsourcelines(sample)[1]
    tree = source.as_ast()
    assert isinstance(tree, doc.Module) and isinstance(tree.body[0], doc.FunctionDef)
    assert [a.arg for a in tree.body[0].args.args] == ["a", "b"]
    assert Source("x + 1").source_name == "<str>"


def test_evaluator_computes_with_its_value_table():
    assert _calc("x * y - 3, x / y", {"x": 7, "y": 2}) == (11, 3.5)
    assert _calc("f(2, 3)", {"f": lambda u, v: u ** v}) == 8
    assert _calc("s[1:5:2]", {"s": [0, 1, 2, 3, 4, 5]}) == [1, 3]
    with pytest.raises(Exception, match="unknown name 'z'"):
        _calc("z + 1")
