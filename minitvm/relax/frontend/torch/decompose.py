"""``ExportedProgram.run_decompositions()`` as the importer calls it: the same result, at a
third of torch 2.13's fixed cost.

Before decomposing, torch lists the CompositeImplicitAutograd operators it may keep, namespace
by namespace, and for *each* namespace it first makes Python objects for *every* such operator
the C++ dispatcher knows (``torch._export.utils._materialize_cpp_cia_ops``): ~40 identical
walks over ~1,000 operators per call, 0.1 s of the 0.2 s a small model's import costs.  One walk
per call finds the same operators (nothing registers operators while torch decomposes), so
inside :func:`run_decompositions` the walk runs once; outside it torch is left as it is.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

#: one decomposition at a time may swap torch's function (a second thread would restore the
#: swapped one as if it were torch's)
_SWAP_LOCK = threading.Lock()


def run_decompositions(ep: Any) -> Any:
    """``ep.run_decompositions()`` (torch's default table) with the operator walk done once."""
    import torch._export.utils as export_utils  # lazy: torch is optional and heavy

    walk = getattr(export_utils, "_materialize_cpp_cia_ops", None)
    done: list[bool] = []

    def walk_once() -> None:
        if not done:
            walk()
            done.append(True)

    with _SWAP_LOCK, warnings.catch_warnings():
        # torch 2.13's own run_decompositions deep-copies a LeafSpec and warns about it; nothing
        # the caller can act on
        warnings.filterwarnings("ignore", message=r".*LeafSpec.* is deprecated", category=FutureWarning)
        if walk is None:  # a torch without the walk: nothing to save
            return ep.run_decompositions()
        export_utils._materialize_cpp_cia_ops = walk_once
        try:
            return ep.run_decompositions()
        finally:
            export_utils._materialize_cpp_cia_ops = walk
