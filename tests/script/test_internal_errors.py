"""Errors that tell the truth: a bug inside minitvm's parsers surfaces as minitvm's
``InternalError`` (chained to the original exception, its traceback kept), while a mistake in
the script stays a ``TVMScriptError`` at the script's line (with no internal-error wording)."""
# TVMScript bodies are parsed, never run: names they use look undefined/unused to ruff.
# ruff: noqa: F821, F841

from __future__ import annotations

import traceback

import pytest

from minitvm.error import InternalError
from minitvm.script import TVMScriptError, from_source
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.script.parser import _TIRParser
from minitvm.script.relax_parser import _RelaxParser

PRIM = '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            A[vi] = A[vi] + T.float32(1)
'''

RELAX = '''
@R.function
def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
    y = R.add(x, x)
    return y
'''


def injected_bug(*args, **kwargs):
    return {}["no such key"]  # a deliberate bug, as a KeyError deep in minitvm would be


def _assert_internal(err: BaseException, line: str) -> None:
    assert isinstance(err, InternalError) and not isinstance(err, TVMScriptError)
    assert "bug in minitvm, not in your script" in str(err)
    assert line in str(err)  # the TVMScript line being parsed
    cause = err.__cause__
    assert isinstance(cause, KeyError) and cause.args == ("no such key",)
    frames = [fr.name for fr in traceback.extract_tb(cause.__traceback__)]
    assert frames[-1] == "injected_bug", frames


def test_injected_parser_bug_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(_TIRParser, "_declare_axis", injected_bug)
    with pytest.raises(InternalError) as excinfo:
        from_source(PRIM)
    _assert_internal(excinfo.value, "vi = T.axis.spatial(4, i)")
    # the decorator path (source read from this file) as well
    with pytest.raises(InternalError) as excinfo:
        @T.prim_func
        def g(A: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    A[vi] = T.float32(1)
    _assert_internal(excinfo.value, "vi = T.axis.spatial(4, i)")
    assert f"{__file__}:" in str(excinfo.value)


def test_injected_relax_parser_bug_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(_RelaxParser, "_new_var", injected_bug)
    with pytest.raises(InternalError) as excinfo:
        from_source(RELAX)
    _assert_internal(excinfo.value, "y = R.add(x, x)")


def _assert_user_error(excinfo, reason: str, line: str) -> None:
    err = excinfo.value
    assert reason in err.reason, err.reason
    assert line in str(err)
    assert "bug in minitvm" not in str(err) and not isinstance(err, InternalError)
    assert err.__cause__ is None and err.__suppress_context__


@pytest.mark.parametrize("body, reason, line", [
    ("A[vi] = Z[vi]", "unknown name 'Z'", "A[vi] = Z[vi]"),
    ("A[vi] = T.float32((1, 2)[5])", "tuple index out of range", "A[vi] = T.float32((1, 2)[5])"),
    ("A[vi] = T.float32({'a': 1}['b'])", "b", "A[vi] = T.float32({'a': 1}['b'])"),
])
def test_script_mistakes_stay_tvmscript_errors(body, reason, line):
    text = PRIM.replace("A[vi] = A[vi] + T.float32(1)", body)
    with pytest.raises(TVMScriptError) as excinfo:
        from_source(text)
    _assert_user_error(excinfo, reason, line)


def test_wrong_loop_count_of_t_grid_is_the_scripts_mistake():
    with pytest.raises(TVMScriptError) as excinfo:
        from_source(PRIM.replace("for i in range(4):", "for i, j in T.grid(4):"))
    _assert_user_error(excinfo, "1 loops", "for i, j in T.grid(4):")


def helper(n):
    return {4: "ok"}[n]  # the script's own Python: a KeyError here is the learner's


def test_a_failing_helper_of_the_script_is_the_scripts_mistake():
    with pytest.raises(TVMScriptError) as excinfo:
        from_source(PRIM.replace("T.float32(1)", "T.float32(len(helper(5)))"), {"helper": helper})
    _assert_user_error(excinfo, "5", "A[vi] = A[vi] + T.float32(len(helper(5)))")


def test_relax_script_mistake_stays_a_tvmscript_error():
    with pytest.raises(TVMScriptError) as excinfo:
        from_source(RELAX.replace("R.add(x, x)", "R.add(x, w)"))
    _assert_user_error(excinfo, "unknown name 'w'", "y = R.add(x, w)")
    # an op's own argument check (shapes that do not broadcast) is the script's too
    with pytest.raises(TVMScriptError) as excinfo:
        from_source(RELAX.replace("R.add(x, x)", "R.add(x, R.ones((4, 5), 'float32'))"))
    assert "bug in minitvm" not in str(excinfo.value)
    assert excinfo.value.lineno == 4


def test_tvmscript_decorator_still_hides_the_parsers_stack():
    with pytest.raises(TVMScriptError) as excinfo:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            y = R.add(x, w)
            return y
    frames = traceback.extract_tb(excinfo.tb)
    assert not any("script/parser/" in fr.filename or fr.filename.endswith("relax_parser.py") for fr in frames)
