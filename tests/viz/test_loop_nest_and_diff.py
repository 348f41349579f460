"""viz.loop_nest draws loops and blocks; viz.diff marks what changed."""

import re

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
    assert svg.startswith("<?xml") and "block Y" in svg and "for n, i, j, k" in svg


def test_diff_marks_changed_lines():
    d = viz.diff(add, _scheduled()["main"])
    assert d.changed
    tags = {tag for tag, _, _ in d.rows()}
    assert "changed" in tags or {"removed", "added"} <= tags
    text = str(d)
    assert "-    for i in range(64):" in text and "T.parallel(4)" in text
    markup = d._repr_html_()
    assert markup.startswith('<div class="minitvm-diff"') and "#d3f9d8" in markup
    assert "<details><summary>the whole text, side by side</summary>" in markup
    assert not viz.diff(add, add).changed and str(viz.diff(add, add)) == "(no change)"
    assert "no change" in viz.diff(add, add)._repr_html_()


def test_diff_shows_only_the_changed_hunks_stacked():
    before = "\n".join(f"line {k}" for k in range(40))
    after = before.replace("line 5\n", "line five\n").replace("line 30\n", "")
    d = viz.diff(before, after)
    hunks = d.hunks(context=2)
    assert [[mark + text for mark, text in h] for h in hunks] == [
        [" line 3", " line 4", "-line 5", "+line five", " line 6", " line 7"],
        [" line 28", " line 29", "-line 30", " line 31", " line 32"]]
    stacked = d._repr_html_().split("<details>")[0]
    assert "line 17" not in stacked and "⋯" in stacked  # far-away unchanged lines are left out
    assert "overflow-x:auto" in stacked  # long lines scroll inside the box, not the notebook
    # JupyterLab right-aligns and wraps table cells by its own rule: every cell says otherwise
    cells = re.findall(r"<t[dh]( style=\"[^\"]*\")?>", d._repr_html_())
    assert cells and all("text-align:left;white-space:pre;" in c for c in cells), cells[:3]


def test_loop_boxes_show_plain_extents():
    @T.prim_func
    def wide(A: T.Buffer((T.int64(8),), "float32"), B: T.Buffer((T.int64(8),), "float32")):
        for i in range(T.int64(8)):
            with T.block("B"):
                vi = T.axis.spatial(T.int64(8), i)
                B[vi] = A[vi]

    dot = viz.loop_nest_dot(wide)
    assert "<b>for i</b> in 8" in dot and "T.int64" not in dot


def test_pictures_fit_the_notebook_and_carry_a_title():
    picture = viz.loop_nest(BmmRelu, title="before")
    markup = picture._repr_html_()
    assert markup.startswith('<div style="font-weight:bold;margin:4px 0">before</div>')
    assert '<svg style="max-width:100%;height:auto"' in markup  # scaled down to the panel
    assert picture.source.startswith("digraph loop_nest")  # still graphviz's object underneath


def test_a_very_wide_picture_scrolls_in_its_own_box():
    from minitvm.viz.render import MAX_SCALED_PX, fit_svg

    wide = f'<svg width="{MAX_SCALED_PX}pt" height="10pt"></svg>'  # 4/3 px per pt: over the limit
    assert fit_svg(wide) == f'<div style="max-width:100%;overflow-x:auto">{wide}</div>'
    narrow = '<svg width="300pt" height="10pt"></svg>'
    assert fit_svg(narrow).startswith('<svg style="max-width:100%;height:auto"')


def _matmul(tiled: bool):
    @T.prim_func
    def mm(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    if not tiled:
        return mm
    sch = tir.Schedule(mm)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(i0, j0, i1, j1, k)
    return sch.mod


def test_iteration_order_naive_vs_tiled():
    naive = viz.iteration_order(_matmul(False))
    tiled = viz.iteration_order(_matmul(True))
    assert naive.steps == tiled.steps == 256
    assert naive.order[:5] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]  # row by row
    assert tiled.order[:5] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]  # a 4x4 tile first
    assert naive.svg() != tiled.svg() and naive.svg(0).count("#f1f3f5") == 256
    # the animation's frame after 16 touches: a full row against a 4x4 tile, so the pictures differ
    assert set(naive.order[:16]) == {(0, j) for j in range(16)}
    assert set(tiled.order[:16]) == {(i, j) for i in range(4) for j in range(4)}
    assert naive.svg(16) != tiled.svg(16) and naive.order != tiled.order
    assert sorted(naive.order) == sorted(tiled.order)  # the same cells, only the order differs
    box = tiled.widget()
    play, slider = box.children[0].children
    slider.value = 16
    assert box.children[1].value.count("#f1f3f5") == 256 - 16  # 16 cells coloured so far


def test_iteration_order_reads_and_errors():
    reads = viz.iteration_order(_matmul(False), buffer="B", kind="read")
    assert reads.order[:3] == [(0, 0), (1, 0), (2, 0)]  # k varies fastest: down a column of B
    import pytest

    with pytest.raises(ValueError, match="no buffer parameter named 'Z'"):
        viz.iteration_order(_matmul(False), buffer="Z")
