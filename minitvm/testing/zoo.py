"""A small PyTorch model zoo: the models the torch frontend must import, shared by tests,
chapters and benchmarks.

    from minitvm.testing import zoo
    m = zoo.MODELS["lenet"]
    model, x = m.build(), m.example_inputs(2)
    ep = zoo.export(m, batch=2, dynamic_batch=True)

torch is imported inside the functions, so importing this module never needs it.  Every
model is built with seeded weights (normalization statistics made non-trivial on purpose)
and returned in ``eval()`` mode; inputs are seeded random tensors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover - for annotations only
    import torch

__all__ = ["ZooModel", "MODELS", "export"]

_SEED = 0
#: sequence length and width of the transformer models (kept small: compile + run in ~1 s)
_SEQ, _DIM, _HEADS = 8, 32, 4
_VOCAB = 50


@dataclass(frozen=True)
class ZooModel:
    """One model: how to build it (seeded, eval mode) and how to make inputs for a batch."""

    name: str
    build: Callable[[], "torch.nn.Module"]
    example_inputs: Callable[[int], tuple["torch.Tensor", ...]]
    description: str = ""


# -- helpers ------------------------------------------------------------------------------------

def _finish(model: "torch.nn.Module") -> "torch.nn.Module":
    """Eval mode, with every norm layer given random affine parameters and running stats
    (fresh ones are 0/1, which would hide a wrong formula)."""
    import torch  # torch is optional and heavy: imported on first use

    gen = torch.Generator().manual_seed(_SEED + 1)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                mod.weight.copy_(1 + 0.2 * torch.randn(mod.weight.shape, generator=gen))
                mod.bias.copy_(0.2 * torch.randn(mod.bias.shape, generator=gen))
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.copy_(0.3 * torch.randn(mod.running_mean.shape, generator=gen))
                mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=gen) + 0.5)
    return model.eval()


def _seeded(make: Callable[[], "torch.nn.Module"]) -> Callable[[], "torch.nn.Module"]:
    """``make`` run under a fixed seed, so every build has the same weights."""
    def build() -> "torch.nn.Module":
        import torch  # torch is optional and heavy: imported on first use

        torch.manual_seed(_SEED)
        return _finish(make())
    build.__name__ = getattr(make, "__name__", "build")
    return build


def _randn(*shape: int) -> Callable[[int], tuple["torch.Tensor", ...]]:
    """Inputs of shape ``(batch, *shape)`` from a normal distribution, seeded by the batch."""
    def inputs(batch: int) -> tuple["torch.Tensor", ...]:
        import torch  # torch is optional and heavy: imported on first use

        gen = torch.Generator().manual_seed(1000 + batch)
        return (torch.randn((batch, *shape), generator=gen),)
    return inputs


def _tokens(batch: int) -> tuple["torch.Tensor", ...]:
    """int64 token ids of shape ``(batch, seq)``."""
    import torch  # torch is optional and heavy: imported on first use

    gen = torch.Generator().manual_seed(2000 + batch)
    return (torch.randint(0, _VOCAB, (batch, _SEQ), generator=gen, dtype=torch.int64),)


# -- the models (classes are made inside functions so torch stays a lazy import) ------------------

def _mlp() -> "torch.nn.Module":
    """TVM's quick-start MLP: 784 -> 256 -> ReLU -> 10."""
    from torch import nn  # torch is optional and heavy: imported on first use

    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def _lenet() -> "torch.nn.Module":
    """LeNet-5 on 1x28x28: two conv + tanh + avg/max pooling stages, three linears."""
    import torch  # torch is optional and heavy: imported on first use
    from torch import nn  # torch is optional and heavy: imported on first use

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.pool1 = nn.AvgPool2d(2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.pool2 = nn.MaxPool2d(2)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool1(torch.tanh(self.conv1(x)))
            x = self.pool2(torch.relu(self.conv2(x)))
            x = torch.flatten(x, 1)
            x = torch.relu(self.fc1(x))
            x = torch.relu(self.fc2(x))
            return self.fc3(x)

    return LeNet()


def _mlc_mnist() -> "torch.nn.Module":
    """The MLC course's end-to-end model."""
    from torch import nn  # torch is optional and heavy: imported on first use

    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(5408, 100), nn.ReLU(), nn.Linear(100, 10), nn.Softmax(dim=1))


def _resnet_block() -> "torch.nn.Module":
    """A ResNet basic block, 8 -> 16 channels at stride 2 with a 1x1 conv + BN projection."""
    import torch  # torch is optional and heavy: imported on first use
    from torch import nn  # torch is optional and heavy: imported on first use

    class BasicBlock(nn.Module):
        def __init__(self, cin: int = 8, cout: int = 16, stride: int = 2):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(cout))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + self.downsample(x))

    return BasicBlock()


def _resnet_small() -> "torch.nn.Module":
    """A small ResNet for 3x64x64 images: a strided 3x3 stem (16 channels, 32x32), a basic block
    at 16 channels, a strided basic block to 32 channels (16x16) with a 1x1 projection,
    global average pooling and a 10-way linear head; BatchNorm after every convolution."""
    import torch  # torch is optional and heavy: imported on first use
    from torch import nn  # torch is optional and heavy: imported on first use

    def conv_bn(cin: int, cout: int, k: int, stride: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False), nn.BatchNorm2d(cout))

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.a, self.b = conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, 1)
            self.short = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

        def forward(self, x):
            return torch.relu(self.b(torch.relu(self.a(x))) + self.short(x))

    class ResNetSmall(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = conv_bn(3, 16, 3, 2)
            self.layer1, self.layer2 = Block(16, 16, 1), Block(16, 32, 2)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            x = self.layer2(self.layer1(torch.relu(self.stem(x))))
            return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNetSmall()


def _depthwise_separable() -> "torch.nn.Module":
    """A MobileNet unit: 3x3 depthwise conv + BN + ReLU6, 1x1 pointwise conv + BN + ReLU6."""
    from torch import nn  # torch is optional and heavy: imported on first use

    c, cout = 8, 16
    return nn.Sequential(
        nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), nn.BatchNorm2d(c), nn.ReLU6(),
        nn.Conv2d(c, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6(),
    )


def _transformer(explicit: bool) -> "torch.nn.Module":
    """A pre-norm transformer block with causal multi-head attention; ``explicit`` writes the
    attention as matmul/scale/masked_fill/softmax and uses a SiLU MLP (else SDPA and GELU)."""
    import torch  # torch is optional and heavy: imported on first use
    import torch.nn.functional as F  # torch is optional and heavy: imported on first use
    from torch import nn  # torch is optional and heavy: imported on first use

    class Block(nn.Module):
        def __init__(self, dim: int = _DIM, heads: int = _HEADS, seq: int = _SEQ):
            super().__init__()
            self.heads = heads
            self.norm1 = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.norm2 = nn.LayerNorm(dim)
            self.up = nn.Linear(dim, 2 * dim)
            self.act = nn.SiLU() if explicit else nn.GELU()
            self.down = nn.Linear(2 * dim, dim)
            self.register_buffer("causal", torch.tril(torch.ones(2 * seq, 2 * seq, dtype=torch.bool)))

        def attention(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q, k, v = (y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
            if explicit:
                scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
                scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
                y = torch.softmax(scores, dim=-1) @ v
            else:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(b, t, d))

        def forward(self, x):
            x = x + self.attention(self.norm1(x))
            return x + self.down(self.act(self.up(self.norm2(x))))

    return Block()


def _transformer_sdpa() -> "torch.nn.Module":
    return _transformer(explicit=False)


def _transformer_explicit() -> "torch.nn.Module":
    return _transformer(explicit=True)


def _embedding_posenc() -> "torch.nn.Module":
    """Token embedding + sinusoidal positions (arange, slicing) + LayerNorm + a linear head."""
    import torch  # torch is optional and heavy: imported on first use
    from torch import nn  # torch is optional and heavy: imported on first use

    class EmbedHead(nn.Module):
        def __init__(self, vocab: int = _VOCAB, dim: int = 16, max_len: int = 32):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            pos = torch.arange(max_len, dtype=torch.float32)[:, None]
            freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
            pe = torch.zeros(max_len, dim)
            pe[:, 0::2] = torch.sin(pos * freq)
            pe[:, 1::2] = torch.cos(pos * freq)
            self.register_buffer("pe", pe)
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab)

        def forward(self, ids):
            t = ids.shape[1]
            positions = torch.arange(t, device=ids.device)
            h = self.embed(ids) * math.sqrt(self.embed.embedding_dim) + self.pe[positions]
            return self.head(self.norm(h))

    return EmbedHead()


MODELS: dict[str, ZooModel] = {m.name: m for m in [
    ZooModel("mlp", _seeded(_mlp), _randn(784), "TVM quick-start MLP 784-256-10"),
    ZooModel("lenet", _seeded(_lenet), _randn(1, 28, 28), "LeNet-5 on 1x28x28 (conv, tanh, pooling, linears)"),
    ZooModel("mlc_mnist", _seeded(_mlc_mnist), _randn(1, 28, 28),
             "MLC course model: Conv2d(1,32,3), ReLU, MaxPool2d(2), Flatten, Linear(5408,100), ReLU, "
             "Linear(100,10), Softmax"),
    ZooModel("resnet_block", _seeded(_resnet_block), _randn(8, 16, 16),
             "ResNet basic block with BatchNorm and a strided 1x1 projection shortcut"),
    ZooModel("resnet_small", _seeded(_resnet_small), _randn(3, 64, 64),
             "small ResNet on 3x64x64: strided stem, two basic blocks (16, 32 channels), avg pool, linear"),
    ZooModel("depthwise_separable", _seeded(_depthwise_separable), _randn(8, 16, 16),
             "depthwise 3x3 conv + pointwise 1x1 conv, each with BatchNorm and ReLU6"),
    ZooModel("transformer_sdpa", _seeded(_transformer_sdpa), _randn(_SEQ, _DIM),
             "pre-norm transformer block: causal scaled_dot_product_attention, GELU MLP"),
    ZooModel("transformer_explicit", _seeded(_transformer_explicit), _randn(_SEQ, _DIM),
             "pre-norm transformer block: matmul/scale/masked_fill/softmax attention, SiLU MLP"),
    ZooModel("embedding_posenc", _seeded(_embedding_posenc), _tokens,
             "nn.Embedding over int64 ids + sinusoidal positions (arange, indexing) + LayerNorm + linear head"),
]}


def export(model: ZooModel, batch: int, dynamic_batch: bool = False) -> "torch.export.ExportedProgram":
    """``torch.export.export`` of ``model`` on its inputs for ``batch``; with
    ``dynamic_batch`` dimension 0 of every input is ``torch.export.Dim("batch")`` (1 to 1024),
    traced at batch 2 when ``batch`` is 1 since torch specializes a traced size of 1."""
    import torch  # torch is optional and heavy: imported on first use

    module = model.build()
    dynamic_shapes = None
    if dynamic_batch:
        batch = max(batch, 2)
        dim = torch.export.Dim("batch", min=1, max=1024)
        dynamic_shapes = tuple({0: dim} for _ in model.example_inputs(batch))
    args = model.example_inputs(batch)
    return torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
