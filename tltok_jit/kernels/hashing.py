"""Open-addressing hash tables over flat arrays: bytes -> id (the vocabulary, the added tokens) and
(id, id) -> (rank, merged id) (the merge table). Built once at load; probed inside kernels.

Capacities are powers of two; a slot holds -1 (empty) or an index. Probing is linear.
"""

from __future__ import annotations

import numpy as np
from numba import uint64

from .jit import njit

EMPTY_PAIR = np.uint64(0xFFFFFFFFFFFFFFFF)
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MIX = 0x9E3779B97F4A7C15


@njit(inline="always")
def hash_bytes(buf, start, end):
    """FNV-1a over buf[start:end], never 0 (0 marks an empty cache slot)."""
    h = uint64(_FNV_OFFSET)
    for i in range(start, end):
        h = (h ^ uint64(buf[i])) * uint64(_FNV_PRIME)
    h ^= h >> uint64(29)
    if h == uint64(0):
        h = uint64(1)
    return h


@njit(inline="always")
def slot_of(h, mask):
    return np.int64((h * uint64(_MIX)) >> uint64(20)) & mask


@njit(inline="always")
def bytes_equal(a, a0, b, b0, n):
    for k in range(n):
        if a[a0 + k] != b[b0 + k]:
            return False
    return True


@njit(inline="always")
def vocab_lookup(buf, start, end, h, slots, slot_hash, tok_bytes, tok_offsets):
    """Id of the token whose bytes are buf[start:end], or -1."""
    mask = len(slots) - 1
    s = slot_of(h, mask)
    n = end - start
    while True:
        t = slots[s]
        if t < 0:
            return -1
        if slot_hash[s] == h:
            o = tok_offsets[t]
            if tok_offsets[t + 1] - o == n and bytes_equal(tok_bytes, o, buf, start, n):
                return t
        s = (s + 1) & mask


@njit(cache=True)
def build_vocab_table(tok_bytes, tok_offsets, valid, capacity):
    """slots[capacity] of ids and their hashes; returns (slots, slot_hash, first duplicate id or -1)."""
    slots = np.full(capacity, -1, dtype=np.int32)
    slot_hash = np.zeros(capacity, dtype=np.uint64)
    mask = capacity - 1
    n = len(tok_offsets) - 1
    for t in range(n):
        if not valid[t]:
            continue
        a = tok_offsets[t]
        b = tok_offsets[t + 1]
        h = hash_bytes(tok_bytes, a, b)
        if vocab_lookup(tok_bytes, a, b, h, slots, slot_hash, tok_bytes, tok_offsets) >= 0:
            return slots, slot_hash, t
        s = slot_of(h, mask)
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = t
        slot_hash[s] = h
    return slots, slot_hash, -1


@njit(inline="always")
def pair_key(a, b):
    return (uint64(a) << uint64(32)) | uint64(b)


@njit(inline="always")
def pair_lookup(a, b, pair_keys, pair_vals):
    """(rank << 32 | merged id) of the pair (a, b), or -1."""
    k = pair_key(a, b)
    mask = len(pair_keys) - 1
    s = np.int64((k * uint64(_MIX)) >> uint64(24)) & mask
    while True:
        kk = pair_keys[s]
        if kk == k:
            return pair_vals[s]
        if kk == EMPTY_PAIR:
            return np.int64(-1)
        s = (s + 1) & mask


@njit(cache=True)
def insert_pairs(lefts, rights, ranks, ids, capacity):
    """The merge table; a repeated pair keeps its first (lowest) rank. Returns (keys, vals, n_repeated)."""
    keys = np.full(capacity, EMPTY_PAIR, dtype=np.uint64)
    vals = np.full(capacity, -1, dtype=np.int64)
    mask = capacity - 1
    repeated = 0
    for i in range(len(lefts)):
        k = pair_key(lefts[i], rights[i])
        s = np.int64((k * uint64(_MIX)) >> uint64(24)) & mask
        while True:
            if keys[s] == EMPTY_PAIR:
                keys[s] = k
                vals[s] = (np.int64(ranks[i]) << 32) | np.int64(ids[i])
                break
            if keys[s] == k:
                repeated += 1
                if (vals[s] >> 32) > ranks[i]:
                    vals[s] = (np.int64(ranks[i]) << 32) | np.int64(ids[i])
                break
            s = (s + 1) & mask
    return keys, vals, repeated


@njit(cache=True)
def rank_splits(tok_bytes, tok_offsets, valid, slots, slot_hash):
    """Every split of every token into two tokens: tiktoken's merge rule as a pair table.

    For token t = x + y with x, y tokens, merging (x, y) gives t with rank t. Returns
    (lefts, rights, ranks, ids) as int32 arrays.
    """
    n = len(tok_offsets) - 1
    total = 0
    for t in range(n):
        if valid[t]:
            ln = tok_offsets[t + 1] - tok_offsets[t]
            if ln > 1:
                total += ln - 1
    lefts = np.empty(total, dtype=np.int32)
    rights = np.empty(total, dtype=np.int32)
    ranks = np.empty(total, dtype=np.int32)
    m = 0
    for t in range(n):
        if not valid[t]:
            continue
        a = tok_offsets[t]
        b = tok_offsets[t + 1]
        for c in range(a + 1, b):
            x = vocab_lookup(tok_bytes, a, c, hash_bytes(tok_bytes, a, c), slots, slot_hash, tok_bytes, tok_offsets)
            if x < 0:
                continue
            y = vocab_lookup(tok_bytes, c, b, hash_bytes(tok_bytes, c, b), slots, slot_hash, tok_bytes, tok_offsets)
            if y < 0:
                continue
            lefts[m] = x
            rights[m] = y
            ranks[m] = t
            m += 1
    lefts = lefts[:m].copy()
    rights = rights[:m].copy()
    ranks = ranks[:m].copy()
    ids = ranks.copy()
    return lefts, rights, ranks, ids



@njit
def lookup_token(T, data):
    """Id of the ordinary token whose bytes are `data` (uint8 array), or -1."""
    if len(data) == 0:
        return -1
    return vocab_lookup(data, 0, len(data), hash_bytes(data, 0, len(data)), T.vocab_slots, T.vocab_hash,
                        T.tok_bytes, T.tok_offsets)


def token_id_of_bytes(T, data: bytes) -> int:
    return int(lookup_token(T, np.frombuffer(data, dtype=np.uint8)))
