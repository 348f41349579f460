"""``==`` on struct infos is structural, as in TVM; ``same_as`` is identity."""

from minitvm import relax, tir


def test_equal_tensor_struct_infos_compare_equal_but_are_not_the_same_object():
    a = relax.TensorStructInfo((2, 3), "float32")
    b = relax.TensorStructInfo((2, 3), "float32")
    assert a == b and not (a != b)
    assert not a.same_as(b) and a.same_as(a)
    assert hash(a) == hash(b)
    assert len({a, b}) == 1


def test_struct_infos_differing_in_dtype_shape_or_kind_are_unequal():
    a = relax.TensorStructInfo((2, 3), "float32")
    assert a != relax.TensorStructInfo((2, 3), "float16")
    assert a != relax.TensorStructInfo((3, 2), "float32")
    assert a != relax.TensorStructInfo(ndim=2, dtype="float32")
    assert a != relax.ShapeStructInfo((2, 3))
    assert a != None  # noqa: E711 - comparing with a non-struct-info is plain False
    assert a != "R.Tensor((2, 3))"


def test_symbolic_dimensions_match_only_the_same_variable():
    n, m = tir.Var("n", "int64"), tir.Var("n", "int64")
    assert relax.TensorStructInfo((n, 4), "float32") == relax.TensorStructInfo((n, 4), "float32")
    # same name, different variable: free variables are not mapped onto each other
    assert relax.TensorStructInfo((n, 4), "float32") != relax.TensorStructInfo((m, 4), "float32")


def test_nested_tuple_and_function_struct_infos_compare_structurally():
    t = relax.TensorStructInfo((4,), "int32")
    tup1 = relax.TupleStructInfo([t, relax.ObjectStructInfo()])
    tup2 = relax.TupleStructInfo([relax.TensorStructInfo((4,), "int32"), relax.ObjectStructInfo()])
    assert tup1 == tup2
    f1 = relax.FuncStructInfo([t], tup1)
    f2 = relax.FuncStructInfo([relax.TensorStructInfo((4,), "int32")], tup2)
    assert f1 == f2
    assert f1 != relax.FuncStructInfo([t], t)


def test_var_struct_info_equals_its_annotation():
    sinfo = relax.TensorStructInfo((8, 16), "float32")
    x = relax.Var("x", relax.TensorStructInfo((8, 16), "float32"))
    assert x.struct_info == sinfo
