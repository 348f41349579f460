"""``script()``/``show()`` take TVM's options: the ones minitvm's printer acts on work, the rest
are accepted at TVM's defaults and refused (NotImplementedError naming them) otherwise."""

from __future__ import annotations

import pytest

from minitvm import relax, tir
from minitvm.script import tir as T


@T.prim_func
def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[vi]


def test_indent_spaces_and_line_numbers_change_the_text():
    plain = copy.script().splitlines()
    two = copy.script(indent_spaces=2).splitlines()
    assert len(plain) == len(two)
    for a, b in zip(plain, two):
        depth = (len(a) - len(a.lstrip(" "))) // 4
        assert b == " " * (2 * depth) + a.lstrip(" ")
    numbered = copy.script(print_line_numbers=True).splitlines()
    width = len(str(len(plain)))
    assert numbered == [f"{k:>{width}} {line}" for k, line in enumerate(plain, 1)]


def test_name_renames_the_printed_function():
    assert "def renamed(A: T.Buffer" in copy.script(name="renamed")


def test_tvm_defaults_are_accepted_and_change_nothing():
    assert copy.script(tir_prefix="T", ir_prefix="I", syntax_sugar=True, show_object_address=False,
                       verbose_expr=False, num_context_lines=-1) == copy.script()


@pytest.mark.parametrize("option", [dict(tir_prefix="tir"), dict(syntax_sugar=False),
                                    dict(show_object_address=True)])
def test_other_values_are_refused_naming_the_option(option):
    (key, value), = option.items()
    with pytest.raises(NotImplementedError, match=f"script\\({key}={value!r}\\)"):
        copy.script(**option)


def test_verbose_expr_declares_the_free_variables_and_buffers_of_a_fragment():
    n, a = tir.Var("n", "int32"), tir.SizeVar("a", "float32")
    A = tir.decl_buffer((n, 8), "float32", name="A")
    store = tir.BufferStore(A, tir.Cast("float32", n) + a, [n - 1, 0])
    assert store.script(verbose_expr=True) == (
        'n = T.int32()\nA = T.Buffer((n, 8))\na = T.float32(is_size_var=True)\n'
        "A[n - 1, 0] = T.Cast(\"float32\", n) + a")
    assert (n + 1).script(verbose_expr=True) == "n = T.int32()\nn + 1"
    assert (n + 1).script(verbose_expr=False) == "n + 1"
    assert A.script(verbose_expr=True) == "n = T.int32()\nA = T.Buffer((n, 8))\nA"
    assert copy.script(verbose_expr=True) == copy.script()  # a function defines everything it uses
    # a Relax fragment: its free dimensions, then its free variables with their struct info
    x = relax.Var("x", relax.TensorStructInfo([tir.Var("m", "int64"), 3], "float32"))
    assert relax.op.sin(x).script(verbose_expr=True) == 'm = T.int64()\nx: R.Tensor((m, 3), dtype="float32")\nR.sin(x)'
    assert relax.op.sin(x).script() == "R.sin(x)"


def test_an_unknown_option_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected option 'colour'"):
        copy.script(colour="red")


def test_show_refuses_pygments_styles_and_black(capsys):
    copy.show()
    assert "def copy" in capsys.readouterr().out
    with pytest.raises(NotImplementedError, match="style='monokai'"):
        copy.show(style="monokai")
    with pytest.raises(NotImplementedError, match="black_format"):
        copy.show(black_format=True)
