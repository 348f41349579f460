"""Differential test over the TVMScript program zoo: the interpreter gives the same numbers
before and after lowering, for every program the script tests share."""

import numpy as np

from minitvm.target.interpreter import run_prim_func
from minitvm.testing.programs import ALL_FUNCS
from minitvm.testing.tir_builders import random_arguments
from minitvm.tir.transform import lowered, lowered_form_errors


def _arguments(func, seed):
    arrays = iter(random_arguments(func, seed))
    return [next(arrays) if p in func.buffer_map else (5 if p.dtype.startswith("int") else 1.5)
            for p in func.params]


def test_every_program_lowers_and_computes_the_same_numbers():
    for name, func in ALL_FUNCS.items():
        low = lowered(func)
        assert lowered_form_errors(low) == [], name
        before, after = _arguments(func, 2), _arguments(func, 2)
        run_prim_func(func, before)
        run_prim_func(low, after)
        for x, y in zip(before, after):
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y, err_msg=name)
