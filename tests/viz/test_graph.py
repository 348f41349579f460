"""viz.graph draws a Relax function's dataflow."""

import sys
from pathlib import Path

import pytest

from minitvm import relax, tir, viz

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "relax"))
from models import build_linear_relu  # noqa: E402


def test_linear_relu_graph_golden():
    dot = viz.graph_dot(build_linear_relu())
    t = "&quot;float32&quot;"
    assert dot == (
        'digraph relax {\n  rankdir=TB\n  node [fontname="Helvetica" fontsize=12]\n'
        f'  n0 [label=<<b>x</b><br/><font point-size="10">R.Tensor((1, 784), {t})</font>> shape="ellipse" '
        'style="filled" fillcolor="#e7f5ff"]\n'
        f'  n1 [label=<<b>w</b><br/><font point-size="10">R.Tensor((784, 128), {t})</font>> shape="ellipse" '
        'style="filled" fillcolor="#e7f5ff"]\n'
        f'  n2 [label=<lv = call_tir <b>te_matmul</b><br/><font point-size="10">R.Tensor((1, 128), {t})</font>> '
        'shape="box" style="filled,rounded" fillcolor="#ffffff"]\n'
        '  n0 -> n2\n  n1 -> n2\n'
        f'  n3 [label=<lv1 = call_tir <b>te_relu</b><br/><font point-size="10">R.Tensor((1, 128), {t})</font>> '
        'shape="box" style="filled,rounded" fillcolor="#ffffff"]\n'
        '  n2 -> n3\n'
        f'  n4 [label=<gv = lv1<br/><font point-size="10">R.Tensor((1, 128), {t})</font>> shape="box" '
        'style="filled,rounded" fillcolor="#f8f9fa"]\n'
        '  n3 -> n4\n'
        '  n5 [label=<output> shape="doublecircle" width="0.3" fontsize="10"]\n'
        '  n4 -> n5\n}\n')


def test_graph_renders_and_shows_op_patterns_and_symbolic_shapes():
    n = tir.Var("n", "int64")
    mod = build_linear_relu(batch=n)
    gv = mod.get_global_var("te_relu")
    mod = mod.with_function(gv, mod[gv].with_attr("op_pattern", 0))
    dot = viz.graph_dot(mod)
    assert "<i>elementwise</i>" in dot and "#d3f9d8" in dot and "R.Tensor((n, 784)" in dot
    svg = viz.graph(mod).pipe(format="svg").decode()
    assert "te_matmul" in svg


def test_graph_of_a_prim_func_is_refused():
    mod = build_linear_relu()
    with pytest.raises(TypeError, match="draws Relax functions"):
        viz.graph_dot(mod, "te_relu")
    assert isinstance(mod["main"], relax.Function)
