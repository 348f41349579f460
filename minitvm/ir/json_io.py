"""``tvm.ir.save_json`` / ``tvm.ir.load_json``: an IRModule or function as JSON text.

TVM writes its node graph; minitvm writes the node's TVMScript inside a small JSON object
(``{"minitvm_json": 1, "type": ..., "script": ...}``) and reads it back with the parser as
data (no Python in the text is run).  The parser sits on the ``script`` floor, above this one:
``minitvm.script`` installs it here as ``READER`` when it loads (``import minitvm`` loads it).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .node import script_printer

__all__ = ["save_json", "load_json"]

FORMAT_KEY = "minitvm_json"
#: text -> node (set by minitvm.script: its ``from_source`` reading data only)
READER: Callable[[str], Any] | None = None


def save_json(node: Any) -> str:
    """``node`` (an IRModule, a Relax function or a PrimFunc) as JSON text."""
    script = getattr(node, "script", None)
    if script is None:
        raise TypeError(f"save_json: {type(node).__name__} cannot be saved (minitvm saves IRModules and "
                        "functions, written as TVMScript)")
    return json.dumps({FORMAT_KEY: 1, "type": type(node).__name__, "script": script()})


def load_json(text: str) -> Any:
    """The node :func:`save_json` wrote into ``text``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"load_json: the text is not JSON ({err})") from None
    if not isinstance(data, dict) or data.get(FORMAT_KEY) != 1 or not isinstance(data.get("script"), str):
        raise ValueError("load_json: not a node saved by minitvm's save_json (TVM's own node-graph JSON "
                         "is not read)")
    if READER is None:
        # loading the printer loads the script package, which installs its parser here (the
        # floors' one upward import stays in node.script_printer)
        script_printer()
    if READER is None:
        raise RuntimeError("load_json needs the TVMScript parser (minitvm.script), which did not install itself")
    node = READER(data["script"])
    if type(node).__name__ != data.get("type"):
        raise ValueError(f"load_json: the text saved a {data.get('type')}, but its script reads as a "
                         f"{type(node).__name__}")
    return node
