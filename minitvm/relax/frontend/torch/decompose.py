"""``ExportedProgram.run_decompositions()`` as the importer calls it: the same result, at a
fifth of torch 2.13's fixed cost.

Two costs of torch's own call do not depend on the program, and both are cut only while
:func:`run_decompositions` runs (outside it torch is left as it is):

* Before decomposing, torch lists the CompositeImplicitAutograd operators it may keep, namespace
  by namespace, and for *each* namespace it first makes Python objects for *every* such operator
  the C++ dispatcher knows (``torch._export.utils._materialize_cpp_cia_ops``): ~40 identical
  walks over ~1,000 operators per call.  One walk per call finds the same operators (nothing
  registers operators while torch decomposes), so the walk runs once.
* It then overrides those operators' Python kernels, ~11,000 calls of ``OperatorBase.py_impl``,
  whose inner function's type annotations (``Callable[_P, _T]``) are built again at every call:
  a third of the rest.  torch's own ``py_impl`` source, compiled with postponed annotations,
  does the same without building them.
"""

from __future__ import annotations

import functools
import threading
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

__all__ = ["run_decompositions", "torch_functions_swapped"]

#: one swap of torch's functions at a time (a second thread would restore the swapped one as if
#: it were torch's); reentrant, so a swap may run inside another
_SWAP_LOCK = threading.RLock()


@contextmanager
def torch_functions_swapped(replacements: Iterable[tuple[Any, str, Any]]) -> Iterator[None]:
    """Within the block, ``owner.name`` is ``value`` for each ``(owner, name, value)``; torch's
    own are put back after, also after an error.  A None value, or an owner without ``name`` (a
    torch that lacks the function), is left alone."""
    with _SWAP_LOCK:
        swaps = [(owner, name, value, getattr(owner, name)) for owner, name, value in replacements
                 if value is not None and hasattr(owner, name)]
        for owner, name, value, _ in swaps:
            setattr(owner, name, value)
        try:
            yield
        finally:
            for owner, name, _, original in swaps:
                setattr(owner, name, original)


@functools.lru_cache(maxsize=1)
def _py_impl_with_postponed_annotations() -> Callable | None:
    """torch's ``OperatorBase.py_impl``, from its own source, compiled in its own module's
    namespace with ``from __future__ import annotations`` (None when its source cannot be read)."""
    import __future__  # noqa: I001 -- the module named __future__, not a future statement
    import inspect
    import textwrap

    import torch._ops as torch_ops  # lazy: torch is optional and heavy

    try:
        source = textwrap.dedent(inspect.getsource(torch_ops.OperatorBase.py_impl))
        code = compile(source, inspect.getsourcefile(torch_ops) or "<torch._ops>", "exec",
                       flags=__future__.annotations.compiler_flag, dont_inherit=True)
    except (OSError, TypeError, SyntaxError):
        return None
    defined: dict[str, Any] = {}
    exec(code, vars(torch_ops), defined)  # noqa: S102 -- torch's installed source, not input
    return defined.get("py_impl")


def run_decompositions(ep: Any) -> Any:
    """``ep.run_decompositions()`` (torch's default table) with the operator walk done once and
    ``py_impl`` not rebuilding its annotations."""
    import torch._export.utils as export_utils  # lazy: torch is optional and heavy
    import torch._ops as torch_ops

    walk = getattr(export_utils, "_materialize_cpp_cia_ops", None)
    done: list[bool] = []

    def walk_once() -> None:
        if not done:
            walk()
            done.append(True)

    swaps = [(export_utils, "_materialize_cpp_cia_ops", walk_once if walk is not None else None),
             (torch_ops.OperatorBase, "py_impl", _py_impl_with_postponed_annotations())]
    with torch_functions_swapped(swaps), warnings.catch_warnings():
        # torch 2.13's own run_decompositions deep-copies a LeafSpec and warns about it; nothing
        # the caller can act on
        warnings.filterwarnings("ignore", message=r".*LeafSpec.* is deprecated", category=FutureWarning)
        return ep.run_decompositions()
