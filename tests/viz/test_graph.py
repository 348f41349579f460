"""viz.graph draws a Relax function's dataflow."""

import sys
from pathlib import Path

import pytest

from minitvm import relax, tir, transform, viz

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


def test_fused_graph_golden():
    """After FuseOps: the call of the fused function is tinted by its pattern and tied to its cluster."""
    mod = transform.Sequential([relax.transform.AnnotateTIROpPattern(), relax.transform.FuseOps()])(
        build_linear_relu())
    t = "&quot;float32&quot;"
    x, w, out = (f'<font point-size="10">R.Tensor({shape}, {t})</font>'
                 for shape in ("(1, 784)", "(784, 128)", "(1, 128)"))
    param = 'shape="ellipse" style="filled" fillcolor="#e7f5ff"'
    box = 'shape="box" style="filled,rounded"'
    assert viz.graph_dot(mod) == (
        'digraph relax {\n  rankdir=TB\n  node [fontname="Helvetica" fontsize=12]\n  compound=true\n'
        f'  n0 [label=<<b>x</b><br/>{x}> {param}]\n'
        f'  n1 [label=<<b>w</b><br/>{w}> {param}]\n'
        f'  n2 [label=<lv = call <b>fused_te_matmul_te_relu</b><br/><i>fused, out_ewise_fusable</i><br/>{out}> '
        f'{box} fillcolor="#ffc9c9"]\n'
        '  n0 -> n2\n  n1 -> n2\n'
        f'  n3 [label=<gv = lv<br/>{out}> {box} fillcolor="#f8f9fa"]\n'
        '  n2 -> n3\n'
        '  n4 [label=<output> shape="doublecircle" width="0.3" fontsize="10"]\n'
        '  n3 -> n4\n'
        '  subgraph cluster_fused_te_matmul_te_relu {\n'
        '    label="fused_te_matmul_te_relu (out_ewise_fusable)" fontname="Helvetica" '
        'style="rounded,dashed,filled" fillcolor="#ffc9c966"\n'
        f'    n5 [label=<<b>x</b><br/>{x}> {param}]\n'
        f'    n6 [label=<<b>w</b><br/>{w}> {param}]\n'
        f'    n7 [label=<lv = call_tir <b>te_matmul</b><br/><i>out_ewise_fusable</i><br/>{out}> {box} '
        'fillcolor="#ffc9c9"]\n'
        '    n5 -> n7\n    n6 -> n7\n'
        f'    n8 [label=<gv = call_tir <b>te_relu</b><br/><i>elementwise</i><br/>{out}> {box} fillcolor="#d3f9d8"]\n'
        '    n7 -> n8\n'
        '    n9 [label=<output> shape="doublecircle" width="0.3" fontsize="10"]\n'
        '    n8 -> n9\n'
        '  }\n'
        '  n2 -> n5 [lhead="cluster_fused_te_matmul_te_relu" style="dotted" arrowhead="none" color="#868e96"]\n'
        '}\n')
    svg = viz.graph(mod).pipe(format="svg").decode()
    assert 'class="cluster"' in svg and "fused_te_matmul_te_relu (out_ewise_fusable)" in svg
