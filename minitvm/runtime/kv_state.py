"""The paged KV cache of a language model at run time, and the ``vm.builtin.*`` globals around it.

A decoder attends, for every new token, to the keys and values of all earlier tokens of its
sequence.  The cache keeps them in *pages*: per layer one tensor ``(num_pages, 2, num_kv_heads,
page_size, head_dim)`` (``[:, 0]`` keys, ``[:, 1]`` values); each sequence owns a list of page
ids (its page table), all full except the last.  Pages come from one free list, so sequences
of any lengths share the memory without copying when one grows.

One forward (TVM's protocol, ``kv_state.h``)::

    add_sequence(cache, 0)                                  # once per sequence
    begin_forward(cache, Shape([0, 1]), Shape([5, 3]))       # which sequences, how many new tokens
    logits = vm["prefill"](..., cache, ...)                  # each layer: attention_with_fused_qkv
    end_forward(cache)

``begin_forward`` grows each page table and computes the auxiliary arrays the kernels read
(where each new token goes, each sequence's pages, the new tokens' positions);
``attention_with_fused_qkv`` then, for one layer, splits the fused qkv and applies RoPE to q and
k (``tir_split_rotary``), writes k and v into the pages (``kv_cache_transpose_append``) and runs
prefill attention (causal, several tokens per sequence) or decode attention (one token per
sequence) over the pages.  The kernels are compiled PrimFuncs of the model's module, handed
over when ``vm.builtin.paged_attention_kv_cache_create`` makes the cache.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .ndarray import NDArray
from .object import Object
from .registry import register_func

__all__ = ["KVState", "PagedAttentionKVCache", "create_paged_attention_kv_cache", "GLOBALS"]

#: TVM's RoPE modes (``RopeMode`` of ``nn.llm``)
ROPE_NONE, ROPE_NORMAL, ROPE_INLINE = 0, 1, 2


class _Sequence:
    __slots__ = ("pages", "length")

    def __init__(self) -> None:
        self.pages: list[int] = []
        self.length = 0


class KVState(Object):
    """Per-sequence state across forwards (TVM's ``KVStateObj``): sequences come and go, and each
    forward is bracketed by :meth:`begin_forward` / :meth:`end_forward`."""

    def add_sequence(self, seq_id: int) -> None:
        raise NotImplementedError

    def remove_sequence(self, seq_id: int) -> None:
        raise NotImplementedError

    def begin_forward(self, seq_ids: Any, append_lengths: Any, token_tree_parent_ptr: Any = None) -> None:
        raise NotImplementedError

    def end_forward(self) -> None:
        raise NotImplementedError


class PagedAttentionKVCache(KVState):
    """Keys and values of every layer in pages; see the module docstring.

    ``kernels`` maps a role to a compiled function: ``split_rotary``, ``transpose_append``,
    ``prefill``, ``decode`` (required) and ``copy_single_page`` (for :meth:`fork_sequence`)."""

    def __init__(self, *, max_batch_size: int, max_total_seq_len: int, prefill_chunk_size: int, page_size: int,
                 num_layers: int, num_qo_heads: int, num_kv_heads: int, head_dim: int, dtype: str,
                 rope_mode: int, kernels: dict[str, Callable[..., Any]]):
        for name, value in (("max_batch_size", max_batch_size), ("max_total_seq_len", max_total_seq_len),
                            ("prefill_chunk_size", prefill_chunk_size), ("page_size", page_size),
                            ("num_layers", num_layers), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim)):
            if int(value) <= 0:
                raise ValueError(f"PagedAttentionKVCache: {name} must be positive, got {value}")
        if num_qo_heads % num_kv_heads:
            raise ValueError(f"PagedAttentionKVCache: num_qo_heads {num_qo_heads} is not a multiple of "
                             f"num_kv_heads {num_kv_heads}")
        if rope_mode not in (ROPE_NONE, ROPE_NORMAL):
            raise NotImplementedError(f"PagedAttentionKVCache: rope_mode {rope_mode} (INLINE: RoPE inside the "
                                      "attention kernels) is not built; use NORMAL (1) or NONE (0)")
        missing = [k for k in ("split_rotary", "transpose_append", "prefill", "decode") if kernels.get(k) is None]
        if missing:
            raise ValueError(f"PagedAttentionKVCache: no kernel given for {', '.join(missing)}")
        self.max_batch_size, self.max_total_seq_len = int(max_batch_size), int(max_total_seq_len)
        self.prefill_chunk_size, self.page_size = int(prefill_chunk_size), int(page_size)
        self.num_layers, self.num_qo_heads, self.num_kv_heads = int(num_layers), int(num_qo_heads), int(num_kv_heads)
        self.head_dim, self.dtype, self.rope_mode = int(head_dim), str(dtype), int(rope_mode)
        self.kernels = dict(kernels)
        # every sequence may leave part of its last page empty: one spare page per batch slot
        self.num_pages = math.ceil(self.max_total_seq_len / self.page_size) + self.max_batch_size
        shape = (self.num_pages, 2, self.num_kv_heads, self.page_size, self.head_dim)
        self.pages = [NDArray(np.zeros(shape, self.dtype)) for _ in range(self.num_layers)]
        self.clear()

    # -- sequences ---------------------------------------------------------------------------------
    def clear(self) -> None:
        """Forget every sequence; every page is free again."""
        self._free = list(range(self.num_pages - 1, -1, -1))  # pop() hands out low ids first
        self._seqs: dict[int, _Sequence] = {}
        self._forward: dict[str, Any] | None = None

    def _seq(self, seq_id: int, what: str = "sequence") -> _Sequence:
        seq = self._seqs.get(int(seq_id))
        if seq is None:
            known = ", ".join(str(s) for s in sorted(self._seqs)) or "none"
            raise ValueError(f"The {what} \"{int(seq_id)}\" cannot be found in KV cache (sequences: {known}); "
                             "add it with vm.builtin.kv_state_add_sequence first")
        return seq

    def _check_idle(self, what: str) -> None:
        if self._forward is not None:
            raise RuntimeError(f"KV cache: {what} during a forward; call vm.builtin.kv_state_end_forward first")

    def add_sequence(self, seq_id: int) -> None:
        self._check_idle("add_sequence")
        if int(seq_id) in self._seqs:
            raise ValueError(f"The sequence \"{int(seq_id)}\" is already in the KV cache.")
        self._seqs[int(seq_id)] = _Sequence()

    def remove_sequence(self, seq_id: int) -> None:
        self._check_idle("remove_sequence")
        seq = self._seq(seq_id)
        self._free.extend(reversed(seq.pages))
        del self._seqs[int(seq_id)]

    def _take_page(self) -> int:
        if not self._free:
            raise ValueError(f"KV cache is full: all {self.num_pages} pages of {self.page_size} tokens are in use "
                             f"(max_total_seq_len={self.max_total_seq_len}); remove a sequence first")
        return self._free.pop()

    def fork_sequence(self, parent_seq_id: int, child_seq_id: int, fork_pos: int = -1) -> None:
        """A new sequence ``child_seq_id`` holding the parent's first ``fork_pos`` tokens (-1: all),
        copied page by page (TVM shares whole pages instead; copying keeps this cache simple)."""
        self._check_idle("fork_sequence")
        parent = self._seq(parent_seq_id, "parent sequence")
        if int(child_seq_id) in self._seqs:
            raise ValueError(f"The child sequence \"{int(child_seq_id)}\" is already in the KV cache.")
        length = parent.length if fork_pos == -1 else int(fork_pos)
        if not 0 <= length <= parent.length:
            raise ValueError(f"fork_sequence: fork_pos {fork_pos} is outside the parent sequence's length "
                             f"{parent.length}")
        copy = self.kernels.get("copy_single_page")
        if copy is None and length:
            raise ValueError("fork_sequence: the cache was created without a copy_single_page kernel")
        child = _Sequence()
        for i in range(math.ceil(length / self.page_size)):
            page = self._take_page()
            child.pages.append(page)
            count = min(self.page_size, length - i * self.page_size)
            for layer in self.pages:
                copy(layer, parent.pages[i], page, count)
        child.length = length
        self._seqs[int(child_seq_id)] = child

    def popn(self, seq_id: int, n: int) -> None:
        """Drop the last ``n`` tokens of a sequence (pages left empty go back to the free list)."""
        self._check_idle("popn")
        seq = self._seq(seq_id)
        if not 0 <= int(n) <= seq.length:
            raise ValueError(f"The sequence only has length {seq.length}, while the length of pop is {n} which "
                             "exceeds the whole sequence length.")
        seq.length -= int(n)
        while len(seq.pages) > math.ceil(seq.length / self.page_size):
            self._free.append(seq.pages.pop())

    # -- a forward ---------------------------------------------------------------------------------
    def begin_forward(self, seq_ids: Any, append_lengths: Any, token_tree_parent_ptr: Any = None) -> None:
        """Reserve room for ``append_lengths[i]`` new tokens of sequence ``seq_ids[i]`` and lay out
        the arrays the kernels read for this forward."""
        if token_tree_parent_ptr is not None:
            raise NotImplementedError("begin_forward: token_tree_parent_ptr (tree attention) is not built")
        if self._forward is not None:
            raise RuntimeError("KV cache: begin_forward called twice without end_forward in between")
        seq_ids, lengths = [int(s) for s in seq_ids], [int(n) for n in append_lengths]
        if len(seq_ids) != len(lengths):
            raise ValueError(f"The seq_ids size ({len(seq_ids)}) and append_lengths size ({len(lengths)}) mismatch.")
        if not seq_ids:
            raise ValueError("begin_forward: no sequence given")
        if len(set(seq_ids)) != len(seq_ids):
            raise ValueError(f"begin_forward: a sequence appears twice in {seq_ids}")
        if len(seq_ids) > self.max_batch_size:
            raise ValueError(f"begin_forward: batch of {len(seq_ids)} sequences exceeds max_batch_size="
                             f"{self.max_batch_size}")
        if any(n <= 0 for n in lengths):
            raise ValueError(f"begin_forward: append lengths must be positive, got {lengths}")
        total = sum(lengths)
        if total > self.prefill_chunk_size:
            raise ValueError(f"begin_forward: {total} new tokens in one forward exceed prefill_chunk_size="
                             f"{self.prefill_chunk_size}")
        seqs = [self._seq(s) for s in seq_ids]
        need = sum(math.ceil((q.length + n) / self.page_size) - len(q.pages) for q, n in zip(seqs, lengths))
        if need > len(self._free):
            raise ValueError(f"KV cache is full: this forward needs {need} more pages of {self.page_size} tokens, "
                             f"{len(self._free)} are free (max_total_seq_len={self.max_total_seq_len})")
        positions, slots = [], []
        for seq, n in zip(seqs, lengths):
            for pos in range(seq.length, seq.length + n):
                if pos // self.page_size == len(seq.pages):
                    seq.pages.append(self._take_page())
                positions.append(pos)
                slots.append(seq.pages[pos // self.page_size] * self.page_size + pos % self.page_size)
            seq.length += n
        page_indptr = np.cumsum([0] + [len(q.pages) for q in seqs])

        def i32(values: Any) -> NDArray:
            return NDArray(np.asarray(values, dtype="int32"))

        self._forward = {
            "total": total, "is_decode": all(n == 1 for n in lengths),
            "q_indptr": i32(np.cumsum([0] + lengths)), "page_indptr": i32(page_indptr),
            "page_values": i32([p for q in seqs for p in q.pages]),
            "last_page_len": i32([q.length - (len(q.pages) - 1) * self.page_size for q in seqs]),
            "append_position_map": i32(slots), "query_positions": i32(positions),
            # q, k, v after the split, shared by every layer of this forward
            "qkv_split": [NDArray(np.empty((total, h, self.head_dim), self.dtype))
                          for h in (self.num_qo_heads, self.num_kv_heads, self.num_kv_heads)],
        }

    def end_forward(self) -> None:
        if self._forward is None:
            raise RuntimeError("KV cache: end_forward called without begin_forward")
        self._forward = None

    def _current(self, what: str) -> dict[str, Any]:
        if self._forward is None:
            raise RuntimeError(f"KV cache: {what} outside a forward; call vm.builtin.kv_state_begin_forward first")
        return self._forward

    def get_query_positions(self) -> NDArray:
        """The position within its sequence of each new token of the current forward (int32)."""
        return self._current("get_query_positions")["query_positions"]

    def attention_with_fused_qkv(self, layer_id: int, sm_scale: float, qkv: NDArray, out: NDArray) -> None:
        """``out[t] = attention of new token t``: qkv ``(total_new_tokens, qo + 2 * kv heads, head_dim)``
        is split (RoPE on q and k), k and v enter layer ``layer_id``'s pages, then each query
        attends over its sequence's pages up to its own position."""
        fwd = self._current("attention_with_fused_qkv")
        layer_id = int(layer_id)
        if not 0 <= layer_id < self.num_layers:
            raise ValueError(f"attention_with_fused_qkv: layer_id {layer_id} is outside 0..{self.num_layers - 1}")
        heads = self.num_qo_heads + 2 * self.num_kv_heads
        want = (fwd["total"], heads, self.head_dim)
        for name, value in (("qkv", qkv), ("output", out)):
            if type(value) is not NDArray:  # the kernels below take data pointers, unchecked after layer 0
                raise TypeError(f"attention_with_fused_qkv: {name} must be a tensor (NDArray), got "
                                f"{type(value).__name__}")
        if qkv._array.shape != want or str(qkv.dtype) != self.dtype:
            raise ValueError(f"attention_with_fused_qkv: qkv is {tuple(qkv.shape)} {qkv.dtype}, expected {want} "
                             f"{self.dtype} ({fwd['total']} new tokens in this forward)")
        if out._array.shape != (fwd["total"], self.num_qo_heads, self.head_dim) or str(out.dtype) != self.dtype:
            raise ValueError(f"attention_with_fused_qkv: output is {tuple(out.shape)} {out.dtype}, expected "
                             f"{(fwd['total'], self.num_qo_heads, self.head_dim)} {self.dtype}")
        calls = self._kernel_calls(fwd, layer_id, float(sm_scale), qkv, out)
        fast = fwd.get("fast")
        if fast is None:  # the first layer of this forward: checked calls, then each kernel's machine code
            for kernel, args in calls:
                kernel(*args)
            fwd["fast"] = [_unchecked(kernel, args) for kernel, args in calls]
            return
        for (kernel, args), raw in zip(calls, fast):
            # the same shapes as the first layer's checked call: every layer's pages are alike, the
            # aux arrays are this forward's, qkv and out were checked above
            if raw is None or raw[0](*[a._ptr if type(a) is NDArray else a for a in args], *raw[1]):
                kernel(*args)  # the checked call: runs it, or raises the kernel's own error

    def _kernel_calls(self, fwd: dict[str, Any], layer_id: int, sm_scale: float, qkv: NDArray,
                      out: NDArray) -> list[tuple[Callable[..., Any], tuple]]:
        """The three kernel calls of one layer's attention: split and RoPE, append, attend."""
        q, k, v = fwd["qkv_split"]
        kern, pages = self.kernels, self.pages[layer_id]
        attend = (kern["decode"], (q, pages, fwd["page_indptr"], fwd["page_values"], fwd["last_page_len"], out,
                                   sm_scale)) if fwd["is_decode"] else \
            (kern["prefill"], (q, fwd["q_indptr"], pages, fwd["page_indptr"], fwd["page_values"],
                               fwd["last_page_len"], out, sm_scale))
        return [(kern["split_rotary"], (qkv, fwd["query_positions"], q, k, v, int(self.rope_mode == ROPE_NORMAL))),
                (kern["transpose_append"], (pages, k, v, fwd["append_position_map"])), attend]

    # -- inspection --------------------------------------------------------------------------------
    def get_num_available_pages(self) -> int:
        return len(self._free)

    def get_total_sequence_length(self) -> int:
        return sum(q.length for q in self._seqs.values())

    def empty(self) -> bool:
        return not self._seqs

    def page_table(self, seq_id: int) -> tuple[list[int], int]:
        """(the ids of a sequence's pages in order, its length in tokens): where its keys and
        values are, for a picture of the cache or a check of the paging (TVM keeps this C++-side)."""
        seq = self._seq(seq_id)
        return list(seq.pages), seq.length

    def debug_get_kv(self, seq_id: int, start_pos: int, end_pos: int, k_data: NDArray, v_data: NDArray) -> None:
        """Copy positions ``start_pos:end_pos`` of a sequence, every layer, into ``k_data``/``v_data``
        ``(num_layers, end_pos - start_pos, num_kv_heads, head_dim)``."""
        seq = self._seq(seq_id)
        if not 0 <= start_pos < end_pos <= seq.length:
            raise ValueError(f"debug_get_kv: positions {start_pos}:{end_pos} are outside the sequence's "
                             f"0:{seq.length}")
        want = (self.num_layers, end_pos - start_pos, self.num_kv_heads, self.head_dim)
        for name, data in (("k_data", k_data), ("v_data", v_data)):
            if tuple(data.shape) != want:
                raise ValueError(f"debug_get_kv: {name} is {tuple(data.shape)}, expected {want}")
        pos = np.arange(start_pos, end_pos)
        page = np.asarray(seq.pages)[pos // self.page_size]
        for layer, pages in enumerate(self.pages):
            arr = pages.numpy()
            k_data._array[layer] = arr[page, 0, :, pos % self.page_size]
            v_data._array[layer] = arr[page, 1, :, pos % self.page_size]

    def __repr__(self) -> str:
        return (f"<PagedAttentionKVCache: {self.num_layers} layers, {len(self._seqs)} sequences, "
                f"{len(self._free)}/{self.num_pages} pages of {self.page_size} free>")


def _unchecked(kernel: Any, args: tuple) -> tuple[Any, tuple] | None:
    """A compiled kernel's machine code and size arguments for calls shaped as ``args`` (see
    ``CompiledFunction.prepare``), or None for a kernel that is not one (a Python function)."""
    prepare = getattr(getattr(kernel, "_fn", kernel), "prepare", None)  # a PackedFunc holds the kernel in _fn
    return prepare(*args) if prepare is not None else None


# -- the creation global --------------------------------------------------------------------------------


def _kernel(arg: Any, what: str) -> Callable[..., Any] | None:
    """A kernel argument of the create call: a function, ``("tirx", function)`` or ``()`` (absent)."""
    if arg is None or (isinstance(arg, tuple) and not arg):
        return None
    if isinstance(arg, tuple):
        if len(arg) == 2 and isinstance(arg[0], str):
            if arg[0] not in ("tir", "tirx"):
                raise NotImplementedError(f"paged_attention_kv_cache_create: {what} from backend {arg[0]!r}; only "
                                          "TIR kernels are supported")
            arg = arg[1]
        elif len(arg) == 1:
            arg = arg[0]
    if not callable(arg):
        raise TypeError(f"paged_attention_kv_cache_create: {what} must be a function, got {type(arg).__name__}")
    return arg


def create_paged_attention_kv_cache(*args: Any) -> PagedAttentionKVCache:
    """``vm.builtin.paged_attention_kv_cache_create`` with TVM's 28 positional arguments (see
    ``TIRPagedKVCache``): config shape, layer partition, heads, head dims, attention kinds,
    KV transfer, RoPE mode/scale/theta/ext factors, a tensor of the cache's dtype, then the
    kernels; arguments for what is not built (sliding window, tree attention, MLA) must be empty."""
    if len(args) not in (28, 29):
        raise ValueError(f"Invalid number of KV cache constructor args: {len(args)} (expected 28)")
    config, layers = [int(x) for x in args[0]], [int(x) for x in args[1]]
    if len(config) < 5:
        raise ValueError(f"paged_attention_kv_cache_create: cache config {config} needs max_batch_size, "
                         "max_total_seq_len, prefill_chunk_size, page_size, support_sliding_window")
    if config[4]:
        raise NotImplementedError("paged_attention_kv_cache_create: support_sliding_window is not built")
    if len(layers) != 2:
        raise NotImplementedError(f"paged_attention_kv_cache_create: layer_partition {layers}; one pipeline "
                                  "stage ([0, num_layers]) is supported")
    num_qo, num_kv, qk_dim, v_dim = (int(a) for a in args[2:6])
    if qk_dim != v_dim:
        raise NotImplementedError(f"paged_attention_kv_cache_create: v_head_dim {v_dim} differs from qk_head_dim "
                                  f"{qk_dim} (MLA); not built")
    if any(int(k) != 0 for k in args[6]):
        raise NotImplementedError(f"paged_attention_kv_cache_create: attention kinds {list(args[6])}; only MHA (0)")
    if bool(args[7]):
        raise NotImplementedError("paged_attention_kv_cache_create: enable_disaggregation (KV transfer) is not built")
    init = args[12]
    dtype = str(init.dtype) if hasattr(init, "dtype") else str(init)
    for index, what in ((14, "f_transpose_append_mla"), (15, "f_attention_prefill_ragged"),
                        (18, "f_attention_prefill_sliding_window"), (19, "f_attention_decode_sliding_window"),
                        (20, "f_attention_prefill_with_tree_mask_paged_kv"), (21, "f_attention_prefill_with_tree_mask"),
                        (22, "f_mla_prefill")):
        if _kernel(args[index], what) is not None:
            raise NotImplementedError(f"paged_attention_kv_cache_create: {what} is given but not used by this cache")
    kernels = {"transpose_append": _kernel(args[13], "f_transpose_append_mha"),
               "prefill": _kernel(args[16], "f_attention_prefill"), "decode": _kernel(args[17], "f_attention_decode"),
               "split_rotary": _kernel(args[24], "f_split_rotary"),
               "copy_single_page": _kernel(args[25], "f_copy_single_page")}
    return PagedAttentionKVCache(max_batch_size=config[0], max_total_seq_len=config[1], prefill_chunk_size=config[2],
                                 page_size=config[3], num_layers=layers[1] - layers[0], num_qo_heads=num_qo,
                                 num_kv_heads=num_kv, head_dim=qk_dim, dtype=dtype, rope_mode=int(args[8]),
                                 kernels=kernels)


# -- the globals -----------------------------------------------------------------------------------------


def _cache(obj: Any, what: str) -> PagedAttentionKVCache:
    if not isinstance(obj, KVState):
        raise TypeError(f"{what}: the first argument must be a KV cache, got {type(obj).__name__}")
    return obj  # type: ignore[return-value]


def _method(name: str, method: str) -> Callable[..., Any]:
    def call(cache: Any, *args: Any) -> Any:
        return getattr(_cache(cache, name), method)(*args)

    call.__name__ = method
    call.__doc__ = f"``{name}(cache, ...)``: :meth:`PagedAttentionKVCache.{method}`."
    return call


#: global name -> function (``vm.builtin.*``, as TVM's kv_state.cc and paged_kv_cache.cc register them)
GLOBALS: dict[str, Callable[..., Any]] = {
    "vm.builtin.paged_attention_kv_cache_create": create_paged_attention_kv_cache,
    **{f"vm.builtin.kv_state_{m}": _method(f"vm.builtin.kv_state_{m}", m)
       for m in ("clear", "add_sequence", "remove_sequence", "fork_sequence", "popn", "begin_forward",
                 "end_forward")},
    **{f"vm.builtin.attention_kv_cache_{m}": _method(f"vm.builtin.attention_kv_cache_{m}", m)
       for m in ("attention_with_fused_qkv", "get_query_positions", "get_num_available_pages",
                 "get_total_sequence_length", "empty", "debug_get_kv")},
}

for _name, _fn in GLOBALS.items():
    register_func(_name, _fn, override=True)  # override: re-importing (autoreload) is harmless
