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
from typing import Any, Callable

#: one decomposition at a time may swap torch's function (a second thread would restore the
#: swapped one as if it were torch's)
_SWAP_LOCK = threading.Lock()


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
    py_impl, quick_py_impl = torch_ops.OperatorBase.py_impl, _py_impl_with_postponed_annotations()
    done: list[bool] = []

    def walk_once() -> None:
        if not done:
            walk()
            done.append(True)

    with _SWAP_LOCK, warnings.catch_warnings():
        # torch 2.13's own run_decompositions deep-copies a LeafSpec and warns about it; nothing
        # the caller can act on
        warnings.filterwarnings("ignore", message=r".*LeafSpec.* is deprecated", category=FutureWarning)
        if walk is not None:  # a torch without the walk: nothing to save
            export_utils._materialize_cpp_cia_ops = walk_once
        if quick_py_impl is not None:
            torch_ops.OperatorBase.py_impl = quick_py_impl
        try:
            return ep.run_decompositions()
        finally:
            torch_ops.OperatorBase.py_impl = py_impl
            if walk is not None:
                export_utils._materialize_cpp_cia_ops = walk
