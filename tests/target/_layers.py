"""Shared by the piece-build tests: a Relax function of six kernels (two matmuls, softmax, two
reductions, a transpose) -- enough kernels for the build to go in pieces -- and its inputs."""

from __future__ import annotations

import numpy as np

from minitvm.script import relax as R


@R.function
def layers(x: R.Tensor((8, 32), "float32"), w: R.Tensor((32, 16), "float32"), v: R.Tensor((16, 32), "float32")):
    with R.dataflow():
        h = R.nn.relu(R.matmul(x, w))
        p = R.nn.softmax(h, axis=-1)
        g = R.matmul(p, v)
        s = R.sum(g, axis=0)
        m = R.max(g, axis=1)
        t = R.permute_dims(g)
        R.output(s, m, t)
    return (s, m, t)


def layer_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    """Random x, w, v for :func:`layers`."""
    return [rng.uniform(-1, 1, shape).astype("float32") for shape in ((8, 32), (32, 16), (16, 32))]
