"""The tables and one piece cache behind one int64 array of addresses and shapes (a handle).

A call of a kernel that takes the tables (25 arrays) and a piece cache (7) passes every field of
every array struct: ~250 arguments, ~500 instructions spent on each side of the call before the
callee does anything, more than encoding a 20-character string. The piece engine
(`encode.encode_ordinary_spans`) therefore takes a handle and rebuilds both named tuples inside
(`tables_of`, `cache_of`: views, no copy, no reference count); a kernel holding the tuples writes a
handle into its own stack frame first (`handle_in`), Python makes one with `handle.handle_of`.

Layout: for each field of Tables, in order, (address, length); then for each field of PieceCache,
(address, its dimensions). Whoever made the handle keeps every array alive while it is used.
"""

from __future__ import annotations

import numpy as np

from .cache import PieceCache
from .jit import address_of, data_ptr, njit, view_ro, view_rw
from .layout import Tables

# dtype of each Tables field, in order (tables.Tables); handle.handle_of checks the arrays against it
TABLE_DTYPES = (np.uint8, np.int64, np.int32, np.uint64, np.uint64, np.uint64, np.int32, np.uint64, np.int32,
                np.int64, np.uint16, np.uint8, np.int32, np.int32, np.uint8, np.int32, np.int32, np.int32,
                np.uint64, np.uint8, np.int64, np.int32, np.int32, np.uint64, np.int64)
CACHE_DTYPES = ((np.uint64, 2), (np.int32, 3), (np.uint8, 2), (np.uint32, 2), (np.int64, 2), (np.uint64, 2),
                (np.uint64, 2))
CACHE_AT = 2 * len(TABLE_DTYPES)
HANDLE_LEN = CACHE_AT + sum(1 + nd for _, nd in CACHE_DTYPES)


@njit(inline="always")
def _t(h, k, dt):
    return view_ro(h[2 * k], (h[2 * k + 1],), dt)


@njit(inline="always")
def tables_of(h):
    """The Tables of handle h (views of its arrays)."""
    return Tables(_t(h, 0, np.uint8), _t(h, 1, np.int64), _t(h, 2, np.int32), _t(h, 3, np.uint64),
                  _t(h, 4, np.uint64), _t(h, 5, np.uint64), _t(h, 6, np.int32), _t(h, 7, np.uint64),
                  _t(h, 8, np.int32), _t(h, 9, np.int64), _t(h, 10, np.uint16), _t(h, 11, np.uint8),
                  _t(h, 12, np.int32), _t(h, 13, np.int32), _t(h, 14, np.uint8), _t(h, 15, np.int32),
                  _t(h, 16, np.int32), _t(h, 17, np.int32), _t(h, 18, np.uint64), _t(h, 19, np.uint8),
                  _t(h, 20, np.int64), _t(h, 21, np.int32), _t(h, 22, np.int32), _t(h, 23, np.uint64),
                  _t(h, 24, np.int64))


@njit(inline="always")
def cache_of(h):
    """The PieceCache of handle h (views of its arrays, every worker's rows)."""
    c = CACHE_AT
    return PieceCache(view_rw(h[c], (h[c + 1], h[c + 2]), np.uint64),
                      view_rw(h[c + 3], (h[c + 4], h[c + 5], h[c + 6]), np.int32),
                      view_rw(h[c + 7], (h[c + 8], h[c + 9]), np.uint8),
                      view_rw(h[c + 10], (h[c + 11], h[c + 12]), np.uint32),
                      view_rw(h[c + 13], (h[c + 14], h[c + 15]), np.int64),
                      view_rw(h[c + 16], (h[c + 17], h[c + 18]), np.uint64),
                      view_rw(h[c + 19], (h[c + 20], h[c + 21]), np.uint64))


@njit(inline="always")
def _put(h, k, a):
    h[2 * k] = address_of(a)
    h[2 * k + 1] = len(a)


@njit(inline="always")
def _put2(h, i, a):
    h[i] = address_of(a)
    h[i + 1] = a.shape[0]
    h[i + 2] = a.shape[1]
    return i + 3


@njit(inline="always")
def fill_handle(T, cache, h):
    """h[:HANDLE_LEN] = the handle of T and cache."""
    _put(h, 0, T.tok_bytes)
    _put(h, 1, T.tok_offsets)
    _put(h, 2, T.vocab_slots)
    _put(h, 3, T.vocab_hash)
    _put(h, 4, T.short_vocab)
    _put(h, 5, T.pair_slots)
    _put(h, 6, T.rank_ids)
    _put(h, 7, T.pair_bloom)
    _put(h, 8, T.byte_ids)
    _put(h, 9, T.byte_pairs)
    _put(h, 10, T.stage1)
    _put(h, 11, T.stage2)
    _put(h, 12, T.trie_root)
    _put(h, 13, T.trie_edge_start)
    _put(h, 14, T.trie_edge_byte)
    _put(h, 15, T.trie_edge_child)
    _put(h, 16, T.trie_token)
    _put(h, 17, T.added_ids)
    _put(h, 18, T.char_bpe)
    _put(h, 19, T.tok_flags)
    _put(h, 20, T.crank)
    _put(h, 21, T.split_l)
    _put(h, 22, T.split_r)
    _put(h, 23, T.unreach_filter)
    _put(h, 24, T.config)
    i = _put2(h, CACHE_AT, cache.hashes)
    h[i] = address_of(cache.meta)
    h[i + 1] = cache.meta.shape[0]
    h[i + 2] = cache.meta.shape[1]
    h[i + 3] = cache.meta.shape[2]
    i = _put2(h, i + 4, cache.keys)
    i = _put2(h, i, cache.vals)
    i = _put2(h, i, cache.state)
    i = _put2(h, i, cache.short)
    _put2(h, i, cache.pairs)


@njit
def write_handle(T, cache, h):
    """fill_handle as a kernel of its own: handle.handle_of and handle_in call it (inlined into each
    of the piece engine's callers it added seconds to the first compile)."""
    fill_handle(T, cache, h)


@njit(inline="always")
def handle_in(T, cache, scratch):
    """The handle of T and cache written to `scratch` (int64[HANDLE_LEN], a jit.stack_array of the
    caller), as the read-only array the engine takes (the type of a handle made in Python: one
    compiled variant of the engine)."""
    write_handle(T, cache, scratch)
    return view_ro(data_ptr(scratch), (HANDLE_LEN,), np.int64)
