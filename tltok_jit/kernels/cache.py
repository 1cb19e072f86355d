"""A bounded piece cache: piece bytes -> token ids, one per worker, no locks.

Real text repeats its words, so most pieces that need merging were merged before. Each worker owns
row `w` of every array. When the table is half full or an arena runs out, the row is cleared
(cheaper and more predictable than eviction). Only pieces of 2..MAX_KEY bytes are cached.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .hashing import bytes_equal, slot_of
from .jit import njit

SLOTS = 1 << 15
KEY_ARENA = 1 << 19
VAL_ARENA = 1 << 18
MAX_KEY = 128


class PieceCache(NamedTuple):
    hashes: np.ndarray  # uint64[W, SLOTS], 0 = empty
    meta: np.ndarray  # int32[W, SLOTS, 4]: key offset, key length, value offset, value length
    keys: np.ndarray  # uint8[W, KEY_ARENA]
    vals: np.ndarray  # uint32[W, VAL_ARENA]
    state: np.ndarray  # int64[W, 4]: entries, key bytes used, values used, clears


def new_cache(workers: int) -> PieceCache:
    return PieceCache(
        np.zeros((workers, SLOTS), dtype=np.uint64),
        np.zeros((workers, SLOTS, 4), dtype=np.int32),
        np.zeros((workers, KEY_ARENA), dtype=np.uint8),
        np.zeros((workers, VAL_ARENA), dtype=np.uint32),
        np.zeros((workers, 4), dtype=np.int64),
    )


@njit(inline="always")
def cache_get(cache, w, buf, start, end, h, out, op):
    """Copy the cached ids of buf[start:end] to out[op:]; returns how many (0 = miss)."""
    hashes = cache.hashes
    meta = cache.meta
    mask = hashes.shape[1] - 1
    s = slot_of(h, mask)
    n = end - start
    while True:
        hs = hashes[w, s]
        if hs == 0:
            return 0
        if hs == h and meta[w, s, 1] == n and bytes_equal(cache.keys[w], meta[w, s, 0], buf, start, n):
            vo = meta[w, s, 2]
            vn = meta[w, s, 3]
            vals = cache.vals
            for k in range(vn):
                out[op + k] = vals[w, vo + k]
            return vn
        s = (s + 1) & mask


@njit(inline="always")
def cache_put(cache, w, buf, start, end, h, ids, i0, m):
    """Remember ids[i0:i0+m] for the piece buf[start:end] (the caller just missed it)."""
    n = end - start
    if n > MAX_KEY:
        return
    st = cache.state
    hashes = cache.hashes
    if (st[w, 0] + 1) * 2 > hashes.shape[1] or st[w, 1] + n > cache.keys.shape[1] \
            or st[w, 2] + m > cache.vals.shape[1]:
        hashes[w, :] = 0
        st[w, 0] = 0
        st[w, 1] = 0
        st[w, 2] = 0
        st[w, 3] += 1
    mask = hashes.shape[1] - 1
    s = slot_of(h, mask)
    while hashes[w, s] != 0:
        s = (s + 1) & mask
    ko = st[w, 1]
    vo = st[w, 2]
    keys = cache.keys
    vals = cache.vals
    for k in range(n):
        keys[w, ko + k] = buf[start + k]
    for k in range(m):
        vals[w, vo + k] = ids[i0 + k]
    meta = cache.meta
    meta[w, s, 0] = ko
    meta[w, s, 1] = n
    meta[w, s, 2] = vo
    meta[w, s, 3] = m
    hashes[w, s] = h
    st[w, 0] += 1
    st[w, 1] = ko + n
    st[w, 2] = vo + m
