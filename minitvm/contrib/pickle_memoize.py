"""``tvm.contrib.pickle_memoize.memoize``: reuse a test-data function's results.

TVM keeps the results in a pickle file under ``~/.cache/tvm`` and reads it back in later runs.
minitvm reads no pickles (files are data, never code: see the threat model in ``docs/``), so
results are remembered for this process only; ``save_at_exit=True`` (write the file) is refused.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["memoize"]

_ALLOWED = (str, int, float, tuple)


def memoize(key: str, save_at_exit: bool = False) -> Callable[[Callable], Callable]:
    """Decorate a function of plain positional arguments (str, int, float, tuples of them) so
    each distinct call runs once per process."""
    if save_at_exit:
        raise NotImplementedError(f"memoize({key!r}, save_at_exit=True): minitvm keeps memoized results in "
                                  "memory only; it never writes or reads pickle files")

    def register(f: Callable) -> Callable:
        cache: dict[tuple, Any] = {}

        @functools.wraps(f)
        def memoized(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise TypeError(f"{f.__name__} (memoized): call it with positional arguments only")
            for arg in args:
                for x in arg if isinstance(arg, tuple) else (arg,):
                    if not isinstance(x, _ALLOWED):
                        raise TypeError(f"{f.__name__} (memoized): argument {x!r} is not a str, int, float or tuple")
            if args not in cache:
                cache[args] = f(*args)
            return cache[args]

        return memoized

    return register
