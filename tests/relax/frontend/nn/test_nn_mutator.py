"""nn.Mutator: dotted names of the visited parts, and replacement by what a hook returns."""

from minitvm.relax.frontend import nn


class _Leaf(nn.Module):
    def __init__(self, dtype: str) -> None:
        self.weight = nn.Parameter((4, 8), dtype)


class _Other(nn.Module):
    pass


class _Root(nn.Module):
    def __init__(self) -> None:
        self.layers = nn.ModuleList([_Leaf("float16"), _Leaf("float32")])
        self.table = nn.ModuleDict({"a": _Leaf("float16"), "b": _Other()})
        self.extra = nn.ParameterList([nn.Parameter((2,), "float16")])


def test_mutator_names_and_replaces_parts():
    seen = []

    class Widen(nn.Mutator):
        def visit_param(self, name, node):
            seen.append(name)
            return nn.Parameter(node.shape, "float32") if node.dtype == "float16" else node

        def visit_module(self, name, node):
            return _Leaf("float64") if isinstance(node, _Other) else self.visit(name, node)

    root = _Root()
    assert Widen().visit("m", root) is root
    assert seen == ["m.layers.0.weight", "m.layers.1.weight", "m.table.a.weight", "m.extra.0"]
    assert [p.dtype for _, p in root.named_parameters()] == ["float32"] * 3 + ["float64", "float32"]
    assert isinstance(root.table["b"], _Leaf)


def test_mutator_default_walk_keeps_everything():
    root = _Root()
    before = [(n, p) for n, p in root.named_parameters()]
    nn.Mutator().visit("", root)
    assert [(n, p) for n, p in root.named_parameters()] == before
