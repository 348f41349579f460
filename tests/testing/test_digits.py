"""minitvm.testing.digits: the chapters' real data and the sentence comparing two models' predictions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minitvm.testing import digits


def test_load_splits_the_digits_into_train_and_test():
    flat, images = digits.load(flat=True), digits.load()
    assert flat.train_x.shape == (digits.TRAIN_IMAGES, 64) and flat.test_x.shape == (1797 - digits.TRAIN_IMAGES, 64)
    assert images.train_x.shape == (digits.TRAIN_IMAGES, 1, 8, 8)
    assert flat.train_x.dtype == torch.float32 and 0 <= float(flat.train_x.min()) and float(flat.train_x.max()) <= 1
    assert torch.equal(flat.test_x, images.test_x.reshape(-1, 64)) and torch.equal(flat.test_y, images.test_y)
    assert set(flat.test_y.tolist()) == set(range(10))


def test_agreement_counts_what_it_is_given():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 10, size=50)
    torch_pred = labels.copy()
    torch_pred[:7] = (labels[:7] + 1) % 10  # torch: 43 of 50 right
    compiled = torch_pred.copy()
    compiled[7:9] = (labels[7:9] + 2) % 10  # 2 more wrong, so 2 that differ from torch
    text = digits.agreement(torch.tensor(torch_pred), compiled, labels)
    assert "torch    86.0% of the 50 test digits right (43)" in text
    assert "minitvm  82.0% of the 50 test digits right (41)" in text
    assert text.endswith("for 48 of the 50 images: 2 differ")
    assert digits.agreement(labels, labels, labels).endswith("for 50 of the 50 images")


def test_agreement_refuses_predictions_of_another_length():
    with pytest.raises(ValueError, match=r"torch \(5,\), minitvm \(4,\)"):
        digits.agreement(np.zeros(5), np.zeros(4), np.zeros(5))
