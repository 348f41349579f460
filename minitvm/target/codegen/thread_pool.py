"""minitvm's own thread pool for parallel loops: no stalls when another process busies a core.

With OpenMP (libgomp) a parallel region ends at a barrier that waits for *every* thread of
the team: when another process keeps one of the two cores busy, the worker that was to run
on it may not be scheduled for milliseconds, and the whole model waits (measured: a 220 us
model took 8 ms).  libgomp's wait policy cannot be changed once torch has loaded it.

This pool works differently.  A parallel loop is cut into chunks (a few per thread); the
calling thread publishes the job and claims chunks itself, like the workers, from one atomic
word; it then waits only for chunks a worker has *started*.  The caller claims from the
front, the workers from the back: with two threads each runs the same end of every loop, so
what one kernel's chunk writes the next kernel's chunk over the same rows reads from its own
core's cache (measured on Zen 4, 2 threads, resnet_small at batch 1 with its convs in blocks of
rows, one process per variant alternately, load 3-4: the call's minimum over 600 calls 184, 185,
194, 135 us where one counter for both gave 203, 204, 205, 140; medians level, 227-238 us).  A worker that was not
scheduled in time claims nothing and goes back to waiting, so a busy core slows a region
down to what one core can do, never to a scheduler time slice.  Idle workers spin for about
a hundred microseconds (the gaps between the kernels of one model call), handing their core
to any other runnable thread every few pauses (``sched_yield``), then sleep on a futex.
Waking a sleeper costs the region 10-20 us here (measured in this VM), and more when the
other core is busy: the woken worker then lands on the caller's core, where a worker that
spun without yielding held the caller off its own core for its whole spin (measured: a 4 us
region took 110 us after a 100 us pause with 3000 plain pauses, 1 ms with 30000).  Yielding,
a spinning worker costs a thread that shares its core nothing.  Linux may wake a worker on its
caller's CPU even when the other is idle, and the two then take turns on one core: a worker
that finds itself there (``sched_getcpu``) narrows its affinity to the process's other CPUs
(measured, the zoo's MNIST model at batch 8 in blocks of calls after 0.2 s pauses: median
block 245-359 us with the worker on the caller's CPU at the end of 6-9 of 15 blocks, 221-228 us
moving off; resnet_small b1 260-274 -> 220-223 us).  Workers are named ``minitvm-pool``.  A
region entered while the
pool is busy (another Python thread, or a parallel loop inside a parallel loop) runs on the
calling thread alone.

The pool is LLVM IR written here, JIT-compiled once per process; generated kernels call::

    void __minitvm_parallel_run(ptr body, ptr closure, i64 count)

which calls ``body(closure, begin, end)`` for consecutive ranges covering ``[0, count)``.
``MINITVM_NUM_THREADS`` sets the number of threads (default: the CPUs this process may use).
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm

from ...runtime.cpu import parallel_threads
from .llvm_jit import LLVM_LOCK, init_llvm

__all__ = ["PARALLEL_RUN_SYMBOL", "ensure_thread_pool", "pool_threads", "SPIN_ITERATIONS", "CHUNKS_PER_THREAD"]

#: the function generated code calls for a parallel loop
PARALLEL_RUN_SYMBOL = "__minitvm_parallel_run"
#: ``pause`` instructions an idle worker spins before it sleeps (20-30 ns each on Zen 4: 50-100 us,
#: plus the yields), so that it is awake for the next kernel of a model call.  Measured on 2 cores
#: with another process busy, resnet_small at batch 1 with its convs parallel, interleaved in one
#: process: 300 plain pauses 305 us, 3000 yielding 277 us, ONNX
#: Runtime 293 us (medians); a 4 us region after a 20 us pause 20 us -> 4 us
SPIN_ITERATIONS = 3000
#: an idle worker calls ``sched_yield`` every this many pauses (a power of two): a thread that
#: shares its core (the caller, when the other core is busy) gets the core back at once
YIELD_EVERY = 32
#: chunks per thread a parallel loop is cut into (more: better balance when a core is busy)
CHUNKS_PER_THREAD = 4
_SENTINEL = 0xFFFFFFFF  # the low half of the state word when no chunk is available (chunks claimed
# from the front in its low 16 bits, from the back in the next 16)
_SYS_FUTEX, _FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE, _SYS_SCHED_YIELD = 202, 128, 129, 24
_SYS_SCHED_SETAFFINITY, _SYS_SCHED_GETAFFINITY = 203, 204

_IR = r"""
@state = internal global i64 SENTINEL, align 8
@body = internal global ptr null, align 8
@closure = internal global ptr null, align 8
@count = internal global i64 0, align 8
@nchunks = internal global i32 0, align 4
@done = internal global i32 0, align 4
@epoch = internal global i32 0, align 4
@sleepers = internal global i32 0, align 4
@busy = internal global i32 0, align 4
@nworkers = internal global i32 0, align 4
@caller_cpu = internal global i32 -1, align 4
@allowed = internal global [16 x i64] zeroinitializer, align 8
@allowed_count = internal global i32 0, align 4
@thread_name = internal constant [13 x i8] c"minitvm-pool\00"

declare i64 @syscall(i64, ...)
declare i32 @sched_getcpu()
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @pthread_setname_np(i64, ptr)
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.ctpop.i64(i64)

define internal void @run_chunk(ptr %f, ptr %c, i32 %idx, i32 %n) {
entry:
  %count = load atomic i64, ptr @count monotonic, align 8
  %i = zext i32 %idx to i64
  %n64 = zext i32 %n to i64
  %lo0 = mul i64 %i, %count
  %lo = udiv i64 %lo0, %n64
  %i1 = add i64 %i, 1
  %hi0 = mul i64 %i1, %count
  %hi = udiv i64 %hi0, %n64
  call void %f(ptr %c, i64 %lo, i64 %hi)
  ret void
}

; claim chunks of the current job until none is left: the caller from the front (the low 16
; bits of the state count them), workers from the back (the next 16)
define internal void @claim_all(i1 %back) {
entry:
  %step = select i1 %back, i64 65536, i64 1
  br label %loop
loop:
  %s = load atomic i64, ptr @state acquire, align 8
  %lo = trunc i64 %s to i32
  %front = and i32 %lo, 65535
  %rear = lshr i32 %lo, 16
  %taken = add i32 %front, %rear
  %n = load atomic i32, ptr @nchunks monotonic, align 4
  %has = icmp ult i32 %taken, %n
  br i1 %has, label %try, label %out
try:
  %f = load atomic ptr, ptr @body monotonic, align 8
  %c = load atomic ptr, ptr @closure monotonic, align 8
  %s1 = add i64 %s, %step
  %r = cmpxchg ptr @state, i64 %s, i64 %s1 acq_rel acquire
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %run, label %loop
run:
  %last = sub i32 %n, 1
  %fromback = sub i32 %last, %rear
  %idx = select i1 %back, i32 %fromback, i32 %front
  call void @run_chunk(ptr %f, ptr %c, i32 %idx, i32 %n)
  %d = atomicrmw add ptr @done, i32 1 release
  br label %loop
out:
  ret void
}

; a worker on the CPU its caller runs on leaves it (its affinity: the process's CPUs but that one)
define internal void @keep_off_caller_cpu() {
entry:
  %mask = alloca [16 x i64], align 8
  %cc = load atomic i32, ptr @caller_cpu monotonic, align 4
  %n = load atomic i32, ptr @allowed_count monotonic, align 4
  %known = icmp ult i32 %cc, 1024
  %many = icmp sgt i32 %n, 1
  %try = and i1 %known, %many
  br i1 %try, label %check, label %out
check:
  %mine = call i32 @sched_getcpu()
  %shared = icmp eq i32 %mine, %cc
  br i1 %shared, label %move, label %out
move:
  call void @llvm.memcpy.p0.p0.i64(ptr %mask, ptr @allowed, i64 128, i1 false)
  %word = lshr i32 %cc, 6
  %w64 = zext i32 %word to i64
  %p = getelementptr [16 x i64], ptr %mask, i64 0, i64 %w64
  %old = load i64, ptr %p, align 8
  %bit = and i32 %cc, 63
  %b64 = zext i32 %bit to i64
  %one = shl i64 1, %b64
  %inv = xor i64 %one, -1
  %new = and i64 %old, %inv
  store i64 %new, ptr %p, align 8
  %r = call i64 (i64, ...) @syscall(i64 SETAFFINITY_SYS, i64 0, i64 128, ptr %mask)
  br label %out
out:
  ret void
}

define internal ptr @worker(ptr %arg) {
entry:
  %e0 = load atomic i32, ptr @epoch acquire, align 4
  br label %work
work:
  %my = phi i32 [ %e0, %entry ], [ %e1, %changed ], [ %e2, %woken ]
  call void @keep_off_caller_cpu()
  call void @claim_all(i1 true)
  br label %spin
spin:
  %k = phi i32 [ 0, %work ], [ %k1, %turn ], [ %k1, %give ]
  %e1 = load atomic i32, ptr @epoch acquire, align 4
  %ch = icmp ne i32 %e1, %my
  br i1 %ch, label %changed, label %idle
changed:
  br label %work
idle:
  call void @llvm.x86.sse2.pause()
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, SPIN
  br i1 %more, label %turn, label %sleep
turn:
  %low = and i32 %k1, YIELD_MASK
  %hand = icmp eq i32 %low, 0
  br i1 %hand, label %give, label %spin
give:
  %g = call i64 (i64, ...) @syscall(i64 YIELD_SYS)
  br label %spin
sleep:
  %a = atomicrmw add ptr @sleepers, i32 1 seq_cst
  %e3 = load atomic i32, ptr @epoch seq_cst, align 4
  %same = icmp eq i32 %e3, %my
  br i1 %same, label %wait, label %woken
wait:
  %w = call i64 (i64, ...) @syscall(i64 FUTEX_SYS, ptr @epoch, i32 FUTEX_WAIT, i32 %my, ptr null)
  br label %woken
woken:
  %b = atomicrmw sub ptr @sleepers, i32 1 seq_cst
  %e2 = load atomic i32, ptr @epoch acquire, align 4
  br label %work
}

define void @PARALLEL_RUN(ptr %f, ptr %c, i64 %count) {
entry:
  %nw = load atomic i32, ptr @nworkers monotonic, align 4
  %threads = add i32 %nw, 1
  %want0 = mul i32 %threads, CHUNKS
  %want = zext i32 %want0 to i64
  %fewer = icmp ult i64 %count, %want
  %n64 = select i1 %fewer, i64 %count, i64 %want
  %n = trunc i64 %n64 to i32
  %small = icmp ule i64 %count, 1
  %nopool = icmp eq i32 %nw, 0
  %alone = or i1 %small, %nopool
  br i1 %alone, label %serial, label %lock
lock:
  %r = cmpxchg ptr @busy, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %r, 1
  br i1 %got, label %publish, label %serial
serial:
  call void %f(ptr %c, i64 0, i64 %count)
  ret void
publish:
  %s = load atomic i64, ptr @state monotonic, align 8
  %g = lshr i64 %s, 32
  %g1 = add i64 %g, 1
  store atomic ptr %f, ptr @body monotonic, align 8
  store atomic ptr %c, ptr @closure monotonic, align 8
  store atomic i64 %count, ptr @count monotonic, align 8
  store atomic i32 %n, ptr @nchunks monotonic, align 4
  store atomic i32 0, ptr @done monotonic, align 4
  %cpu = call i32 @sched_getcpu()
  store atomic i32 %cpu, ptr @caller_cpu monotonic, align 4
  %ns = shl i64 %g1, 32
  store atomic i64 %ns, ptr @state release, align 8
  %e = atomicrmw add ptr @epoch, i32 1 seq_cst
  %sl = load atomic i32, ptr @sleepers seq_cst, align 4
  %anyone = icmp ne i32 %sl, 0
  br i1 %anyone, label %wake, label %mine
wake:
  %w = call i64 (i64, ...) @syscall(i64 FUTEX_SYS, ptr @epoch, i32 FUTEX_WAKE, i32 2147483647)
  br label %mine
mine:
  call void @claim_all(i1 false)
  br label %check
check:
  %k = phi i32 [ 0, %mine ], [ %k1, %pause ], [ %k1, %yield ]
  %d = load atomic i32, ptr @done acquire, align 4
  %all = icmp eq i32 %d, %n
  br i1 %all, label %finish, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  %k1 = add i32 %k, 1
  %long = icmp ugt i32 %k1, 2000
  br i1 %long, label %yield, label %check
yield:
  %y = call i64 (i64, ...) @syscall(i64 YIELD_SYS)
  br label %check
finish:
  %sent = or i64 %ns, SENTINEL
  store atomic i64 %sent, ptr @state release, align 8
  store atomic i32 0, ptr @busy release, align 4
  ret void
}

define i32 @__minitvm_pool_start(i32 %k) {
entry:
  %tid = alloca i64, align 8
  %have = load atomic i32, ptr @nworkers acquire, align 4
  %started = icmp ne i32 %have, 0
  br i1 %started, label %done, label %affinity
affinity:
  %got = call i64 (i64, ...) @syscall(i64 GETAFFINITY_SYS, i64 0, i64 128, ptr @allowed)
  %ok = icmp sgt i64 %got, 0
  br i1 %ok, label %count, label %loop
count:
  %c = phi i32 [ 0, %affinity ], [ %c1, %count ]
  %i = phi i64 [ 0, %affinity ], [ %i1, %count ]
  %wp = getelementptr [16 x i64], ptr @allowed, i64 0, i64 %i
  %w = load i64, ptr %wp, align 8
  %bits = call i64 @llvm.ctpop.i64(i64 %w)
  %b32 = trunc i64 %bits to i32
  %c1 = add i32 %c, %b32
  %i1 = add i64 %i, 1
  %again = icmp ult i64 %i1, 16
  br i1 %again, label %count, label %counted
counted:
  store atomic i32 %c1, ptr @allowed_count monotonic, align 4
  br label %loop
loop:
  %j = phi i32 [ 0, %affinity ], [ 0, %counted ], [ %j1, %next ]
  %more = icmp slt i32 %j, %k
  br i1 %more, label %make, label %finish
make:
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr null)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %finish, label %next
next:
  %t = load i64, ptr %tid, align 8
  %nm = call i32 @pthread_setname_np(i64 %t, ptr @thread_name)
  %dr = call i32 @pthread_detach(i64 %t)
  %j1 = add i32 %j, 1
  br label %loop
finish:
  %made = phi i32 [ %j, %loop ], [ %j, %make ]
  store atomic i32 %made, ptr @nworkers release, align 4
  ret i32 %made
done:
  ret i32 %have
}

define i32 @__minitvm_pool_threads() {
entry:
  %nw = load atomic i32, ptr @nworkers acquire, align 4
  %t = add i32 %nw, 1
  ret i32 %t
}
"""

_LOCK = threading.Lock()
_STATE: dict[str, object] = {}


def _ir_text() -> str:
    return (_IR.replace("SENTINEL", str(_SENTINEL)).replace("PARALLEL_RUN", PARALLEL_RUN_SYMBOL)
            .replace("FUTEX_SYS", str(_SYS_FUTEX))
            .replace("SETAFFINITY_SYS", str(_SYS_SCHED_SETAFFINITY))
            .replace("GETAFFINITY_SYS", str(_SYS_SCHED_GETAFFINITY)).replace("FUTEX_WAIT", str(_FUTEX_WAIT_PRIVATE))
            .replace("FUTEX_WAKE", str(_FUTEX_WAKE_PRIVATE)).replace("YIELD_SYS", str(_SYS_SCHED_YIELD))
            .replace("YIELD_MASK", str(YIELD_EVERY - 1)).replace("SPIN", str(SPIN_ITERATIONS))
            .replace("CHUNKS", str(CHUNKS_PER_THREAD)))


def ensure_thread_pool() -> int:
    """JIT-compile the pool once and start its workers; makes :data:`PARALLEL_RUN_SYMBOL` visible
    to generated code.  Returns the number of threads (workers + the caller).  Call without
    ``LLVM_LOCK`` (it takes it to JIT-compile)."""
    if "threads" in _STATE:
        return int(_STATE["threads"])

    init_llvm()
    with _LOCK, LLVM_LOCK:
        if "threads" in _STATE:
            return int(_STATE["threads"])
        mod = llvm.parse_assembly(_ir_text())
        mod.verify()
        target = llvm.Target.from_default_triple()
        tm = target.create_target_machine(opt=2, jit=True)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        run = engine.get_function_address(PARALLEL_RUN_SYMBOL)
        llvm.add_symbol(PARALLEL_RUN_SYMBOL, run)
        start = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(engine.get_function_address("__minitvm_pool_start"))
        threads = 1 + int(start(parallel_threads() - 1))
        _STATE.update(engine=engine, threads=threads, run=run)  # the engine lives as long as the process
        return threads


def pool_threads() -> int:
    """Threads that run parallel loops (0 before the pool has started)."""
    return int(_STATE.get("threads", 0))
