"""Whether this CPU can run a compiled library: decided before any of its code runs.

A library built for another CPU (``minitvm.build(f, target="llvm -mcpu=skylake-avx512
-mattr=+avx512f")``) is worth reading (``lib.get_source("asm")``) and saving, but calling it on
a CPU without AVX-512 would execute an instruction the CPU does not have: the process dies of
SIGILL, and a Jupyter kernel with it.  :func:`cpu_mismatch` says whether that would happen, and
the library's functions then raise a ``RuntimeError`` instead of running.

What the code needs is read from two places:

* the features the target enables explicitly (``-mattr=+avx512f``; for ``-mcpu=native`` these
  are this CPU's own, adjusted by ``-mattr``), checked against this CPU's;
* for a named CPU other than this one, LLVM also enables every feature of that CPU, and
  llvmlite has no way to list them.  So the assembly is read instead: the registers and
  instructions each feature added (``%zmm`` and ``%k1``-``%k7`` need avx512f, ``%ymm`` avx,
  ``vfmadd…`` fma, ``vpdpbusd`` avx512vnni, ...; :data:`ASM_FEATURES`).  This tells what the
  code *uses*, not what the named CPU has: ``-mcpu=skylake-avx512`` without ``-mattr`` prefers
  256-bit vectors and its code runs on an AVX2 CPU, and it is allowed to.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, Iterable

from ...runtime.cpu import host_cpu_features, host_cpu_lacks, host_cpu_name

__all__ = ["ASM_FEATURES", "features_in_assembly", "cpu_mismatch", "named_cpu_vector_features"]

_GPR = r"%(?:[re]?(?:ax|bx|cx|dx|si|di|bp|sp)|r(?:[89]|1[0-5])[dwb]?|[abcd]l)\b"

#: instructions only AVX-512 has (on any register width)
_EVEX_ONLY = (r"vpternlog[dq]|vperm[it]2(?:d|q|ps|pd)|valign[dq]|vp?compress(?:d|q|ps|pd)|vp?expand(?:d|q|ps|pd)"
              r"|vpmovu?s?(?:qd|qw|qb|dw|db)|vrndscale[ps][sd]|vgetexp[ps][sd]|vgetmant[ps][sd]|vscalef[ps][sd]"
              r"|vfixupimm[ps][sd]|vrcp14[ps][sd]|vrsqrt14[ps][sd]|vpro[lr]v?[dq]|vpsrav?q|vpabsq"
              r"|vp(?:max|min)[su]q|vpandn?[dq]|vpx?or[dq]|vmovdq[au](?:32|64)|vshuf[if](?:32x4|64x2)"
              r"|v(?:insert|extract|broadcast)[if](?:32x4|64x4)|vcvtt?(?:ps|pd|ss|sd)2u(?:dq|si)"
              r"|vcvtu(?:dq|si)2(?:ps|pd|ss|sd)")

#: (feature, what in one line of AT&T assembly shows it is used): a mnemonic pattern (matched
#: against the whole mnemonic) and/or an operand pattern (searched in the operands)
ASM_FEATURES: tuple[tuple[str, str | None, str | None], ...] = (
    # AVX-512: the 512-bit and upper 16 vector registers, mask registers, EVEX-only operand syntax
    ("avx512f", None, r"%zmm\d|%k[0-7]\b|%[xy]mm(?:1[6-9]|2\d|3[01])\b|\{1to\d+\}|\{%k[1-7]\}|\{z\}|sae\}"),
    ("avx512vl", None, r"^(?!.*%zmm)(?=.*%[xy]mm).*(?:%[xy]mm(?:1[6-9]|2\d|3[01])\b|\{1to\d+\}|%k[0-7]\b)"),
    ("avx512f", _EVEX_ONLY, None),
    ("avx512vl", _EVEX_ONLY, r"^(?!.*%zmm)(?=.*%[xy]mm)"),  # ... on 128 or 256 bits
    ("avx512f", r"vpbroadcast[bwdq]", rf"^\s*{_GPR}"),  # from a general-purpose register
    ("avx512dq", r"vpmullq|vfpclass[ps][sd]|vrange[ps][sd]|vreduce[ps][sd]|vpmovm2[dq]|vpmov[dq]2m"
                 r"|v(?:insert|extract)[if](?:32x8|64x2)|vbroadcast[if](?:32x8|64x2|32x2)"
                 r"|vcvtt?(?:ps|pd)2u?qq|vcvtu?qq2(?:ps|pd)|k\w+b", None),
    ("avx512bw", r"vpermw|vps(?:ll|rl|ra)vw|vpmovu?s?wb|vmovdqu(?:8|16)|vpblendm[bw]|vpmovm2[bw]|vpmov[bw]2m"
                 r"|vdbpsadbw|k\w+[dq]", None),
    ("avx512cd", r"vpconflict[dq]|vplzcnt[dq]|vpbroadcastm\w+", None),
    ("avx512vbmi", r"vpermb|vperm[it]2b|vpmultishiftqb", None),
    ("avx512vbmi2", r"vpsh[lr]dv?[wdq]|vp(?:compress|expand)[bw]", None),
    ("avx512bitalg", r"vpopcnt[bw]|vpshufbitqmb", None),
    ("avx512vpopcntdq", r"vpopcnt[dq]", None),
    ("avx512ifma", r"vpmadd52[lh]uq", None),
    ("avx512bf16", r"vcvtne2?ps2bf16|vdpbf16ps", None),
    ("avx512fp16", r"(?!vcvtph2ps$|vcvtps2ph$)(?:v\w*(?:ph|sh)|vcvt\w*(?:ph|sh)\w*|vmovw)", None),  # not F16C's
    ("avx512vnni", r"vpdp(?:bu|ws)sds?", None),  # with a {vex} prefix: AVX-VNNI (below)
    ("amx-tile", None, r"%tmm\d"),
    # AVX, AVX2, FMA and the other VEX-era features
    ("avx", r"v\w+", None),
    ("avx2", r"vpbroadcast[bwdq]|vbroadcasti128|v(?:insert|extract)i128|vperm2i128|vperm(?:d|q|ps|pd)"
             r"|vp?gather\w+|vpmaskmov[dq]|vpsllv[dq]|vpsrlv[dq]|vpsravd|vpblendd", None),
    ("avx2", r"vp(?!ermil|erm2f128|test|clmul)\w+", r"%ymm"),  # integer operations on 256 bits
    ("avx2", r"vbroadcasts[sd]", r"^\s*%xmm"),  # a broadcast from a register
    ("fma", r"vfn?m(?:add|sub)(?:sub|add)?(?:132|213|231)(?:ps|pd|ss|sd)", None),
    ("fma4", r"vfn?m(?:add|sub)(?:sub|add)?(?:ps|pd|ss|sd)", None),
    ("f16c", r"vcvtph2ps|vcvtps2ph", None),
    # the scalar extensions, and SSE3 to SSE4.2 (LLVM writes their v-forms when AVX is on)
    ("bmi", r"andn[lq]?|bextr[lq]?|blsi[lq]?|blsmsk[lq]?|blsr[lq]?|tzcnt[wlq]?", None),
    ("bmi2", r"bzhi[lq]?|mulx[lq]?|pdep[lq]?|pext[lq]?|rorx[lq]?|sarx[lq]?|shlx[lq]?|shrx[lq]?", None),
    ("lzcnt", r"lzcnt[wlq]?", None),
    ("popcnt", r"popcnt[wlq]?", None),
    ("movbe", r"movbe[wlq]?", None),
    ("sse3", r"addsubp[sd]|h(?:add|sub)p[sd]|movs[hl]dup|movddup|lddqu", None),
    ("ssse3", r"pshufb|palignr|ph(?:add|sub)s?[wd]|pmaddubsw|pmulhrsw|psign[bwd]|pabs[bwd]", None),
    ("sse4.1", r"pmulld|pm(?:in|ax)(?:sb|sd|ud|uw)|p?blendv?(?:ps|pd|b)|blendp[sd]|pblendw|round[ps][sd]"
               r"|pinsr[bdq]|pextr[bdq]|(?:extract|insert)ps|ptest|pmov[sz]x\w+|dpp[sd]|mpsadbw|phminposuw"
               r"|packusdw|pcmpeqq|movntdqa", None),
    ("sse4.2", r"pcmpgtq|crc32[bwlq]?|pcmp[ei]str[im]", None),
)

_RULES = [(feature, re.compile(m) if m else None, re.compile(o) if o else None) for feature, m, o in ASM_FEATURES]
_INSTRUCTION = re.compile(r"^\s+(\{(?:vex|evex)\}\s+)?([a-z][a-z0-9]*)\b([^#\n]*)", re.MULTILINE)


def features_in_assembly(asm: str) -> set[str]:
    """The CPU features the instructions of ``asm`` (LLVM's AT&T x86 assembly) use, by LLVM's names."""
    found: set[str] = set()
    for prefix, mnemonic, operands in _INSTRUCTION.findall(asm):
        for feature, m, o in _RULES:
            if (m is None or m.fullmatch(mnemonic)) and (o is None or o.search(operands)):
                if feature == "avx512vnni" and prefix.startswith("{vex}"):
                    feature = "avxvnni"
                found.add(feature)
    return found


def cpu_mismatch(cpu: str, features: Iterable[str], asm: Callable[[], str], named: bool = False) -> str:
    """Why this CPU cannot run code compiled for ``cpu`` with ``features`` ("" if it can).

    ``asm`` gives the code's assembly; it is read only for a CPU ``named`` with -mcpu (even this
    one's name: a Zen 4 whose AVX-512 a virtual machine hides is still ``znver4``, a name that
    brings AVX-512), another CPU, or features beyond this CPU's; a build for this CPU, the usual
    case, costs a set difference.
    """
    host = host_cpu_name()
    features = list(features)
    missing = host_cpu_lacks(features)
    # another CPU's own features, or a -mattr name LLVM's detection does not check: read the code
    if named or cpu != host or set(features) - set(host_cpu_features()):
        missing = list(dict.fromkeys([*missing, *host_cpu_lacks(sorted(features_in_assembly(asm())))]))
    if not missing:
        return ""
    if named or cpu != host:
        what = f"for {cpu} with {', '.join(missing)}"
    else:
        what = f"with -mattr={','.join('+' + f for f in missing)}"
    return (f"compiled {what}, which this CPU ({host}) lacks: running it would stop the process on an "
            "illegal instruction (SIGILL). Its code can still be read "
            "(get_source('asm')) and saved (save(), or export_library() of a compiled model) for a machine "
            "that has them; build with target='llvm' to run it here")


#: a probe kernel: an 8-lane fused multiply-add (one ymm instruction where the CPU has AVX and FMA)
_PROBE = """
define void @probe(ptr %p) {
  %v = load <8 x float>, ptr %p
  %w = call <8 x float> @llvm.fma.v8f32(<8 x float> %v, <8 x float> %v, <8 x float> %v)
  store <8 x float> %w, ptr %p
  ret void
}
declare <8 x float> @llvm.fma.v8f32(<8 x float>, <8 x float>, <8 x float>)
"""


@functools.lru_cache(maxsize=None)
def named_cpu_vector_features(cpu: str) -> frozenset[str]:
    """The vector features LLVM gives code for the CPU named ``cpu`` (``"haswell"``: avx, fma),
    read from the assembly of a probe kernel compiled for it -- llvmlite cannot list a named
    CPU's features, and what the code uses is what matters to the schedules sized for it."""
    import llvmlite.binding as llvm

    from .llvm_jit import LLVM_LOCK, target_machine  # lazy: cycle -- llvm_jit checks CPUs with this module

    with LLVM_LOCK:
        mod = llvm.parse_assembly(_PROBE)
        mod.triple = llvm.get_process_triple()
        return frozenset(features_in_assembly(target_machine(cpu, "", 2).emit_assembly(mod)))
