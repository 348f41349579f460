"""TensorIR programs written in TVMScript, shared by tests and graders.

The MLC course's kernels (mm_relu, broadcast add, conv2d, batched matmul + ReLU, softmax),
the bmm_relu exercise with its target schedule, and programs that exercise corners of the
parser and printer.  Chapters and exercises keep their own copies: a learner reads them there.
"""

from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

N = 16  # a Python value the programs below take from their globals


@T.prim_func
def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
            C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
    Y = T.alloc_buffer((128, 128), dtype="float32")
    for i, j, k in T.grid(128, 128, 128):
        with T.block("Y"):
            vi = T.axis.spatial(128, i)
            vj = T.axis.spatial(128, j)
            vk = T.axis.reduce(128, k)
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


@T.prim_func
def broadcast_add(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8,), "float32"),
                  C: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + B[vj]


@T.prim_func
def conv2d_int64(X: T.Buffer((1, 1, 8, 8), "int64"), K: T.Buffer((2, 1, 3, 3), "int64"),
                 Y: T.Buffer((1, 2, 6, 6), "int64")):
    T.func_attr({"tir.noalias": True})
    for b, k, i, j, di, dj, q in T.grid(1, 2, 6, 6, 3, 3, 1):
        with T.block("conv"):
            vb, vk, vi, vj, vdi, vdj, vq = T.axis.remap("SSSSRRR", [b, k, i, j, di, dj, q])
            with T.init():
                Y[vb, vk, vi, vj] = T.int64(0)
            Y[vb, vk, vi, vj] = Y[vb, vk, vi, vj] + X[vb, vq, vi + vdi, vj + vdj] * K[vk, vq, vdi, vdj]


@T.prim_func
def batch_matmul_relu(A: T.Buffer((2, 16, 32), "float32"), B: T.Buffer((2, 32, 8), "float32"),
                      D: T.Buffer((2, 16, 8), "float32")):
    C = T.alloc_buffer((2, 16, 8))
    for n, i, j, k in T.grid(2, 16, 8, 32):
        with T.block("matmul"):
            vn, vi, vj, vk = T.axis.remap("SSSR", [n, i, j, k])
            with T.init():
                C[vn, vi, vj] = T.float32(0)
            C[vn, vi, vj] = C[vn, vi, vj] + A[vn, vi, vk] * B[vn, vk, vj]
    for n, i, j in T.grid(2, 16, 8):
        with T.block("relu"):
            vn, vi, vj = T.axis.remap("SSS", [n, i, j])
            D[vn, vi, vj] = T.max(C[vn, vi, vj], T.float32(0))


@T.prim_func
def softmax(A: T.Buffer((4, N), "float32"), B: T.Buffer((4, N), "float32")):
    row_max = T.alloc_buffer((4,))
    row_sum = T.alloc_buffer((4,))
    for i, k in T.grid(4, N):
        with T.block("max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                row_max[vi] = T.min_value("float32")
            row_max[vi] = T.max(row_max[vi], A[vi, vk])
    for i, k in T.grid(4, N):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                row_sum[vi] = T.float32(0)
            row_sum[vi] = row_sum[vi] + T.exp(A[vi, vk] - row_max[vi])
    for i, j in T.grid(4, N):
        with T.block("out"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.exp(A[vi, vj] - row_max[vi]) / row_sum[vi]


@T.prim_func
def split_with_where(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for io, ii in T.grid(3, 4):
        with T.block("B"):
            vi = T.axis.spatial(10, io * 4 + ii)
            T.where(io * 4 + ii < 10)
            B[vi] = A[vi] * T.float32(2)


@T.prim_func
def loop_kinds(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
    for i in T.parallel(8):
        for jo in T.unroll(2):
            for ji in T.vectorized(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    vj = T.axis.spatial(16, jo * 8 + ji)
                    B[vi, vj] = A[vi, vj] + T.float32(1)
    for i in T.serial(2, 6, annotations={"pragma_unroll_explicit": 1}):
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = B[vi, vj] * T.float32(0.5)


@T.prim_func
def branches(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        if i < 8:
            B[i] = A[i]
        else:
            if i % 2 == 0:
                B[i] = T.float32(0)
            else:
                B[i] = -A[i]


@T.prim_func
def select_and_cast(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = T.if_then_else(vi > 3, T.Cast("float32", A[vi]), T.float32(1)) + T.Select(
                A[vi] // 2 == 0 and A[vi] % 3 != 1, T.float32(1), T.sqrt(T.float32(2)))


@T.prim_func
def scalar_param(A: T.Buffer((64,), "float32"), n: T.int32, alpha: T.float32):
    for i in range(64):
        with T.block("scale"):
            vi = T.axis.spatial(64, i)
            if vi < n:
                A[vi] = A[vi] * alpha


@T.prim_func
def int64_shapes(A: T.Buffer((T.int64(8), T.int64(4)), "float32"), B: T.Buffer((T.int64(8),), "float32")):
    for i, k in T.grid(T.int64(8), T.int64(4)):
        with T.block("rowsum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def explicit_regions(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.block("tile"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi * 4:vi * 4 + 4, 0:16])
            T.writes(B[vi * 4:vi * 4 + 4])
            for ii, k in T.grid(4, 16):
                with T.block("inner"):
                    vii = T.axis.spatial(16, vi * 4 + ii)
                    vk = T.axis.reduce(16, k)
                    with T.init():
                        B[vii] = T.float32(0)
                    B[vii] = B[vii] + A[vii, vk]


@T.prim_func(private=True)
def lowered(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), n: T.int32):
    assert n > 0, "n must be positive"
    tmp = T.allocate((16,), "float32", "global")
    for i in range(16):
        x: T.float32 = A[i] * T.float32(2)
        tmp[i] = x + T.float32(1)
    for i in range(16):
        B[i] = T.truncdiv(i, 3) + T.Cast("float32", T.truncmod(i, n))
    T.evaluate(0)


@I.ir_module
class TwoFunctions:
    @T.prim_func
    def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + T.float32(1)

    @T.prim_func(private=True)
    def double(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] * T.float32(2)


ALL_FUNCS = {
    "mm_relu": mm_relu, "broadcast_add": broadcast_add, "conv2d_int64": conv2d_int64,
    "batch_matmul_relu": batch_matmul_relu, "softmax": softmax, "split_with_where": split_with_where,
    "loop_kinds": loop_kinds, "branches": branches, "select_and_cast": select_and_cast,
    "scalar_param": scalar_param, "int64_shapes": int64_shapes, "explicit_regions": explicit_regions,
    "lowered": lowered,
}


# -- the MLC course's bmm_relu exercise: the naive program and the target schedule ----------


@I.ir_module
class BmmRelu:
    @T.prim_func
    def bmm_relu(A: T.Buffer((16, 128, 128), "float32"), B: T.Buffer((16, 128, 128), "float32"),
                 C: T.Buffer((16, 128, 128), "float32")):
        T.func_attr({"global_symbol": "bmm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((16, 128, 128), "float32")
        for n, i, j, k in T.grid(16, 128, 128, 128):
            with T.block("Y"):
                vn, vi, vj, vk = T.axis.remap("SSSR", [n, i, j, k])
                with T.init():
                    Y[vn, vi, vj] = T.float32(0)
                Y[vn, vi, vj] = Y[vn, vi, vj] + A[vn, vi, vk] * B[vn, vk, vj]
        for n, i, j in T.grid(16, 128, 128):
            with T.block("C"):
                vn, vi, vj = T.axis.remap("SSS", [n, i, j])
                C[vn, vi, vj] = T.max(Y[vn, vi, vj], T.float32(0))


@I.ir_module
class BmmReluTarget:
    @T.prim_func
    def bmm_relu(A: T.Buffer((16, 128, 128), "float32"), B: T.Buffer((16, 128, 128), "float32"),
                 C: T.Buffer((16, 128, 128), "float32")):
        T.func_attr({"global_symbol": "bmm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((16, 128, 128), "float32")
        for i0 in T.parallel(16):
            for i1, i2_0 in T.grid(128, 16):
                for ax0_init in T.vectorized(8):
                    with T.block("Y_init"):
                        n, i = T.axis.remap("SS", [i0, i1])
                        j = T.axis.spatial(128, i2_0 * 8 + ax0_init)
                        Y[n, i, j] = T.float32(0)
                for ax1_0 in T.serial(32):
                    for ax1_1 in T.unroll(4):
                        for ax0 in T.serial(8):
                            with T.block("Y_update"):
                                n, i = T.axis.remap("SS", [i0, i1])
                                j = T.axis.spatial(128, i2_0 * 8 + ax0)
                                k = T.axis.reduce(128, ax1_0 * 4 + ax1_1)
                                Y[n, i, j] = Y[n, i, j] + A[n, i, k] * B[n, k, j]
                for i2_1 in T.vectorized(8):
                    with T.block("C"):
                        n, i = T.axis.remap("SS", [i0, i1])
                        j = T.axis.spatial(128, i2_0 * 8 + i2_1)
                        C[n, i, j] = T.max(Y[n, i, j], T.float32(0))


# -- the MLC course's end-to-end model: an MLP (784-128-10) calling hand-written kernels ------


@I.ir_module
class MLCModule:
    @T.prim_func
    def linear0(X: T.Buffer((1, 784), "float32"), W: T.Buffer((128, 784), "float32"),
                B: T.Buffer((128,), "float32"), Z: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "linear0", "tir.noalias": True})
        Y = T.alloc_buffer((1, 128), "float32")
        for i, j, k in T.grid(1, 128, 784):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 128):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @T.prim_func
    def relu0(X: T.Buffer((1, 128), "float32"), Y: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "relu0", "tir.noalias": True})
        for i, j in T.grid(1, 128):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @T.prim_func
    def linear1(X: T.Buffer((1, 128), "float32"), W: T.Buffer((10, 128), "float32"),
                B: T.Buffer((10,), "float32"), Z: T.Buffer((1, 10), "float32")):
        T.func_attr({"global_symbol": "linear1", "tir.noalias": True})
        Y = T.alloc_buffer((1, 10), "float32")
        for i, j, k in T.grid(1, 10, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 10):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @R.function
    def main(x: R.Tensor((1, 784), "float32"), w0: R.Tensor((128, 784), "float32"), b0: R.Tensor((128,), "float32"),
             w1: R.Tensor((10, 128), "float32"), b1: R.Tensor((10,), "float32")):
        cls = MLCModule
        with R.dataflow():
            lv0 = R.call_tir(cls.linear0, (x, w0, b0), out_sinfo=R.Tensor((1, 128), dtype="float32"))
            lv1 = R.call_tir(cls.relu0, (lv0,), out_sinfo=R.Tensor((1, 128), dtype="float32"))
            out = R.call_tir(cls.linear1, (lv1, w1, b1), out_sinfo=R.Tensor((1, 10), dtype="float32"))
            R.output(out)
        return out
