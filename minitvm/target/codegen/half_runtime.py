"""The float16 conversion functions LLVM's x86 backend calls when the CPU has no instruction for
a conversion (``fptrunc double to half`` always, ``float <-> half`` without F16C):
``__truncdfhf2``, ``__truncsfhf2`` and ``__extendhfsf2``.

A C program finds them in libgcc or compiler-rt; the JIT does not, and an unresolved symbol
becomes a call to address 0 -- the process dies.  As TVM's runtime does (``builtin_fp16.cc``),
minitvm supplies its own: written here in integer-only LLVM IR (compiler-rt's algorithm: round
to nearest, ties to even, in one step from the source precision, so a float64 is never rounded
twice), JIT-compiled once per process and made visible to every kernel with ``add_symbol``.
"""

from __future__ import annotations

import llvmlite.binding as llvm

__all__ = ["HALF_SYMBOLS", "ensure_half_runtime"]

#: the symbols provided (the backend's libcall names on x86-64)
HALF_SYMBOLS = ("__truncdfhf2", "__truncsfhf2", "__extendhfsf2")
_STATE: dict[str, object] = {}


def _round(w: str, prefix: str, value: str, bits: str, mask: int, halfway: int) -> list[str]:
    """IR lines: ``%{prefix}`` = ``value`` rounded to nearest even by its dropped ``bits``."""
    return [
        f"%{prefix}rb = and {w} {bits}, {mask}",
        f"%{prefix}gt = icmp ugt {w} %{prefix}rb, {halfway}",
        f"%{prefix}eq = icmp eq {w} %{prefix}rb, {halfway}",
        f"%{prefix}odd = and {w} {value}, 1",
        f"%{prefix}ie = select i1 %{prefix}eq, {w} %{prefix}odd, {w} 0",
        f"%{prefix}inc = select i1 %{prefix}gt, {w} 1, {w} %{prefix}ie",
        f"%{prefix} = add {w} {value}, %{prefix}inc",
    ]


def _trunc_to_half(name: str, fty: str, width: int, sig: int) -> str:
    """``half name(fty)``: compiler-rt's ``__truncXfYf2__`` with every branch computed and the
    result selected (no control flow, shifts kept in range)."""
    w, exp_bits = f"i{width}", width - sig - 1
    bias = (1 << (exp_bits - 1)) - 1
    drop = sig - 10  # significand bits dropped
    inf = ((1 << exp_bits) - 1) << sig
    underflow, overflow = (bias + 1 - 15) << sig, (bias + 31 - 15) << sig
    mask, halfway = (1 << drop) - 1, 1 << (drop - 1)
    lines = [
        f"%rep = bitcast {fty} %a to {w}",
        f"%abs = and {w} %rep, {(1 << (width - 1)) - 1}",
        f"%sign = and {w} %rep, {1 << (width - 1)}",
        # in half's normal range: re-bias the exponent, round the significand
        f"%u1 = sub {w} %abs, {underflow}",
        f"%u2 = sub {w} %abs, {overflow}",
        f"%isnormal = icmp ult {w} %u1, %u2",
        f"%sh = lshr {w} %abs, {drop}",
        f"%nb = sub {w} %sh, {(bias - 15) << 10}",
        *_round(w, "nres", "%nb", "%abs", mask, halfway),
        # NaN: quiet, keep the payload's top bits
        f"%isnan = icmp ugt {w} %abs, {inf}",
        f"%pl = lshr {w} %abs, {drop}",
        f"%pl2 = and {w} %pl, 511",
        f"%nanres = or {w} %pl2, 32256",
        # too large (or infinite): infinity
        f"%isover = icmp uge {w} %abs, {overflow}",
        # half's subnormal range: shift the significand down with a sticky bit, then round
        f"%aexp = lshr {w} %abs, {sig}",
        f"%shift = sub {w} {bias - 15 + 1}, %aexp",
        f"%toosmall = icmp ugt {w} %shift, {sig}",
        f"%sshift = select i1 %toosmall, {w} 1, {w} %shift",
        f"%frac = and {w} %rep, {(1 << sig) - 1}",
        f"%sigv = or {w} %frac, {1 << sig}",
        f"%lsh = sub {w} {width}, %sshift",
        f"%lost = shl {w} %sigv, %lsh",
        f"%sticky = icmp ne {w} %lost, 0",
        f"%stickyw = zext i1 %sticky to {w}",
        f"%kept = lshr {w} %sigv, %sshift",
        f"%den = or {w} %kept, %stickyw",
        f"%sb = lshr {w} %den, {drop}",
        *_round(w, "sres", "%sb", "%den", mask, halfway),
        f"%subres = select i1 %toosmall, {w} 0, {w} %sres",
        f"%r1 = select i1 %isover, {w} 31744, {w} %subres",
        f"%r2 = select i1 %isnan, {w} %nanres, {w} %r1",
        f"%r3 = select i1 %isnormal, {w} %nres, {w} %r2",
        f"%s16 = lshr {w} %sign, {width - 16}",
        f"%res = or {w} %r3, %s16",
        f"%t = trunc {w} %res to i16",
        "%h = bitcast i16 %t to half",
        "ret half %h",
    ]
    body = "\n  ".join(lines)
    return f"define half @{name}({fty} %a) {{\n  {body}\n}}\n"


_EXTEND = """define float @__extendhfsf2(half %a) {
  %h = bitcast half %a to i16
  %rep = zext i16 %h to i32
  %abs = and i32 %rep, 32767
  %sign = and i32 %rep, 32768
  %m1 = sub i32 %abs, 1024
  %isnormal = icmp ult i32 %m1, 30720
  %n1 = shl i32 %abs, 13
  %nres = add i32 %n1, 939524096
  %isinfnan = icmp uge i32 %abs, 31744
  %payload = and i32 %abs, 1023
  %pl = shl i32 %payload, 13
  %infres = or i32 %pl, 2139095040
  %clz = call i32 @llvm.ctlz.i32(i32 %abs, i1 false)
  %scale = sub i32 %clz, 21
  %sh = add i32 %scale, 13
  %s1 = shl i32 %abs, %sh
  %s2 = xor i32 %s1, 8388608
  %rexp = sub i32 113, %scale
  %rexps = shl i32 %rexp, 23
  %subres = or i32 %s2, %rexps
  %iszero = icmp eq i32 %abs, 0
  %r1 = select i1 %iszero, i32 0, i32 %subres
  %r2 = select i1 %isinfnan, i32 %infres, i32 %r1
  %r3 = select i1 %isnormal, i32 %nres, i32 %r2
  %s32 = shl i32 %sign, 16
  %res = or i32 %r3, %s32
  %f = bitcast i32 %res to float
  ret float %f
}

declare i32 @llvm.ctlz.i32(i32, i1)
"""


def half_runtime_ir() -> str:
    """The LLVM IR of :data:`HALF_SYMBOLS`."""
    return (_trunc_to_half("__truncdfhf2", "double", 64, 52) + _trunc_to_half("__truncsfhf2", "float", 32, 23)
            + _EXTEND)


def ensure_half_runtime() -> None:
    """JIT-compile the conversions once and make them visible to generated code.  Call with
    ``LLVM_LOCK`` held (before the first kernel is JIT-compiled)."""
    if "engine" in _STATE:
        return
    mod = llvm.parse_assembly(half_runtime_ir())
    mod.verify()
    # a generic x86-64 machine: the helpers must not themselves need F16C (or call themselves)
    tm = llvm.Target.from_default_triple().create_target_machine(opt=2, jit=True)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    for name in HALF_SYMBOLS:
        llvm.add_symbol(name, engine.get_function_address(name))
    _STATE["engine"] = engine  # lives as long as the process, as the symbols do
