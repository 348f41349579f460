"""No argument accepted and ignored: TVM's buffer arguments ``offset_factor`` (recorded, printed,
checked when a view is lowered), ``align`` (recorded, printed, honoured by allocations),
``buffer_type`` / ``data`` (refused by name unless left at their defaults), and
``check_well_formed`` of ``@T.prim_func``."""
# TVMScript bodies are parsed, never run: names they use look undefined/unused to ruff.
# ruff: noqa: F821, F841

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.ir import assert_structural_equal, structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import ir as I
from minitvm.script import tir as T

TILES = '''
@T.prim_func
def f(A: T.Buffer((8, 32), "float32"), B: T.Buffer((8, 32), "float32")):
    for i, j in T.grid(8, 2):
        with T.block("tile"):
            vi, vj = T.axis.remap("SS", [i, j])
            S = T.match_buffer(A[vi, vj * 16:vj * 16 + 16], (16,), "float32", offset_factor=16)
            D = T.match_buffer(B[vi, vj * 16:vj * 16 + 16], (16,), "float32", offset_factor=16)
            for k in range(16):
                D[k] = S[k] * T.float32(2)
'''


def _views(func):
    found = []
    minitvm.tir.functor.post_order_visit(
        func.body, lambda n: found.extend(m.buffer for m in getattr(n, "match_buffers", ())))
    return found


def test_offset_factor_is_recorded_printed_and_read_back():
    f = from_source(TILES)
    assert [b.offset_factor for b in _views(f)] == [16, 16]
    text = f.script()
    assert text.count("offset_factor=16") == 2
    assert_structural_equal(from_source(text), f)
    # a view without it is another buffer
    assert not structural_equal(from_source(TILES.replace(", offset_factor=16", "")), f)


def test_offset_factor_holds_when_lowered_and_the_tiles_compute():
    lib = minitvm.build(from_source(TILES), target="llvm")
    a = np.random.default_rng(3).standard_normal((8, 32)).astype("float32")
    out = minitvm.nd.array(np.zeros_like(a))
    lib["f"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2, rtol=1e-6)


def test_a_view_that_breaks_its_offset_factor_is_refused_when_lowered():
    # tiles starting every 8 elements: not a multiple of 16
    text = TILES.replace("vj * 16:vj * 16 + 16", "vj * 8:vj * 8 + 16")
    with pytest.raises(ValueError, match="not provably a multiple of the view's offset_factor 16"):
        minitvm.build(from_source(text), target="llvm")
    minitvm.build(from_source(text.replace(", offset_factor=16", ", offset_factor=8")), target="llvm")


def test_align_is_recorded_printed_read_back_and_computes():
    # TVM's data_alignment: 64 (its default) prints nothing, another value prints as align=
    text = TILES.replace('A: T.Buffer((8, 32), "float32")', 'A: T.Buffer((8, 32), "float32", align=32)').replace(
        '"float32", offset_factor=16)', '"float32", align=64, offset_factor=16)')
    f = from_source(text)
    assert f.buffer_map[f.params[0]].data_alignment == 32 and [b.data_alignment for b in _views(f)] == [64, 64]
    printed = f.script()
    assert 'T.Buffer((8, 32), "float32", align=32)' in printed and "align=64" not in printed
    assert_structural_equal(from_source(printed), f)
    assert not structural_equal(f, from_source(TILES))
    lib = minitvm.build(f, target="llvm")
    a = np.random.default_rng(5).standard_normal((8, 32)).astype("float32")
    out = minitvm.nd.array(np.zeros_like(a))
    lib["f"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2, rtol=1e-6)
    with pytest.raises(TVMScriptError, match="align takes an int"):
        from_source(TILES.replace('"float32", offset_factor=16)', '"float32", align=1.5)', 1))


@pytest.mark.parametrize("old, new, reason", [
    ('(16,), "float32", offset_factor=16)', '(16,), "float32", buffer_type="auto")',
     "T.match_buffer(buffer_type='auto')"),
    ('(16,), "float32", offset_factor=16)', '(16,), "float32", data=A.data)', "T.match_buffer(data=...)"),
])
def test_arguments_minitvm_has_no_meaning_for_are_refused_by_name(old, new, reason):
    with pytest.raises(TVMScriptError) as excinfo:
        from_source(TILES.replace(old, new, 1))
    assert reason in excinfo.value.reason and "leave" in excinfo.value.reason


def test_alloc_buffer_refuses_data_buffer_type_and_takes_the_defaults():
    def body(args):
        return f'''
@T.prim_func
def g(A: T.Buffer((4,), "float32")):
    X = T.alloc_buffer((4,), "float32"{args})
    for i in range(4):
        with T.block("X"):
            vi = T.axis.spatial(4, i)
            X[vi] = A[vi]
'''
    for args, reason in [(", data=A.data", "T.alloc_buffer(data=...)"),
                         (", buffer_type='auto'", "T.alloc_buffer(buffer_type='auto')")]:
        with pytest.raises(TVMScriptError) as excinfo:
            from_source(body(args))
        assert reason in excinfo.value.reason
    # TVM's defaults, written out, are accepted (TVM code passes them)
    plain = from_source(body(""))
    written = from_source(body(", align=-1, offset_factor=0, buffer_type='default'"))
    assert_structural_equal(written, plain)
    assert_structural_equal(from_source(body(", align=64")), plain)  # 64: TVM's default alignment


ALIGNED = '''
@T.prim_func
def f(a: T.handle, B: T.Buffer((4096,), "float32")):
    A = T.match_buffer(a, (4096,), "float32", align=32)
    X = T.alloc_buffer((4096,), "float32", align=256)
    for i in range(4096):
        with T.block("X"):
            vi = T.axis.spatial(4096, i)
            X[vi] = A[vi] * T.float32(3)
    for i in range(4096):
        with T.block("B"):
            vi = T.axis.spatial(4096, i)
            B[vi] = X[4095 - vi] + T.float32(1)
'''


def test_align_is_recorded_printed_read_back_and_allocated_with():
    f = from_source(ALIGNED)
    assert f.buffer_map[f.params[0]].data_alignment == 32
    assert [b.data_alignment for b in f.body.block.alloc_buffers] == [256]
    text = f.script()
    assert "align=32" in text and "align=256" in text
    assert_structural_equal(from_source(text), f)
    assert not structural_equal(from_source(ALIGNED.replace("align=256", "align=128")), f)
    lib = minitvm.build(f, target="llvm")
    assert "align 256" in lib.get_source("ll")  # the scratch buffer (16 KiB: on the stack) is that aligned
    a = np.random.default_rng(0).standard_normal(4096).astype("float32")
    b = np.zeros(4096, "float32")
    lib["f"](a, b)
    np.testing.assert_allclose(b, a[::-1] * 3 + 1, rtol=1e-6)
    with pytest.raises(TVMScriptError, match="not a power of two"):
        from_source(ALIGNED.replace("align=256", "align=24"))


UNDEFINED = '''
@T.prim_func
def f(A: T.Buffer((4,), "int32")):
    n = T.int32()
    for i in range(4):
        A[i] = i * n
'''


def test_check_well_formed_refuses_an_undefined_variable_unless_turned_off():
    with pytest.raises(TVMScriptError, match="not well formed: n used but defined by no parameter"):
        from_source(UNDEFINED)
    assert from_source(UNDEFINED, check_well_formed=False).params  # skipped: parses

    with pytest.raises(TVMScriptError, match="not well formed: n used"):
        @T.prim_func(check_well_formed=True)
        def g(A: T.Buffer((4,), "int32")):
            n = T.int32()
            for i in range(4):
                A[i] = i * n

    @T.prim_func(check_well_formed=False)
    def h(A: T.Buffer((4,), "int32")):
        n = T.int32()
        for i in range(4):
            A[i] = i * n

    assert "n = T.int32()" in h.script()


def test_check_well_formed_of_a_prim_func_in_a_module_class():
    with pytest.raises(TVMScriptError, match="not well formed: n used"):
        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((4,), "int32")):
                n = T.int32()
                for i in range(4):
                    A[i] = i * n

    @I.ir_module
    class Loose:
        @T.prim_func(check_well_formed=False)
        def main(A: T.Buffer((4,), "int32")):
            n = T.int32()
            for i in range(4):
                A[i] = i * n

    assert "main" in [gv.name_hint for gv in Loose.get_global_vars()]


def test_decl_buffer_records_offset_factor_and_align():
    view = T.decl_buffer((4,), "float32", data=minitvm.tir.Var("p", "handle"), offset_factor=4, align=0)
    assert view.make("V").offset_factor == 4 and view.make("V").data_alignment == 64
    aligned = T.decl_buffer((4,), "float32", data=minitvm.tir.Var("p", "handle"), align=128)
    assert aligned.make("V").data_alignment == 128


def test_a_block_view_defines_its_offset_variable():
    # TVM's tensorized form: the offset of a region's view is a variable the match binds
    text = TILES.replace('offset_factor=16)\n            D', 'elem_offset=s_off, offset_factor=16)\n            D')
    indent = "            "
    text = text.replace(f"{indent}S = T.match_buffer", f"{indent}s_off = T.int32()\n{indent}S = T.match_buffer")
    f = from_source(text)  # was refused as "s_off used but defined by no parameter"
    assert [type(b.elem_offset).__name__ for b in _views(f)] == ["Var", "IntImm"]
    with pytest.raises(TVMScriptError, match="s_off used but defined by no parameter"):
        from_source(text.replace("elem_offset=s_off, ", "").replace("T.float32(2)", "T.Cast(\"float32\", s_off)"))
