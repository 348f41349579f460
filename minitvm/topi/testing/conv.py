"""2-D convolution references (NCHW / NHWC, grouped, depthwise)."""

import numpy as np


def get_pad_tuple(padding, kernel):
    """(top, left, bottom, right) from an int, [pad_h, pad_w], a 4-list, "VALID" or "SAME"."""
    if isinstance(padding, list | tuple):
        if len(padding) == 4:
            return tuple(padding)
        if len(padding) != 2:
            raise ValueError(f"padding {padding!r}: give 2 or 4 sizes")
        pad_h, pad_w = padding[0] * 2, padding[1] * 2
    elif isinstance(padding, int):
        pad_h = pad_w = padding * 2
    elif padding == "VALID":
        pad_h = pad_w = 0
    elif padding == "SAME":
        pad_h, pad_w = kernel[0] - 1, kernel[1] - 1
    else:
        raise ValueError(f"unknown padding {padding!r} (an int, a list, 'VALID' or 'SAME')")
    top, left = (pad_h + 1) // 2, (pad_w + 1) // 2
    return top, left, pad_h - top, pad_w - left


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv_nchw(x, w, stride, padding, dilation, groups):
    """Cross-correlation of x [N, C, H, W] with w [F, C // groups, KH, KW], summed in float64."""
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    kh, kw = w.shape[2], w.shape[3]
    top, left, bottom, right = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    xp = np.pad(x.astype("float64"), [(0, 0), (0, 0), (top, bottom), (left, right)])
    n, c = x.shape[:2]
    f = w.shape[0]
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    cg, fg = c // groups, f // groups
    out = np.zeros((n, f, oh, ow))
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * fg:(g + 1) * fg].astype("float64")
        for i in range(kh):
            for j in range(kw):
                patch = xg[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
                out[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch, wg[:, :, i, j])
    return out.astype(x.dtype)


def conv2d_nchw_python(a_np, w_np, stride, padding, groups=1):
    """a [N, C, H, W] * w [F, C // groups, KH, KW] -> [N, F, OH, OW]."""
    return _conv_nchw(a_np, w_np, stride, padding, 1, groups)


def conv2d_nhwc_python(a_np, w_np, stride, padding, groups=1):
    """a [N, H, W, C] * w [KH, KW, C // groups, F] -> [N, OH, OW, F]."""
    out = _conv_nchw(a_np.transpose(0, 3, 1, 2), w_np.transpose(3, 2, 0, 1), stride, padding, 1, groups)
    return out.transpose(0, 2, 3, 1)


def depthwise_conv2d_python_nchw(input_np, filter_np, stride, padding):
    """input [N, C, H, W], filter [C, M, KH, KW] -> [N, C * M, OH, OW]; output channel
    c * M + m is channel c filtered by filter[c, m]."""
    c, m, kh, kw = filter_np.shape
    return _conv_nchw(input_np, filter_np.reshape(c * m, 1, kh, kw), stride, padding, 1, c)


def depthwise_conv2d_python_nhwc(input_np, filter_np, stride, padding):
    """input [N, H, W, C], filter [KH, KW, C, M] -> [N, OH, OW, C * M]."""
    out = depthwise_conv2d_python_nchw(input_np.transpose(0, 3, 1, 2),
                                       filter_np.transpose(2, 3, 0, 1), stride, padding)
    return out.transpose(0, 2, 3, 1)
