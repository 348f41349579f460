"""Plain numpy references for operators numpy has no single function for (convolution,
pooling), shared by the TOPI and the Relax legalization tests."""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["conv2d_nchw", "pool2d_nchw"]


def conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: Sequence[int] = (1, 1),
                padding: Sequence[int] = (0, 0, 0, 0), dilation: Sequence[int] = (1, 1),
                groups: int = 1) -> np.ndarray:
    """NCHW x OIHW convolution; padding is (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, left, bottom, right = padding
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (wd + left + right - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), "float64")
    og = o // groups
    for oc in range(o):
        g = oc // og
        for ky in range(kh):
            for kx in range(kw):
                y0, x0 = ky * dilation[0], kx * dilation[1]
                patch = xp[:, g * cg:(g + 1) * cg,
                           y0:y0 + stride[0] * (oh - 1) + 1:stride[0],
                           x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, ky, kx])
    return out.astype(x.dtype)


def pool2d_nchw(x: np.ndarray, k: int, s: int, padding: Sequence[int], kind: str,
                count_include_pad: bool = True) -> np.ndarray:
    """Max or average pooling with a square window ``k`` and stride ``s``; padding is
    (top, left, bottom, right)."""
    n, c, h, w = x.shape
    top, left, bottom, right = padding
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    ones = np.pad(np.ones((h, w)), ((top, bottom), (left, right)))
    oh, ow = (h + top + bottom - k) // s + 1, (w + left + right - k) // s + 1
    out = np.empty((n, c, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s:i * s + k, j * s:j * s + k]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = k * k if count_include_pad else ones[i * s:i * s + k, j * s:j * s + k].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out
