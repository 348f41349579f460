"""relax.dpl patterns: what matches and what does not (TVM's matching rules)."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm import relax
from minitvm.relax.dpl import (
    get_var2val,
    is_call_tir,
    is_const,
    is_dfv,
    is_gv,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class MulAdd:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32"), z: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv0 = R.multiply(x, y)
            lv1 = R.add(lv0, z)
            lv2 = R.add(lv1, lv1)
            gv = R.add(z, R.const(1.0, "float32"))
            tup = (lv2, gv)
            out = tup[1]
            R.output(out)
        return out


F = MulAdd["main"]
VAR2VAL = get_var2val(F)
B = {b.var.name_hint: b.value for b in F.body.blocks[0].bindings}
X, Y, Z = F.params


def test_get_var2val_maps_each_bound_variable_to_its_value():
    assert {v.name_hint for v in VAR2VAL} == {"lv0", "lv1", "lv2", "gv", "tup", "out"}
    assert all(VAR2VAL[v] is B[v.name_hint] for v in VAR2VAL)


def test_call_pattern_matches_op_and_arguments():
    assert is_op("relax.multiply")(wildcard(), wildcard()).match(B["lv0"])
    assert not is_op("relax.add")(wildcard(), wildcard()).match(B["lv0"])
    assert not is_op("relax.multiply")(wildcard()).match(B["lv0"]), "argument count must agree"
    assert is_op("relax.multiply")(wildcard(), varg_default_wildcard=True).match(B["lv0"])


def test_nested_pattern_needs_var2val_to_look_through_bindings():
    pat = is_op("relax.add")(is_op("relax.multiply")(wildcard(), wildcard()), wildcard())
    assert not pat.match(B["lv1"]), "without var2val lv0 is only a variable"
    assert pat.match(B["lv1"], VAR2VAL)


def test_extract_reports_what_each_subpattern_matched():
    a, b, c = wildcard(), wildcard(), wildcard()
    mul = is_op("relax.multiply")(a, b)
    pat = is_op("relax.add")(mul, c)
    m = pat.extract_matched_expr(B["lv1"], VAR2VAL)
    assert m[a] is X and m[b] is Y and m[c] is Z
    assert m[mul] is B["lv0"], "a matched variable stands for its bound value, as in TVM"
    assert m[pat] is B["lv1"]
    assert pat.extract_matched_expr(B["lv0"], VAR2VAL) is None


def test_a_pattern_used_twice_must_match_the_same_expression():
    x = wildcard()
    twice = is_op("relax.add")(x, x)
    assert twice.match(B["lv2"])
    assert not twice.match(B["lv1"])


def test_add_and_multiply_match_with_arguments_swapped():
    pat = is_op("relax.add")(is_const(), is_var("z"))
    assert pat.match(B["gv"]), "commutative match: R.add(z, const) against add(const, z)"
    assert not is_op("relax.subtract")(is_const(), is_var("z")).match(B["gv"])


def test_leaf_patterns():
    assert is_var("x").match(X) and not is_var("y").match(X) and is_var().match(Z)
    assert is_const().match(B["gv"].args[1]) and not is_const().match(X)
    assert not is_dfv().match(X), "a parameter is not a dataflow variable"
    lv0 = F.body.blocks[0].bindings[0].var
    assert is_dfv("lv0").match(lv0)
    assert is_gv("mat").match(relax.GlobalVar("matmul")) and not is_gv("add").match(relax.GlobalVar("matmul"))


def test_const_matches_through_a_variable_bound_to_a_constant():
    c = relax.Var("c", relax.TensorStructInfo((3,), "float32"))
    assert is_const().match(c, {c: relax.const(np.ones(3, "float32"))})


def test_alternatives_and_negation():
    add_or_mul = is_op("relax.add")(wildcard(), wildcard()) | is_op("relax.multiply")(wildcard(), wildcard())
    assert add_or_mul.match(B["lv0"]) and add_or_mul.match(B["lv1"])
    assert not add_or_mul.match(B["tup"])
    not_const = ~is_const()
    assert not_const.match(X) and not not_const.match(B["gv"].args[1])
    both = is_op("relax.add")(wildcard(), wildcard()) & is_op("relax.add")(is_const(), wildcard())
    assert both.match(B["gv"]) and not both.match(B["lv1"])


def test_tuples_and_items():
    assert is_tuple([wildcard(), wildcard()]).match(B["tup"])
    assert not is_tuple([wildcard()]).match(B["tup"])
    tup = is_tuple([wildcard(), is_op("relax.add")(wildcard(), is_const())])
    assert tup.match(B["tup"], VAR2VAL)
    assert is_tuple([is_op("relax.add")(wildcard(), is_const()), wildcard()], unordered=True).match(B["tup"], VAR2VAL)
    assert is_tuple_get_item(wildcard(), 1).match(B["out"]) and not is_tuple_get_item(wildcard(), 0).match(B["out"])
    assert is_tuple_get_item(wildcard()).match(B["out"])
    assert tup[1].match(B["out"], VAR2VAL)


def test_dtype_shape_and_attr_conditions():
    assert wildcard().has_dtype("float32").match(X) and not wildcard().has_dtype("int32").match(X)
    assert wildcard().has_shape([3, 4]).match(X) and not wildcard().has_shape([4, 3]).match(X)
    s = relax.Var("s", relax.TensorStructInfo((2, 5), "float32"))
    summed = relax.BlockBuilder().normalize(relax.op.sum(s, axis=[1], keepdims=True))
    assert is_op("relax.sum")(wildcard()).has_attr({"keepdims": True}).match(summed)
    assert not is_op("relax.sum")(wildcard()).has_attr({"keepdims": False}).match(summed)
    with pytest.raises(ValueError, match="list or tuple"):
        wildcard().has_shape(3)


def test_call_tir_pattern():
    @I.ir_module
    class Tir:
        @T.prim_func
        def relu(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = T.max(A[vi], T.float32(0))

        @R.function
        def main(x: R.Tensor((4,), "float32")):
            cls = Tir
            with R.dataflow():
                y = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((4,), "float32"))
                R.output(y)
            return y

    call = Tir["main"].body.blocks[0].bindings[0].value
    assert is_call_tir("relu").match(call) and is_call_tir("relu", [is_var("x")]).match(call)
    assert not is_call_tir("exp").match(call)


def test_patterns_print_as_the_code_that_builds_them():
    pat = is_op("relax.add")(is_op("relax.multiply")(wildcard(), is_const()), wildcard() | is_var("x"))
    assert repr(pat) == ('is_op("relax.add")(is_op("relax.multiply")(wildcard(), is_const()), '
                         '(wildcard() | is_var("x")))')


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="expected a pattern"):
        is_op("relax.add")(1, wildcard())
