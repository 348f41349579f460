"""The graders' catalogues of known mistakes, proven both ways.

Each catalogued wrong answer of ch01, ch02, ch08 and ch10 is handed to its grader as if a learner had
written it: the grader must fail, and the learner's message must end with *that* mistake's
sentence (not another's). The right answers pass the same graders in ``test_ch01.py`` etc.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

from minitvm.grade.messages import learner_message
from minitvm.grade.plugin import GRADING_CONFIG
from minitvm.ir import IRModule
from minitvm.transform import PassContext

ch01, ch02, ch08, ch10 = (importlib.import_module(f"test_{c}") for c in ("ch01", "ch02", "ch08", "ch10"))


def _wrong(chapter, grader: str, exercise: str, answer, says: str):
    return pytest.param(chapter, grader, exercise, answer, says, id=f"{grader}-{says[:40]}")


def _schedule_answer(mistake):
    return lambda mod: IRModule({"main": mistake.computes()})


def _cases():
    cases = []
    row_sum = [dict(init=False), dict(kinds="SS"), None]
    for wrong, says in zip(row_sum, ["is never zeroed", "declared a spatial axis", "one short of n"]):
        if wrong is None:
            answer = lambda m, n: ch01._row_sum_variant(m, n, extent=n - 1)  # noqa: E731
        else:
            answer = (lambda kw: lambda m, n: ch01._row_sum_variant(m, n, **kw))(wrong)
        cases.append(_wrong(ch01, "test_row_sum_of_squares", "row_sum_of_squares", answer, says))
    for wrong, says in [(dict(flip=True), "kernel is flipped"), (dict(swap_window=True), "rows and columns"),
                        (dict(init=False), "Y is never zeroed")]:
        answer = (lambda kw: lambda *shape: ch01._conv_variant(*shape, **kw))(wrong)
        cases.append(_wrong(ch01, "test_conv2d", "conv2d", answer, says))
    for wrong, says in [(dict(axis=0), "down the columns"), (dict(shift="none"), "overflows"),
                        (dict(sum_exp=False), "not their exponentials")]:
        answer = (lambda kw: lambda m, n: ch01._softmax_variant(m, n, **kw))(wrong)
        cases.append(_wrong(ch01, "test_te_softmax", "te_softmax", answer, says))
    for grader, exercise, catalogue in [("test_vectorize_add", "vectorize_add", ch02.VECTORIZE_ADD_MISTAKES),
                                        ("test_fuse_relu_loops", "fuse_relu_loops", ch02.FUSE_RELU_MISTAKES),
                                        ("test_tile_matmul", "tile_matmul", ch02.TILE_MATMUL_MISTAKES)]:
        cases += [_wrong(ch02, grader, exercise, _schedule_answer(m), m.says) for m in catalogue]
    cases += [_wrong(ch08, "test_lowered_col_sum", "lowered_col_sum", m.computes, m.says)
              for m in ch08.LOWERED_COL_SUM_MISTAKES]
    for wrong, says in [(dict(strict=True), "exactly max_extent"), (dict(any_kind=True), "unrolled too"),
                        (dict(outermost_only=True), "inside other loops")]:
        answer = (lambda kw: lambda m: ch08._unroll_variant(m, **kw))(wrong)
        cases.append(_wrong(ch08, "test_unroll_small_loops", "unroll_small_loops", answer, says))
    return cases + _ch10_cases()


def _ch10_cases():
    """Chapter 10's wrong answers, written as a learner would write them."""
    import numpy as np

    from minitvm import te, tirx
    from minitvm.relax.frontend.nn import op

    def norm(kind):
        def answer(x, w, eps):
            if kind == "all axes":
                return x * op.rsqrt(op.mean(op.square(x)) + eps) * w
            if kind == "eps outside":
                return x / (op.sqrt(op.mean(op.square(x), axis=-1, keepdims=True)) + eps) * w
            centred = x - op.mean(x, axis=-1, keepdims=True)
            return centred * op.rsqrt(op.mean(op.square(centred), axis=-1, keepdims=True) + eps) * w
        return answer

    def mask(offset, strict):
        def answer(scores):
            _, q_len, kv_len = scores.shape
            def at(h, i, j):
                pos = kv_len - q_len + i if offset else i
                return tirx.if_then_else(j < pos if strict else j <= pos, scores[h, i, j], tirx.min_value("float32"))
            return te.compute(scores.shape, at, name="mask")
        return answer

    def attention(scale, axis):
        def answer(q, k, v, k_cache, v_cache, total):
            k_cache.append(k)
            v_cache.append(v)
            keys, values = k_cache.view(total), v_cache.view(total)
            s = op.matmul(op.permute_dims(q, [1, 0, 2]), op.permute_dims(keys, [1, 2, 0]))
            s = s * (1 / np.sqrt(int(q.shape[-1]))) if scale else s
            out = op.matmul(op.softmax(s, axis=axis), op.permute_dims(values, [1, 0, 2]))
            return op.permute_dims(out, [1, 0, 2])
        return answer

    def count(wrong):
        return lambda c, seq_len, wb=4, cb=4: ch10._bytes_np(c, seq_len, wb, cb, **wrong)

    def quantize(kind):
        def answer(w):
            axis = {"column": 0, "tensor": None, "trunc": 1}[kind]
            scale = (np.abs(w).max(axis=axis) / 127).astype("float32")
            scale = np.where(scale > 0, scale, np.float32(1))
            if kind == "trunc":
                return np.clip(w / scale[:, None], -127, 127).astype("int8"), scale
            return np.clip(np.round(w / scale), -127, 127).astype("int8"), np.atleast_1d(scale)
        return answer

    cases = [_wrong(ch10, "test_rms_norm", "rms_norm", norm(kind), says) for kind, says in
             [("all axes", "over every axis"), ("eps outside", "after the square root"),
              ("layer norm", "that is LayerNorm")]]
    cases += [_wrong(ch10, "test_causal_mask", "causal_mask", mask(offset, strict), says) for offset, strict, says in
              [(False, False, "kv_len - q_len + i"), (True, True, "the diagonal is masked")]]
    cases += [_wrong(ch10, "test_cached_attention", "cached_attention", attention(scale, axis), says)
              for scale, axis, says in [(False, -1, "not scaled"), (True, 0, "over the heads")]]
    cases += [_wrong(ch10, "test_decode_bytes_per_token", "decode_bytes_per_token", count(wrong), says[:30])
              for says, wrong in ch10.BYTES_MISTAKES]
    cases += [_wrong(ch10, "test_quantize_per_channel", "quantize_per_channel", quantize(kind), says)
              for kind, says in [("column", "per column"), ("tensor", "for the whole tensor"), ("trunc", "truncated")]]
    return cases


@pytest.mark.parametrize("chapter, grader, exercise, answer, says", _cases())
def test_a_catalogued_mistake_is_named(chapter, grader, exercise, answer, says):
    learner = SimpleNamespace(**{exercise: answer})
    with PassContext(config=GRADING_CONFIG), pytest.raises((AssertionError, ValueError)) as failure:
        getattr(chapter, grader)(learner)
    message = learner_message(failure.value)
    named = [line for line in message.splitlines() if line.startswith("likely mistake:")]
    assert len(named) == 1 and says in named[0], f"expected the mistake {says!r} to be named, got:\n{message}"


def test_an_uncatalogued_mistake_names_nothing():
    """A wrong answer that is none of the catalogue's keeps the plain message (no false diagnosis)."""
    learner = SimpleNamespace(row_sum_of_squares=lambda m, n: ch01._row_sum_variant(m, n, extent=n - 2))
    with PassContext(config=GRADING_CONFIG), pytest.raises(AssertionError) as failure:
        ch01.test_row_sum_of_squares(learner)
    message = learner_message(failure.value)
    assert "differ" in message and "likely mistake" not in message, message
