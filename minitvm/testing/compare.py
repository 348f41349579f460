"""``assert_allclose`` (TVM's ``tvm.testing.assert_allclose``) with a message a learner can act on.

numpy's message starts with the tolerance and shows two arrays cut off in the middle; what a
learner needs first is how many elements are wrong and one of them: where it is, what was
expected and what came out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..runtime.ndarray import as_numpy

__all__ = ["assert_allclose", "NumericMismatch"]


class NumericMismatch(AssertionError):
    """Values differ beyond the tolerance; the message says how many, and the worst one."""


_as_array = as_numpy  # minitvm.nd.NDArray, torch.Tensor, numpy, lists


def _fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 1e-7, err_msg: str = "") -> None:
    """Check ``|actual - desired| <= atol + rtol * |desired|`` element-wise (NaN equals NaN).

    On failure, raise :class:`NumericMismatch` (an ``AssertionError``) whose first line says how
    many elements differ and whose second names the worst one with its index; ``err_msg``
    (numpy's keyword; TVM's function has none) says which case it was.
    """
    got, want = _as_array(actual), _as_array(desired)
    case = f" ({err_msg})" if err_msg else ""
    if got.shape != want.shape:
        raise NumericMismatch(f"shape differs{case}: expected {want.shape}, got {got.shape}")
    if got.size == 0:
        return
    both_nan = np.isnan(got) & np.isnan(want) if got.dtype.kind in "fc" and want.dtype.kind in "fc" else False
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(got.astype("float64") - want.astype("float64"))
        allowed = atol + rtol * np.abs(want.astype("float64"))
    bad = ~((error <= allowed) | both_nan)
    count = int(bad.sum())
    if count == 0:
        return
    worst = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(error, nan=np.inf), -1.0))), got.shape)
    index = list(int(i) for i in worst) if got.ndim else []
    raise NumericMismatch(
        f"{count} of {got.size} elements differ{case} (rtol={rtol:g}, atol={atol:g})\n"
        f"the worst at index {index}: expected {_fmt(want[worst])}, got {_fmt(got[worst])}")
