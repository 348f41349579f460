"""The primitives' docstrings are lessons a learner reads, so their examples must be true: each
"before" function parses, the schedule code shown runs on it, and gives the "after" function."""

import inspect
import re

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T

# the primitives the chapters use: each documents preconditions, its result and an example
TAUGHT = ["get_block", "get_loops", "split", "fuse", "reorder", "parallel", "vectorize", "unroll", "bind",
          "cache_read", "cache_write", "compute_at", "reverse_compute_at", "compute_inline",
          "reverse_compute_inline", "decompose_reduction", "blockize", "tensorize", "rfactor",
          "transform_layout", "sample_perfect_tile", "sample_categorical", "sample_compute_location"]
# and more, in the same shape
MORE = ["annotate", "unannotate", "get_producers", "get_consumers", "add_unit_loop", "set_scope", "storage_align",
        "reindex", "transform_block_layout", "reorder_block_iter_var", "unsafe_set_dtype", "merge", "pad_einsum",
        "decompose_padding", "set_axis_separator", "get_child_blocks", "get_output_blocks", "reindex_cache_read",
        "reindex_cache_write", "fuse_reduction_epilogue", "rolling_buffer", "cache_index", "annotate_buffer_access",
        "enter_postproc", "read_at", "write_at"]


def _code_blocks(doc: str) -> list[str]:
    """The ``.. code-block:: python`` blocks of a docstring, dedented."""
    blocks = []
    for match in re.finditer(r"\.\. code-block:: python\n\n((?:[ \t]+\S.*\n|[ \t]*\n)+)", doc + "\n"):
        blocks.append(inspect.cleandoc("\n" + match.group(1)))
    return blocks


def _examples():
    for name in TAUGHT + MORE:
        blocks = _code_blocks(inspect.getdoc(getattr(tir.Schedule, name)) or "")
        yield pytest.param(name, blocks, id=name)


@pytest.mark.parametrize("name,blocks", list(_examples()))
def test_the_example_in_the_docstring_is_true(name, blocks):
    doc = inspect.getdoc(getattr(tir.Schedule, name))
    returns_none = inspect.signature(getattr(tir.Schedule, name)).return_annotation in (None, "None")
    assert "Returns\n-------" in doc or returns_none, f"Schedule.{name}: say what it returns"
    assert "Preconditions:" in doc, f"Schedule.{name}: say what it needs"
    assert blocks, f"Schedule.{name}: no example (a '.. code-block:: python' block)"
    funcs = [b for b in blocks if b.startswith("@T.prim_func")]
    steps = [b for b in blocks if "sch = tir.Schedule(" in b]
    assert len(steps) == 1, f"Schedule.{name}: one block creates the schedule and applies {name}"
    assert f"sch.{name}(" in steps[0], f"Schedule.{name}: its example does not call it"
    namespace = {"tir": tir, "T": T}
    for text in funcs:
        func = from_source(text)
        namespace[re.search(r"def (\w+)", text).group(1)] = func
    exec(steps[0], namespace)  # noqa: S102 - our own docstring
    if len(funcs) >= 2:  # a before and an after: the primitive must turn one into the other
        got = namespace["sch"].mod["main"]
        want = namespace[re.search(r"def (\w+)", funcs[-1]).group(1)]
        assert_structural_equal(got, want.with_attr("global_symbol", got.attrs.get("global_symbol")))
