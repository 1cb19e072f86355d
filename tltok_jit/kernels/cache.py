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
def cache_get(hashes, meta, keys, vals, buf, start, end, h, out, op):
    """Copy the cached ids of buf[start:end] to out[op:]; returns how many (0 = miss).

    The arrays are one worker's rows (1-D hashes/keys/vals, 2-D meta)."""
    mask = len(hashes) - 1
    s = slot_of(h, mask)
    n = end - start
    while True:
        hs = hashes[s]
        if hs == 0:
            return 0
        if hs == h and meta[s, 1] == n and bytes_equal(keys, meta[s, 0], buf, start, n):
            vo = meta[s, 2]
            vn = meta[s, 3]
            for k in range(vn):
                out[op + k] = vals[vo + k]
            return vn
        s = (s + 1) & mask


@njit
def cache_put(hashes, meta, keys, vals, state, buf, start, end, h, ids, i0, m):
    """Remember ids[i0:i0+m] for the piece buf[start:end] (the caller just missed it)."""
    n = end - start
    if n > MAX_KEY:
        return
    if (state[0] + 1) * 2 > len(hashes) or state[1] + n > len(keys) or state[2] + m > len(vals):
        hashes[:] = 0
        state[0] = 0
        state[1] = 0
        state[2] = 0
        state[3] += 1
    mask = len(hashes) - 1
    s = slot_of(h, mask)
    while hashes[s] != 0:
        s = (s + 1) & mask
    ko = state[1]
    vo = state[2]
    for k in range(n):
        keys[ko + k] = buf[start + k]
    for k in range(m):
        vals[vo + k] = ids[i0 + k]
    meta[s, 0] = ko
    meta[s, 1] = n
    meta[s, 2] = vo
    meta[s, 3] = m
    hashes[s] = h
    state[0] += 1
    state[1] = ko + n
    state[2] = vo + m
