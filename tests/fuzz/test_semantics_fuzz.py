"""Differential fuzzing of the TIR semantics table: every row (a new one too, without a test of
its own) on random dtypes and seeded edge-heavy data -- zero divisors, NaN, infinities, the
integer extremes, shift amounts past the width -- in scalar and vector code.  The constant
folder, the reference interpreter and LLVM must compute the same values or raise the same error
(minitvm.testing.fuzz.check_op_case)."""

from hypothesis import given, note, settings

from minitvm.testing.fuzz import check_op_case, semantics_cases

# each example compiles twice; a quarter of the profile's count keeps the CI fuzz time level
_EXAMPLES = max(10, settings().max_examples // 4)


@settings(max_examples=_EXAMPLES)
@given(case=semantics_cases())
def test_every_row_means_the_same_everywhere(case):
    note(repr(case))
    check_op_case(case)
