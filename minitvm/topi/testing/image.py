"""Image-op references: affine_grid."""

import numpy as np


def affine_grid_python(data, target_shape):
    """Sampling grid [N, 2, H, W] from affine matrices ``data`` [N, 2, 3]: each output pixel's
    normalized (x, y) in [-1, 1] (corners aligned) mapped through the matrix."""
    h, w = target_shape
    ys = np.linspace(-1.0, 1.0, h) if h > 1 else np.full(1, np.nan)
    xs = np.linspace(-1.0, 1.0, w) if w > 1 else np.full(1, np.nan)
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    base = np.stack([xx.ravel(), yy.ravel(), np.ones(h * w)])  # [3, H*W]
    return np.einsum("nij,jp->nip", data, base).reshape(data.shape[0], 2, h, w)
