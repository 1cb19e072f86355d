"""The kernels behind `tltok_jit.train_bpe`: counting pieces, then Hugging Face's BPE merge loop.

Counting. `count_rows` splits rows of UTF-8 text (Arrow layout: `data`, `offsets`) with a pattern's
scanner and adds every piece to a hash table of distinct pieces (a *piece table*, see `new_table`).
Each thread fills its own table; `add_pieces` adds one table's pieces (`table_pieces`) into another.
A table's size is its distinct pieces, never the text's. The counting kernels stop when their
table is full and `grow_table` (called between them) makes room: kernels here never replace an
array inside a hot loop, since numba then pays reference-count updates on every turn.

Merging. `train` replays `tokenizers`' `BpeTrainer::do_train` (models/bpe/trainer.rs) step for step,
because its result depends on details a textbook BPE does not have:

* the queue is a max-heap on (count, then the smaller pair of ids); an entry holds the set of words
  it applies to (`pos`). A popped entry whose count is not the pair's current count is pushed back
  with the current count (whatever it is) and its old word set;
* the merged pair's own count is never decreased, and a pair whose count rose during a merge gets a
  new entry holding only the words where it rose: a pair can be merged more than once (the later
  merges apply to the words that gained it);
* a merge whose string is already a token reuses that id (the vocabulary does not grow);
* with `max_length`, a new pair whose two lengths sum to `max_length` or more is not counted.

Entries equal in (count, pair) pop oldest first; Hugging Face's order for them depends on its hash
maps' random seed (so it is not reproducible there either); they need the same pair reaching the same
count twice while still queued. Counts are int64; Hugging Face sums pair counts in int32.
"""

from __future__ import annotations

import numpy as np

from .jit import LITTLE_ENDIAN, load_u64, njit
from .scan import scan_pointers
from .scanner_slots import call_scanner

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_PAIR_SHIFT = np.int64(32)
_LOW32 = np.int64(0xFFFFFFFF)


# ------------------------------------------------------------------ piece tables
@njit(inline="always")
def _hash_bytes(buf, start, n):
    h = _FNV_OFFSET
    for i in range(start, start + n):
        h = (h ^ np.uint64(buf[i])) * _FNV_PRIME
    # FNV's low bits are weak for short keys; a finalizer spreads the high ones down
    h ^= h >> np.uint64(29)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(32)
    return h


def new_table(capacity: int = 1 << 12, pool: int = 1 << 16):
    """An empty piece table: (short, slots, hashes, starts, lens, counts, pool, meta).

    A piece of at most SHORT bytes is a row of `short` (uint64[cap, 3], open addressing): two key
    words (bytes 0-7 little-endian; bytes 8-14 and the length in the top byte, so never 0 for a
    piece: 0 = empty) and its count; one probe reads one row, no pool. A longer one: slots[h & mask]
    is an entry index + 1 (0 = empty); entry e is pool[starts[e]:starts[e] + lens[e]] seen counts[e]
    times. meta = [long entries, pool bytes used, short entries]."""
    slots = np.zeros(capacity * 2, dtype=np.int64)
    return (np.zeros((capacity * 4, 3), np.uint64),
            slots,
            np.zeros(capacity, np.uint64), np.zeros(capacity, np.int64), np.zeros(capacity, np.int64),
            np.zeros(capacity, np.int64), np.zeros(pool, np.uint8), np.zeros(3, np.int64))


@njit
def _grow_entries(hashes, starts, lens, counts):
    cap = len(hashes) * 2
    h2 = np.zeros(cap, np.uint64)
    s2 = np.zeros(cap, np.int64)
    l2 = np.zeros(cap, np.int64)
    c2 = np.zeros(cap, np.int64)
    n = len(hashes)
    h2[:n] = hashes
    s2[:n] = starts
    l2[:n] = lens
    c2[:n] = counts
    return h2, s2, l2, c2


@njit
def _rehash(slots_len, hashes, n):
    slots = np.zeros(slots_len, np.int64)
    mask = np.uint64(slots_len - 1)
    for e in range(n):
        j = hashes[e] & mask
        while slots[j] != 0:
            j = (j + np.uint64(1)) & mask
        slots[j] = e + 1
    return slots


SHORT = 15


@njit(inline="always")
def _short_keys(buf, start, n):
    lo = np.uint64(0)
    hi = np.uint64(n) << np.uint64(56)
    for k in range(min(n, 8)):
        lo |= np.uint64(buf[start + k]) << np.uint64(8 * k)
    for k in range(8, n):
        hi |= np.uint64(buf[start + k]) << np.uint64(8 * (k - 8))
    return lo, hi


@njit(inline="always")
def _short_hash(lo, hi):
    x = lo * np.uint64(0x9E3779B97F4A7C15) ^ hi
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    return x ^ (x >> np.uint64(33))


@njit
def _short_grow(T):
    cap = T.shape[0] * 2
    T2 = np.zeros((cap, 3), np.uint64)
    mask = np.uint64(cap - 1)
    for j in range(T.shape[0]):
        if T[j, 1] != 0:
            t = _short_hash(T[j, 0], T[j, 1]) & mask
            while T2[t, 1] != 0:
                t = (t + np.uint64(1)) & mask
            T2[t, 0] = T[j, 0]
            T2[t, 1] = T[j, 1]
            T2[t, 2] = T[j, 2]
    return T2


@njit
def _long_room(n, slots, hashes, pool, meta):
    """A new long piece of n bytes fits without growing the table."""
    return meta[0] + 1 <= len(hashes) and meta[1] + n <= len(pool) and 2 * (meta[0] + 1) <= len(slots)


@njit
def _insert_long(buf, start, n, count, slots, hashes, starts, lens, counts, pool, meta):
    """Add `count` to the long piece buf[start:start + n] (the caller checked `_long_room`)."""
    h = _hash_bytes(buf, start, n)
    mask = np.uint64(len(slots) - 1)
    j = h & mask
    while True:
        e = slots[j]
        if e == 0:
            break
        e -= 1
        if hashes[e] == h and lens[e] == n:
            st = starts[e]
            same = True
            for k in range(n):
                if pool[st + k] != buf[start + k]:
                    same = False
                    break
            if same:
                counts[e] += count
                return
        j = (j + np.uint64(1)) & mask
    ne = meta[0]
    used = meta[1]
    for k in range(n):
        pool[used + k] = buf[start + k]
    hashes[ne] = h
    starts[ne] = used
    lens[ne] = n
    counts[ne] = count
    meta[0] = ne + 1
    meta[1] = used + n
    slots[j] = ne + 1


@njit
def count_rows(data, offsets, row, pos, row_hi, kind, s1, s2, T, slots, hashes, starts, lens, counts, pool, meta):
    """Add the pieces of rows row..row_hi (data[offsets[r]:offsets[r + 1]]; row `row` from byte
    `pos`, a piece boundary, or its start when pos < 0), split by scanner `kind` (scan.PAT_*), to the
    table. Returns (row, pos) where it stopped: (row_hi, 0) when done, else the table must grow first
    (`grow_table`). The arrays are never replaced in here: a loop replacing them pays reference-count
    updates on every piece, several times the probe itself."""
    bp, s1p, s2p, a0 = scan_pointers(data, s1, s2)
    nbuf = len(data)
    mask = np.uint64(T.shape[0] - 1)
    n_short = meta[2]
    r = row
    while r < row_hi:
        end = np.int64(offsets[r + 1])
        p = np.int64(offsets[r]) if pos < 0 else np.int64(pos)
        pos = -1
        while p < end:
            stop = call_scanner(kind, bp, p, end, s1p, s2p, a0)
            n = stop - p
            if n <= SHORT:
                if 2 * (n_short + 1) > T.shape[0]:
                    meta[2] = n_short
                    return r, p
                if LITTLE_ENDIAN and p + 16 <= nbuf:  # two loads, masked to the piece
                    w0 = load_u64(bp, p)
                    if n < 8:
                        lo = w0 & ((np.uint64(1) << np.uint64(8 * n)) - np.uint64(1))
                        hi = np.uint64(0)
                    else:
                        lo = w0
                        hi = load_u64(bp, p + 8) & ((np.uint64(1) << np.uint64(8 * (n - 8))) - np.uint64(1))
                    hi |= np.uint64(n) << np.uint64(56)
                else:
                    lo, hi = _short_keys(data, p, n)
                j = _short_hash(lo, hi) & mask
                while True:
                    bj = T[j, 1]
                    if bj == hi and T[j, 0] == lo:
                        T[j, 2] += np.uint64(1)
                        break
                    if bj == 0:
                        T[j, 0] = lo
                        T[j, 1] = hi
                        T[j, 2] = np.uint64(1)
                        n_short += 1
                        break
                    j = (j + np.uint64(1)) & mask
            else:
                if not _long_room(n, slots, hashes, pool, meta):
                    meta[2] = n_short
                    return r, p
                _insert_long(data, p, n, np.int64(1), slots, hashes, starts, lens, counts, pool, meta)
            p = stop
        r += 1
    meta[2] = n_short
    return r, np.int64(0)


@njit
def add_pieces(i0, buf, piece_offsets, piece_counts, T, slots, hashes, starts, lens, counts, pool, meta):
    """Add pieces i0.. (piece i = buf[piece_offsets[i]:piece_offsets[i + 1]] seen piece_counts[i]
    times: another table's entries, or pieces split outside the kernels). Returns where it stopped
    (len(piece_counts) when done, else the table must grow first)."""
    mask = np.uint64(T.shape[0] - 1)
    n_short = meta[2]
    for i in range(i0, len(piece_counts)):
        s = np.int64(piece_offsets[i])
        n = np.int64(piece_offsets[i + 1]) - s
        c = np.int64(piece_counts[i])
        if n <= SHORT:
            if 2 * (n_short + 1) > T.shape[0]:
                meta[2] = n_short
                return i
            lo, hi = _short_keys(buf, s, n)
            j = _short_hash(lo, hi) & mask
            while True:
                bj = T[j, 1]
                if bj == hi and T[j, 0] == lo:
                    T[j, 2] += np.uint64(c)
                    break
                if bj == 0:
                    T[j, 0] = lo
                    T[j, 1] = hi
                    T[j, 2] = np.uint64(c)
                    n_short += 1
                    break
                j = (j + np.uint64(1)) & mask
        else:
            if not _long_room(n, slots, hashes, pool, meta):
                meta[2] = n_short
                return i
            _insert_long(buf, s, n, c, slots, hashes, starts, lens, counts, pool, meta)
    meta[2] = n_short
    return len(piece_counts)


@njit
def grow_table(T, slots, hashes, starts, lens, counts, pool, meta, need_bytes):
    """The table's arrays with room for one more short piece, and one more long one of
    `need_bytes` bytes (each part doubled when it is full)."""
    if 2 * (meta[2] + 1) > T.shape[0]:
        T = _short_grow(T)
    if meta[0] + 1 > len(hashes):
        hashes, starts, lens, counts = _grow_entries(hashes, starts, lens, counts)
    if meta[1] + need_bytes > len(pool):
        p2 = np.zeros(max(2 * len(pool), meta[1] + need_bytes), np.uint8)
        p2[:meta[1]] = pool[:meta[1]]
        pool = p2
    if 2 * (meta[0] + 1) > len(slots):
        slots = _rehash(len(slots) * 2, hashes, meta[0])
    return T, slots, hashes, starts, lens, counts, pool


@njit
def table_pieces(T, starts, lens, counts, pool, meta):
    """Every piece of the table packed: (bytes, offsets, counts), the short ones first."""
    n_short = meta[2]
    n_long = meta[0]
    n = n_short + n_long
    offs = np.zeros(n + 1, np.int64)
    cnt = np.zeros(n, np.int64)
    e = 0
    for j in range(T.shape[0]):
        if T[j, 1] != 0:
            offs[e + 1] = offs[e] + np.int64(T[j, 1] >> np.uint64(56))
            cnt[e] = np.int64(T[j, 2])
            e += 1
    for i in range(n_long):
        offs[e + 1] = offs[e] + lens[i]
        cnt[e] = counts[i]
        e += 1
    out = np.empty(offs[n], np.uint8)
    e = 0
    for j in range(T.shape[0]):
        if T[j, 1] != 0:
            o = offs[e]
            for k in range(offs[e + 1] - o):
                w = T[j, 0] if k < 8 else T[j, 1]
                out[o + k] = np.uint8((w >> np.uint64(8 * (k & 7))) & np.uint64(255))
            e += 1
    for i in range(n_long):
        s = starts[i]
        o = offs[e]
        for k in range(lens[i]):
            out[o + k] = pool[s + k]
        e += 1
    return out, offs, cnt


# ------------------------------------------------------------------ int64 -> int64 hash map (pair counts)
@njit(inline="always")
def _mix(k):
    x = np.uint64(k)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    return x


@njit
def _map_find(P, key):
    """Row of `key` in the map P (int64[cap, 2]: key, count; key -1 = empty), or the empty row where
    it would go. One row holds both, so a probe reads one cache line."""
    mask = np.uint64(P.shape[0] - 1)
    j = _mix(key) & mask
    while True:
        k = P[j, 0]
        if k == key or k < 0:
            return np.int64(j)
        j = (j + np.uint64(1)) & mask


@njit
def _map_grow(P, ids):
    cap = P.shape[0] * 2
    P2 = np.full((cap, 2), -1, np.int64)
    P2[:, 1] = 0  # an empty row's count: a new key starts from 0
    i2 = np.zeros(cap, np.int64)
    for j in range(P.shape[0]):
        if P[j, 0] >= 0:
            t = _map_find(P2, P[j, 0])
            P2[t, 0] = P[j, 0]
            P2[t, 1] = P[j, 1]
            i2[t] = ids[j]
    return P2, i2


# ------------------------------------------------------------------ the queue
# A 4-ary max-heap of rows H[i] = (count, pair key, age, word-set start, word-set length), uint64:
# one row is 40 contiguous bytes and four siblings are adjacent, so a sift touches few cache lines
# (the stale entries' pops and pushes are most of its work).
@njit(inline="always")
def _row_before(c, k, a, H, j):
    """The row (c, k, a) pops before row j: a larger count, then the smaller pair, then the older."""
    if c != H[j, 0]:
        return c > H[j, 0]
    if k != H[j, 1]:
        return k < H[j, 1]
    return a < H[j, 2]


@njit
def _heap_push(H, hn, c, k, a, ps, pl):
    """Push a row onto the heap of hn rows (room checked by the caller); returns hn + 1."""
    i = hn
    while i > 0:
        parent = (i - 1) >> 2
        if _row_before(c, k, a, H, parent):
            for f in range(5):
                H[i, f] = H[parent, f]
            i = parent
        else:
            break
    H[i, 0] = c
    H[i, 1] = k
    H[i, 2] = a
    H[i, 3] = ps
    H[i, 4] = pl
    return hn + 1


@njit
def _heap_pop(H, hn):
    """Remove the top row (read it first) of a heap of hn >= 1 rows; returns hn - 1."""
    n = hn - 1
    if n == 0:
        return n
    i = 0
    while True:
        first = 4 * i + 1
        if first >= n:
            break
        best = first
        last = min(first + 4, n)
        for j in range(first + 1, last):
            if _row_before(H[j, 0], H[j, 1], H[j, 2], H, best):
                best = j
        if _row_before(H[best, 0], H[best, 1], H[best, 2], H, n):
            for f in range(5):
                H[i, f] = H[best, f]
            i = best
        else:
            break
    if i != n:
        for f in range(5):
            H[i, f] = H[n, f]
    return n


@njit
def _grow_heap(H, need):
    if need <= H.shape[0]:
        return H
    H2 = np.zeros((max(need, 2 * H.shape[0]), 5), np.uint64)
    H2[:H.shape[0]] = H
    return H2


@njit
def _grow_i64(a, need):
    if need <= len(a):
        return a
    b = np.zeros(max(need, 2 * len(a)), a.dtype)
    b[:len(a)] = a
    return b


@njit
def _grow_i32(a, need):
    if need <= len(a):
        return a
    b = np.zeros(max(need, 2 * len(a)), np.int32)
    b[:len(a)] = a
    return b


# ------------------------------------------------------------------ tokens (for "already in the vocabulary")
@njit
def _tok_find(tslots, tok_hash, tok_start, tok_len, tok_pool, h, buf, n):
    """Id of the token with bytes buf[:n] (hash h), or -1; also the empty slot where it would go."""
    mask = np.uint64(len(tslots) - 1)
    j = h & mask
    while tslots[j] != 0:
        t = tslots[j] - 1
        if tok_hash[t] == h and tok_len[t] == n:
            s = tok_start[t]
            same = True
            for k in range(n):
                if tok_pool[s + k] != buf[k]:
                    same = False
                    break
            if same:
                return t, np.int64(j)
        j = (j + np.uint64(1)) & mask
    return np.int64(-1), np.int64(j)


@njit
def _count_initial(sym, w_start, w_len, w_count, w0, P, pid, n_pairs, occ_pair, o):
    """Count the pairs of words w0.. into the map, numbering new pairs densely; returns (next word,
    pairs, occurrences written) and stops before a word that could fill the map past half."""
    n_words = len(w_start)
    w = w0
    while w < n_words:
        L = w_len[w]
        if 2 * (n_pairs + L) > P.shape[0]:
            return w, n_pairs, o
        s = w_start[w]
        c = w_count[w]
        for i in range(L - 1):
            key = (np.int64(sym[s + i]) << _PAIR_SHIFT) | np.int64(sym[s + i + 1])
            j = _map_find(P, key)
            if P[j, 0] < 0:
                P[j, 0] = key
                pid[j] = n_pairs
                n_pairs += 1
            P[j, 1] += c
            occ_pair[o] = pid[j]
            o += 1
        w += 1
    return w, n_pairs, o


@njit
def _merge_words(q0, q_end, pos, sym, w_start, w_len, w_count, a, b, new, tl, max_length, P, n_pairs,
                 ch_key, ch_word, n_ch):
    """Word::merge on the words pos[q0:q_end]: pair counts updated, each increment recorded as
    (pair, word) in ch_key / ch_word. Returns (next word index, pairs, increments); it stops
    before a word that could overfill the map or the change arrays (the caller grows them)."""
    limit = max_length > 0
    nlen = tl[new]
    q = q0
    while q < q_end:
        w = np.int64(pos[q])
        L = w_len[w]
        # a word of L symbols has at most L / 2 occurrences: <= L increments, <= 2 L new pairs
        if 2 * (n_pairs + 2 * L) > P.shape[0] or n_ch + L > len(ch_key):
            return q, n_pairs, n_ch
        s = w_start[w]
        cw = w_count[w]
        r = 0
        wr = 0
        while r < L:
            x = sym[s + r]
            if x == a and r + 1 < L and sym[s + r + 1] == b:
                if wr > 0:
                    prev = np.int64(sym[s + wr - 1])
                    kk = (prev << _PAIR_SHIFT) | a
                    jj = _map_find(P, kk)
                    if P[jj, 0] < 0:  # a pair never counted (max_length): HF's entry starts at 0 too
                        P[jj, 0] = kk
                        n_pairs += 1
                    P[jj, 1] -= cw
                    if not limit or tl[prev] + nlen < max_length:
                        kk = (prev << _PAIR_SHIFT) | new
                        jj = _map_find(P, kk)
                        if P[jj, 0] < 0:
                            P[jj, 0] = kk
                            n_pairs += 1
                        P[jj, 1] += cw
                        ch_key[n_ch] = kk
                        ch_word[n_ch] = w
                        n_ch += 1
                if r + 2 < L:
                    nxt = np.int64(sym[s + r + 2])
                    kk = (b << _PAIR_SHIFT) | nxt
                    jj = _map_find(P, kk)
                    if P[jj, 0] < 0:
                        P[jj, 0] = kk
                        n_pairs += 1
                    P[jj, 1] -= cw
                    if not limit or tl[nxt] + nlen < max_length:
                        kk = (new << _PAIR_SHIFT) | nxt
                        jj = _map_find(P, kk)
                        if P[jj, 0] < 0:
                            P[jj, 0] = kk
                            n_pairs += 1
                        P[jj, 1] += cw
                        ch_key[n_ch] = kk
                        ch_word[n_ch] = w
                        n_ch += 1
                sym[s + wr] = new
                wr += 1
                r += 2
            else:
                sym[s + wr] = x
                wr += 1
                r += 1
        w_len[w] = wr
        q += 1
    return q, n_pairs, n_ch


@njit
def _push_changes(n_ch, ch_key, ch_word, ch_next, step, mark, head, touched, P, pos, pos_used,
                  H, hn, age):
    """One new queue entry per pair that rose in this step, holding the (distinct) words where it
    rose, when its count is positive. The changes of a pair are chained through ch_next from its
    map slot. Entries of one step hold distinct pairs, so their push order changes nothing. The
    caller made room: pos for n_ch more words, the heap for n_ch more entries. Returns (pos_used,
    hn, age)."""
    n_touched = 0
    for i in range(n_ch):
        jj = _map_find(P, ch_key[i])
        if mark[jj] != step:
            mark[jj] = step
            head[jj] = -1
            touched[n_touched] = jj
            n_touched += 1
        ch_next[i] = head[jj]
        head[jj] = i
    for t in range(n_touched):
        jj = touched[t]
        start = pos_used
        last_w = np.int64(-1)
        i = head[jj]
        while i >= 0:
            w = ch_word[i]
            if w != last_w:  # a word's changes are adjacent: the word once
                pos[pos_used] = w
                pos_used += 1
                last_w = w
            i = ch_next[i]
        if P[jj, 1] > 0:
            hn = _heap_push(H, hn, np.uint64(P[jj, 1]), np.uint64(P[jj, 0]), np.uint64(age), np.uint64(start),
                            np.uint64(pos_used - start))
            age += 1
        else:
            pos_used = start
    return pos_used, hn, age


@njit
def _new_token(a, b, tslots, tok_hash, ts, tl, tp, pool_used, next_id, scratch):
    """The id of the string tokens a + b (an existing one, or next_id with its bytes appended; the
    caller made room). Returns (id, pool bytes used)."""
    n = tl[a] + tl[b]
    for k in range(tl[a]):
        scratch[k] = tp[ts[a] + k]
    for k in range(tl[b]):
        scratch[tl[a] + k] = tp[ts[b] + k]
    h = _hash_bytes(scratch, 0, n)
    new, tj = _tok_find(tslots, tok_hash, ts, tl, tp, h, scratch, n)
    if new >= 0:
        return new, pool_used
    new = next_id
    for k in range(n):
        tp[pool_used + k] = scratch[k]
    ts[new] = pool_used
    tl[new] = n
    tok_hash[new] = h
    tslots[tj] = new + 1
    return new, pool_used + n


@njit
def train(sym, w_start, w_len, w_count, tok_pool, tok_start, tok_len, tok_known, n_ids, n_vocab, vocab_size,
          min_frequency, max_length, progress):
    """Hugging Face's merge loop (see the module docstring).

    Words: word w is sym[w_start[w]:w_start[w] + w_len[w]] (initial ids), seen w_count[w] times;
    rewritten in place. Tokens: id t < n_ids has bytes tok_pool[tok_start[t]:...+tok_len[t]]
    (its length counts for `max_length`) and is found by a merge yielding those bytes when
    tok_known[t]. `n_vocab` is the vocabulary's size before merging (Hugging Face's word_to_id), <=
    n_ids. `max_length` <= 0: no limit. `progress` (int64[4]) counts the merges done, the
    words visited, the pair increments and the queue pops, while it runs.

    Returns (merge_left, merge_right, merge_new): every merge in order (a pair can repeat), and
    (tok_pool, tok_start, tok_len) with the tokens the merges added.

    The loops over words and changes are helpers that never replace their arrays (growing happens
    here, between them): a loop that may replace an array pays reference-count updates on every turn."""
    n_words = len(w_start)
    # token table: bytes -> id (room for every id this call can make)
    cap_ids = max(vocab_size, n_ids) + n_ids + 1
    tcap = 1
    while tcap < 4 * cap_ids:
        tcap *= 2
    tslots = np.zeros(tcap, np.int64)
    tok_hash = np.zeros(cap_ids, np.uint64)
    ts = np.zeros(cap_ids, np.int64)
    tl = np.zeros(cap_ids, np.int64)
    ts[:n_ids] = tok_start[:n_ids]
    tl[:n_ids] = tok_len[:n_ids]
    pool_used = np.int64(len(tok_pool))
    tp = np.zeros(max(pool_used * 2, 1024), np.uint8)
    tp[:pool_used] = tok_pool
    for t in range(n_ids):
        tok_hash[t] = _hash_bytes(tp, ts[t], tl[t])
        if tok_known[t]:
            found, j = _tok_find(tslots, tok_hash, ts, tl, tp, tok_hash[t], tp[ts[t]:], tl[t])
            if found < 0:
                tslots[j] = t + 1
    next_id = np.int64(n_ids)
    scratch = np.zeros(256, np.uint8)

    # pair counts: key = left << 32 | right, an open-addressing map sized by the distinct pairs
    # (grown as they come), not by the occurrences: a small map stays in cache
    total = np.int64(0)
    for w in range(n_words):
        if w_len[w] > 1:
            total += w_len[w] - 1
    P = np.full((1 << 16, 2), -1, np.int64)
    P[:, 1] = 0
    pid = np.zeros(1 << 16, np.int64)
    n_pairs = np.int64(0)
    occ_pair = np.empty(total, np.int64)  # dense pair number of each adjacent pair, in word order
    w = np.int64(0)
    o = np.int64(0)
    while w < n_words:
        w, n_pairs, o = _count_initial(sym, w_start, w_len, w_count, w, P, pid, n_pairs, occ_pair, o)
        if w < n_words:
            P, pid = _map_grow(P, pid)
    # where_to_update: the words of each pair, ascending and distinct, one slice per pair
    first = np.zeros(n_pairs + 1, np.int64)
    for i in range(total):
        first[occ_pair[i] + 1] += 1
    for p in range(n_pairs):
        first[p + 1] += first[p]
    fill = first[:n_pairs].copy()
    pos = np.zeros(max(total * 2, 1024), np.int32)
    o = 0
    for w in range(n_words):
        for i in range(w_len[w] - 1):
            p = occ_pair[o]
            o += 1
            if fill[p] > first[p] and pos[fill[p] - 1] == w:
                continue  # the pair twice in one word: the word once
            pos[fill[p]] = w
            fill[p] += 1
    pos_used = total
    occ_pair = occ_pair[:0]
    # the queue: count, pair key, age, word-set start and length
    H = np.zeros((max(n_pairs * 2, 1024), 5), np.uint64)
    hn = np.int64(0)
    age = np.int64(0)
    pair_key = np.zeros(n_pairs, np.int64)
    pair_count = np.zeros(n_pairs, np.int64)
    for j in range(P.shape[0]):
        if P[j, 0] >= 0:
            pair_key[pid[j]] = P[j, 0]
            pair_count[pid[j]] = P[j, 1]
    order = np.argsort(pair_key)  # pushed in pair order: the ages never depend on the word order
    for q in range(n_pairs):
        p = order[q]
        if pair_count[p] > 0:
            hn = _heap_push(H, hn, np.uint64(pair_count[p]), np.uint64(pair_key[p]), np.uint64(age),
                            np.uint64(first[p]), np.uint64(fill[p] - first[p]))
            age += 1

    m_left = np.zeros(max(vocab_size, 16), np.int64)
    m_right = np.zeros(max(vocab_size, 16), np.int64)
    m_new = np.zeros(max(vocab_size, 16), np.int64)
    n_merges = np.int64(0)
    ch_key = np.zeros(1 << 12, np.int64)  # the increments of one step: (pair key, word)
    ch_word = np.zeros(1 << 12, np.int64)
    ch_next = np.zeros(1 << 12, np.int64)
    touched = np.zeros(1 << 12, np.int64)
    mark = np.full(P.shape[0], -1, np.int64)  # per map slot: the step that last touched it
    head = np.zeros(P.shape[0], np.int64)  # ... and its last change in that step
    while n_vocab < vocab_size:
        if hn == 0:
            break
        progress[3] += 1
        c = H[0, 0]
        key = np.int64(H[0, 1])
        ps = np.int64(H[0, 3])
        pl = np.int64(H[0, 4])
        hn = _heap_pop(H, hn)
        cur = P[_map_find(P, key), 1]
        if c != np.uint64(cur):
            # stale: back with the current count (as Hugging Face's `count as u64`) and the same words
            hn = _heap_push(H, hn, np.uint64(cur), np.uint64(key), np.uint64(age), np.uint64(ps), np.uint64(pl))
            age += 1
            continue
        if c < np.uint64(1) or np.uint64(min_frequency) > c:
            break
        a = key >> _PAIR_SHIFT
        b = key & _LOW32
        n = tl[a] + tl[b]
        if n > len(scratch):
            scratch = np.zeros(2 * n, np.uint8)
        tp = _grow_u8(tp, pool_used + n)
        new, pool_used = _new_token(a, b, tslots, tok_hash, ts, tl, tp, pool_used, next_id, scratch)
        if new == next_id:
            next_id += 1
            n_vocab += 1
        if n_merges == len(m_left):
            m_left = _grow_i64(m_left, n_merges + 1)
            m_right = _grow_i64(m_right, n_merges + 1)
            m_new = _grow_i64(m_new, n_merges + 1)
        m_left[n_merges] = a
        m_right[n_merges] = b
        m_new[n_merges] = new
        n_merges += 1
        progress[0] = n_merges
        progress[1] += pl

        # merge the pair in the entry's words, as Word::merge does
        n_ch = np.int64(0)
        q = ps
        while q < ps + pl:
            q, n_pairs, n_ch = _merge_words(q, ps + pl, pos, sym, w_start, w_len, w_count, a, b, new, tl,
                                            max_length, P, n_pairs, ch_key, ch_word, n_ch)
            if q < ps + pl:  # room for the next word
                L = w_len[np.int64(pos[q])]
                while 2 * (n_pairs + 2 * L) > P.shape[0]:
                    P, pid = _map_grow(P, pid)
                ch_key = _grow_i64(ch_key, n_ch + L)
                ch_word = _grow_i64(ch_word, n_ch + L)
        progress[2] += n_ch
        if n_ch > 0:
            if len(mark) != P.shape[0]:
                mark = np.full(P.shape[0], -1, np.int64)
                head = np.zeros(P.shape[0], np.int64)
            ch_next = _grow_i64(ch_next, n_ch)
            touched = _grow_i64(touched, n_ch)
            pos = _grow_i32(pos, pos_used + n_ch)
            H = _grow_heap(H, hn + n_ch)
            pos_used, hn, age = _push_changes(n_ch, ch_key, ch_word, ch_next, n_merges, mark, head, touched,
                                              P, pos, pos_used, H, hn, age)
            if pos_used > 4 * n_words + 4 * total and pos_used > (1 << 20):
                pos, pos_used = _compact(pos, H, hn)
    return (m_left[:n_merges].copy(), m_right[:n_merges].copy(), m_new[:n_merges].copy(),
            tp[:pool_used].copy(), ts[:next_id].copy(), tl[:next_id].copy())


@njit
def _grow_u8(a, need):
    if need <= len(a):
        return a
    b = np.zeros(max(need, 2 * len(a)), np.uint8)
    b[:len(a)] = a
    return b


@njit
def _compact(pos, H, hn):
    """The queued entries' word sets copied to a new pool (merged and refused entries' sets are dead)."""
    need = np.int64(0)
    for i in range(hn):
        need += np.int64(H[i, 4])
    out = np.zeros(max(2 * need, 1024), np.int32)
    o = np.int64(0)
    for i in range(hn):
        s = np.int64(H[i, 3])
        n = np.int64(H[i, 4])
        H[i, 3] = np.uint64(o)
        for k in range(n):
            out[o + k] = pos[s + k]
        o += n
    return out, o


def warm() -> None:
    """Compile (or load) every kernel here, on a tiny corpus, for the shipped kernel cache."""
    from ..unicode.classes import class_tables
    from .scan import PAT_O200K, load_scanner

    load_scanner(PAT_O200K)
    s1, s2, _ = class_tables()
    data = np.frombuffer(b"hello hello world, a longer_piece_than_fifteen_bytes", np.uint8)
    offsets = np.array([0, 11, len(data)], np.int64)
    t = new_table()
    count_rows(data, offsets, 0, -1, 2, PAT_O200K, s1, s2, *t)
    t = (*grow_table(*t, 64), t[7])
    T, slots, hashes, starts, lens, counts, pool, meta = t
    buf, offs, cnt = table_pieces(T, starts, lens, counts, pool, meta)
    add_pieces(0, buf, offs, cnt, *new_table())
    sym = np.array([1, 2, 1, 2, 3], np.int32)
    pool0 = np.arange(4, dtype=np.uint8)
    train(sym, np.array([0, 2], np.int64), np.array([2, 3], np.int64), np.array([2, 1], np.int64), pool0,
          np.arange(4, dtype=np.int64), np.ones(4, np.int64), np.ones(4, np.bool_), 4, 4, 8, 0, 0,
          np.zeros(4, np.int64))
