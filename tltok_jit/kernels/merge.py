"""Byte-pair merging inside one piece: lowest rank first, leftmost among equal ranks.

The symbols live in `syms[start:start+n]` (token ids) and are merged in place; the functions return
the new count. A pair's value in the merge table is `rank << 32 | merged id`, so comparing packed
values compares ranks. Short pieces use a linear rescan (what tiktoken does); long ones a binary heap
keyed by (rank, position) with lazy deletion: a popped entry is stale unless the pair now at its
position still has that rank (ranks name one merged token, and a position's pair only grows).
"""

from __future__ import annotations

import numpy as np

from .hashing import pair_lookup
from .jit import njit

NO_PAIR = np.int64(0x7FFFFFFFFFFFFFFF)
SMALL_PIECE = 40  # linear rescan up to here; measured crossover with the heap


@njit(inline="always")
def _pair(a, b, pair_keys, pair_vals):
    v = pair_lookup(a, b, pair_keys, pair_vals)
    if v < 0:
        return NO_PAIR
    return v


@njit
def merge_linear(syms, start, n, pair_keys, pair_vals, vals):
    """In-place merge by rescanning; `vals` is scratch of length >= n. Returns the new count."""
    for i in range(n - 1):
        vals[i] = _pair(syms[start + i], syms[start + i + 1], pair_keys, pair_vals)
    while n > 1:
        best = NO_PAIR
        bi = -1
        for i in range(n - 1):
            if vals[i] < best:
                best = vals[i]
                bi = i
        if bi < 0:
            break
        syms[start + bi] = best & 0xFFFFFFFF
        for i in range(bi + 1, n - 1):
            syms[start + i] = syms[start + i + 1]
            vals[i] = vals[i + 1]
        n -= 1
        if bi > 0:
            vals[bi - 1] = _pair(syms[start + bi - 1], syms[start + bi], pair_keys, pair_vals)
        if bi < n - 1:
            vals[bi] = _pair(syms[start + bi], syms[start + bi + 1], pair_keys, pair_vals)
    return n


@njit(inline="always")
def _heap_push(heap, size, key):
    i = size
    heap[i] = key
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] <= key:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = key
    return size + 1


@njit(inline="always")
def _sift_down(heap, size, i):
    key = heap[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= key:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = key


@njit
def merge_heap(syms, start, n, pair_keys, pair_vals):
    """In-place merge with a lazy-deletion heap; O(n log n). Returns the new count."""
    nxt = np.empty(n, dtype=np.int32)
    prv = np.empty(n, dtype=np.int32)
    cur = np.empty(n, dtype=np.int64)  # packed value of the pair starting at each live position
    heap = np.empty(3 * n + 1, dtype=np.int64)
    size = 0
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
        cur[i] = NO_PAIR
    for i in range(n - 1):
        v = _pair(syms[start + i], syms[start + i + 1], pair_keys, pair_vals)
        cur[i] = v
        if v != NO_PAIR:
            heap[size] = ((v >> 32) << 32) | i
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, i)
    while size > 0:
        top = heap[0]
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            _sift_down(heap, size, 0)
        pos = top & 0xFFFFFFFF
        rank = top >> 32
        v = cur[pos]
        if v == NO_PAIR or (v >> 32) != rank:
            continue  # stale: the pair at pos changed since this entry was pushed
        j = nxt[pos]
        syms[start + pos] = v & 0xFFFFFFFF
        k = nxt[j]
        nxt[pos] = k
        if k < n:
            prv[k] = pos
        cur[j] = NO_PAIR
        p = prv[pos]
        if p >= 0:
            w = _pair(syms[start + p], syms[start + pos], pair_keys, pair_vals)
            cur[p] = w
            if w != NO_PAIR:
                size = _heap_push(heap, size, ((w >> 32) << 32) | p)
        if k < n:
            w = _pair(syms[start + pos], syms[start + k], pair_keys, pair_vals)
            cur[pos] = w
            if w != NO_PAIR:
                size = _heap_push(heap, size, ((w >> 32) << 32) | pos)
        else:
            cur[pos] = NO_PAIR
    m = 0
    i = 0
    while i < n:
        syms[start + m] = syms[start + i]
        m += 1
        i = nxt[i]
    return m


@njit(inline="always")
def merge_symbols(syms, start, n, pair_keys, pair_vals, vals):
    """Merge syms[start:start+n] in place; returns the number of tokens left."""
    if n <= 1:
        return n
    if n <= SMALL_PIECE:
        return merge_linear(syms, start, n, pair_keys, pair_vals, vals)
    return merge_heap(syms, start, n, pair_keys, pair_vals)
