"""TVM's builtin intrinsics (tensor cores, PTX, thread sync, runtime pointers) and GPU thread
launches: they parse, print as TVM prints them, read back equal, and a CPU build refuses them."""

import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import TVMScriptError, from_source
from minitvm.script import tir as T


def _round_trips(func):
    text = func.script()
    reparsed = from_source(text)
    assert_structural_equal(reparsed, func)
    assert reparsed.script() == text
    return text


@T.prim_func
def wmma_tile(a: T.handle, c: T.handle):
    A = T.match_buffer(a, (16, 16), "float16")
    C = T.match_buffer(c, (16, 16), "float32")
    A_frag = T.alloc_buffer((16, 16), "float16", scope="wmma.matrix_a")
    C_frag = T.alloc_buffer((16, 16), "float32", scope="wmma.accumulator")
    with T.block("tile"):
        T.reads(A[0:16, 0:16])
        T.writes(C[0:16, 0:16])
        T.evaluate(T.tvm_fill_fragment(C_frag.data, 16, 16, 16, 0, T.float32(0), dtype="handle"))
        T.evaluate(T.tvm_load_matrix_sync(
            A_frag.data, 16, 16, 16, 0,
            T.tvm_access_ptr(T.type_annotation(dtype="float16"), A.data, 0, 256, 1), 16, "row_major"))
        T.evaluate(T.tvm_mma_sync(C_frag.data, 0, A_frag.data, 0, A_frag.data, 0, C_frag.data, 0))
        T.evaluate(T.tvm_store_matrix_sync(C_frag.data, 16, 16, 16, 0, C.access_ptr("w"), 16, "row_major"))


def test_tensor_core_calls_print_as_tvm_and_round_trip():
    text = _round_trips(wmma_tile)
    assert "T.tvm_fill_fragment(C_frag.data, 16, 16, 16, 0, T.float32(0.0))" in text
    assert 'T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 1)' in text
    # access_ptr("w") of the whole 16x16 buffer: offset 0, 256 elements, write mask 2
    assert 'T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")' in text


def test_builtins_with_a_dtype_argument_print_it_where_tvm_does():
    @T.prim_func
    def f(A: T.Buffer((8,), "float16"), C: T.Buffer((8,), "float32")):
        T.evaluate(T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32",
                             A.data, 0, A.data, 0, C.data, 0, False))
        T.evaluate(T.tvm_struct_get(A.data, 0, 12, dtype="int32"))
        T.evaluate(T.tvm_storage_sync("shared"))
        T.evaluate(T.tvm_warp_shuffle(T.uint32(0xFFFFFFFF), C[0], 0, 32, 32))
        T.evaluate(T.address_of(A[3]))
        T.evaluate(T.ptx_commit_group())

    text = _round_trips(f)
    assert 'T.ptx_mma("float32", "m16n8k16", "row", "col"' in text  # dtype first
    assert 'T.tvm_struct_get(A.data, 0, 12, "int32")' in text  # dtype last
    assert 'T.tvm_storage_sync("shared")' in text
    calls = []
    tir.post_order_visit(f.body, lambda n: calls.append(n) if isinstance(n, tir.Call) else None)
    dtypes = {c.op: c.dtype for c in calls}
    assert dtypes["tir.ptx_mma"] == "float32"
    assert dtypes["tir.tvm_struct_get"] == "int32"
    assert dtypes["tir.tvm_warp_shuffle"] == "float32"  # the shuffled value's dtype
    assert dtypes["tir.address_of"] == "handle"
    assert dtypes["tir.ptx_commit_group"] == "void"


def test_every_builtin_is_in_the_script_namespace_and_tir():
    for name in tir.op.BUILTINS:
        assert getattr(T, name) is tir.op.BUILTINS[name]
        assert getattr(tir, name) is tir.op.BUILTINS[name]


def test_builtin_argument_count_and_dtype_are_checked():
    buf = tir.decl_buffer((4,), "float32", "X")
    with pytest.raises(TypeError, match=r"tvm_fill_fragment.*takes 6 arguments, got 5"):
        tir.tvm_fill_fragment(buf.data, 16, 16, 16, 0)
    with pytest.raises(TypeError, match="returns handle, not dtype='float32'"):
        tir.tvm_fill_fragment(buf.data, 16, 16, 16, 0, 0.0, dtype="float32")
    with pytest.raises(TypeError, match="address_of takes a buffer element"):
        tir.address_of(tir.const(1))


def test_call_extern_with_empty_dtype_is_void():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32")):
        T.evaluate(T.call_extern("opaque_impl", A.data, dtype=""))

    text = _round_trips(f)
    assert 'T.call_extern("void", "opaque_impl", A.data)' in text


# -- Buffer.access_ptr -------------------------------------------------------------------------


def _ptr_args(call):
    assert call.op == "tir.tvm_access_ptr"
    ptype, data, offset, extent, mask = call.args
    return ptype.dtype, data, offset, extent, mask.value


def test_access_ptr_defaults_to_the_rest_of_the_buffer():
    B = tir.decl_buffer((16, 8), "float32", "B")
    dtype, data, offset, extent, mask = _ptr_args(B.access_ptr("r"))
    assert (dtype, data, offset.value, extent.value, mask) == ("float32", B.data, 0, 128, 1)
    _, _, offset, extent, mask = _ptr_args(B.access_ptr("rw", offset=3))
    assert (offset.value, extent.value, mask) == (3, 125, 3)
    _, _, offset, extent, mask = _ptr_args(B.access_ptr(tir.Buffer.WRITE, offset=5, extent=7))
    assert (offset.value, extent.value, mask) == (5, 7, 2)


def test_access_ptr_uses_strides_and_elem_offset():
    n = tir.Var("n", "int32")
    B = tir.decl_buffer((4, 6), "int8", "B", strides=(10, 1), elem_offset=n)
    dtype, _, offset, extent, _ = _ptr_args(B.access_ptr("r", offset=2))
    assert dtype == "int8"
    assert extent.value == 38  # strides[0] * shape[0] - offset
    assert_structural_equal(offset, n + 2)


def test_access_ptr_of_a_scalar_buffer_and_ptr_type():
    S = tir.decl_buffer((), "float64", "S")
    call = S.access_ptr("w", ptr_type="float64")
    assert call.dtype == "float64"
    assert _ptr_args(call)[3].value == 1


def test_access_ptr_refusals():
    B = tir.decl_buffer((4,), "float32", "B")
    with pytest.raises(ValueError, match="unknown access mask 'rx'"):
        B.access_ptr("rx")
    with pytest.raises(NotImplementedError, match="content_lanes"):
        B.access_ptr("r", content_lanes=4)


# -- GPU thread launches and T.attr ------------------------------------------------------------


@T.prim_func
def launches(a: T.handle, n: T.int32):
    A = T.match_buffer(a, (n,), "int32")
    if n == 0:
        bx = T.launch_thread("blockIdx.x", 1)
    else:
        with T.launch_thread("threadIdx.x", 256) as tx:
            bx = T.launch_thread("blockIdx.x", T.ceildiv(n, 256))
            i: T.int32 = bx * 256 + tx
            if i < n:
                A[i] = i


def test_launch_thread_makes_thread_extent_attrs_and_round_trips():
    text = _round_trips(launches)
    assert 'bx = T.launch_thread("blockIdx.x", 1)' in text
    attrs = []
    tir.post_order_visit(launches.body, lambda x: attrs.append(x) if isinstance(x, tir.AttrStmt) else None)
    tags = sorted((s.node.thread_tag, s.attr_key) for s in attrs)
    assert tags == [("blockIdx.x", "thread_extent")] * 2 + [("threadIdx.x", "thread_extent")]
    tx = next(s for s in attrs if s.node.thread_tag == "threadIdx.x").node
    assert tx.iter_type == tir.IterVar.ThreadIndex
    assert tx.dom.extent.value == 256


def test_env_thread_launched_twice_shares_one_iter_var():
    @T.prim_func
    def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        tx = T.env_thread("threadIdx.x")
        with T.launch_thread(tx, 64):
            A[tx] = T.float32(1)
        T.launch_thread(tx, 64)
        B[tx] = A[tx]

    text = _round_trips(f)
    assert 'tx = T.env_thread("threadIdx.x")' in text
    assert "with T.launch_thread(tx, 64):" in text
    attrs = []
    tir.post_order_visit(f.body, lambda x: attrs.append(x) if isinstance(x, tir.AttrStmt) else None)
    assert len(attrs) == 2 and attrs[0].node is attrs[1].node


def test_env_thread_relaunched_with_another_extent_is_an_error():
    with pytest.raises(TVMScriptError, match="launched with extent 32 but was launched before with 64"):
        @T.prim_func
        def f(A: T.Buffer((64,), "float32")):
            tx = T.env_thread("threadIdx.x")
            with T.launch_thread(tx, 64):
                A[tx] = T.float32(1)
            T.launch_thread(tx, 32)
            A[tx] = T.float32(2)


def test_launch_thread_needs_an_env_thread_variable():
    with pytest.raises(TVMScriptError, match="not a thread variable made by T.env_thread"):
        @T.prim_func
        def f(A: T.Buffer((64,), "float32"), k: T.int32):
            T.launch_thread(k, 64)
            A[0] = T.float32(1)


def test_attr_statement_round_trips_scoped_and_concise():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32")):
        with T.attr(A, "storage_alignment", 128):
            A[0] = T.float32(1)
        T.attr(0, "pragma_note", "fast")
        A[1] = T.float32(2)

    text = _round_trips(f)
    assert 'with T.attr(A, "storage_alignment", 128):' in text
    assert 'T.attr(0, "pragma_note", "fast")' in text


# -- the CPU build refuses them -----------------------------------------------------------------


@pytest.mark.parametrize("target", ["llvm", "python"])
def test_cpu_build_refuses_tensor_core_builtins_by_name(target):
    with pytest.raises(NotImplementedError, match=r"T.tvm_fill_fragment, a CUDA tensor-core.*builds for the CPU"):
        minitvm.build(wmma_tile, target=target)


@pytest.mark.parametrize("target", ["llvm", "python"])
def test_cpu_build_refuses_thread_launches(target):
    with pytest.raises(NotImplementedError, match=r"launches GPU threads.*blockIdx.x.*CPU"):
        minitvm.build(launches, target=target)


def test_cpu_build_refuses_access_ptr_and_attr():
    @T.prim_func
    def opaque(A: T.Buffer((8,), "float32")):
        T.evaluate(A.access_ptr("r"))

    @T.prim_func
    def annotated(A: T.Buffer((8,), "float32")):
        T.attr(0, "pragma_note", 1)
        A[0] = T.float32(1)

    with pytest.raises(NotImplementedError, match="T.tvm_access_ptr, a TVM C-runtime intrinsic"):
        minitvm.build(opaque)
    with pytest.raises(NotImplementedError, match="T.attr statement .'pragma_note'."):
        minitvm.build(annotated)
