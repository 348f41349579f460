"""Where the code runs: inside a Jupyter (IPython) kernel, where a learner is, or not.

Displays choose by it (highlighted HTML or plain text) and so do the learner's safety nets
(``minitvm.build`` checks indices at run time in a notebook).  IPython is never imported here:
a kernel has always loaded it.
"""

from __future__ import annotations

import sys

__all__ = ["in_notebook"]


def in_notebook() -> bool:
    """True inside a Jupyter (IPython) kernel."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None
