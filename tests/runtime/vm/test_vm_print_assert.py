"""vm.builtin.print / assert_op show a tuple as (a, b) of its values, and an assert without a
format lists its values (TVM's render_object and relax.run.assert_op)."""

import numpy as np
import pytest

import minitvm
from minitvm.runtime.vm.builtins import assert_op, print_values


def test_print_shows_tuple_fields_as_values(capsys):
    one = minitvm.nd.array(np.array(7, "int32"))
    print_values("Tuple: {}", (one, (one, 2)))
    print_values("", one, (one,))
    assert capsys.readouterr().out == "Tuple: (7, (7, 2))\n7 (7)\n"


def test_assert_without_format_lists_its_values():
    five = minitvm.nd.array(np.array(5, "int32"))
    with pytest.raises(AssertionError, match="^5, 5$"):
        assert_op(False, "", five, five)
    with pytest.raises(AssertionError, match="^Assertion Failed$"):
        assert_op(False, "")
    assert_op(True, "never shown", five)
