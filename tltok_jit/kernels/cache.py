"""A bounded piece cache: piece bytes -> token ids, one per worker, no locks.

Real text repeats its words, so most pieces that need merging were merged before. Each worker owns
row `w` of every array. When the table is half full or an arena runs out, the row is cleared
(cheaper and more predictable than eviction). Only pieces of 2..MAX_KEY bytes are cached.

Pieces of at most 16 bytes (nearly all of any text) go to a second, direct-mapped table instead: an
entry is one 64-byte cache line (the packed piece bytes, its length and id count, up to 10 ids), so a
repeated piece costs one probe (prefetched by the piece loop's window). A piece whose BPE leaves every
byte a token of its own needs no ids stored: its entry says so (BYTE_RUN), whatever its length; GPT-2's
vocabulary has no runs of spaces, so each line of indented code starts with such a piece of up to 16
ids. (Whole-token pieces are not cached:
the short vocabulary table answers them as fast.)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .hashing import aligned_zeros, bytes_equal, slot_of
from .jit import njit

SLOTS = 1 << 15
KEY_ARENA = 1 << 19
VAL_ARENA = 1 << 18
MAX_KEY = 128
SHORT_SLOTS = 1 << 16
SHORT_IDS = 10
BYTE_RUN = 0xFF  # the id count of a short entry whose ids are its bytes' own (byte_ids)
PAIR_MEMO = 1 << 14  # entries of the merge-table memo: 256 KB per worker
PAIR_WORDS = 2 * PAIR_MEMO
COMPAT_MEMO = 1 << 17  # entries of the character route's compatibility memo: 1 MB per worker


class PieceCache(NamedTuple):
    hashes: np.ndarray  # uint64[W, SLOTS], 0 = empty
    meta: np.ndarray  # int32[W, SLOTS, 4]: key offset, key length, value offset, value length
    keys: np.ndarray  # uint8[W, KEY_ARENA]
    vals: np.ndarray  # uint32[W, VAL_ARENA]
    state: np.ndarray  # int64[W, 4]: entries, key bytes used, values used, clears
    short: np.ndarray  # uint64[W, 8 * SHORT_SLOTS]: k0, k1, n << 32 | count, 5 words of 2 ids
    # uint64[W, PAIR_WORDS + COMPAT_MEMO]: recent merge-table answers (key, all ones = empty; value), then
    # recent answers of the character route's pair proofs (merge_chars.compat_memo: one word each)
    pairs: np.ndarray


def new_cache(workers: int) -> PieceCache:
    return PieceCache(
        np.zeros((workers, SLOTS), dtype=np.uint64),
        np.zeros((workers, SLOTS, 4), dtype=np.int32),
        np.zeros((workers, KEY_ARENA), dtype=np.uint8),
        np.zeros((workers, VAL_ARENA), dtype=np.uint32),
        np.zeros((workers, 4), dtype=np.int64),
        aligned_zeros(workers * 8 * SHORT_SLOTS, np.uint64).reshape(workers, 8 * SHORT_SLOTS),
        _pair_memos(workers),
    )


def _pair_memos(workers: int) -> np.ndarray:
    # zeros (empty for the compatibility memo) are fresh pages nobody touches before they are used
    memo = np.zeros((workers, PAIR_WORDS + COMPAT_MEMO), dtype=np.uint64)
    _empty_pair_memos(memo)
    return memo


def _empty_pair_memos(memo: np.ndarray) -> None:
    memo[:, :PAIR_WORDS] = np.uint64(0xFFFFFFFFFFFFFFFF)
    memo[:, PAIR_WORDS:] = 0


def empty_cache(cache: PieceCache) -> None:
    """Empty every worker's piece cache and memos in place, as new_cache made them (entries left in
    the key and value arenas are unreachable once the slots are empty). For measuring text unseen."""
    cache.hashes[:] = 0
    cache.state[:] = 0
    cache.short[:] = 0
    _empty_pair_memos(cache.pairs)


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
def cache_get_call(hashes, meta, keys, vals, buf, start, end, h, out, op):
    """cache_get as a call, for a piece loop's rarer look-ups: each inlined copy is compiled again."""
    return cache_get(hashes, meta, keys, vals, buf, start, end, h, out, op)


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


@njit(inline="always")
def _packed_byte(k0, k1, k):
    """Byte k (< 16) of a piece packed in (k0, k1) (hashing.pack_short: little-endian words)."""
    w = k0 if k < 8 else k1
    return np.int64((w >> np.uint64(8 * (k & 7))) & np.uint64(0xFF))


# The BYTE_RUN entries' get and put are calls, not inlined like the rest: they are rare, and every
# piece loop that inlines short_get / short_put would compile another copy of their loops.
@njit
def _byte_run_get(k0, k1, n, out, op, byte_ids):
    for k in range(n):
        out[op + k] = byte_ids[_packed_byte(k0, k1, k)]
    return n


@njit
def _byte_run_put(sc, k0, k1, n, h, ids, i0, m, byte_ids):
    if m != n:
        return
    for k in range(n):
        if ids[i0 + k] != byte_ids[_packed_byte(k0, k1, k)]:
            return
    b = 8 * short_slot(h)
    sc[b] = k0
    sc[b + 1] = k1
    sc[b + 2] = (np.uint64(n) << np.uint64(32)) | np.uint64(BYTE_RUN)


@njit(inline="always")
def short_slot(h):
    # bits above the ones the vocabulary tables use (slot_of), so a table cluster is not a cache cluster
    return np.int64(h >> np.uint64(43)) & (SHORT_SLOTS - 1)


@njit(inline="always")
def short_has(sc, k0, k1, n, h):
    """True when short_get would find the piece."""
    b = 8 * short_slot(h)
    return sc[b] == k0 and sc[b + 1] == k1 and (sc[b + 2] >> np.uint64(32)) == np.uint64(n)


@njit(inline="always")
def short_get(sc, k0, k1, n, h, out, op, byte_ids):
    """Copy the cached ids of the piece (n bytes packed in k0, k1) to out[op:]; how many (0 = miss)."""
    b = 8 * short_slot(h)
    meta = sc[b + 2]
    if sc[b] != k0 or sc[b + 1] != k1 or (meta >> np.uint64(32)) != np.uint64(n):
        return 0
    cnt = np.int64(meta & np.uint64(0xFF))
    if cnt == BYTE_RUN:
        return _byte_run_get(k0, k1, n, out, op, byte_ids)
    for k in range(cnt):
        w = sc[b + 3 + (k >> 1)]
        out[op + k] = (w >> np.uint64(32)) if (k & 1) else (w & np.uint64(0xFFFFFFFF))
    return cnt


@njit(inline="always")
def short_put(sc, k0, k1, n, h, ids, i0, m, byte_ids):
    """Remember ids[i0:i0+m] for the piece (n bytes packed in k0, k1), replacing whatever held the
    slot: up to SHORT_IDS ids, or any number that are the piece's own byte ids (BYTE_RUN)."""
    if m > SHORT_IDS:
        _byte_run_put(sc, k0, k1, n, h, ids, i0, m, byte_ids)
        return
    b = 8 * short_slot(h)
    sc[b] = k0
    sc[b + 1] = k1
    sc[b + 2] = (np.uint64(n) << np.uint64(32)) | np.uint64(m)
    for k in range(0, m, 2):
        w = np.uint64(ids[i0 + k])
        if k + 1 < m:
            w |= np.uint64(ids[i0 + k + 1]) << np.uint64(32)
        sc[b + 3 + (k >> 1)] = w
