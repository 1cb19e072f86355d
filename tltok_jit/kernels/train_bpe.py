"""The kernels behind `tltok_jit.train_bpe`: counting pieces, then Hugging Face's BPE merge loop.

Counting. `count_rows` splits rows of UTF-8 text (Arrow layout: `data`, `offsets`) with a pattern's
scanner and adds every piece to a hash table of distinct pieces (a *piece table*, see `new_table`).
Each thread fills its own table; `merge_tables` adds one table into another. A table's size is its
distinct pieces, never the text's.

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

from .jit import njit
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
    """An empty piece table: (slots, hashes, starts, lens, counts, pool, meta). slots[h & mask] is
    an entry index + 1 (0 = empty); entry e is pool[starts[e]:starts[e] + lens[e]] seen counts[e]
    times; meta = [entries, pool bytes used]."""
    slots = np.zeros(capacity * 2, dtype=np.int64)
    return (slots, np.zeros(capacity, np.uint64), np.zeros(capacity, np.int64), np.zeros(capacity, np.int64),
            np.zeros(capacity, np.int64), np.zeros(pool, np.uint8), np.zeros(2, np.int64))


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


@njit
def _add_piece(buf, start, n, count, h, slots, hashes, starts, lens, counts, pool, meta):
    """Add `count` to the piece buf[start:start + n] (hash h); returns the table's arrays (new ones
    when it grew)."""
    mask = np.uint64(len(slots) - 1)
    j = h & mask
    while True:
        e = slots[j]
        if e == 0:
            break
        e -= 1
        if hashes[e] == h and lens[e] == n:
            s = starts[e]
            same = True
            for k in range(n):
                if pool[s + k] != buf[start + k]:
                    same = False
                    break
            if same:
                counts[e] += count
                return slots, hashes, starts, lens, counts, pool
        j = (j + np.uint64(1)) & mask
    ne = meta[0]
    used = meta[1]
    if ne == len(hashes):
        hashes, starts, lens, counts = _grow_entries(hashes, starts, lens, counts)
    if used + n > len(pool):
        cap = max(len(pool) * 2, used + n)
        p2 = np.zeros(cap, np.uint8)
        p2[:used] = pool[:used]
        pool = p2
    for k in range(n):
        pool[used + k] = buf[start + k]
    hashes[ne] = h
    starts[ne] = used
    lens[ne] = n
    counts[ne] = count
    meta[0] = ne + 1
    meta[1] = used + n
    slots[j] = ne + 1
    if 2 * (ne + 1) > len(slots):  # keep the slots at most half full
        slots = _rehash(len(slots) * 2, hashes, ne + 1)
    return slots, hashes, starts, lens, counts, pool


@njit
def count_rows(data, offsets, row_lo, row_hi, kind, s1, s2, slots, hashes, starts, lens, counts, pool, meta):
    """Add the pieces of rows row_lo..row_hi (data[offsets[r]:offsets[r + 1]]), split by scanner
    `kind` (scan.PAT_*), to the table; returns its arrays (new ones when it grew)."""
    bp, s1p, s2p, a0 = scan_pointers(data, s1, s2)
    for r in range(row_lo, row_hi):
        pos = np.int64(offsets[r])
        end = np.int64(offsets[r + 1])
        while pos < end:
            stop = call_scanner(kind, bp, pos, end, s1p, s2p, a0)
            n = stop - pos
            h = _hash_bytes(data, pos, n)
            slots, hashes, starts, lens, counts, pool = _add_piece(
                data, pos, n, np.int64(1), h, slots, hashes, starts, lens, counts, pool, meta)
            pos = stop
    return slots, hashes, starts, lens, counts, pool


@njit
def add_pieces(buf, piece_offsets, piece_counts, slots, hashes, starts, lens, counts, pool, meta):
    """Add piece i = buf[piece_offsets[i]:piece_offsets[i + 1]] seen piece_counts[i] times (another
    table's entries, or pieces split outside the kernels)."""
    for i in range(len(piece_counts)):
        s = np.int64(piece_offsets[i])
        n = np.int64(piece_offsets[i + 1]) - s
        h = _hash_bytes(buf, s, n)
        slots, hashes, starts, lens, counts, pool = _add_piece(
            buf, s, n, np.int64(piece_counts[i]), h, slots, hashes, starts, lens, counts, pool, meta)
    return slots, hashes, starts, lens, counts, pool


@njit
def table_pieces(starts, lens, pool, n):
    """The first n entries' bytes packed: (bytes, offsets)."""
    offs = np.zeros(n + 1, np.int64)
    for e in range(n):
        offs[e + 1] = offs[e] + lens[e]
    out = np.empty(offs[n], np.uint8)
    for e in range(n):
        s = starts[e]
        o = offs[e]
        for k in range(lens[e]):
            out[o + k] = pool[s + k]
    return out, offs


# ------------------------------------------------------------------ int64 -> int64 hash map (pair counts)
@njit(inline="always")
def _mix(k):
    x = np.uint64(k)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    return x


@njit
def _map_find(keys, used, key):
    """Slot of `key` (used[slot] true), or the empty slot where it would go."""
    mask = np.uint64(len(keys) - 1)
    j = _mix(key) & mask
    while used[j] and keys[j] != key:
        j = (j + np.uint64(1)) & mask
    return np.int64(j)


@njit
def _map_grow(keys, vals, used, ids):
    cap = len(keys) * 2
    k2 = np.zeros(cap, np.int64)
    v2 = np.zeros(cap, np.int64)
    u2 = np.zeros(cap, np.bool_)
    i2 = np.zeros(cap, np.int64)
    for j in range(len(keys)):
        if used[j]:
            t = _map_find(k2, u2, keys[j])
            k2[t] = keys[j]
            v2[t] = vals[j]
            i2[t] = ids[j]
            u2[t] = True
    return k2, v2, u2, i2


# ------------------------------------------------------------------ the queue
@njit(inline="always")
def _before(hc, hk, hs, i, j):
    """Entry i pops before entry j: a larger count, then the smaller pair, then the older entry."""
    if hc[i] != hc[j]:
        return hc[i] > hc[j]
    if hk[i] != hk[j]:
        return hk[i] < hk[j]
    return hs[i] < hs[j]


@njit(inline="always")
def _swap(hc, hk, hs, hp, hl, i, j):
    hc[i], hc[j] = hc[j], hc[i]
    hk[i], hk[j] = hk[j], hk[i]
    hs[i], hs[j] = hs[j], hs[i]
    hp[i], hp[j] = hp[j], hp[i]
    hl[i], hl[j] = hl[j], hl[i]


@njit
def _sift_up(hc, hk, hs, hp, hl, i):
    while i > 0:
        parent = (i - 1) >> 1
        if _before(hc, hk, hs, i, parent):
            _swap(hc, hk, hs, hp, hl, i, parent)
            i = parent
        else:
            break


@njit
def _sift_down(hc, hk, hs, hp, hl, n):
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        best = left
        if left + 1 < n and _before(hc, hk, hs, left + 1, left):
            best = left + 1
        if _before(hc, hk, hs, best, i):
            _swap(hc, hk, hs, hp, hl, i, best)
            i = best
        else:
            break


@njit
def _grow_i64(a, need):
    if need <= len(a):
        return a
    b = np.zeros(max(need, 2 * len(a)), a.dtype)
    b[:len(a)] = a
    return b


@njit
def _grow_u64(a, need):
    if need <= len(a):
        return a
    b = np.zeros(max(need, 2 * len(a)), np.uint64)
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
def train(sym, w_start, w_len, w_count, tok_pool, tok_start, tok_len, tok_known, n_ids, n_vocab, vocab_size,
          min_frequency, max_length, progress):
    """Hugging Face's merge loop (see the module docstring).

    Words: word w is sym[w_start[w]:w_start[w] + w_len[w]] (initial ids), seen w_count[w] times;
    rewritten in place. Tokens: id t < n_ids has bytes tok_pool[tok_start[t]:...+tok_len[t]]
    (its length counts for `max_length`) and is found by a merge yielding those bytes when
    tok_known[t]. `n_vocab` is the vocabulary's size before merging (Hugging Face's word_to_id), <=
    n_ids. `max_length` <= 0: no limit. `progress[0]` is set to the merges done so far.

    Returns (merge_left, merge_right, merge_new): every merge in order (a pair can repeat), and
    (tok_pool, tok_start, tok_len) with the tokens the merges added."""
    n_words = len(w_start)
    limit = max_length > 0
    # token table: bytes -> id
    tcap = 1
    while tcap < 4 * (vocab_size + n_ids + 16):
        tcap *= 2
    tslots = np.zeros(tcap, np.int64)
    cap_ids = max(vocab_size, n_ids) + 1
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

    # pair counts: key = left << 32 | right; ids[slot] = dense pair number (for grouping)
    pcap = 1 << 10
    total = np.int64(0)
    for w in range(n_words):
        if w_len[w] > 1:
            total += w_len[w] - 1
    while pcap < 2 * total + 16:
        pcap *= 2
    pk = np.zeros(pcap, np.int64)
    pv = np.zeros(pcap, np.int64)
    pu = np.zeros(pcap, np.bool_)
    pid = np.zeros(pcap, np.int64)
    n_pairs = np.int64(0)
    occ_pair = np.empty(total, np.int64)  # dense pair number of each adjacent pair, in word order
    o = 0
    for w in range(n_words):
        s = w_start[w]
        c = w_count[w]
        for i in range(w_len[w] - 1):
            key = (np.int64(sym[s + i]) << _PAIR_SHIFT) | np.int64(sym[s + i + 1])
            j = _map_find(pk, pu, key)
            if not pu[j]:
                pu[j] = True
                pk[j] = key
                pid[j] = n_pairs
                n_pairs += 1
            pv[j] += c
            occ_pair[o] = pid[j]
            o += 1
    # where_to_update: the words of each pair, ascending and distinct, as one slice per pair
    first = np.zeros(n_pairs + 1, np.int64)
    o = 0
    for w in range(n_words):
        for i in range(w_len[w] - 1):
            first[occ_pair[o] + 1] += 1
            o += 1
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
    # heap: count, pair key, age, pos start, pos length
    hcap = max(n_pairs * 2, 1024)
    hc = np.zeros(hcap, np.uint64)
    hk = np.zeros(hcap, np.int64)
    hs = np.zeros(hcap, np.int64)
    hp = np.zeros(hcap, np.int64)
    hl = np.zeros(hcap, np.int64)
    hn = np.int64(0)
    age = np.int64(0)
    pair_key = np.zeros(n_pairs, np.int64)
    pair_count = np.zeros(n_pairs, np.int64)
    for j in range(pcap):
        if pu[j]:
            pair_key[pid[j]] = pk[j]
            pair_count[pid[j]] = pv[j]
    order = np.argsort(pair_key)  # push in pair order: ages then never depend on the word order
    for q in range(n_pairs):
        p = order[q]
        if pair_count[p] > 0:
            hc[hn] = np.uint64(pair_count[p])
            hk[hn] = pair_key[p]
            hs[hn] = age
            hp[hn] = first[p]
            hl[hn] = fill[p] - first[p]
            age += 1
            hn += 1
            _sift_up(hc, hk, hs, hp, hl, hn - 1)
    occ_pair = occ_pair[:0]

    m_left = np.zeros(max(vocab_size, 16), np.int64)
    m_right = np.zeros(max(vocab_size, 16), np.int64)
    m_new = np.zeros(max(vocab_size, 16), np.int64)
    n_merges = np.int64(0)
    # the positive changes of one step: (pair key, word)
    ch_key = np.zeros(1024, np.int64)
    ch_word = np.zeros(1024, np.int64)
    scratch = np.zeros(256, np.uint8)
    while n_vocab < vocab_size:
        if hn == 0:
            break
        c = hc[0]
        key = hk[0]
        ps = hp[0]
        pl = hl[0]
        hn -= 1
        if hn > 0:
            _swap(hc, hk, hs, hp, hl, 0, hn)
            _sift_down(hc, hk, hs, hp, hl, hn)
        j = _map_find(pk, pu, key)
        cur = pv[j]
        if c != np.uint64(cur):
            # stale: back with the current count (as Hugging Face's `count as u64`) and the same words
            hc[hn] = np.uint64(cur)
            hk[hn] = key
            hs[hn] = age
            hp[hn] = ps
            hl[hn] = pl
            age += 1
            hn += 1
            _sift_up(hc, hk, hs, hp, hl, hn - 1)
            continue
        if c < np.uint64(1) or np.uint64(min_frequency) > c:
            break
        a = key >> _PAIR_SHIFT
        b = key & _LOW32
        # the new token's bytes
        n = tl[a] + tl[b]
        if n > len(scratch):
            scratch = np.zeros(2 * n, np.uint8)
        for k in range(tl[a]):
            scratch[k] = tp[ts[a] + k]
        for k in range(tl[b]):
            scratch[tl[a] + k] = tp[ts[b] + k]
        h = _hash_bytes(scratch, 0, n)
        new, tj = _tok_find(tslots, tok_hash, ts, tl, tp, h, scratch, n)
        if new < 0:
            new = next_id
            next_id += 1
            if new >= len(tl):
                tok_hash = _grow_u64(tok_hash, new + 1)
                ts = _grow_i64(ts, new + 1)
                tl = _grow_i64(tl, new + 1)
            tp = _grow_u8(tp, pool_used + n)
            for k in range(n):
                tp[pool_used + k] = scratch[k]
            ts[new] = pool_used
            tl[new] = n
            tok_hash[new] = h
            pool_used += n
            tslots[tj] = new + 1
            n_vocab += 1
            if 2 * next_id > len(tslots):
                tslots = np.zeros(len(tslots) * 2, np.int64)
                for t in range(next_id):
                    if t >= n_ids or tok_known[t]:
                        f, jj = _tok_find(tslots, tok_hash, ts, tl, tp, tok_hash[t], tp[ts[t]:], tl[t])
                        if f < 0:
                            tslots[jj] = t + 1
        if n_merges == len(m_left):
            m_left = _grow_i64(m_left, n_merges + 1)
            m_right = _grow_i64(m_right, n_merges + 1)
            m_new = _grow_i64(m_new, n_merges + 1)
        m_left[n_merges] = a
        m_right[n_merges] = b
        m_new[n_merges] = new
        n_merges += 1
        progress[0] = n_merges

        # merge the pair in the entry's words, as Word::merge does
        n_ch = 0
        nlen = tl[new]
        for q in range(ps, ps + pl):
            w = np.int64(pos[q])
            s = w_start[w]
            L = w_len[w]
            cw = w_count[w]
            # keep the pair map at most half full (a word adds at most 2 pairs per occurrence)
            while 2 * (n_pairs + 2 * L) > len(pk):
                pk, pv, pu, pid = _map_grow(pk, pv, pu, pid)
            r = 0
            wr = 0
            hit = False
            while r < L:
                x = sym[s + r]
                if x == a and r + 1 < L and sym[s + r + 1] == b:
                    hit = True
                    if wr > 0:
                        prev = np.int64(sym[s + wr - 1])
                        kk = (prev << _PAIR_SHIFT) | a
                        jj = _map_find(pk, pu, kk)
                        if not pu[jj]:  # a pair never counted (max_length): HF's entry starts at 0 too
                            pu[jj] = True
                            pk[jj] = kk
                            n_pairs += 1
                        pv[jj] -= cw
                        if not limit or tl[prev] + nlen < max_length:
                            kk = (prev << _PAIR_SHIFT) | new
                            jj = _map_find(pk, pu, kk)
                            if not pu[jj]:
                                pu[jj] = True
                                pk[jj] = kk
                                n_pairs += 1
                            pv[jj] += cw
                            if n_ch == len(ch_key):
                                ch_key = _grow_i64(ch_key, n_ch + 1)
                                ch_word = _grow_i64(ch_word, n_ch + 1)
                            ch_key[n_ch] = kk
                            ch_word[n_ch] = w
                            n_ch += 1
                    if r + 2 < L:
                        nxt = np.int64(sym[s + r + 2])
                        kk = (b << _PAIR_SHIFT) | nxt
                        jj = _map_find(pk, pu, kk)
                        if not pu[jj]:  # a pair never counted (max_length): HF's entry starts at 0 too
                            pu[jj] = True
                            pk[jj] = kk
                            n_pairs += 1
                        pv[jj] -= cw
                        if not limit or tl[nxt] + nlen < max_length:
                            kk = (new << _PAIR_SHIFT) | nxt
                            jj = _map_find(pk, pu, kk)
                            if not pu[jj]:
                                pu[jj] = True
                                pk[jj] = kk
                                n_pairs += 1
                            pv[jj] += cw
                            if n_ch == len(ch_key):
                                ch_key = _grow_i64(ch_key, n_ch + 1)
                                ch_word = _grow_i64(ch_word, n_ch + 1)
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
            if hit:
                w_len[w] = wr
        if n_ch > 0:
            # one new entry per pair that rose, with the (distinct) words where it rose
            idx = np.argsort(ch_key[:n_ch], kind="mergesort")
            q = 0
            while q < n_ch:
                kk = ch_key[idx[q]]
                start = pos_used
                last_w = np.int64(-1)
                while q < n_ch and ch_key[idx[q]] == kk:
                    w = ch_word[idx[q]]
                    if w != last_w:
                        pos = _grow_i32(pos, pos_used + 1)
                        pos[pos_used] = w
                        pos_used += 1
                        last_w = w
                    q += 1
                jj = _map_find(pk, pu, kk)
                if pv[jj] > 0:
                    if hn == len(hc):
                        hc = _grow_u64(hc, hn + 1)
                        hk = _grow_i64(hk, hn + 1)
                        hs = _grow_i64(hs, hn + 1)
                        hp = _grow_i64(hp, hn + 1)
                        hl = _grow_i64(hl, hn + 1)
                    hc[hn] = np.uint64(pv[jj])
                    hk[hn] = kk
                    hs[hn] = age
                    hp[hn] = start
                    hl[hn] = pos_used - start
                    age += 1
                    hn += 1
                    _sift_up(hc, hk, hs, hp, hl, hn - 1)
                else:
                    pos_used = start
            if pos_used > 4 * len(w_start) + 4 * total and pos_used > (1 << 20):
                pos, pos_used = _compact(pos, hp, hl, hn)
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
def _compact(pos, hp, hl, hn):
    """The queued entries' word sets copied to a new pool (merged and refused entries' sets are dead)."""
    need = np.int64(0)
    for i in range(hn):
        need += hl[i]
    out = np.zeros(max(2 * need, 1024), np.int32)
    o = np.int64(0)
    for i in range(hn):
        s = hp[i]
        hp[i] = o
        for k in range(hl[i]):
            out[o + k] = pos[s + k]
        o += hl[i]
    return out, o


def warm() -> None:
    """Compile (or load) every kernel here, on a tiny corpus, for the shipped kernel cache."""
    from ..unicode.classes import class_tables
    from .scan import PAT_O200K, load_scanner

    load_scanner(PAT_O200K)
    s1, s2, _ = class_tables()
    data = np.frombuffer(b"hello hello world", np.uint8)
    offsets = np.array([0, 11, 17], np.int64)
    t = new_table()
    arrays = count_rows(data, offsets, 0, 2, PAT_O200K, s1, s2, *t)
    meta = t[6]
    slots, hashes, starts, lens, counts, pool = arrays
    out, offs = table_pieces(starts, lens, pool, meta[0])
    t2 = new_table()
    add_pieces(out, offs, counts[:meta[0]].copy(), *t2)
    sym = np.array([1, 2, 1, 2, 3], np.int32)
    pool0 = np.arange(4, dtype=np.uint8)
    train(sym, np.array([0, 2], np.int64), np.array([2, 3], np.int64), np.array([2, 1], np.int64), pool0,
          np.arange(4, dtype=np.int64), np.ones(4, np.int64), np.ones(4, np.bool_), 4, 4, 8, 0, 0,
          np.zeros(1, np.int64))
