"""NDArray: an n-dimensional array on a device that kernels read and write in place.

An NDArray owns a C-contiguous numpy array; kernels get its data pointer.  DLPack goes
both ways (``nd.from_dlpack(torch_tensor)`` and ``torch.from_dlpack(nd_array)``) without
copying, through numpy's own DLPack support.
"""

from __future__ import annotations

import html
import mmap
from typing import Any

import numpy as np

from .device import Device, cpu

__all__ = ["NDArray", "array", "empty", "from_dlpack", "Tensor", "tensor", "ALLOC_ALIGNMENT", "aligned_block"]

#: where every array minitvm allocates starts, in bytes: a cache line, as TVM's
#: ``kAllocAlignment``.  numpy only promises 16, and then every other 32-byte AVX load of a
#: kernel straddles two cache lines.
ALLOC_ALIGNMENT = 64


#: blocks of at least this many bytes start on a 2 MiB boundary, their whole 2 MiB spans
#: advised as transparent huge pages (Linux, when the kernel allows it): a decode step streams
#: every weight once, and with 4 KiB pages each page costs a TLB miss -- a 1 x 512 x 1536 GEMV
#: read 23.5 GB/s from 4 KiB pages and 27.7 from huge ones here.  numpy advises only from 4 MiB on,
#: without aligning, so a model's 1-4 MiB weights got none
HUGE_PAGE = 2 << 20


def aligned_block(nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(raw, block)``: ``raw`` a new uint8 array a little larger than ``nbytes``, ``block`` the
    ``nbytes`` of it that start on an ``ALLOC_ALIGNMENT`` boundary (a view of ``raw``)."""
    if nbytes >= HUGE_PAGE and _MADV_HUGEPAGE is not None:
        return _huge_page_block(nbytes)
    raw = np.empty(nbytes + ALLOC_ALIGNMENT, dtype=np.uint8)
    skip = (-raw.ctypes.data) % ALLOC_ALIGNMENT
    return raw, raw[skip:skip + nbytes]


_MADV_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", None)


def _huge_page_block(nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`aligned_block` from an anonymous mapping: ``block`` starts on a ``HUGE_PAGE``
    boundary and its whole huge pages are advised as such (its tail, shorter than one, is not:
    a huge page there would take memory past the block)."""
    region = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(region, dtype=np.uint8)  # keeps the mapping alive as long as any view
    skip = (-raw.ctypes.data) % HUGE_PAGE
    try:
        region.madvise(_MADV_HUGEPAGE, skip, nbytes // HUGE_PAGE * HUGE_PAGE)
    except OSError:  # a kernel without transparent huge pages: 4 KiB pages, as before
        pass
    return raw, raw[skip:skip + nbytes]


def _aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimensions are not allowed: shape {shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return aligned_block(nbytes)[1].view(dtype).reshape(shape)


def _storage(dtype: Any) -> tuple[np.dtype, str | None]:
    """The numpy dtype that stores ``dtype`` and, when numpy has no name for it (bfloat16,
    float8 kinds, vector lanes such as float32x4), TVM's name, which the array then reports.
    Such arrays hold raw bytes of the right size: enough to allocate, view and pass them, as
    TVM's runtime does; arithmetic on them is the kernels' business."""
    try:
        return np.dtype(dtype), None
    except TypeError:
        pass
    from ..ir import dtype as _dt  # lazy: ir sits above runtime on the layer ladder
    name = "bfloat16" if str(dtype) == "bfloat" else str(dtype)
    try:
        nbytes = _dt.bits(name) * _dt.lanes(name) // 8
    except (TypeError, ValueError) as err:
        raise TypeError(f"data type {dtype!r} not understood") from err
    return np.dtype(f"u{nbytes}" if nbytes in (1, 2, 4, 8) else f"V{nbytes}"), name


def as_numpy(value: Any) -> np.ndarray:
    """The host numpy array for ``value``: an NDArray or a torch tensor through its ``.numpy()``
    (a copy), a numpy array as it is, anything else (lists, scalars) through ``np.asarray``.
    The one conversion every "array-like in" API of minitvm uses."""
    if hasattr(value, "numpy") and not isinstance(value, (np.ndarray, np.generic)):
        value = value.numpy()
    return np.asarray(value)


class NDArray:
    """An array that kernels compute on (TVM's ``runtime.NDArray``, newer ``Tensor``)."""

    __slots__ = ("_array", "_device", "_ptr", "_byte_offset", "_dtype", "__weakref__")

    def __init__(self, data: np.ndarray, device: Device | None = None, *, _address: int | None = None):
        if not isinstance(data, np.ndarray):
            raise TypeError(f"NDArray wraps a numpy array, got {type(data).__name__}")
        if not data.flags.c_contiguous:
            raise ValueError("NDArray needs a C-contiguous numpy array")
        self._array = data
        self._device = device or cpu(0)
        # the array is owned and never reallocated; the VM passes the address it already knows
        # (asking numpy for it costs about a microsecond, a lot on a batch-1 model's path)
        self._ptr = int(data.ctypes.data) if _address is None else _address
        self._byte_offset = 0  # a view's offset into the array it was made from (_create_view)
        self._dtype: str | None = None  # TVM's name of a dtype numpy cannot name (see _storage)

    # -- properties -------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self._array.shape)

    @property
    def dtype(self) -> str:
        return self._dtype or str(self._array.dtype)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        return int(self._array.size)

    @property
    def strides(self) -> tuple[int, ...]:
        """Elements between neighbours along each axis (always compact: row-major)."""
        return tuple(int(st) // self._array.itemsize for st in self._array.strides)

    @property
    def byte_offset(self) -> int:
        """DLPack's ``byte_offset``: 0, or a view's offset from its base (``_create_view``)."""
        return self._byte_offset

    def _create_view(self, shape: Any, dtype: str | None = None, relative_byte_offset: int = 0) -> "NDArray":
        """A view of this array's memory: ``shape`` elements of ``dtype`` starting
        ``relative_byte_offset`` bytes further on (TVM's ``NDArray._create_view``)."""
        dt, name = _storage(dtype or self.dtype)
        shape = tuple(int(d) for d in ([shape] if isinstance(shape, int) else shape))
        start = self._byte_offset + int(relative_byte_offset)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        base = self._array.reshape(-1).view(np.uint8)
        if relative_byte_offset < 0 or start + nbytes > base.size + self._byte_offset:
            raise ValueError(f"_create_view: {nbytes} bytes at byte offset {relative_byte_offset} do not fit in "
                             f"an array of {base.size} bytes")
        view = NDArray(base[int(relative_byte_offset):int(relative_byte_offset) + nbytes].view(dt).reshape(shape),
                       self._device)
        view._byte_offset = start
        view._dtype = name
        return view

    @property
    def data_ptr(self) -> int:
        """Address of the first element (what a kernel receives)."""
        return self._ptr

    # -- copies -----------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A numpy copy of the contents."""
        return self._array.copy()

    asnumpy = numpy  # older TVM spelling

    def copyfrom(self, source: Any) -> "NDArray":
        """Copy ``source`` (NDArray, numpy array or nested list) into this array in place."""
        src = source._array if isinstance(source, NDArray) else np.asarray(source)
        if tuple(src.shape) != self.shape:
            raise ValueError(f"copyfrom: shape mismatch, this array has shape {self.shape}, "
                             f"the source has {tuple(src.shape)}")
        if isinstance(source, NDArray) and source.dtype != self.dtype:
            raise TypeError(f"copyfrom: dtype mismatch, this array is {self.dtype}, "
                            f"the source is {source.dtype}")
        np.copyto(self._array, src, casting="unsafe")
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        """``arr[:] = value``: copy a whole numpy array or NDArray in (TVM allows only the full
        slice, so a packed function fills an output it was given)."""
        if not (isinstance(index, slice) and index.start is None and index.stop is None and index.step is None):
            raise ValueError(f"NDArray supports only arr[:] = value (a whole-array copy), not arr[{index!r}]")
        if isinstance(value, NDArray):
            if value is not self:
                self.copyfrom(value)
        elif isinstance(value, (np.ndarray, np.generic)):
            self.copyfrom(value)
        else:
            raise TypeError(f"arr[:] = value: type {type(value).__name__} not supported (a numpy array or NDArray)")

    def copyto(self, target: "NDArray | Device") -> "NDArray":
        """Copy into ``target`` (an NDArray) or into a new array on ``target`` (a Device)."""
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        if isinstance(target, Device):
            return array(self._array, target)
        raise TypeError(f"copyto: expected an NDArray or a Device, got {type(target).__name__}")

    # -- interop ----------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is not None and np.dtype(dtype) != self._array.dtype:
            return self._array.astype(dtype)
        return self._array.copy() if copy else self._array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()

    to_dlpack = __dlpack__

    # -- printing ---------------------------------------------------------------
    def __repr__(self) -> str:
        body = np.array2string(self._array, separator=", ", threshold=64, edgeitems=3)
        return f"<minitvm.nd.NDArray shape={self.shape}, {self.device}>\n{body}"

    def __str__(self) -> str:
        return str(self._array)

    def _repr_html_(self) -> str:
        body = html.escape(np.array2string(self._array, threshold=64, edgeitems=3))
        return (f"<div><b>NDArray</b> shape={self.shape} dtype={self.dtype} on {self.device}"
                f"<pre>{body}</pre></div>")

    def __len__(self) -> int:
        if not self._array.ndim:
            raise TypeError("len() of a 0-d NDArray")
        return self._array.shape[0]


def _check_device(device: Device | None) -> Device:
    if device is None:
        return cpu(0)
    if not isinstance(device, Device):
        raise TypeError(f"expected a Device such as minitvm.cpu(0), got {type(device).__name__}")
    if device.device_type not in (Device.kDLCPU, Device.kDLCUDA):  # (the emulated GPU uses host memory)
        raise ValueError(f"minitvm arrays live on the CPU or the emulated GPU, got {device}")
    return device


def array(arr: Any, device: Device | None = None, dtype: str | None = None) -> NDArray:
    """A new NDArray holding a copy of ``arr`` (numpy array, nested list, NDArray or tensor)."""
    device = _check_device(device)
    if isinstance(arr, NDArray):
        arr = arr._array
    elif hasattr(arr, "__dlpack__") and not isinstance(arr, np.ndarray):
        arr = np.from_dlpack(arr)
    source = np.asarray(arr, dtype=dtype)
    if source.dtype == np.dtype("O"):
        raise TypeError("cannot make an NDArray from Python objects (ragged list?)")
    data = _aligned_empty(source.shape, source.dtype)
    np.copyto(data, source)
    return NDArray(data, device)


def empty(shape: Any, dtype: str = "float32", device: Device | None = None) -> NDArray:
    """An uninitialised NDArray of ``shape`` and ``dtype``."""
    device = _check_device(device)
    if isinstance(shape, int):
        shape = (shape,)
    storage, name = _storage(dtype)
    out = NDArray(_aligned_empty(tuple(int(s) for s in shape), storage), device)
    out._dtype = name
    return out


def from_dlpack(tensor: Any) -> NDArray:
    """Share the memory of a DLPack-capable tensor (torch, numpy, ...) without copying.

    Only CPU tensors can be shared.  A non-contiguous tensor cannot be viewed as a flat
    array, so it is copied (writes then do not reach the source).
    """
    try:
        data = np.from_dlpack(tensor)
    except (BufferError, RuntimeError, TypeError) as err:
        raise TypeError(f"from_dlpack: cannot share this {type(tensor).__name__}: {err}") from err
    if not data.flags.c_contiguous:
        data = np.require(data, requirements="C")  # unlike ascontiguousarray, keeps 0-d arrays 0-d
    return NDArray(data, cpu(0))


# newer TVM spellings
Tensor = NDArray
tensor = array
