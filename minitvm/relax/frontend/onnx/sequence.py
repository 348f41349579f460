"""ONNX sequences (``SequenceConstruct``, ``SequenceEmpty``, ``SequenceAt``, ``SequenceInsert``,
``SequenceErase``, ``SequenceLength``, ``ConcatFromSequence``, ``SplitToSequence``) as Relax
tuples, as TVM's importer has them: a sequence's length and every position must be known while
importing; a graph output that is a sequence is a tuple of tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import op as _op
from ...expr import Expr, Tuple, TupleGetItem, struct_info_of
from ...struct_info import TupleStructInfo
from .importer import OnnxImporter, OnnxNode, _is_symbolic


def _fields(node: OnnxNode, imp: OnnxImporter, k: int = 0) -> list[Expr]:
    """The tensors of sequence input ``k``."""
    seq = imp.tensor(node, k)
    if isinstance(seq, Tuple):
        return list(seq.fields)
    sinfo = struct_info_of(seq)
    if not isinstance(sinfo, TupleStructInfo):
        raise node.error(f"input {node.inputs[k]!r} is not a sequence")
    return [TupleGetItem(seq, i) for i in range(len(sinfo.fields))]


def _position(node: OnnxNode, imp: OnnxImporter, k: int, length: int, default: int, inserting: bool) -> int:
    """Input ``k`` as a position in a sequence of ``length`` (negative counts from the end;
    inserting may name the end itself), ``default`` when absent."""
    pos = imp.scalar_input(node, k, "the position")
    if pos is None:
        return default
    pos = int(pos)
    top = length if inserting else length - 1
    if not -length <= pos <= top:
        raise node.error(f"position {pos} is out of range for a sequence of {length}")
    return pos + length if pos < 0 else pos


def sequence_construct(node: OnnxNode, imp: OnnxImporter):
    return Tuple([imp.tensor(node, k) for k in range(len(node.inputs))])


def sequence_empty(node: OnnxNode, imp: OnnxImporter):
    return Tuple([])


def sequence_at(node: OnnxNode, imp: OnnxImporter):
    fields = _fields(node, imp)
    return fields[_position(node, imp, 1, len(fields), 0, False)]


def sequence_insert(node: OnnxNode, imp: OnnxImporter):
    fields = _fields(node, imp)
    fields.insert(_position(node, imp, 2, len(fields), len(fields), True), imp.tensor(node, 1))
    return Tuple(fields)


def sequence_erase(node: OnnxNode, imp: OnnxImporter):
    fields = _fields(node, imp)
    if not fields:
        raise node.error("cannot erase from an empty sequence")
    del fields[_position(node, imp, 1, len(fields), len(fields) - 1, False)]
    return Tuple(fields)


def sequence_length(node: OnnxNode, imp: OnnxImporter):
    return np.array(len(_fields(node, imp)), dtype="int64")


def concat_from_sequence(node: OnnxNode, imp: OnnxImporter):
    """Concatenated along ``axis``, or with ``new_axis`` stacked along a new one."""
    fields = _fields(node, imp)
    if not fields:
        raise node.error("cannot concatenate an empty sequence")
    axis = int(node.attr("axis"))
    if node.attr("new_axis", 0):
        rank = len(struct_info_of(imp.emit(fields[0])).shape_values) + 1
        axis = axis % rank
        fields = [_op.expand_dims(f, [axis]) for f in fields]
    return _op.concat(fields, axis=axis)


def _split_sizes(node: OnnxNode, imp: OnnxImporter, dim: Any) -> tuple[list[int], bool]:
    """The part sizes (a scalar split: parts of that size, the last smaller) and whether the
    parts keep the split axis (without a split: parts of one, squeezed unless ``keepdims``)."""
    if not node.has_input(1):
        if _is_symbolic(dim):
            raise node.error("splitting a symbolic axis needs the split sizes")
        return [1] * int(dim), bool(node.attr("keepdims", 1))
    split = imp.known(node, 1)
    if split is None:
        raise node.error("the split sizes must be known while importing")
    if split.ndim == 0:
        if _is_symbolic(dim):
            raise node.error("splitting a symbolic axis needs the split sizes")
        part, dim = int(split), int(dim)
        return [min(part, dim - start) for start in range(0, dim, part)], True
    return [int(s) for s in split.reshape(-1)], True


def split_to_sequence(node: OnnxNode, imp: OnnxImporter):
    shape = imp.shape(node, 0)
    axis = int(node.attr("axis", 0)) % len(shape)
    sizes, keep = _split_sizes(node, imp, shape[axis])
    cuts = [int(c) for c in np.cumsum(sizes)[:-1]]
    parts = imp.emit(_op.split(imp.tensor(node, 0), cuts, axis=axis))
    fields = [TupleGetItem(parts, i) for i in range(len(sizes))]
    if not keep:
        fields = [imp.emit(_op.squeeze(f, [axis])) for f in fields]
    return Tuple(fields)


CONVERTERS = {
    "SequenceConstruct": sequence_construct, "SequenceEmpty": sequence_empty, "SequenceAt": sequence_at,
    "SequenceInsert": sequence_insert, "SequenceErase": sequence_erase, "SequenceLength": sequence_length,
    "ConcatFromSequence": concat_from_sequence, "SplitToSequence": split_to_sequence,
}
