"""``check_numerical_grads`` (TVM's ``tvm.testing.utils`` name): gradients computed some other
way (a gradient pass, an op's ``FPrimalGradient``, a formula) checked against finite
differences of a scalar function, as TVM's own gradient tests do."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["check_numerical_grads"]


def check_numerical_grads(function: Callable, input_values: Any, grad_values: Any, function_value: Any = None,
                          delta: float = 1e-3, atol: float = 1e-2, rtol: float = 0.1) -> None:
    """Raise ``AssertionError`` unless ``grad_values`` are the gradients of the scalar
    ``function`` at ``input_values`` (lists: positional arguments; dicts: keywords).

    Each partial derivative is first a forward difference of step ``delta``; one that
    disagrees with the given gradient (beyond ``atol + rtol * |numeric|``) is recomputed as
    a central difference, then by Richardson's five-point rule.  The check passes when the
    whole numeric gradient lies within ``atol * sqrt(size) + rtol * |numeric|`` of the given
    one (Euclidean norms), so a few kinks do not fail it.
    """
    if isinstance(input_values, dict):
        inputs, grads = dict(input_values), dict(grad_values)

        def call(values: dict) -> Any:
            return function(**values)
    else:
        names = [str(i) for i in range(len(input_values))]
        inputs, grads = dict(zip(names, input_values)), dict(zip(names, grad_values))

        def call(values: dict) -> Any:
            return function(*(values[n] for n in names))
    base = call(inputs) if function_value is None else function_value

    def slope(name: str, j: int, step: float) -> float:
        moved = np.array(inputs[name], copy=True)
        moved.reshape(-1)[j] += step
        return (call({**inputs, name: moved}) - base) / step

    for name, grad in grads.items():
        _check_one(name, np.asarray(grad), np.asarray(inputs[name]).shape, slope, delta, atol, rtol)


def _check_one(name: str, grad: np.ndarray, shape: tuple, slope: Callable, delta: float, atol: float,
               rtol: float) -> None:
    if grad.shape != shape:
        raise AssertionError(f"the gradient with respect to {name!r} has shape {grad.shape}, but the input "
                             f"has shape {shape}")
    given = grad.reshape(-1)
    numeric = np.zeros(given.shape, dtype="float64")
    wrong = []
    for j in range(given.size):
        d = slope(name, j, delta)
        if not _close(d, given[j], atol, rtol):
            d = (slope(name, j, -delta) + d) / 2  # central difference
            if not _close(d, given[j], atol, rtol):
                half = (slope(name, j, delta / 2) + slope(name, j, -delta / 2)) / 2
                d = (4 * half - d) / 3  # five-point rule
        if not _close(d, given[j], atol, rtol):
            wrong.append(np.unravel_index(j, grad.shape))
        numeric[j] = d
    dist = float(np.linalg.norm(numeric - given))
    norm = float(np.linalg.norm(numeric))
    if not (np.isfinite(dist) and np.isfinite(norm)):
        raise ValueError(f"NaN or infinity in the numeric gradient with respect to {name!r}:\n"
                         f"given {grad}\nnumeric {numeric.reshape(grad.shape)}")
    bound = atol * np.sqrt(given.size) + rtol * norm
    if dist > bound:
        raise AssertionError(
            f"the gradient with respect to {name!r} differs from finite differences: distance {dist:.4g} > "
            f"{bound:.4g} (atol {atol} x sqrt({given.size}) + rtol {rtol} x |numeric| {norm:.4g}); "
            f"{len(wrong)} of {given.size} elements differ, the first at {wrong[:10]}\n"
            f"given {grad}\nnumeric {numeric.reshape(grad.shape)}")


def _close(numeric: float, given: float, atol: float, rtol: float) -> bool:
    return abs(numeric - given) < atol + rtol * abs(numeric)
