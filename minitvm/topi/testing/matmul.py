"""dense / batch_matmul references (weights stored [N, K], as TVM's dense)."""

import numpy as np


def batch_matmul(x, y, out_dtype=None, trans_x=False, trans_y=True):
    """[B, M, K] x [B, N, K] -> [B, M, N] by default (y transposed); a batch of 1 broadcasts."""
    dtype = x.dtype if out_dtype is None else np.dtype(out_dtype)
    a = np.swapaxes(x, 1, 2) if trans_x else x
    b = np.swapaxes(y, 1, 2) if trans_y else y
    return np.matmul(a.astype(dtype), b.astype(dtype)).astype(dtype)


def dense(x, y, bias, use_bias=False, use_relu=False, out_dtype=None):
    """x [M, K] @ y[N, K].T, plus ``bias`` when ``use_bias``, then ReLU when ``use_relu``."""
    dtype = x.dtype if out_dtype is None else np.dtype(out_dtype)
    out = np.dot(x.astype(dtype), y.astype(dtype).T)
    if use_bias:
        out = out + bias
    if use_relu:
        out = np.maximum(out, 0)
    return out
