"""docs/torch_ops.md is generated from the torch frontend's converter tables and must match them."""

from pathlib import Path

import torch  # noqa: F401  (the from_fx section names torch functions)

from minitvm.relax.frontend.torch import CONVERTERS, supported_ops_markdown
from minitvm.relax.frontend.torch.op_table import REGENERATE

DOC = Path(__file__).resolve().parents[2] / "docs" / "torch_ops.md"


def test_the_committed_table_is_up_to_date():
    assert DOC.exists(), f"docs/torch_ops.md is missing; generate it with:\n  {REGENERATE}"
    assert DOC.read_text() == supported_ops_markdown(), (
        f"docs/torch_ops.md is out of date with the converter tables; regenerate it with:\n  {REGENERATE}")


def test_the_table_names_every_converted_aten_operator():
    text = supported_ops_markdown()
    for name in CONVERTERS:
        op = name.rsplit(".", 1)[0] if name.startswith("aten.") else name
        assert f"| `{op}` |" in text, name
    assert "## from_fx" in text and "`nn.Linear`" in text and "`F.scaled_dot_product_attention`" in text
