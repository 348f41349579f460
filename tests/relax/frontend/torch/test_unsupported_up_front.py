"""One error before any conversion: every unsupported operator and every unsupported variant,
each with its source line, what to do (custom_convert_map, docs/torch_ops.md), and a model
exported in training mode told to call model.eval()."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from minitvm.relax.frontend.torch import from_exported_program


def refusal(model, *inputs, **kwargs):
    ep = torch.export.export(model, inputs)
    with pytest.raises(ValueError) as info:
        from_exported_program(ep, **kwargs)
    return str(info.value)


class ManyProblems(torch.nn.Module):
    """A 3-D transposed convolution, an erfinv, an avg pool with a divisor override: all three
    are refused in one message, each with the line that made it."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.ConvTranspose3d(2, 2, 2)

    def forward(self, x, y):
        a = self.up(x)
        b = torch.erfinv(y)
        c = F.avg_pool2d(y, 2, divisor_override=3)
        return a, b, c


def test_every_unsupported_operator_and_variant_is_listed_with_its_line():
    msg = refusal(ManyProblems().eval(), torch.randn(1, 2, 3, 3, 3), torch.rand(1, 2, 4, 4))
    head, *lines = msg.splitlines()
    assert head == "from_exported_program: unsupported operators:"
    listed = [ln for ln in lines if ln.startswith("  aten.")]
    assert len(listed) == 3
    conv, erfinv, pool = listed
    assert conv.startswith("  aten.convolution.default: a 3-D transposed convolution is not supported")
    assert "test_unsupported_up_front.py:" in conv and "a = self.up(x)" in conv
    assert erfinv.startswith("  aten.erfinv.default  (") and "b = torch.erfinv(y)" in erfinv
    assert "divisor_override is not supported" in pool and "divisor_override=3)" in pool
    # what to do, with a one-line example for the first missing op
    assert 'custom_convert_map={"aten.convolution.default": convert}' in msg
    assert "docs/torch_ops.md" in msg


def test_a_custom_converter_takes_over_a_refused_variant():
    class Pool(torch.nn.Module):
        def forward(self, x):
            return F.avg_pool2d(x, 2, divisor_override=3)

    seen = []

    def pool_by_hand(node, importer):
        seen.append(node.target)
        return importer.arg(node.args[0])

    ep = torch.export.export(Pool(), (torch.rand(1, 1, 4, 4),))
    from_exported_program(ep, custom_convert_map={"aten.avg_pool2d.default": pool_by_hand})
    assert seen == [torch.ops.aten.avg_pool2d.default]


def test_variants_of_indexing_attention_and_outputs_are_refused_up_front():
    class Mask(torch.nn.Module):
        def forward(self, x, q):
            return F.scaled_dot_product_attention(q, q, q, dropout_p=0.5), F.max_pool2d(x, 2, return_indices=True)[1]

    msg = refusal(Mask(), torch.randn(1, 1, 4, 4), torch.randn(1, 2, 3, 4), run_ep_decomposition=False)
    assert "scaled_dot_product_attention with dropout_p > 0 is not supported" in msg
    assert "(the indices) is not supported" in msg


@pytest.mark.parametrize("decompose", [True, False])
def test_a_model_exported_in_training_mode_is_told_to_call_eval(decompose):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Dropout(0.3)).train()
    msg = refusal(model, torch.randn(2, 3, 6, 6), run_ep_decomposition=decompose)
    assert msg.startswith("from_exported_program: the model was exported in training mode:")
    assert "batch statistics" in msg and "random dropout" in msg
    assert "Call model.eval() before torch.export.export(model, ...)" in msg
    # in eval mode the same model converts
    ep = torch.export.export(model.eval(), (torch.randn(2, 3, 6, 6),))
    from_exported_program(ep, run_ep_decomposition=decompose)
