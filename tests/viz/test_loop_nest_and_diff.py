"""viz.loop_nest draws loops and blocks; viz.diff marks what changed."""

from minitvm import tir, viz
from minitvm.script import tir as T
from minitvm.testing.programs import BmmRelu


@T.prim_func
def add(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi] + T.float32(1)


def _scheduled():
    sch = tir.Schedule(add)
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 16])
    sch.parallel(i0)
    sch.vectorize(i1)
    return sch.mod


def test_loop_nest_dot_golden():
    dot = viz.loop_nest_dot(_scheduled())
    assert dot == (
        'digraph loop_nest {\n  rankdir=TB\n  node [fontname="Helvetica" fontsize=12]\n'
        '  n0 [label=<<b>for i_0</b> in 4 <i>parallel</i>> shape="box" style="filled,rounded" '
        'fillcolor="#ffd8a8"]\n'
        '  n1 [label=<<b>for i_1</b> in 16 <i>vectorized</i>> shape="box" style="filled,rounded" '
        'fillcolor="#b2f2bb"]\n'
        '  n0 -> n1\n'
        '  n2 [label=<<b>block B</b><br/><font point-size="10">vi=i_0 * 16 + i_1<br/>reads A[vi]<br/>'
        'writes B[vi]</font>> shape="note" style="filled" fillcolor="#fff9db"]\n'
        '  n1 -> n2\n}\n')


def test_loop_nest_renders_svg_for_jupyter():
    svg = viz.loop_nest(BmmRelu).pipe(format="svg").decode()
    assert svg.startswith("<?xml") and "block Y" in svg and "for k" in svg


def test_diff_marks_changed_lines():
    d = viz.diff(add, _scheduled()["main"])
    assert d.changed
    tags = {tag for tag, _, _ in d.rows()}
    assert "changed" in tags or {"removed", "added"} <= tags
    text = str(d)
    assert "-    for i in range(64):" in text and "T.parallel(4)" in text
    html_table = d._repr_html_()
    assert html_table.startswith('<table class="minitvm-diff"') and "#d3f9d8" in html_table
    assert not viz.diff(add, add).changed and str(viz.diff(add, add)) == "(no change)"
