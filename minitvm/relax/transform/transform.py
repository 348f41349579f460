"""``relax.transform.transform``: the module TVM defines its Relax passes in.

minitvm keeps one pass per module (``canonicalize_bindings.py`` ...) and gathers them in
the package; this module is the path TVM code imports them by
(``from tvm.relax.transform.transform import CanonicalizeBindings``).  Every name is the
package's own object, looked up when asked for, so no pass is listed twice.
"""

from __future__ import annotations

from typing import Any

from minitvm.relax import transform as _package


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(_package, name)
    except AttributeError:
        raise AttributeError(f"module 'minitvm.relax.transform.transform' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(n for n in vars(_package) if not n.startswith("_") and n != "transform")
