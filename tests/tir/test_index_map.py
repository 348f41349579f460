"""tir.IndexMap: building from a function, applying, inverting, printing (TVM's behaviour)."""

import numpy as np
import pytest

from minitvm import ir
from minitvm.script import tir as T
from minitvm.tir import IndexMap, Range, Var


def test_from_func_names_variables_after_parameters_and_uses_int64():
    m = IndexMap.from_func(lambda row, col: (col, row))
    assert [v.name for v in m.initial_indices] == ["row", "col"]
    assert all(v.dtype == "int64" for v in m.initial_indices)
    assert m.final_indices[0] is m.initial_indices[1]
    assert m.final_indices[1] is m.initial_indices[0]


def test_from_func_with_star_args_needs_ndim():
    with pytest.raises(ValueError, match="ndim"):
        IndexMap.from_func(lambda *idx: idx[::-1])
    m = IndexMap.from_func(lambda *idx: idx[::-1], ndim=3, index_dtype="int32")
    assert [v.name for v in m.initial_indices] == ["idx_0", "idx_1", "idx_2"]
    assert [int(s.value) for s in m.map_shape([2, 3, 5])] == [5, 3, 2]


def test_axis_separator_only_through_with_separators():
    with pytest.raises(ValueError, match="from_func_with_separators"):
        IndexMap.from_func(lambda i, j: [i, IndexMap.AXIS_SEPARATOR, j])
    m, seps = IndexMap.from_func_with_separators(lambda i, j, k: [i, IndexMap.AXIS_SEPARATOR, j, k])
    assert seps == [1] and len(m.final_indices) == 3


def test_a_non_expression_result_is_refused():
    with pytest.raises(TypeError, match="must return expressions"):
        IndexMap.from_func(lambda i: [i, "oops"])


def _ints(exprs):
    return [int(e.value) for e in exprs]


def test_map_indices_and_map_shape_of_a_packing_map():
    pack = IndexMap.from_func(lambda n, c, h, w: (n, c // 4, h, w, c % 4))
    assert _ints(pack.map_indices([1, 13, 2, 3])) == [1, 3, 2, 3, 1]
    assert _ints(pack.map_shape([2, 16, 7, 7])) == [2, 4, 7, 7, 4]


def test_map_shape_rounds_a_non_dividing_split_up():
    split = IndexMap.from_func(lambda i: (i // 4, i % 4))
    assert _ints(split.map_shape([14])) == [4, 4]


def test_map_tensor_matches_numpy():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 8, 3)).astype("float32")
    m = IndexMap.from_func(lambda a, b, c: (b // 4, c, a, b % 4))
    got = m.map_tensor(data).numpy()
    expected = data.reshape(2, 2, 4, 3).transpose(1, 3, 0, 2)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("func, shape", [
    (lambda i, j: (j, i), [6, 5]),
    (lambda i: (i // 4, i % 4), [16]),
    (lambda i, j: (i * 8 + j,), [3, 8]),
    (lambda n, c, h: (h, c // 2, n, c % 2), [2, 6, 3]),
])
def test_inverse_undoes_the_map_everywhere(func, shape):
    m = IndexMap.from_func(func, index_dtype="int32")
    inv = m.inverse(shape)
    for point in np.ndindex(*shape):
        assert _ints(inv.map_indices(m.map_indices(list(point)))) == list(point)


def test_inverse_refuses_a_padding_map_and_non_surjective_inverse_reports_it():
    m = IndexMap.from_func(lambda i: (i // 4, i % 4), index_dtype="int32")
    with pytest.raises(ValueError, match="not bijective"):
        m.inverse([14])
    inv, padding = m.non_surjective_inverse([14])
    a, b = inv.initial_indices
    from minitvm.arith import Analyzer
    from minitvm.tir.functor import substitute

    def pads(x, y):
        return bool(Analyzer().simplify(substitute(padding, {a: T.int32(x), b: T.int32(y)})).value)

    assert pads(3, 2) and pads(3, 3) and not pads(3, 1) and not pads(0, 0)


def test_inverse_refuses_a_map_that_is_not_made_of_splits():
    m = IndexMap.from_func(lambda i, j: (i * j,), index_dtype="int32")
    with pytest.raises(ValueError, match="could not parse"):
        m.inverse([4, 4])


def test_inverse_given_by_the_user_is_returned():
    m = IndexMap.from_func(lambda i: (i + 0,), inverse_index_map=lambda k: (k,))
    assert isinstance(m.inverse([Range(0, 8)]), IndexMap)
    assert m.inverse([8]) is m.inverse_index_map


def test_is_equivalent_to():
    a = IndexMap.from_func(lambda i, j: (i * 4 + j,))
    assert a.is_equivalent_to(IndexMap.from_func(lambda x, y: (y + x * 4,)))
    assert not a.is_equivalent_to(IndexMap.from_func(lambda x, y: (y * 4 + x,)))


def test_prints_as_tvmscript_and_parses_back():
    m = IndexMap.from_func(lambda i, j: (j, i // 2, i % 2), index_dtype="int32")
    text = m.script()
    assert text == "T.index_map(lambda i, j: (j, i // 2, i % 2))"
    again = eval(text, {"T": T})  # noqa: S307 - the printed text is TVMScript
    assert again.is_equivalent_to(IndexMap.from_func(lambda i, j: (j, i // 2, i % 2)))
    ir.assert_structural_equal(IndexMap.from_func(lambda a, b: (b, a)), IndexMap.from_func(lambda x, y: (y, x)))


def test_initial_indices_must_be_variables():
    with pytest.raises(TypeError):
        IndexMap([Var("i", "int32") + 1], [Var("j", "int32")])
