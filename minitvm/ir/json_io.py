"""``tvm.ir.save_json`` / ``tvm.ir.load_json``: an IRModule or function as JSON text.

TVM writes its node graph; minitvm writes the node's TVMScript inside a small JSON object
(``{"minitvm_json": 1, "type": ..., "script": ...}``) and reads it back with the parser as
data (no Python in the text is run).  Other nodes (a lone expression, a binding, a struct info:
TVMScript has no top-level form for them) are written as their node graph instead
(``"graph"``): each node its class and fields, a node met again as a reference, so a variable
used twice comes back as one variable.  Reading builds only minitvm's own IR node classes.
The parser sits on the ``script`` floor, above this one:
``minitvm.script`` installs it here as ``READER`` when it loads (``import minitvm`` loads it).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from .node import Node, script_printer

__all__ = ["save_json", "load_json"]

FORMAT_KEY = "minitvm_json"
#: text -> node (set by minitvm.script: its ``from_source`` reading data only)
READER: Callable[[str], Any] | None = None


def save_json(node: Any) -> str:
    """``node`` (an IRModule, a Relax function or a PrimFunc) as JSON text."""
    if not _is_script_root(node) and isinstance(node, Node):
        return json.dumps({FORMAT_KEY: 1, "type": type(node).__name__, "graph": _GraphWriter().encode(node)})
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
    if isinstance(data, dict) and data.get(FORMAT_KEY) == 1 and "graph" in data:
        return _GraphReader().decode(data["graph"])
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


def _is_script_root(node: Any) -> bool:
    """An IRModule or a function: what TVMScript can write at the top level."""
    return type(node).__name__ in ("IRModule", "Function", "PrimFunc")


class _GraphWriter:
    """A node as JSON data: ``{"node": "module:Class", "fields": {...}}``, ``{"ref": k}`` for a
    node already written (the k-th), tuples/lists/dicts as such, plain values as themselves."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, Node):
            if id(value) in self.ids:
                return {"ref": self.ids[id(value)]}
            self.ids[id(value)] = len(self.ids)
            cls = type(value)
            return {"node": f"{cls.__module__}:{cls.__qualname__}",
                    "fields": {name: self.encode(getattr(value, name)) for name in cls._field_names}}
        if isinstance(value, (tuple, list)):
            return {"tuple" if isinstance(value, tuple) else "list": [self.encode(v) for v in value]}
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return {"dict": {k: self.encode(v) for k, v in value.items()}}
        raise TypeError(f"save_json: cannot save a field value of type {type(value).__name__} ({value!r:.60})")


class _GraphReader:
    """The inverse of :class:`_GraphWriter`; builds only minitvm IR node classes."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []

    def decode(self, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "ref" in data:
            return self.nodes[data["ref"]]
        for kind, make in (("tuple", tuple), ("list", list)):
            if kind in data:
                return make(self.decode(v) for v in data[kind])
        if "dict" in data:
            return {k: self.decode(v) for k, v in data["dict"].items()}
        cls = _node_class(data.get("node"))
        slot = len(self.nodes)
        self.nodes.append(None)  # numbered in writing order: this node before its fields
        fields = {name: self.decode(v) for name, v in data.get("fields", {}).items()}
        try:
            node = cls(**fields)
        except TypeError as err:
            raise ValueError(f"load_json: cannot rebuild a {cls.__name__} from fields {sorted(fields)} "
                             f"({err})") from None
        self.nodes[slot] = node
        return node


def _node_class(name: Any) -> type:
    """The IR node class ``"minitvm.<module>:<Class>"`` names, looked up among the modules this
    process has already imported (the file never chooses a module to import, whose top-level
    code would run); anything else is refused."""
    module, _, qualname = str(name).partition(":")
    if not module.startswith("minitvm.") or not qualname.isidentifier():
        raise ValueError(f"load_json: {name!r} is not a minitvm IR node class")
    cls = getattr(sys.modules.get(module), qualname, None)
    if not (isinstance(cls, type) and issubclass(cls, Node)):
        raise ValueError(f"load_json: {name!r} is not a minitvm IR node class")
    return cls
