"""Rich display: every object a learner looks at shows as highlighted HTML in Jupyter and plain text in a terminal."""

import html
import re

import numpy as np

import minitvm
from minitvm import relax, tir
from minitvm.testing.programs import BmmRelu

KEYWORD = '<span style="color:#7928a1;font-weight:bold">'  # the highlighter's style for Python keywords
NUMBER = '<span style="color:#0b6e99">'


def _visible_text(markup: str) -> str:
    """What a reader sees of an HTML snippet: the tags dropped, the entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _check_highlighted(obj, plain: str) -> None:
    """``obj._repr_html_()`` is ``plain`` with colours: the same text, with styled spans in a <pre>."""
    markup = obj._repr_html_()
    assert markup.startswith("<pre"), f"{type(obj).__name__}._repr_html_ is not a <pre> block"
    assert _visible_text(markup).rstrip("\n") == plain.rstrip("\n"), f"{type(obj).__name__} shows other text"
    assert NUMBER in markup, f"{type(obj).__name__}._repr_html_ is not highlighted"


def test_ir_objects_show_highlighted_and_plain(mlp, capsys):
    mod, _ = mlp
    func = BmmRelu["bmm_relu"]
    for obj in (mod, func, mod["forward"]):
        plain = obj.script()
        assert str(obj) == plain and plain.lstrip().startswith("# from minitvm.script import")
        _check_highlighted(obj, plain)
        assert KEYWORD + "def</span>" in obj._repr_html_()
        obj.show()  # outside Jupyter: the plain text on stdout
        assert capsys.readouterr().out.rstrip("\n") == plain.rstrip("\n")
    assert isinstance(mod["forward"], relax.Function) and "def forward(" in mod.script()


def test_schedule_and_trace_show_highlighted_and_plain(capsys):
    sch = tir.Schedule(BmmRelu)
    _, _, j, _ = sch.get_loops(sch.get_block("Y"))
    sch.split(j, factors=[None, 8])
    plain = sch.mod.script()
    assert "for n, i, j_0, j_1, k in T.grid(16, 128, 16, 8, 128):" in plain
    _check_highlighted(sch, plain)
    trace = sch.trace
    text = str(trace)
    sch.show()  # as TVM's: the module, then the trace that made it
    assert capsys.readouterr().out.rstrip("\n") == plain.rstrip("\n") + "\n" + text
    assert text.splitlines()[-1] == ("  l5, l6 = sch.split(loop=l3, factors=[None, 8], preserve_unit_iters=True, "
                                    "disable_predication=False)")
    _check_highlighted(trace, text)
    assert '<span style="color:#0b6e99">None</span>' in trace._repr_html_()  # None as a builtin
    trace.show()
    assert capsys.readouterr().out.rstrip("\n") == text


def test_executable_and_ndarray_show_html_and_plain(mlp):
    mod, spec = mlp
    ex = minitvm.compile(relax.get_pipeline("zero")(mod), minitvm.target.Target("llvm"))
    listing = ex.as_text()
    assert "@forward:" in listing and "call  fused_matmul_add_relu" in listing
    _check_highlighted(ex, listing)
    assert "Executable" in repr(ex) and "forward" in repr(ex)

    rng = np.random.default_rng(6)
    data = rng.standard_normal((3, 4)).astype("float32")
    nd = minitvm.nd.array(data)
    assert str(nd) == str(data)
    markup = nd._repr_html_()
    assert "shape=(3, 4)" in markup and "dtype=float32" in markup
    values = _visible_text(re.search(r"<pre[^>]*>(.*)</pre>", markup, re.S).group(1))
    shown = [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?", values)]
    np.testing.assert_allclose(shown, data.ravel(), rtol=1e-3, atol=1e-6)  # numpy prints 8 significant digits
