# ruff: noqa: E501  (golden text has the long lines TVM prints)
"""The TVMScript printer: TVM-like text for functions, statements and expressions."""

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source, script, to_html
from minitvm.script import tir as T
from minitvm.testing.programs import mm_relu

MM_RELU_TEXT = '''\
# from minitvm.script import tir as T

@T.prim_func
def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    T.func_attr({"tir.noalias": True})
    # with T.block("root"):
    Y = T.alloc_buffer((128, 128))
    for i, j, k in T.grid(128, 128, 128):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(Y[vi, vj])
            with T.init():
                Y[vi, vj] = T.float32(0.0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(Y[vi, vj])
            T.writes(C[vi, vj])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0.0))'''


def test_mm_relu_text():
    assert mm_relu.script() == MM_RELU_TEXT
    assert str(mm_relu) == MM_RELU_TEXT


def test_expressions_print_with_minimal_parentheses():
    i, j, k = tir.Var("i", "int32"), tir.Var("j", "int32"), tir.Var("k", "int32")
    x, y = tir.Var("x", "float32"), tir.Var("y", "float32")
    assert (i * 4 + j).script() == "i * 4 + j"
    assert ((i + j) * 4).script() == "(i + j) * 4"
    assert (i - (j - k)).script() == "i - (j - k)"
    assert (i - j - k).script() == "i - j - k"
    assert (i // 4 % 8).script() == "i // 4 % 8"
    assert (i // (j * k)).script() == "i // (j * k)"
    assert ((i < j) & (j < k)).script() == "i < j and j < k"
    assert ((i < j) | (j < k) & (k < 3)).script() == "i < j or j < k and k < 3"
    assert (((i < j) | (j < k)) & (k < 3)).script() == "(i < j or j < k) and k < 3"
    assert (~(i == j)).script() == "not i == j"
    assert (-x * y).script() == "-x * y"
    assert (-(x + y)).script() == "-(x + y)"
    assert (x / (y * y)).script() == "x / (y * y)"
    assert tir.truncdiv(i, j).script() == "T.Div(i, j)"  # TVM prints an integer Div so
    assert tir.truncmod(i, j).script() == "T.truncmod(i, j)"
    assert tir.max(x, 0.0).script() == "T.max(x, T.float32(0.0))"
    assert tir.exp(x).script() == "T.exp(x)"
    assert tir.abs(x).script() == "T.abs(x)"
    assert tir.if_then_else(i < 3, x, y).script() == "T.if_then_else(i < 3, x, y)"
    assert T.Select(i < 3, x, y).script() == "T.Select(i < 3, x, y)"
    assert tir.Cast("float32", i).script() == 'T.Cast("float32", i)'
    assert tir.const(5, "int64").script() == "T.int64(5)"
    assert tir.const(-5, "int32").script() == "-5"
    assert (i * -5).script() == "i * -5"
    assert tir.const(True, "bool").script() == "T.bool(True)"
    assert tir.const(1.5, "float16").script() == "T.float16(1.5)"
    assert tir.const(float("inf"), "float32").script() == 'T.float32("inf")'
    intrin = T.call_intrin("float32", "tir.my_intrin", x, 2)
    assert intrin.script() == 'T.call_intrin("float32", "tir.my_intrin", x, 2)'


def test_different_variables_with_one_name_get_suffixes():
    A = tir.decl_buffer((4, 4), "float32", "A")
    outer, inner = tir.Var("i", "int32"), tir.Var("i", "int32")
    store = tir.BufferStore(A, tir.const(0.0, "float32"), (outer, inner))
    loop = tir.For(outer, tir.const(0), tir.const(4), "serial",
                   tir.For(inner, tir.const(0), tir.const(4), "serial", store))
    f = tir.PrimFunc((tir.Var("A", "handle"),), {}, loop, None, {"global_symbol": "f"})
    f = tir.PrimFunc((f.params[0],), {f.params[0]: A}, loop, None, {"global_symbol": "f"})
    text = f.script(show_header=False)
    assert "for i, i_1 in T.grid(4, 4):" in text
    assert "A[i, i_1] = T.float32(0.0)" in text
    assert_structural_equal(from_source(text), f)


def test_sibling_loops_reuse_names_and_odd_names_are_sanitised():
    A = tir.decl_buffer((4,), "float32", "A")
    i1, i2 = tir.Var("i.outer", "int32"), tir.Var("i.outer", "int32")
    zero, four = tir.const(0), tir.const(4)
    body = tir.seq(tir.For(i1, zero, four, "serial", tir.BufferStore(A, tir.const(1.0), (i1,))),
                   tir.For(i2, zero, four, "parallel", tir.BufferStore(A, tir.const(2.0), (i2,))))
    handle = tir.Var("A", "handle")
    f = tir.PrimFunc((handle,), {handle: A}, body, None, {"global_symbol": "f"})
    text = f.script(show_header=False)
    assert "for i_outer in range(4):" in text
    assert "for i_outer in T.parallel(4):" in text
    assert_structural_equal(from_source(text), f)


def test_bare_statements_and_lowered_ir():
    A = tir.decl_buffer((16,), "float32", "A")
    i, n, x = tir.Var("i", "int32"), tir.Var("n", "int32"), tir.Var("x", "float32")
    body = tir.LetStmt(x, tir.BufferLoad(A, (i,)) * 2.0, tir.IfThenElse(
        i < n, tir.BufferStore(A, x, (i,)),
        tir.Evaluate(T.call_extern("int32", "puts", tir.StringImm("out of range")))))
    text = tir.AssertStmt(n > 0, "n must be positive", tir.For(i, tir.const(0), tir.const(16), "serial", body)
                          ).script()
    # a statement printed alone scopes nothing after it, so (as TVM) its root takes the `with`
    # form; inside, the let ends its body and prints concisely
    assert text == '''\
with T.Assert(n > 0, "n must be positive"):
    for i in range(16):
        x: T.float32 = A[i] * T.float32(2.0)
        if i < n:
            A[i] = x
        else:
            T.call_extern("int32", "puts", "out of range")'''
    let = tir.Let(x, tir.const(1.0), x + x)
    assert let.script() == "T.Let(x + x, where={x: T.float32(1.0)})"
    alloc = tir.Allocate(A, tir.BufferStore(A, tir.const(0.0), (tir.const(0),)))
    assert alloc.script() == 'with T.allocate([16], "float32", "global") as A:\n    A[0] = T.float32(0.0)'


def test_explicit_root_block_when_it_cannot_be_implied():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        with T.block("root"):
            T.reads()
            T.writes(A[0:4])
            for i in range(4):
                A[i] = T.float32(0)

    text = f.script()
    assert 'with T.block("root"):' in text and "# with" not in text
    assert_structural_equal(from_source(text), f)


def test_html_is_highlighted_and_escaped():
    html_text = to_html(mm_relu)
    assert html_text.startswith("<pre") and html_text.endswith("</pre>")
    assert '<span style="color:#7928a1;font-weight:bold">for</span>' in html_text
    assert "&quot;float32&quot;" in html_text and "<span" in html_text
    assert mm_relu._repr_html_() == html_text
    # stripping the markup gives back the text
    import html
    import re
    assert html.unescape(re.sub(r"<[^>]+>", "", html_text)) == mm_relu.script()


def test_show_prints_outside_jupyter(capsys):
    mm_relu.show()
    assert capsys.readouterr().out.strip() == MM_RELU_TEXT


def test_script_of_other_objects():
    A = tir.decl_buffer((4, 8), "int8", "A")
    assert script(A) == 'T.Buffer((4, 8), "int8")'
    assert script(A[0:2, 3]) == "A[0:2, 3]"
    assert script(tir.Range(tir.const(1), tir.const(4))) == "I.Range(1, 5)"  # an IR node, as TVM
