"""Index-map lambdas read back from a trace's text: arithmetic on the parameters, nothing run."""

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.tir import IndexMap
from minitvm.tir.lambda_text import LambdaTextError, parse_index_lambda
from minitvm.tir.schedule.trace import _lambda_text

MAPS = {
    "transpose": lambda i, j: (j, i),
    "split": lambda i, j: (i // 4, j, i % 4),
    "fuse": lambda i, j: (i * 8 + j,),
    "helpers": lambda i, j: (tir.max(i - 1, 0), tir.floordiv(j, 3), tir.truncmod(i, 5), tir.min(i, j),
                             tir.truncdiv(i, 3)),
    "select": lambda i, j: (tir.if_then_else(i < 4, j, i),),
    "cast": lambda i, j: (tir.Cast("int64", i) * tir.const(4, "int64") + tir.Cast("int64", j),),
    "negative": lambda i, j: (-i + 7, j),
    "separator": lambda i, j: (i, IndexMap.AXIS_SEPARATOR, j),
}


@pytest.mark.parametrize("name", sorted(MAPS))
def test_printed_index_maps_read_back_to_the_same_map(name):
    fn = MAPS[name]
    text = _lambda_text(fn)
    again = parse_index_lambda(text)
    # (int32 indices, as the trace printed them)
    build = IndexMap.from_func_with_separators if name == "separator" else IndexMap.from_func
    want, got = (build(f, index_dtype="int32") for f in (fn, again))
    assert_structural_equal(got, want)
    assert _lambda_text(again) == text


def test_int64_index_maps_and_pad_values_read_back():
    m = IndexMap.from_func(lambda i, j: (i // 16, j, i % 16), index_dtype="int64")
    assert "T.int64(16)" in repr(m)
    assert_structural_equal(IndexMap.from_func(parse_index_lambda(repr(m))), m)
    pad = parse_index_lambda("lambda i, j: (T.float32(-1.5),)")
    assert float(pad(tir.Var("i"), tir.Var("j"))[0].value) == -1.5


@pytest.mark.parametrize("text, culprit", [
    ('lambda i, j: __import__("os").system("touch MARKER")', "__import__"),
    ("lambda i, j: ().__class__.__base__.__subclasses__()", "__subclasses__"),
    ("lambda i, j: i.__class__", "i.__class__"),
    ("lambda i, j: (lambda: j)()", "lambda"),
    ("lambda i, j: [k for k in (i, j)]", "k for k"),
    ("lambda i, j: system(i)", "system"),
    ("lambda i, j: T.Buffer((4,))", "T.Buffer"),
    ('lambda i, j: ("x", j)', "'x'"),
    ("lambda i, j: i ** 99999999", "**"),
    ("lambda i, j=print: (i,)", "plain parameters"),
    ("lambda *i: i", "plain parameters"),
    ("lambda i, j: k", "k"),
    ('__import__("os")', "not a lambda"),
    ("lambda i: (i,", "not a lambda"),
])
def test_anything_but_index_arithmetic_is_refused_and_named(text, culprit, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LambdaTextError) as err:
        parse_index_lambda(text)
    message = str(err.value)
    assert culprit in message and repr(text)[:40] in message
    assert not (tmp_path / "MARKER").exists()


def test_a_parsed_map_checks_its_arity():
    with pytest.raises(TypeError, match="takes 2 indices, got 1"):
        parse_index_lambda("lambda i, j: (j, i)")(tir.Var("i"))
