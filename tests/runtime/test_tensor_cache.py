"""The tensor cache (``tvm.contrib.tvmjs`` writing it, ``vm.builtin.tensor_cache.*`` reading it) and the
legacy KV cache's sliding window."""

import json

import numpy as np
import pytest

import minitvm
from minitvm.contrib import tvmjs, utils
from minitvm.runtime import tensor_cache


def test_dump_and_load_round_trip_with_bf16():
    rng = np.random.default_rng(0)
    params = {"w_0": rng.integers(-5, 5, size=(3,)).astype("int32"),
              "w_1": rng.standard_normal((4, 5)).astype("float32"),
              "w_2": rng.standard_normal((6,)).astype("float32")}
    temp = utils.tempdir()
    tvmjs.dump_tensor_cache(params, temp.path, encode_format={"w_2": "raw", "*": "f32-to-bf16"})
    index = json.loads((temp.path / "tensor-cache.json").read_text())
    formats = {r["name"]: r["format"] for shard in index["records"] for r in shard["records"]}
    assert formats == {"w_0": "f32-to-bf16", "w_1": "f32-to-bf16", "w_2": "raw"}
    tensor_cache.clear()
    minitvm.get_global_func("vm.builtin.tensor_cache.load")(str(temp.path), minitvm.cpu().dlpack_device_type(), 0)
    got = minitvm.get_global_func("vm.builtin.param_array_from_cache")("w", -1)
    assert len(got) == 3
    np.testing.assert_array_equal(got[0].numpy(), params["w_0"])
    # bfloat16 keeps 8 bits of mantissa: within 2^-8 relative, and exactly what the codec gives
    np.testing.assert_allclose(got[1].numpy(), params["w_1"], rtol=2 ** -8)
    np.testing.assert_array_equal(got[1].numpy(), tvmjs._convert_bf16_to_f32(tvmjs._convert_f32_to_bf16(params["w_1"])))
    np.testing.assert_array_equal(got[2].numpy(), params["w_2"])  # raw: exact
    with pytest.raises(KeyError, match="cannot find w_3"):
        tensor_cache.param_array_from_cache("w", 4)
    tensor_cache.clear()


def test_update_rewrites_in_place_and_refuses_other_sizes():
    rng = np.random.default_rng(1)
    temp = utils.tempdir()
    tvmjs.dump_tensor_cache({"a": rng.random(4).astype("float32")}, temp.path, encode_format="raw")
    new = rng.random(4).astype("float32")
    tvmjs.dump_tensor_cache({"a": new, "b": rng.random(2).astype("float32")}, temp.path, encode_format="raw",
                            update_if_exists=True)
    loaded, _ = tvmjs.load_tensor_cache(str(temp.path))
    np.testing.assert_array_equal(loaded["a"].numpy(), new)
    assert sorted(loaded) == ["a", "b"]
    with pytest.raises(ValueError, match="size mismatch"):
        tvmjs.dump_tensor_cache({"a": np.ones(5, "float32")}, temp.path, encode_format="raw", update_if_exists=True)
    with pytest.raises(ValueError, match="Duplicate name a"):
        tvmjs.dump_tensor_cache([("a", new), ("a", new)], temp.path, encode_format="raw")


def test_a_record_outside_its_shard_is_refused(tmp_path):
    (tmp_path / "s.bin").write_bytes(b"\0" * 8)
    rec = {"name": "x", "shape": [4], "dtype": "float32", "format": "raw", "byteOffset": 4, "nbytes": 16}
    (tmp_path / "tensor-cache.json").write_text(json.dumps(
        {"records": [{"dataPath": "s.bin", "format": "raw-shard", "nbytes": 8, "records": [rec]}]}))
    with pytest.raises(ValueError, match="outside its shard of 8 bytes"):
        tensor_cache.load(str(tmp_path))
    (tmp_path / "tensor-cache.json").write_text(json.dumps(
        {"records": [{"dataPath": "../s.bin", "records": []}]}))
    with pytest.raises(ValueError, match="leaves the cache directory"):
        tensor_cache.load(str(tmp_path))


def test_window_override_is_a_ring_after_the_sinks():
    create = minitvm.get_global_func("vm.builtin.attention_kv_cache_create")
    sinks = minitvm.get_global_func("vm.builtin.attention_kv_cache_window_override_with_sinks")
    view = minitvm.get_global_func("vm.builtin.attention_kv_cache_view")
    cache = create(minitvm.nd.array(np.full((4, 2), -1, "int32")), minitvm.runtime.ShapeTuple([4, 2]), 0)
    for i in range(7):  # rows 0, 1 are sinks; rows 2..3 cycle through 2,3,4,5,6
        cache = sinks(cache, minitvm.nd.array(np.full((1, 2), i, "int32")), 4, 2)
    np.testing.assert_array_equal(view(cache, minitvm.runtime.ShapeTuple((4, 2))).numpy()[:, 0], [0, 1, 6, 5])
    window = minitvm.get_global_func("vm.builtin.attention_kv_cache_window_override")
    with pytest.raises(ValueError, match="3 rows exceed the window of 2 rows"):
        window(cache, minitvm.nd.array(np.zeros((3, 2), "int32")), 2)


def test_builtins_take_tvms_heap_tensor_and_containers():
    heap = minitvm.nd.array(np.zeros(4, "int64"))
    match = minitvm.get_global_func("vm.builtin.match_shape")
    match(minitvm.runtime.ShapeTuple([7, 3]), heap, 2, 1, 2, 0, 3, "")
    assert heap.numpy()[2] == 7  # written into the tensor, as TVM's heap
    assert minitvm.get_global_func("vm.builtin.make_shape")(heap, 2, 1, 2, 0, 5) == (7, 5)
    with pytest.raises(RuntimeError, match="dimension 1 is 3, expected 4"):
        match(minitvm.runtime.ShapeTuple([7, 3]), heap, 2, 3, 2, 0, 4, "")
    x = minitvm.nd.array(np.zeros((2, 3), "int32"))
    check_tuple = minitvm.get_global_func("vm.builtin.check_tuple_info")
    check_tuple(minitvm.runtime.convert([x, x]), 2, "")
    with pytest.raises(ValueError, match="a tuple of 3 elements, got 2"):
        check_tuple(minitvm.runtime.convert([x, x]), 3, "")
    check_func = minitvm.get_global_func("vm.builtin.check_func_info")
    check_func(minitvm.runtime.convert(lambda v: v), "")
    with pytest.raises(TypeError, match="check_func_info: ctx expects a function, got NDArray"):
        check_func(x, "ctx")
