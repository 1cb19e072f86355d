"""Open-addressing hash tables over flat arrays: bytes -> id (the vocabulary, the added tokens) and
(id, id) -> (rank, merged id) (the merge table). Built once at load; probed inside kernels.

Capacities are powers of two; a slot holds -1 (empty) or an index. Probing is linear.
"""

from __future__ import annotations

import numpy as np
from numba import uint64

from .jit import LITTLE_ENDIAN, load_u64, njit

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


SHORT = 16  # tokens of up to this many bytes also live in the short table, keyed by their bytes
SHORT_WORDS = 4  # short table entry: packed bytes 0-7, packed bytes 8-15, n << 32 | id (0 = empty), unused


def aligned_zeros(n: int, dtype) -> np.ndarray:
    """Zeroed array whose data starts on a 64-byte boundary (so a 32-byte entry never spans two
    cache lines)."""
    dt = np.dtype(dtype)
    raw = np.zeros(n * dt.itemsize + 64, dtype=np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + n * dt.itemsize].view(dt)


@njit(inline="always")
def pack_short(buf, start, n):
    """buf[start:start+n] (n <= SHORT) as two little-endian uint64 words, zero-padded."""
    k0 = uint64(0)
    k1 = uint64(0)
    m = n if n < 8 else 8
    for k in range(m):
        k0 |= uint64(buf[start + k]) << uint64(8 * k)
    for k in range(8, n):
        k1 |= uint64(buf[start + k]) << uint64(8 * (k - 8))
    return k0, k1


@njit(inline="always")
def pack_short_at(buf, bp, start, n):
    """pack_short, with two unaligned word loads when 16 bytes from `start` are inside `buf` (bp is
    its data pointer; the bytes past the piece are masked off). No branch on n: piece lengths on
    either side of 8 alternate unpredictably in text."""
    if not LITTLE_ENDIAN or start + 16 > len(buf):
        return pack_short(buf, start, n)
    ones = uint64(0xFFFFFFFFFFFFFFFF)
    m0 = ones >> uint64(64 - 8 * min(n, 8))  # (1 <= n <= 16: shifts of 0..56)
    m1 = (ones >> uint64(64 - 8 * max(n - 8, 1))) if n > 8 else uint64(0)
    return load_u64(bp, start) & m0, load_u64(bp, start + 8) & m1


@njit(inline="always")
def short_hash(k0, k1, n):
    """Hash of a packed piece of n <= SHORT bytes, never 0 (the role of hash_bytes for short pieces)."""
    x = k1 * uint64(0xC2B2AE3D27D4EB4F)
    h = (k0 ^ ((x << uint64(31)) | (x >> uint64(33))) ^ (uint64(n) << uint64(59))) * uint64(_MIX)
    h ^= h >> uint64(29)
    if h == uint64(0):
        h = uint64(1)
    return h


@njit(inline="always")
def short_lookup(k0, k1, n, h, short_tab):
    """Id of the token of n <= SHORT bytes packed in (k0, k1), or -1. Entries go to the first free slot
    from the even slot of their hash, so a pair of slots is one cache line and both are tested at
    once, without a branch on which one holds the token (with one slot a probe, a hit in the second
    slot probed cost a mispredicted branch); the next pair only when this one is full and holds
    neither."""
    mask = (len(short_tab) // SHORT_WORDS) - 1
    s = slot_of(h, mask) & ~np.int64(1)
    while True:
        b = SHORT_WORDS * s
        m0 = short_tab[b + 2]
        m1 = short_tab[b + 6]
        hit0 = (short_tab[b] == k0) & (short_tab[b + 1] == k1) & ((m0 >> uint64(32)) == uint64(n))
        hit1 = (short_tab[b + 4] == k0) & (short_tab[b + 5] == k1) & ((m1 >> uint64(32)) == uint64(n))
        t = np.int64(m1 & uint64(0xFFFFFFFF)) if hit1 else np.int64(-1)
        t = np.int64(m0 & uint64(0xFFFFFFFF)) if hit0 else t
        if hit0 | hit1 | (m0 == uint64(0)) | (m1 == uint64(0)):
            return t
        s = (s + 2) & mask


@njit(cache=True)
def fill_short_table(tab, tok_bytes, tok_offsets, valid):
    """Insert the valid tokens of 1..SHORT bytes into the zeroed short table `tab` (see short_lookup)."""
    mask = (len(tab) // SHORT_WORDS) - 1
    for t in range(len(tok_offsets) - 1):
        if not valid[t]:
            continue
        a = tok_offsets[t]
        n = tok_offsets[t + 1] - a
        if n < 1 or n > SHORT:
            continue
        k0, k1 = pack_short(tok_bytes, a, n)
        s = slot_of(short_hash(k0, k1, n), mask) & ~np.int64(1)  # (short_lookup: pairs of slots)
        while tab[SHORT_WORDS * s + 2] != uint64(0):
            s = (s + 1) & mask
        b = SHORT_WORDS * s
        tab[b] = k0
        tab[b + 1] = k1
        tab[b + 2] = (uint64(n) << uint64(32)) | uint64(t)


@njit(cache=True)
def count_short(tok_offsets, valid):
    c = 0
    for t in range(len(tok_offsets) - 1):
        n = tok_offsets[t + 1] - tok_offsets[t]
        if valid[t] and 1 <= n <= SHORT:
            c += 1
    return c


PAIR_ID_BITS = 20  # a pair slot packs left id (20 bits), right id (20 bits) and rank (24 bits)
PAIR_RANK_BITS = 24
MAX_PAIR_ID = (1 << PAIR_ID_BITS) - 2  # all-ones ids would look like an empty slot
MAX_PAIR_RANK = (1 << PAIR_RANK_BITS) - 1
_RANK_MASK = (1 << PAIR_RANK_BITS) - 1


@njit(inline="always")
def pair_key(a, b):
    return (uint64(a) << uint64(PAIR_ID_BITS)) | uint64(b)


@njit(inline="always")
def pair_home(k, mask):
    """The first slot pair_lookup probes for the key k = pair_key(a, b)."""
    return np.int64((k * uint64(_MIX)) >> uint64(24)) & mask


@njit(inline="always")
def pair_lookup(a, b, pair_slots, rank_ids):
    """(rank << 32 | merged id) of the pair (a, b), or -1.

    One uint64 per slot (key << 24 | rank) so a probe touches one cache line; the merged id of a
    rank comes from `rank_ids`, or is the rank itself when `rank_ids` is empty (tiktoken files)."""
    k = pair_key(a, b)
    mask = len(pair_slots) - 1
    s = pair_home(k, mask)
    while True:
        v = pair_slots[s]
        if (v >> uint64(PAIR_RANK_BITS)) == k:
            r = np.int64(v & uint64(_RANK_MASK))
            if len(rank_ids) == 0:  # ids are ranks (see tables.Tables.rank_ids)
                return (r << 32) | r
            return (r << 32) | np.int64(rank_ids[r])
        if v == EMPTY_PAIR:
            return np.int64(-1)
        s = (s + 1) & mask


@njit(cache=True)
def insert_pairs(lefts, rights, ranks, ids, capacity):
    """The merge table; a repeated pair keeps its first (lowest) rank. Ids must be <= MAX_PAIR_ID and
    ranks <= MAX_PAIR_RANK (the caller checks). Returns (slots, rank_ids, n_repeated)."""
    slots = np.full(capacity, EMPTY_PAIR, dtype=np.uint64)
    top = 0
    for i in range(len(ranks)):
        top = max(top, np.int64(ranks[i]))
    rank_ids = np.full(top + 1, -1, dtype=np.int32)
    mask = capacity - 1
    repeated = 0
    for i in range(len(lefts)):
        k = pair_key(lefts[i], rights[i])
        r = uint64(ranks[i])
        s = pair_home(k, mask)
        while True:
            v = slots[s]
            if v == EMPTY_PAIR:
                slots[s] = (k << uint64(PAIR_RANK_BITS)) | r
                rank_ids[ranks[i]] = ids[i]
                break
            if (v >> uint64(PAIR_RANK_BITS)) == k:
                repeated += 1
                if (v & uint64(_RANK_MASK)) > r:
                    slots[s] = (k << uint64(PAIR_RANK_BITS)) | r
                    rank_ids[ranks[i]] = ids[i]
                break
            s = (s + 1) & mask
    return slots, rank_ids, repeated


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


# A blocked Bloom filter of the merge table's pairs: three bits in one 64-bit word per pair. It stays
# in the CPU's L2 cache where the table does not, and answers "no such pair" (most pairs of whole
# characters) without touching the table.
BLOOM_BITS_PER_PAIR = 8


@njit(inline="always")
def _bloom_bits(a, b, mask):
    h = pair_key(a, b) * uint64(0xD6E8FEB86659FD93)
    h ^= h >> uint64(32)
    w = np.int64(h >> uint64(40)) & mask
    bits = ((uint64(1) << (h & uint64(63))) | (uint64(1) << ((h >> uint64(6)) & uint64(63)))
            | (uint64(1) << ((h >> uint64(12)) & uint64(63))))
    return w, bits


@njit(inline="always")
def bloom_may_have(a, b, bloom):
    """False: (a, b) is not in the merge table; True: it may be. `bloom` has a power-of-two length
    of at most 2**24 words."""
    w, bits = _bloom_bits(a, b, len(bloom) - 1)
    return (bloom[w] & bits) == bits


@njit(cache=True)
def build_pair_bloom(pair_slots, words):
    """The Bloom filter (uint64[words], words a power of two <= 2**24) of every pair in `pair_slots`."""
    bloom = np.zeros(words, dtype=np.uint64)
    idm = uint64((1 << PAIR_ID_BITS) - 1)
    for s in range(len(pair_slots)):
        v = pair_slots[s]
        if v == EMPTY_PAIR:
            continue
        key = v >> uint64(PAIR_RANK_BITS)
        w, bits = _bloom_bits(key >> uint64(PAIR_ID_BITS), key & idm, words - 1)
        bloom[w] |= bits
    return bloom
