"""Detection references: get_valid_counts and (soft) non-maximum suppression.

Boxes are rows of ``data`` [batch, anchors, elem]: a class id at ``id_index``, a score at
``score_index`` and four corners from ``coord_start``; -1 fills every unused slot.
"""

import numpy as np


def get_valid_counts_python(data, score_threshold=0, id_index=0, score_index=1):
    """Move the boxes scoring above ``score_threshold`` (with a class id >= 0, unless
    ``id_index`` < 0) to the front, in order: (valid_count [B], boxes, their old indices)."""
    batch, anchors, _ = data.shape
    count = np.zeros(batch, dtype="int32")
    out = np.full_like(data, -1.0)
    where_from = np.full((batch, anchors), -1, dtype="int32")
    for b in range(batch):
        keep = data[b, :, score_index] > score_threshold
        if id_index >= 0:
            keep &= data[b, :, id_index] >= 0
        kept = np.flatnonzero(keep)
        count[b] = len(kept)
        out[b, :len(kept)] = data[b, kept]
        where_from[b, :len(kept)] = kept
    return count, out, where_from


def _iou(a, b):
    """Intersection over union of two boxes given by any two opposite corners."""
    a_lo, a_hi = np.minimum(a[:2], a[2:]), np.maximum(a[:2], a[2:])
    b_lo, b_hi = np.minimum(b[:2], b[2:]), np.maximum(b[:2], b[2:])
    inter = np.prod(np.maximum(0.0, np.minimum(a_hi, b_hi) - np.maximum(a_lo, b_lo)))
    union = np.prod(a_hi - a_lo) + np.prod(b_hi - b_lo) - inter
    return 0.0 if union <= 0 else inter / union


class _Nms:
    """Settings shared by the per-batch passes of non_max_suppression_python."""

    def __init__(self, iou_threshold, force_suppress, coord_start, score_index, id_index):
        self.iou_threshold, self.force = iou_threshold, force_suppress
        self.coords = slice(coord_start, coord_start + 4)
        self.score, self.id = score_index, id_index

    def overlaps(self, kept, other):
        """Whether ``kept`` suppresses ``other``: same class (unless forced) and IoU high."""
        if not self.force and self.id >= 0 and kept[self.id] != other[self.id]:
            return False
        return _iou(kept[self.coords], other[self.coords]) >= self.iou_threshold

    def greedy(self, rows, src, n, max_output_size):
        """Hard NMS over the first n score-sorted rows; a suppressed row gets score -1 and
        source -1; rows past ``max_output_size`` kept ones are cleared whole."""
        kept = 0
        for j in range(n):
            if rows[j, self.score] <= 0.0 or 0 < max_output_size <= kept:
                rows[j], src[j] = -1.0, -1
                continue
            kept += 1
            for k in range(j + 1, n):
                if rows[k, self.score] > 0.0 and self.overlaps(rows[j], rows[k]):
                    rows[k, self.score], src[k] = -1.0, -1

    def soft(self, rows, src, n, max_output_size, sigma, threshold):
        """Soft NMS: repeatedly move the best live row forward; overlapping rows above the IoU
        threshold die, others have their score decayed by exp(-iou^2 / (2 sigma)).
        Returns how many rows were selected."""
        selected = 0
        while selected < n and (max_output_size < 0 or selected < max_output_size):
            live = [j for j in range(selected, n) if src[j] >= 0 and rows[j, self.score] > threshold]
            if not live:
                break
            best = max(live, key=lambda j: (rows[j, self.score], -j))
            rows[[selected, best]], src[[selected, best]] = rows[[best, selected]], src[[best, selected]]
            for j in range(selected + 1, n):
                if src[j] < 0 or rows[j, self.score] <= threshold:
                    continue
                if not self.force and self.id >= 0 and rows[selected, self.id] != rows[j, self.id]:
                    continue
                iou = _iou(rows[selected, self.coords], rows[j, self.coords])
                if iou >= self.iou_threshold:
                    src[j] = -1
                else:
                    rows[j, self.score] *= np.exp(-0.5 / sigma * iou * iou)
                    if rows[j, self.score] <= threshold:
                        src[j] = -1
            selected += 1
        return selected


def non_max_suppression_python(data, valid_count, indices, max_output_size=-1, iou_threshold=0.5,
                               force_suppress=False, top_k=-1, coord_start=2, score_index=1,
                               id_index=0, return_indices=True, invalid_to_bottom=False,
                               soft_nms_sigma=0.0, score_threshold=0.0):
    """TVM's classic NMS on get_valid_counts' output.

    Returns, as TVM's reference: with ``return_indices``, [indices [B, A], valid_box_count
    [B, 1]] -- or [data, indices, count] for soft NMS (``soft_nms_sigma`` > 0), indices mapped
    through ``indices`` to the original anchors; otherwise the suppressed data (survivors
    first when ``invalid_to_bottom``).
    """
    batch, anchors, _ = data.shape
    nms = _Nms(iou_threshold, force_suppress, coord_start, score_index, id_index)
    soft = soft_nms_sigma > 0.0
    out = np.full_like(data, -1.0)
    src = np.full((batch, anchors), -1, dtype="int32")
    mapped = np.full((batch, anchors), -1, dtype="int32")
    count = np.zeros((batch, 1), dtype="int32")
    for b in range(batch):
        n = int(valid_count[b])
        n = top_k if 0 < top_k < n else n
        order = np.argsort(-data[b, :n, score_index], kind="stable")
        out[b, :n], src[b, :n] = data[b, order], order
        if soft:
            count[b, 0] = nms.soft(out[b], src[b], n, max_output_size, soft_nms_sigma, score_threshold)
            out[b, count[b, 0]:] = -1.0
            src[b, count[b, 0]:] = -1
        else:
            nms.greedy(out[b], src[b], n, max_output_size)
            count[b, 0] = int(np.sum(src[b] >= 0))
        alive = src[b][src[b] >= 0]
        mapped[b, :len(alive)] = np.asarray(indices)[b, alive]
    if return_indices:
        return [out, mapped, count] if soft else [mapped, count]
    if invalid_to_bottom:
        moved = np.full_like(data, -1.0)
        for b in range(batch):
            alive = out[b, :, score_index] >= 0
            moved[b, :int(alive.sum())] = out[b, alive]
        return moved
    return out
