"""``nn.Mutator``: walk an ``nn.Module`` tree and let ``visit_*`` hooks replace its parts.

As TVM's ``tvm.relax.frontend.nn.visitor.Mutator``: ``visit(name, node)`` visits each child of
``node`` (attributes of a module, entries of a ModuleList/ModuleDict/ParameterList/
ParameterDict), calls the ``visit_<kind>`` hook matching the child's kind with its dotted name
(``"mod3.mod2.param2"``, ``"layers.0.weight"``), stores what the hook returns in the child's
place, and returns ``node``.  Each hook's default is to recurse with ``visit``.
"""

from typing import Any

from . import core as nn


class Mutator:
    """Override ``visit_module`` / ``visit_param`` / ``visit_effect`` / ``visit_moduledict`` /
    ``visit_modulelist`` / ``visit_parameterdict`` / ``visit_parameterlist`` to transform."""

    def visit_module(self, name: str, node: nn.Module) -> Any:
        return self.visit(name, node)

    def visit_effect(self, name: str, node: nn.Effect) -> Any:
        return self.visit(name, node)

    def visit_param(self, name: str, node: nn.Parameter) -> Any:
        return self.visit(name, node)

    def visit_moduledict(self, name: str, node: nn.ModuleDict) -> Any:
        return self.visit(name, node)

    def visit_modulelist(self, name: str, node: nn.ModuleList) -> Any:
        return self.visit(name, node)

    def visit_parameterdict(self, name: str, node: nn.ParameterDict) -> Any:
        return self.visit(name, node)

    def visit_parameterlist(self, name: str, node: nn.ParameterList) -> Any:
        return self.visit(name, node)

    def _hook(self, value: Any) -> Any:
        """The hook for ``value``'s kind, or None for a value the walk leaves alone.  The
        containers are Module subclasses here, so they are tested before plain Module."""
        for kind, hook in ((nn.ParameterDict, self.visit_parameterdict),
                           (nn.ParameterList, self.visit_parameterlist),
                           (nn.ModuleDict, self.visit_moduledict), (nn.ModuleList, self.visit_modulelist),
                           (nn.Module, self.visit_module), (nn.Effect, self.visit_effect),
                           (nn.Parameter, self.visit_param)):
            if isinstance(value, kind):
                return hook
        return None

    def visit(self, name: str, node: Any) -> Any:
        """Visit the children of ``node`` in order, replacing each by its hook's result."""
        if isinstance(node, (nn.ParameterList, nn.ModuleList)):
            children = [(str(i), i, v) for i, v in enumerate(node)]
        elif isinstance(node, (nn.ParameterDict, nn.ModuleDict)):
            children = [(k, k, v) for k, v in list(node.items())]
        else:
            children = None
        if children is not None:
            for label, key, value in children:
                hook = self._hook(value)
                if hook is not None:
                    node[key] = hook(f"{name}.{label}" if name else label, value)
            return node
        for key, value in list(node.__dict__.items()):
            hook = self._hook(value)
            if hook is not None:
                setattr(node, key, hook(f"{name}.{key}" if name else key, value))
        return node
