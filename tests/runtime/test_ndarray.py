"""NDArray, Device and DLPack interop."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import runtime

RNG = np.random.default_rng(0)


def test_device():
    dev = minitvm.cpu(0)
    assert dev == minitvm.device("cpu") == minitvm.device("llvm", 0)
    assert dev.device_type == 1 and dev.device_id == 0
    assert repr(dev) == "cpu(0)"
    dev.sync()
    with pytest.raises(ValueError, match="'cpu' and 'cuda'"):
        minitvm.device("rocm")
    gpu = minitvm.cuda(0)  # the emulated GPU: host memory, DLPack type 2 as TVM's tvm.cuda()
    assert gpu == minitvm.device("cuda") and gpu.device_type == 2 and repr(gpu) == "cuda(0)"
    assert minitvm.nd.array(np.ones(2, "float32"), gpu).device == gpu


def test_array_copies_and_reports_shape_dtype():
    x = RNG.standard_normal((3, 4)).astype("float32")
    a = minitvm.nd.array(x)
    assert a.shape == (3, 4) and a.dtype == "float32" and a.device == minitvm.cpu(0)
    x[0, 0] = 100.0
    assert a.numpy()[0, 0] != 100.0  # nd.array copied
    out = a.numpy()
    out[0, 1] = -5
    assert a.numpy()[0, 1] != -5  # numpy() returns a copy
    assert isinstance(a.shape[0], int)


def test_array_from_list_with_dtype_and_device():
    a = minitvm.nd.array([[1, 2], [3, 4]], device=minitvm.cpu(), dtype="int64")
    assert a.dtype == "int64" and a.shape == (2, 2)
    np.testing.assert_array_equal(a.numpy(), [[1, 2], [3, 4]])
    b = minitvm.nd.array(np.arange(6).reshape(2, 3).T)  # non-contiguous source: copied compactly
    assert b.shape == (3, 2)
    np.testing.assert_array_equal(b.numpy(), np.arange(6).reshape(2, 3).T)


@pytest.mark.parametrize("shape, dtype", [((7,), "float32"), ((3, 5), "int8"), ((), "float64"), ((4, 3, 2), "bool")])
def test_arrays_start_on_a_cache_line_as_tvms_do(shape, dtype):
    """numpy aligns to 16 bytes only; minitvm's arrays start at 64 (TVM's kAllocAlignment), so a
    kernel's vector loads never straddle two cache lines because of where the array begins."""
    x = (RNG.standard_normal(shape) * 10).astype(dtype)
    made = [minitvm.nd.array(x), minitvm.nd.array(x.tolist(), dtype=dtype), minitvm.nd.empty(shape, dtype),
            minitvm.nd.array(x).copyto(minitvm.cpu())]
    for a in made:
        assert a.data_ptr % runtime.ndarray.ALLOC_ALIGNMENT == 0 and a.shape == shape and a.dtype == dtype
    for a in made[:2] + made[3:]:
        np.testing.assert_array_equal(a.numpy(), x)
    with pytest.raises(ValueError, match="negative dimensions"):
        minitvm.nd.empty((2, -1))


def test_empty_copyfrom_copyto():
    e = minitvm.nd.empty((2, 3), "float64")
    assert e.shape == (2, 3) and e.dtype == "float64"
    src = RNG.standard_normal((2, 3))
    e.copyfrom(src)
    np.testing.assert_array_equal(e.numpy(), src)
    f = minitvm.nd.empty((2, 3), "float64")
    e.copyto(f)
    np.testing.assert_array_equal(f.numpy(), src)
    g = e.copyto(minitvm.cpu())
    np.testing.assert_array_equal(g.numpy(), src)
    with pytest.raises(ValueError, match="shape"):
        e.copyfrom(np.zeros((3, 2)))


def test_repr_and_html():
    a = minitvm.nd.array(np.arange(4, dtype="int32"))
    assert "shape=(4,)" in repr(a) and "cpu(0)" in repr(a)
    assert "NDArray" in a._repr_html_()


def test_newer_tvm_spellings():
    assert runtime.Tensor is runtime.NDArray
    t = runtime.tensor(np.ones(3, "float32"))
    assert isinstance(t, runtime.NDArray)


def test_dlpack_from_torch_is_zero_copy():
    import torch
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = minitvm.nd.from_dlpack(t)
    assert a.shape == (3, 4) and a.dtype == "float32"
    t[0, 0] = 42.0
    assert a.numpy()[0, 0] == 42.0


def test_dlpack_to_torch_is_zero_copy():
    import torch
    a = minitvm.nd.array(RNG.standard_normal((2, 5)).astype("float32"))
    t = torch.from_dlpack(a)
    assert tuple(t.shape) == (2, 5) and t.dtype == torch.float32
    t.mul_(0).add_(7)
    np.testing.assert_array_equal(a.numpy(), np.full((2, 5), 7, "float32"))


def test_dlpack_non_contiguous_torch_tensor_is_copied():
    import torch
    t = torch.arange(12, dtype=torch.int64).reshape(3, 4).t()
    a = minitvm.nd.from_dlpack(t)
    np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_as_numpy_is_the_one_conversion_of_array_likes():
    import torch

    from minitvm.runtime.ndarray import as_numpy

    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4)).astype("float32")
    assert as_numpy(a) is a  # numpy stays as it is: no copy
    np.testing.assert_array_equal(as_numpy(minitvm.nd.array(a)), a)
    np.testing.assert_array_equal(as_numpy(torch.from_numpy(a)), a)
    np.testing.assert_array_equal(as_numpy(a.tolist()), a)
    assert as_numpy(np.float32(2.5)).shape == ()


def test_large_blocks_start_on_a_huge_page_and_outlive_their_mapping_object():
    import gc

    from minitvm.runtime import ndarray as ndarray_module

    rng = np.random.default_rng(56)
    data = rng.standard_normal(700_000).astype("float32")  # 2.8 MB: one whole huge page and a tail
    a = minitvm.nd.array(data)
    huge = ndarray_module._MADV_HUGEPAGE is not None
    assert a._array.ctypes.data % (ndarray_module.HUGE_PAGE if huge else ndarray_module.ALLOC_ALIGNMENT) == 0
    gc.collect()
    np.testing.assert_array_equal(a.numpy(), data)
    out = minitvm.nd.empty((700_000,), "float32")
    out.copyfrom(a)
    out._array += 1
    np.testing.assert_array_equal(out.numpy(), data + 1)
    assert minitvm.nd.array(data[:10])._array.ctypes.data % ndarray_module.ALLOC_ALIGNMENT == 0


def test_arrays_of_dtypes_numpy_cannot_name_report_tvms_name():
    # TVM's runtime allocates bfloat16, float8 and vector-lane tensors; numpy has no such
    # dtypes, so the bytes are stored raw and the array answers with TVM's name
    import minitvm
    for dtype, want, nbytes in (("bfloat", "bfloat16", 2), ("float8_e4m3fn", "float8_e4m3fn", 1),
                                ("float32x4", "float32x4", 16)):
        a = minitvm.runtime.empty([64, 8], dtype)
        assert a.dtype == want and a.shape == (64, 8)
        view = a._create_view([4, 4], dtype, relative_byte_offset=3 * nbytes)
        assert view.dtype == want and view.byte_offset == 3 * nbytes
        assert view.data_ptr == a.data_ptr + 3 * nbytes
    with pytest.raises(TypeError, match="data type 'floaty' not understood"):
        minitvm.runtime.empty([2], "floaty")
