"""``from_source(text, data_only=True)``: TVMScript read as data (a tuning database's workloads).

Everything the printer writes parses back in this mode (the round trip is the oracle); any
other Python in the text is refused at its line, and nothing of it runs.
"""

import pytest

from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.testing.programs import ALL_FUNCS, BmmReluTarget, MLCModule, TwoFunctions


@pytest.mark.parametrize("name", sorted(ALL_FUNCS))
def test_every_printed_prim_func_parses_as_data(name):
    func = ALL_FUNCS[name]
    assert_structural_equal(from_source(func.script(), data_only=True), func)


@pytest.mark.parametrize("mod", [TwoFunctions, BmmReluTarget, MLCModule], ids=["two", "bmm", "mlc"])
def test_printed_modules_parse_as_data_before_and_after_the_zero_pipeline(mod):
    for m in (mod, relax.get_pipeline("zero")(mod)):
        assert_structural_equal(from_source(m.script(), data_only=True), m)


def test_every_call_the_printer_writes_is_a_name_data_mode_reads():
    # data mode reads only the names T lists in __all__; the printer's call tables name what it
    # writes as T.<name>(...): a name in one and not the other makes printed text unreadable as data
    from minitvm.script import printer
    from minitvm.script import tir as T

    written = {*printer._UNARY_CALLS.values(), *printer._BINARY_CALLS.values(), *printer._INT_CALLS.values()}
    assert written - set(T.__all__) == set()


def test_relax_constants_with_inf_and_nan_parse_as_data():
    """The Relax printer writes a non-finite element as float("inf"): the one builtin data mode reads."""
    import numpy as np

    from minitvm.script import relax as R

    @R.function
    def f(x: R.Tensor((3,), "float32")):
        return R.add(x, R.const(np.array([1.5, np.inf, -np.inf], "float32")))

    text = f.script(show_meta=True)
    assert 'float("inf")' in text
    assert_structural_equal(from_source(text, data_only=True), f)


RUN = '__import__("os").system("touch MARKER")'
TIR = '''@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    T.evaluate({})
'''
RELAX = '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        y = {}
        return y
'''


@pytest.mark.parametrize("template, expr, culprit", [
    (TIR, RUN, "__import__ is not TVMScript;"),
    (TIR, "().__class__.__base__.__subclasses__()", "().__class__ is not TVMScript (a private or special attribute)"),
    (TIR, f"(lambda: {RUN})()", "lambda: __import__"),
    (TIR, f"[{RUN} for _ in range(1)]", "for _ in range(1)] is not TVMScript"),
    (TIR, 'f"{A}"', "is not TVMScript"),
    (TIR, "(x := 1)", "(x := 1) is not TVMScript"),
    (TIR, 'T.sys.modules["os"]', "T.sys is not TVMScript (not a TVMScript name)"),
    (TIR, "T.np", "T.np is not TVMScript"),
    (TIR, "A.vload", "A.vload is not TVMScript (a method of an IR node)"),
    (TIR, "T.prim_func(A)", "T.prim_func is not TVMScript (a function that runs or registers code)"),
    (TIR, 'getattr(T, "sys")', "getattr is not TVMScript"),
    (TIR, "2 ** 10 ** 9", "an integer power of more than"),
    (TIR, '"touch MARKER" * 3', "arithmetic on str and int"),
    (RELAX, RUN, "__import__ is not TVMScript"),
    (RELAX, "R.emit_te(R.add, x)", "R.emit_te is not TVMScript"),
    (RELAX, 'R.register("relax.add")', "R.register is not TVMScript"),
    (RELAX, "cls.__init__", "cls.__init__ is not TVMScript"),
    (RELAX, 'R.match_cast(x, R.Tensor(("[c for c in ().__class__.__subclasses__()]",), "float32"))',
     "is not TVMScript"),
])
def test_python_that_is_not_tvmscript_is_refused_at_its_line(template, expr, culprit, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = template.format(expr)
    with pytest.raises(TVMScriptError) as err:
        from_source(text, data_only=True)
    assert culprit in err.value.reason and "a file is parsed as data, never run" in err.value.reason
    assert err.value.lineno == text.splitlines().index(next(ln for ln in text.splitlines() if expr in ln)) + 1
    assert not (tmp_path / "MARKER").exists()


def test_without_data_only_python_in_the_text_is_evaluated_as_tvm_does():
    """TVM's from_source evaluates the expressions of its text; minitvm's keeps that by default."""
    func = from_source(TIR.format("T.int32(sum(k for k in range(4)))"))
    assert "T.evaluate(6)" in func.script()
    with pytest.raises(TVMScriptError, match="sum is not TVMScript"):
        from_source(TIR.format("T.int32(sum(k for k in range(4)))"), data_only=True)
