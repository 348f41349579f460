"""Mistakes in TVMScript are reported at the culprit: file, line, column, the line and a caret."""

import traceback

import pytest

from minitvm.script import TVMScriptError, from_source
from minitvm.script import tir as T


def _caret_under(err: TVMScriptError, text: str) -> None:
    """The message shows the source line and carets exactly under ``text``."""
    lines = str(err).splitlines()
    source_line = next(ln for ln in lines if ln.lstrip().startswith(f"{err.lineno} |"))
    caret_line = lines[lines.index(source_line) + 1]
    start = caret_line.index("^")
    assert source_line[start:start + len(text)] == text, "\n" + str(err)
    assert caret_line[start:start + len(text)] == "^" * len(text), "\n" + str(err)


def _check(excinfo, reason_part: str, line_text: str, culprit: str) -> TVMScriptError:
    err = excinfo.value
    assert reason_part in err.reason
    assert err.filename == __file__
    assert f"{__file__}:{err.lineno}:{err.col}" in str(err)
    with open(__file__) as f:
        actual_line = f.read().splitlines()[err.lineno - 1]
    assert actual_line.strip() == line_text
    assert actual_line[err.col - 1:].startswith(culprit)
    _caret_under(err, culprit)
    # a short traceback: none of the parser's own frames
    frames = traceback.extract_tb(excinfo.tb)
    assert not any("minitvm/script/parser/" in fr.filename for fr in frames)
    return err


def test_unknown_name():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = Z[i] + T.float32(1)  # noqa: F821
    _check(excinfo, "unknown name 'Z'", "A[i] = Z[i] + T.float32(1)  # noqa: F821", "Z")


def test_remap_kinds_do_not_match_loop_variables():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4, 4, 4), "float32")):
            for i, j, k in T.grid(4, 4, 4):
                with T.block("A"):
                    vi, vj, vk = T.axis.remap("SS", [i, j, k])
                    A[vi, vj, vk] = T.float32(0)
    err = _check(excinfo, "T.axis.remap kinds 'SS' do not match 3 loop variables",
                 'vi, vj, vk = T.axis.remap("SS", [i, j, k])', 'T.axis.remap("SS", [i, j, k])')
    assert err.reason == "T.axis.remap kinds 'SS' do not match 3 loop variables"


def test_wrong_number_of_indices():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
            for i, j in T.grid(4, 4):
                B[i, j] = A[i, j, 0]
    _check(excinfo, "buffer A has 2 dimensions, indexed with 3", "B[i, j] = A[i, j, 0]", "A[i, j, 0]")


def test_while_loop_is_unsupported():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            while True:
                A[0] = T.float32(0)
    _check(excinfo, "unsupported Python syntax: while loop", "while True:", "while")


def test_storing_another_dtype_converts_as_tvm_does():
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i] * 2

    store = f.body.body
    assert store.value.dtype == "float32" and type(store.value).__name__ == "Cast"
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def g(A: T.Buffer((4,), "int32"), H: T.handle):
            A[0] = H
    _check(excinfo, "cannot store a handle value into int32 buffer A", "A[0] = H", "H")


def test_loop_variable_count():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32")):
            for i, j in T.grid(4, 4, 4):
                A[i, j] = T.float32(0)
    _check(excinfo, "3 loops (T.grid(4, 4, 4)) but 2 loop variables", "for i, j in T.grid(4, 4, 4):", "i, j")


def test_axis_outside_a_block():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(0)
    _check(excinfo, "belong inside a T.block", "vi = T.axis.spatial(4, i)", "vi")


def test_reads_outside_a_block():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.reads(A[0:4])
            A[0] = T.float32(0)
    _check(excinfo, "T.reads belongs inside a T.block", "T.reads(A[0:4])", "T.reads(A[0:4])")


def test_unknown_attribute_of_T():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in T.gird(4):
                A[i] = T.float32(0)
    _check(excinfo, "T has no attribute 'gird'", "for i in T.gird(4):", "T.gird")


def test_non_boolean_if_condition():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                if i:
                    A[i] = T.float32(0)
    _check(excinfo, "an if condition must be a boolean expression, got int32", "if i:", "i")


def test_return_of_a_buffer_is_refused():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            return A
    _check(excinfo, "a prim func returns a scalar (return x is T.ret(x)), not Buffer('A', [4], 'float32')",
           "return A", "A")


def test_parameter_without_annotation():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A, B: T.Buffer((4,), "float32")):
            B[0] = T.float32(0)
    _check(excinfo, "parameter 'A' needs a type", "def f(A, B: T.Buffer((4,), \"float32\")):", "A")


def test_remap_of_a_non_loop_variable():
    with pytest.raises(TVMScriptError) as excinfo:
        @T.prim_func
        def f(A: T.Buffer((8,), "float32")):
            for i in range(4):
                with T.block("A"):
                    vi, = T.axis.remap("S", [i * 2])
                    A[vi] = T.float32(0)
    _check(excinfo, "binds loop variables of enclosing loops; i * 2 is not one",
           'vi, = T.axis.remap("S", [i * 2])', 'T.axis.remap("S", [i * 2])')


def test_from_source_errors_point_into_the_text():
    text = (
        "@T.prim_func\n"
        "def f(A: T.Buffer((4,), \"float32\")):\n"
        "    for i in range(4):\n"
        "        A[i] = A[i] + undefined_thing\n"
    )
    with pytest.raises(TVMScriptError) as excinfo:
        from_source(text)
    err = excinfo.value
    assert (err.filename, err.lineno, err.col) == ("<string>", 4, 23)
    assert str(err).splitlines() == [
        "unknown name 'undefined_thing'",
        "  --> <string>:4:23",
        "   |",
        " 4 | A[i] = A[i] + undefined_thing",
        "   |               ^^^^^^^^^^^^^^^",
    ]


def test_from_source_syntax_error():
    with pytest.raises(TVMScriptError) as excinfo:
        from_source("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"):\n    pass\n")
    assert "Python syntax error" in excinfo.value.reason
    assert excinfo.value.lineno == 2


@pytest.mark.parametrize("body, reason", [
    ('vi = T.axis.spatial(4, i)\n            vi = T.axis.spatial(4, i)', "block axis vi is defined twice"),
    ('T.reads(A[0:2])\n            T.reads(A[0:4])', "T.reads is given twice"),
    ('T.where(i < 2)\n            T.where(i < 3)', "T.where is given twice"),
    ('T.block_attr({"k": 1})\n            T.block_attr({"k": 2})', "block attribute 'k' is given two different values"),
    ('X = T.alloc_buffer((2,))\n            X = T.alloc_buffer((2,))', "buffer X is allocated twice"),
])
def test_a_block_says_each_thing_once(body, reason):
    text = f'''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("b"):
            {body}
            T.evaluate(0)
'''
    with pytest.raises(TVMScriptError, match=reason):
        from_source(text)
