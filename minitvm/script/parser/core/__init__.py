"""TVM's ``tvm.script.parser.core``: the parser's source reader (``diagnostics.Source``), its
Python syntax tree (``doc_core``, Python's own ``ast`` here) and its expression evaluator."""

from . import diagnostics, doc_core, evaluator

__all__ = ["diagnostics", "doc_core", "evaluator"]
