"""Buffers: named multi-dimensional views of memory that TIR reads and writes."""

from __future__ import annotations

from typing import Any

from ..ir import dtype as _dt
from ..ir.node import Node, node
from .expr import BufferLoad, IntImm, PrimExpr, Ramp, Range, Var, const, convert, shape_const
from .op import access_ptr

__all__ = ["Buffer", "decl_buffer", "BufferRegion", "DEFAULT_ALIGNMENT"]

#: TVM's ``kAllocAlignment``: the data alignment a buffer promises unless it says otherwise
DEFAULT_ALIGNMENT = 64


@node(binds=True)
class Buffer(Node):
    """A buffer: ``shape`` and ``dtype`` over the memory ``data`` points to.

    ``A[i, j]`` builds a load; ``A[i, 0:128]`` builds a region (for ``T.reads``).
    """

    data: Var
    dtype: str
    shape: tuple
    strides: tuple = ()
    elem_offset: Any = 0
    scope: str = "global"
    name: str = "buffer"
    #: where the logical axes split into groups that flatten separately (TVM's physical
    #: dimensions); on the CPU the groups are laid out one after another, row-major
    axis_separators: tuple = ()
    #: a view's first element sits at an element offset that is a multiple of this (TVM's
    #: ``offset_factor``, as a tensor intrinsic's buffers declare; 0 and 1 mean any offset):
    #: lowering a ``T.match_buffer`` of a region that breaks it is an error
    offset_factor: int = 1
    #: the data pointer is a multiple of this many bytes (TVM's ``data_alignment``; 0 or less
    #: means TVM's default, 64): allocations are made this aligned
    data_alignment: int = 64

    def __post_init__(self) -> None:
        super().__post_init__()
        align = self.data_alignment
        if isinstance(align, bool) or not isinstance(align, int):
            raise TypeError(f"buffer {self.name}: data_alignment must be an int, got {align!r}")
        align = DEFAULT_ALIGNMENT if align <= 0 else align
        if align & (align - 1):
            raise ValueError(f"buffer {self.name}: data_alignment {align} is not a power of two")
        object.__setattr__(self, "data_alignment", align)
        object.__setattr__(self, "axis_separators", tuple(int(a) for a in self.axis_separators))
        factor = self.offset_factor
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 0:
            raise ValueError(f"buffer {self.name}: offset_factor must be an int >= 0, got {factor!r}")
        object.__setattr__(self, "offset_factor", max(1, factor))  # as TVM: 0 means 1
        object.__setattr__(self, "shape", tuple(shape_const(s) if isinstance(s, int) else convert(s)
                                                for s in self.shape))
        object.__setattr__(self, "strides", tuple(convert(s) for s in self.strides))
        object.__setattr__(self, "elem_offset", convert(self.elem_offset))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Buffer({self.name!r}, {list(self.shape)}, {self.dtype!r})"

    def __getitem__(self, key: Any) -> Any:
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != self.ndim:
            raise IndexError(f"buffer {self.name} has {self.ndim} dimensions, indexed with {len(key)}")
        if any(isinstance(k, slice) for k in key):
            return BufferRegion.from_indices(self, key)
        return BufferLoad(self, tuple(_as_index(k) for k in key))

    def vload(self, indices: Any, dtype: Any = None, predicate: Any = None) -> BufferLoad:
        """``A.vload([0, T.Ramp(0, 1, 4)], predicate=mask)``: a (vector) load, only the lanes
        ``predicate`` holds for when one is given (TVM's predicated load)."""
        indices = list(indices)
        lanes = 1 if dtype is None else _dt.lanes(str(dtype))
        if dtype is not None and _dt.element(str(dtype)) != self.dtype:
            raise TypeError(f"{self.name}.vload: {self.name} holds {self.dtype}, not {dtype}")
        if lanes > 1 and indices and _dt.lanes(convert(indices[-1]).dtype) == 1:
            # A.vload([i, j], "float32x4"): as TVM's, the last index starts a run of 4 lanes
            last = convert(indices[-1])
            indices[-1] = Ramp(last, const(1, last.dtype), lanes)
        load = self[tuple(indices)]
        if dtype is not None and str(dtype) != load.dtype:
            raise TypeError(f"{self.name}.vload: the indices load {load.dtype}, not {dtype}")
        if predicate is None:
            return load
        return BufferLoad(self, load.indices, _lane_mask(predicate, load.dtype, f"{self.name}.vload"))

    def vstore(self, indices: Any, value: Any, predicate: Any = None) -> Any:
        """``A.vstore([0, T.Ramp(0, 1, 4)], value, predicate=mask)``: a (vector) store, only the
        lanes ``predicate`` holds for when one is given (TVM's predicated store)."""
        from .stmt import BufferStore  # lazy: stmt builds on buffer

        indices = tuple(convert(i) for i in indices)
        value = convert(value)
        mask = None if predicate is None else _lane_mask(predicate, value.dtype, f"{self.name}.vstore")
        return BufferStore(self, value, indices, predicate=mask)

    #: access-mask bits of :meth:`access_ptr`
    READ, WRITE = 1, 2

    def access_ptr(self, access_mask: Any, ptr_type: str = "handle", content_lanes: int = 1,
                   offset: Any = 0, extent: Any = None) -> PrimExpr:
        """A ``tvm_access_ptr`` call: this buffer's memory from element ``offset`` on, for
        ``extent`` elements (default: the rest of the buffer), read (``"r"``), written (``"w"``)
        or both (``"rw"``).  An opaque access: schedules see it as reading/writing the buffer."""

        return access_ptr(self, access_mask, ptr_type, content_lanes, offset, extent)


def _as_index(k: Any) -> PrimExpr:
    return convert(k) if not isinstance(k, PrimExpr) else k


def _lane_mask(predicate: Any, dtype: str, where: str) -> PrimExpr:
    """A predicate for an access of ``dtype``: a bool vector of as many lanes."""
    predicate = convert(predicate)
    if predicate.dtype != _dt.with_lanes("bool", _dt.lanes(dtype)) or _dt.lanes(dtype) == 1:
        raise TypeError(f"{where}: the predicate must be a bool vector of the access's {_dt.lanes(dtype)} lanes, "
                        f"got {predicate.dtype}")
    return predicate


@node
class BufferRegion(Node):
    """A rectangular part of a buffer: one :class:`Range` per dimension."""

    buffer: Buffer
    region: tuple

    @staticmethod
    def from_indices(buffer: Buffer, key: tuple) -> "BufferRegion":
        ranges = []
        for dim, k in zip(buffer.shape, key):
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    raise IndexError(f"buffer region of {buffer.name} cannot have a step")
                lo = _as_index(0 if k.start is None else k.start)
                hi = dim if k.stop is None else _as_index(k.stop)
                ranges.append(Range(lo, hi - lo))
            else:
                k = _as_index(k)
                ranges.append(Range(k, const(1, k.dtype)))
        return BufferRegion(buffer, tuple(ranges))

    @staticmethod
    def full_region(buffer: Buffer) -> "BufferRegion":
        return BufferRegion(buffer, tuple(Range(const(0, s.dtype), s) for s in buffer.shape))

    def as_prim_expr(self) -> BufferLoad:
        """The region as a value (``A[0:4] + B[0:4]`` in TVMScript, as TVM converts it): a load
        whose one dimension of more than one element is a T.Ramp of that many lanes."""
        indices = []
        for r in self.region:
            if isinstance(r.extent, IntImm) and r.extent.value == 1:
                indices.append(r.min)
            elif isinstance(r.extent, IntImm):
                indices.append(Ramp(r.min, const(1, r.min.dtype), r.extent.value))
            else:
                raise TypeError(f"the slice of {self.buffer.name} has a symbolic length ({r.extent}); a vector "
                                "needs a constant number of lanes")
        if sum(isinstance(i, Ramp) for i in indices) > 1:
            raise TypeError(f"the slice of {self.buffer.name} spans more than one dimension; a vector load "
                            "reads along one")
        return BufferLoad(self.buffer, tuple(indices))


def decl_buffer(shape: Any, dtype: str = "float32", name: str = "buffer", data: Var | None = None,
                strides: Any = None, elem_offset: Any = None, scope: str = "global",
                axis_separators: Any = None, *, offset_factor: int = 0, data_alignment: int = -1) -> Buffer:
    """Declare a new buffer (TVM's ``tir.decl_buffer``)."""
    dtype = _dt.check(dtype)
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    data = data if data is not None else Var(name, "handle")
    return Buffer(data, dtype, tuple(shape), tuple(strides or ()),
                  0 if elem_offset is None else elem_offset, scope, name, tuple(axis_separators or ()),
                  offset_factor, data_alignment)
