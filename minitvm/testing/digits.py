"""Real data for the chapters: scikit-learn's handwritten digits, trained on in seconds.

``sklearn.datasets.load_digits`` ships with scikit-learn (no download): 1,797 grey images of
8 x 8 pixels, each a digit 0-9.  Chapters 0, 3 and 4 train a small torch model on the first
1,500 (:func:`train`, a few seconds at most), compile it with minitvm, and check on the other
297, which the model never saw, that the compiled model predicts what torch predicts
(:func:`agreement`)::

    from minitvm.testing import digits

    data = digits.load(flat=True)                  # pixels as rows of 64 values
    model = digits.train(torch.nn.Sequential(torch.nn.Linear(64, 10)), data)
    print(digits.agreement(torch_pred, minitvm_pred, data.test_y))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["Digits", "load", "train", "agreement", "TRAIN_IMAGES"]

#: images trained on; the rest of the 1,797 are the test set
TRAIN_IMAGES = 1500


@dataclass(frozen=True)
class Digits:
    """The digits split in two: float32 images in [0, 1] and int64 labels, as torch tensors."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor


def load(flat: bool = False) -> Digits:
    """The digits as ``(n, 1, 8, 8)`` images (a convolution's input), or ``(n, 64)`` rows if ``flat``."""
    from sklearn.datasets import load_digits  # lazy: scikit-learn is needed only by the chapters' data

    raw = load_digits()
    pixels = raw.images / 16.0  # the data set's pixels are 0..16
    images = torch.tensor(pixels.reshape(len(pixels), 64) if flat else pixels[:, None], dtype=torch.float32)
    labels = torch.tensor(raw.target, dtype=torch.int64)
    n = TRAIN_IMAGES
    return Digits(images[:n], labels[:n], images[n:], labels[n:])


def train(model: torch.nn.Module, data: Digits, epochs: int = 10, lr: float = 1e-2, batch: int = 100,
          seed: int = 0) -> torch.nn.Module:
    """``model`` trained on ``data``'s training images, the usual loop: Adam on the cross-entropy of
    batches of ``batch`` images, ``epochs`` passes.  Prints the loss of a few epochs; returns the
    model in inference mode (``eval()``).  Seeded, on one thread (a model this small gains nothing
    from more, and sums in a fixed order): the same weights every run on a machine."""
    torch.manual_seed(seed)
    order = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _epochs(model, data, optimizer, epochs, batch, order)
    finally:
        torch.set_num_threads(threads)
    return model.eval()


def _epochs(model: torch.nn.Module, data: Digits, optimizer: Any, epochs: int, batch: int,
            order: torch.Generator) -> None:
    for epoch in range(epochs):
        perm = torch.randperm(len(data.train_x), generator=order)
        for start in range(0, len(perm), batch):
            rows = perm[start:start + batch]
            loss = torch.nn.functional.cross_entropy(model(data.train_x[rows]), data.train_y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if epoch % 3 == 0 or epoch == epochs - 1:
            print(f"epoch {epoch}: training loss {loss.item():.3f}")


def _labels(values: Any) -> np.ndarray:
    """Predicted digits as a numpy vector, from torch or numpy labels."""
    return values.numpy() if isinstance(values, torch.Tensor) else np.asarray(values)


def agreement(torch_pred: Any, compiled_pred: Any, labels: Any, compiled: str = "minitvm") -> str:
    """Lines saying how many test digits each model got right and on how many images the two
    predictions are the same, every number counted here from the predictions passed."""
    ref, got, truth = _labels(torch_pred), _labels(compiled_pred), _labels(labels)
    if not ref.shape == got.shape == truth.shape:
        raise ValueError(f"predictions and labels must have one shape: torch {ref.shape}, "
                         f"{compiled} {got.shape}, labels {truth.shape}")
    n = len(truth)
    width = max(len("torch"), len(compiled))
    lines = [f"{name:{width}s}  {(pred == truth).mean():.1%} of the {n} test digits right "
             f"({int((pred == truth).sum())})" for name, pred in (("torch", ref), (compiled, got))]
    same = int((ref == got).sum())
    lines.append(f"{compiled} predicts the digit torch predicts for {same} of the {n} images"
                 + ("" if same == n else f": {n - same} differ"))
    return "\n".join(lines)
