"""Byte-pair merging inside one piece: lowest rank first, leftmost among equal ranks.

The symbols live in `syms[start:start+n]` (token ids) and are merged in place; the functions return
the new count. A pair's value in the merge table is `rank << 32 | merged id`, so comparing packed
values compares ranks. Short pieces use a linear rescan (what tiktoken does); medium ones a binary heap
keyed by (rank, position) with lazy deletion: a popped entry is stale unless the pair now at its
position still has that rank (ranks name one merged token, and a position's pair only grows). Long
pieces (`merge_long`) are merged block by block with a bucket queue over ranks and stitched where that
is provably exact (see the section below); anything it cannot prove goes to the heap.
"""

from __future__ import annotations

import numpy as np

from .hashing import bloom_may_have, pair_home, pair_key, pair_lookup
from .jit import leading_zeros, njit, prefetch, trailing_zeros

NO_PAIR = np.int64(0x7FFFFFFFFFFFFFFF)
SMALL_PIECE = 40  # linear rescan up to here; measured crossover with the heap
LONG_PIECE = 2048  # blocked bucket merge (merge_long) from here; measured crossover with the heap
BLOCK = 4096  # merge_long: nominal block length, in symbols
OVERLAP = 256  # merge_long: a block runs this far past its nominal end; it is cut in the middle of it


@njit(inline="always")
def _pair(a, b, pair_slots, rank_ids):
    v = pair_lookup(a, b, pair_slots, rank_ids)
    if v < 0:
        return NO_PAIR
    return v


@njit
def merge_linear(syms, start, n, pair_slots, rank_ids, vals):
    """In-place merge by rescanning; `vals` is scratch of length >= n. Returns the new count."""
    for i in range(n - 1):
        vals[i] = _pair(syms[start + i], syms[start + i + 1], pair_slots, rank_ids)
    empty = np.empty(0, dtype=np.uint64)
    return _linear_loop(syms, start, n, pair_slots, rank_ids, vals, empty, empty)


@njit(inline="always")
def _pair_memo(a, b, pair_slots, rank_ids, memo, bloom):
    """_pair behind the merge table's Bloom filter (hashing.build_pair_bloom; empty: none), which
    answers most absent pairs from the L2 cache (a third of the probes of a word's merge), and a small
    direct-mapped memo (one worker's; empty: none). The merge table is several MB and most of its
    probes miss the CPU caches, while a text's merges repeat few pairs."""
    if len(bloom) > 0 and not bloom_may_have(a, b, bloom):
        return NO_PAIR
    if len(memo) == 0:
        return _pair(a, b, pair_slots, rank_ids)
    key = (np.uint64(a) << np.uint64(32)) | np.uint64(b)
    s = 2 * (np.int64((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(50)) & ((len(memo) >> 1) - 1))
    if memo[s] == key:
        return np.int64(memo[s + 1])
    v = _pair(a, b, pair_slots, rank_ids)
    memo[s] = key
    memo[s + 1] = np.uint64(v)
    return v


@njit(inline="always")
def _linear_loop(syms, start, n, pair_slots, rank_ids, vals, memo, bloom):
    """merge_linear once vals[i] holds the packed value of pair (i, i + 1)."""
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
            vals[bi - 1] = _pair_memo(syms[start + bi - 1], syms[start + bi], pair_slots, rank_ids, memo, bloom)
        if bi < n - 1:
            vals[bi] = _pair_memo(syms[start + bi], syms[start + bi + 1], pair_slots, rank_ids, memo, bloom)
    return n


@njit
def merge_piece(buf, pos, n, syms, start, byte_ids, byte_pairs, pair_slots, rank_ids, vals, memo, bloom):
    """Merge the bytes buf[pos:pos+n] into tokens at syms[start:]; returns how many. The first pairs
    of a short piece come from `byte_pairs` (a dense 256 x 256 table that stays in the CPU caches), the
    later ones through `memo` (see _pair_memo)."""
    if n <= SMALL_PIECE:
        return merge_short(buf, pos, n, syms, start, byte_ids, byte_pairs, pair_slots, rank_ids, vals, memo, bloom)
    for k in range(n):
        syms[start + k] = byte_ids[buf[pos + k]]
    return merge_symbols(syms, start, n, pair_slots, rank_ids, vals)


@njit(inline="always")
def merge_short(buf, pos, n, syms, start, byte_ids, byte_pairs, pair_slots, rank_ids, vals, memo, bloom):
    """merge_piece for n <= SMALL_PIECE (vals: n int64 of scratch): the linear rescan, its first
    pairs from `byte_pairs`. Inlined, so a caller that needs only short pieces (the character
    route's mending) does not link merge_symbols' long-piece merges."""
    for k in range(n):
        syms[start + k] = byte_ids[buf[pos + k]]
    if n <= 1:
        return n
    for i in range(n - 1):
        vals[i] = byte_pairs[(np.int64(buf[pos + i]) << 8) | np.int64(buf[pos + i + 1])]
    return _linear_loop(syms, start, n, pair_slots, rank_ids, vals, memo, bloom)


@njit(cache=True)
def build_byte_pairs(byte_ids, pair_slots, rank_ids):
    """int64[65536]: the packed pair value of bytes (x, y) at x << 8 | y, NO_PAIR if none."""
    out = np.full(65536, NO_PAIR, dtype=np.int64)
    for x in range(256):
        a = byte_ids[x]
        if a < 0:
            continue
        for y in range(256):
            b = byte_ids[y]
            if b >= 0:
                out[(x << 8) | y] = _pair(a, b, pair_slots, rank_ids)
    return out


@njit
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


@njit
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
def merge_heap(syms, start, n, pair_slots, rank_ids):
    """In-place merge with a lazy-deletion heap; O(n log n). Returns the new count."""
    return merge_heap_in(syms, start, n, pair_slots, rank_ids, np.empty(6 * n + 1, dtype=np.int64))


@njit
def merge_heap_in(syms, start, n, pair_slots, rank_ids, work):
    """merge_heap with its arrays carved from `work` (length >= 6 n + 1): no allocation per piece."""
    nxt = work[:n]
    prv = work[n:2 * n]
    cur = work[2 * n:3 * n]  # packed value of the pair starting at each live position
    heap = work[3 * n:]
    size = 0
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
        cur[i] = NO_PAIR
    for i in range(n - 1):
        v = _pair(syms[start + i], syms[start + i + 1], pair_slots, rank_ids)
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
            w = _pair(syms[start + p], syms[start + pos], pair_slots, rank_ids)
            cur[p] = w
            if w != NO_PAIR:
                size = _heap_push(heap, size, ((w >> 32) << 32) | p)
        if k < n:
            w = _pair(syms[start + pos], syms[start + k], pair_slots, rank_ids)
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


# ---------------------------------------------------------------------------------------------------
# Long pieces: blocks merged alone, rank by rank, stitched where provably exact.
#
# Why blocks: a global heap (or bucket queue) over a megabyte visits positions in rank order, i.e. at
# random, and every merge missed the caches. `merge_long_blocks` merges a block of BLOCK + OVERLAP
# symbols alone in small work arrays that stay in cache, cuts it at a token boundary x about
# OVERLAP / 2 before its end, keeps the tokens before x and starts the next block at x.
#
# Why that is exact (or detected not to be):
# * If the run on a string never merges a pair across a position x, the merges on either side of x are
#   exactly those of that side run alone, interleaved. So the run on [a, e) restricted to [a, x), x a
#   token boundary of its result, IS the run on [a, x); and the whole piece is the concatenation of
#   the blocks' runs if no cut is ever crossed.
# * Every block's merges come in increasing rank order (checked, below). Then the concatenated runs
#   interleave in (rank, position) order, and the pair across a cut - it changes only when the token
#   ending at the cut (left run) or the one starting there (right run) does - is picked iff its key is
#   below that of the step that ends it: a left step of rank d ends it first iff rank c >= d (equal
#   ranks go leftmost first, and the left step is left of it), a right step iff c > d; a cross pair
#   that lasts to the end must have no merge at all. `_stitch_ok` replays the two histories (the rank
#   and new token of each change, recorded by `_run_block`) and applies exactly this rule.
# * A cut that fails (rare: x was a boundary of a run that saw OVERLAP / 2 symbols beyond it) makes
#   the two blocks one, rerun from the original symbols; the union is checked against its left
#   neighbour in turn. No token boundary in the cut zone (tokens longer than the zone) widens it.
#
# Inside a block, ranks are popped from a bucket queue (a list per rank, a two-level bitmap of non-empty
# ranks). tiktoken's order within one rank is leftmost first: each run of adjacent pairs of the current
# rank is merged left to right from its leftmost pair, and separate runs commute, because a merge only
# changes its two neighbour pairs and their new ranks are higher (a merge never makes a pair of its own
# rank). A merge that makes a LOWER rank (possible: the pair table of a tiktoken vocabulary holds every
# split of every token, and a merge list may be in any order) breaks both arguments: the block reports
# it and the whole piece goes to the exact heap, as it does when failed cuts cost more than a few passes.

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_ONE = np.uint64(1)
_NO_RANK = np.int64(1) << 40  # the rank of "no pair" in stitch checks
_HIST = 64  # rank changes recorded for the first/last token of a block
_ZLOG = 2048  # merges recorded in the cut zone
_OK = 0
_NON_MONOTONE = 1
_GROW = 2


@njit
def _bucket_drain(head, lv0, lv1):
    """Empty every rank list (after an abandoned block run)."""
    for w in range(len(lv0)):
        bits = lv0[w]
        while bits != 0:
            r = (w << 6) | np.int64(trailing_zeros(bits))
            head[r] = -1
            bits &= bits - _ONE
        lv0[w] = 0
    lv1[:] = 0


@njit
def _run_block(syms, start, a, e, zone, pair_slots, rank_ids, ws, nxt, prv, cur, head, lv0, lv1, pnext, ppos,
               hist_first, zlog, memo_keys, memo_vals):
    """Merge positions [a, e) of the piece alone (symbols syms[start + a:start + e]). Work arrays are
    indexed from a: ws[i] is the token at position a + i, nxt[i] the next live index, -1 when dead.
    Records the rank changes of the token at a (hist_first) and every merge whose token ends at or
    after index `zone` (zlog rows: rank, end index, token). Returns (n_first, n_zone, status);
    status _GROW means a rank >= len(head) was seen (n_first is then the largest such rank),
    _NON_MONOTONE that a merge made a pair of lower rank. The bucket queue is left empty in every case.

    Rank lists: head[r] -> node, pnext[node] -> next node, ppos[node] = position; entries go stale
    when the pair at their position changes (checked when popped). lv0 has a bit per non-empty rank,
    lv1 a bit per non-zero lv0 word. (Pushes and the bitmap search are written out inline: a call
    taking several arrays costs a few ns of reference counting, per push.)"""
    R = len(head)
    e -= a
    for i in range(e):
        ws[i] = syms[start + a + i]
        nxt[i] = i + 1
        prv[i] = i - 1
    cur[e - 1] = NO_PAIR
    npool = 0
    status = _OK
    big = np.int64(0)
    for i in range(e - 1):
        # initial pairs go through a small direct-mapped memo (a text repeats few symbol pairs)
        x = ws[i]
        y = ws[i + 1]
        key = (np.uint64(x) << np.uint64(32)) | np.uint64(y)
        slot = ((x & 63) << 6) | (y & 63)
        if memo_keys[slot] == key:
            v = memo_vals[slot]
        else:
            v = _pair(x, y, pair_slots, rank_ids)
            memo_keys[slot] = key
            memo_vals[slot] = v
        cur[i] = v
        if v != NO_PAIR:
            r = v >> 32
            if r >= R:
                status = _GROW
                big = max(big, r)
                continue
            h = head[r]
            pnext[npool] = h
            ppos[npool] = i
            head[r] = npool
            npool += 1
            if h < 0:
                lv0[r >> 6] |= _ONE << np.uint64(r & 63)
                lv1[r >> 12] |= _ONE << np.uint64((r >> 6) & 63)
    n_first = 0
    n_zone = 0
    n0 = len(lv0)
    n1 = len(lv1)
    r = 0
    while status == _OK:
        # r = the smallest non-empty rank >= r
        w0 = r >> 6
        if w0 >= n0:
            break
        bits = lv0[w0] & (_ALL << np.uint64(r & 63))
        if bits == 0:
            w0 += 1
            g = w0 >> 6
            if g >= n1:
                break
            bits = lv1[g] & (_ALL << np.uint64(w0 & 63))
            while bits == 0:
                g += 1
                if g >= n1:
                    break
                bits = lv1[g]
            if bits == 0:
                break
            w0 = (g << 6) | np.int64(trailing_zeros(bits))
            bits = lv0[w0]
        r = (w0 << 6) | np.int64(trailing_zeros(bits))
        while head[r] >= 0:
            node = head[r]
            head[r] = pnext[node]
            pos = ppos[node]
            if (cur[pos] >> 32) != r:
                continue  # stale
            while True:  # go to the leftmost pair of this run of adjacent rank-r pairs
                p = prv[pos]
                if p < 0 or (cur[p] >> 32) != r:
                    break
                pos = p
            while True:  # merge the run left to right
                v = cur[pos]
                t = np.int32(v & 0xFFFFFFFF)
                j = nxt[pos]
                k = nxt[j]
                ws[pos] = t
                nxt[pos] = k
                nxt[j] = -1
                cur[j] = NO_PAIR
                if pos == 0:
                    if n_first < _HIST:
                        hist_first[n_first, 0] = r
                        hist_first[n_first, 1] = t
                    n_first += 1
                if k >= zone:
                    if n_zone < _ZLOG:
                        zlog[n_zone, 0] = r
                        zlog[n_zone, 1] = k
                        zlog[n_zone, 2] = t
                    n_zone += 1
                p = prv[pos]
                if p >= 0:
                    w = _pair(ws[p], t, pair_slots, rank_ids)
                    cur[p] = w
                    if w != NO_PAIR:
                        wr = w >> 32
                        if wr <= r:
                            status = _NON_MONOTONE
                            break
                        if wr >= R:
                            status = _GROW
                            big = wr
                            break
                        h = head[wr]
                        pnext[npool] = h
                        ppos[npool] = p
                        head[wr] = npool
                        npool += 1
                        if h < 0:
                            lv0[wr >> 6] |= _ONE << np.uint64(wr & 63)
                            lv1[wr >> 12] |= _ONE << np.uint64((wr >> 6) & 63)
                if k >= e:
                    cur[pos] = NO_PAIR
                    break
                prv[k] = pos
                w = _pair(t, ws[k], pair_slots, rank_ids)
                cur[pos] = w
                if w != NO_PAIR:
                    wr = w >> 32
                    if wr <= r:
                        status = _NON_MONOTONE
                        break
                    if wr >= R:
                        status = _GROW
                        big = wr
                        break
                if (cur[k] >> 32) == r:
                    pos = k  # the run goes on: the pair at pos changes again right away, no push
                    continue
                if w != NO_PAIR:
                    h = head[wr]
                    pnext[npool] = h
                    ppos[npool] = pos
                    head[wr] = npool
                    npool += 1
                    if h < 0:
                        lv0[wr >> 6] |= _ONE << np.uint64(wr & 63)
                        lv1[wr >> 12] |= _ONE << np.uint64((wr >> 6) & 63)
                break
            if status != _OK:
                break
        if status != _OK:
            break
        head[r] = -1
        bits = lv0[w0] & ~(_ONE << np.uint64(r & 63))  # (pushes may have set other bits of this word)
        lv0[w0] = bits
        if bits == 0:
            lv1[w0 >> 6] &= ~(_ONE << np.uint64(w0 & 63))
        r += 1
    if status != _OK:
        _bucket_drain(head, lv0, lv1)
        if status == _GROW:
            return big, 0, status
        return 0, 0, status
    return n_first, n_zone, _OK


@njit
def _stitch_ok(x, y, left, n_left, right, n_right, pair_slots, rank_ids):
    """Whether the pair across a cut never merges: x / y are the symbols on either side of the cut
    before merging, `left` the (rank, token) changes of the token ending at the cut in the left run,
    `right` those of the token starting there in the right run."""
    if n_left > _HIST or n_right > _HIST:
        return False
    i = 0
    j = 0
    while True:
        v = pair_lookup(x, y, pair_slots, rank_ids)
        c = _NO_RANK if v < 0 else v >> 32
        if i < n_left and (j >= n_right or left[i, 0] <= right[j, 0]):
            if c < left[i, 0]:
                return False
            x = left[i, 1]
            i += 1
        elif j < n_right:
            if c <= right[j, 0]:
                return False
            y = right[j, 1]
            j += 1
        else:
            return v < 0


@njit
def _bucket_arrays(R):
    n0 = (R + 63) >> 6
    return np.full(n0 << 6, -1, np.int32), np.zeros(n0, np.uint64), np.zeros((n0 + 63) >> 6, np.uint64)


@njit
def merge_long_blocks(syms, start, n, pair_slots, rank_ids, block, overlap, info):
    """merge_long with explicit block / overlap lengths; info (int64[5]) gets counters: failed stitches,
    blocks committed, rank-table growths, 1 / 2 in info[3] when the piece went to the heap because of
    a lower-rank pair / too many failed stitches, and cut zones widened (no token boundary in them)."""
    block = max(block, 1)
    overlap = max(overlap, 2)
    cap = block + 2 * overlap + 1  # work arrays for one block, reused (grown for merged blocks)
    ws = np.empty(cap, np.int32)
    nxt = np.empty(cap, np.int32)
    prv = np.empty(cap, np.int32)
    cur = np.empty(cap, np.int64)
    pnext = np.empty(3 * cap, np.int32)
    ppos = np.empty(3 * cap, np.int32)
    head, lv0, lv1 = _bucket_arrays(max(64, len(pair_slots) // 4))  # grown when a larger rank shows up
    out = np.empty(n, np.int32)  # committed tokens (syms keeps the input until the end: reruns read it)
    n_out = 0
    n_blocks = n // block + 2
    hist_last = np.empty((n_blocks, _HIST, 2), np.int64)
    n_last = np.empty(n_blocks, np.int64)
    block_start = np.empty(n_blocks, np.int64)
    out_start = np.empty(n_blocks, np.int64)
    hist_first = np.empty((_HIST, 2), np.int64)
    zlog = np.empty((_ZLOG, 3), np.int64)
    memo_keys = np.full(4096, np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
    memo_vals = np.empty(4096, np.int64)
    depth = 0
    work = 0
    pos = 0
    fallback = 0
    while pos < n and fallback == 0:
        a = pos
        m = overlap
        e = a + block + m
        if e + block // 2 > n:
            e = n
        x = n  # the cut
        while True:
            zone = e - m if e < n else n + 1
            if e - a > len(ws):
                cap = 2 * (e - a)
                ws = np.empty(cap, np.int32)
                nxt = np.empty(cap, np.int32)
                prv = np.empty(cap, np.int32)
                cur = np.empty(cap, np.int64)
                pnext = np.empty(3 * cap, np.int32)
                ppos = np.empty(3 * cap, np.int32)
            n_first, n_zone, status = _run_block(syms, start, a, e, zone - a, pair_slots, rank_ids, ws, nxt, prv, cur,
                                                 head, lv0, lv1, pnext, ppos, hist_first, zlog, memo_keys, memo_vals)
            work += e - a
            if status == _GROW:
                R = len(head)
                while R <= n_first:
                    R *= 2
                head, lv0, lv1 = _bucket_arrays(R)
                info[2] += 1
                continue
            if status == _NON_MONOTONE:
                fallback = 1
                break
            if work > 4 * n + 4 * block:
                fallback = 2
                break
            if depth > 0 and not _stitch_ok(syms[start + a - 1], syms[start + a], hist_last[depth - 1],
                                             n_last[depth - 1], hist_first, n_first, pair_slots, rank_ids):
                info[0] += 1
                depth -= 1
                a = block_start[depth]  # rerun the two blocks as one
                n_out = out_start[depth]
                continue
            if e == n:
                x = n
                break
            x = e - m // 2
            while nxt[x - a] < 0:
                x -= 1
            if x >= zone:
                break
            m *= 2  # no token boundary in the zone (very long tokens): look further
            info[4] += 1
            e += m // 2
            if e + block // 2 > n:
                e = n
        if fallback != 0:
            break
        # commit [a, x): its tokens, and the rank changes of its last token (the merges ending at x)
        out_start[depth] = n_out
        i = 0
        while i < x - a:
            out[n_out] = ws[i]
            n_out += 1
            i = nxt[i]
        if e == n:
            break
        nl = 0
        if n_zone > _ZLOG:
            nl = _HIST + 1
        else:
            for q in range(n_zone):
                if zlog[q, 1] == x - a:
                    if nl < _HIST:
                        hist_last[depth, nl, 0] = zlog[q, 0]
                        hist_last[depth, nl, 1] = zlog[q, 2]
                    nl += 1
        n_last[depth] = nl
        block_start[depth] = a
        depth += 1
        info[1] += 1
        pos = x
    if fallback != 0:
        info[3] = fallback
        return merge_heap(syms, start, n, pair_slots, rank_ids)
    info[1] += 1
    for i in range(n_out):
        syms[start + i] = out[i]
    return n_out


@njit
def merge_long(syms, start, n, pair_slots, rank_ids):
    """In-place merge of a long piece (see above); exact. Returns the new count."""
    info = np.zeros(5, np.int64)
    return merge_long_blocks(syms, start, n, pair_slots, rank_ids, BLOCK, OVERLAP, info)


@njit
def merge_symbols(syms, start, n, pair_slots, rank_ids, vals):
    """Merge syms[start:start+n] in place; returns the number of tokens left."""
    if n <= 1:
        return n
    if n <= SMALL_PIECE:
        return merge_linear(syms, start, n, pair_slots, rank_ids, vals)
    if n < LONG_PIECE:
        if 6 * n + 1 <= len(vals):
            return merge_heap_in(syms, start, n, pair_slots, rank_ids, vals)
        return merge_heap(syms, start, n, pair_slots, rank_ids)
    return merge_long(syms, start, n, pair_slots, rank_ids)


# ----------------------------------------------------------------------------------------------
# Short pieces merged side by side. A piece's merge is a chain of merge-table probes, each waiting
# for the one before it, and the table is larger than the CPU caches: merged one after another, a
# window's pieces stall on every probe in turn. Here each piece takes one merge step in turn, and the
# probes its step needs next are prefetched, so they arrive while the other pieces step.
# ----------------------------------------------------------------------------------------------

SIDE_PIECE = 16  # merge_side_by_side: pieces of 2 to this many bytes (a bit of a mask per byte)


@njit(inline="always")
def _step_key(v, i):
    """Order of the pair at position i with packed value v: lowest rank first, then leftmost."""
    return NO_PAIR if v == NO_PAIR else ((v >> 32) << 4) | i


@njit(inline="always")
def _live_after(live, x):
    """The first position after x whose bit is set in `live`, or -1."""
    rest = live >> (x + 1)
    if rest == 0:
        return np.int64(-1)
    return x + 1 + np.int64(trailing_zeros(np.uint64(rest)))


@njit(inline="always")
def _prefetch_pair(a, b, pair_slots):
    prefetch(pair_slots, pair_home(pair_key(a, b), len(pair_slots) - 1))


@njit
def merge_side_by_side(buf, starts, lens, k, out, counts, byte_ids, byte_pairs, pair_slots, rank_ids, ids, pv,
                       keys, state):
    """Merge the pieces buf[starts[j]:starts[j] + lens[j]], j < k (2 <= lens[j] <= SIDE_PIECE), as
    merge_piece does; piece j's ids go to out[SIDE_PIECE * j:], their number to counts[j].

    Scratch: ids, pv, keys int64[SIDE_PIECE * k] (per piece: the symbol at each byte position, the
    packed value of the pair starting there, its _step_key), state int64[3 * k] (the mask of live
    positions, 0 once done, and the two positions whose pair was prefetched and is read next)."""
    for j in range(k):
        b0 = SIDE_PIECE * j
        n = lens[j]
        pos = starts[j]
        for i in range(SIDE_PIECE):
            keys[b0 + i] = NO_PAIR
        for i in range(n):
            ids[b0 + i] = byte_ids[buf[pos + i]]
        for i in range(n - 1):
            v = byte_pairs[(np.int64(buf[pos + i]) << 8) | np.int64(buf[pos + i + 1])]
            pv[b0 + i] = v
            keys[b0 + i] = _step_key(v, i)
        state[3 * j] = (1 << n) - 1
        state[3 * j + 1] = -1
        state[3 * j + 2] = -1
    active = k
    while active > 0:
        for j in range(k):
            live = state[3 * j]
            if live == 0:
                continue
            b0 = SIDE_PIECE * j
            for s in range(3 * j + 1, 3 * j + 3):  # the pairs prefetched at this piece's last step
                x = state[s]
                if x >= 0:
                    v = _pair(ids[b0 + x], ids[b0 + _live_after(live, x)], pair_slots, rank_ids)
                    pv[b0 + x] = v
                    keys[b0 + x] = _step_key(v, x)
                    state[s] = -1
            best = keys[b0]
            for i in range(1, SIDE_PIECE):
                best = min(best, keys[b0 + i])
            if best == NO_PAIR:  # no pair left: the piece is done
                m = 0
                while live != 0:
                    out[b0 + m] = ids[b0 + np.int64(trailing_zeros(np.uint64(live)))]
                    m += 1
                    live &= live - 1
                counts[j] = m
                state[3 * j] = 0
                active -= 1
                continue
            p = best & 15
            q = _live_after(live, p)
            ids[b0 + p] = pv[b0 + p] & 0xFFFFFFFF
            live ^= 1 << q
            state[3 * j] = live
            keys[b0 + q] = NO_PAIR
            keys[b0 + p] = NO_PAIR
            below = live & ((1 << p) - 1)
            if below != 0:
                left = 63 - np.int64(leading_zeros(np.uint64(below)))
                _prefetch_pair(ids[b0 + left], ids[b0 + p], pair_slots)
                keys[b0 + left] = NO_PAIR
                state[3 * j + 1] = left
            r = _live_after(live, p)
            if r >= 0:
                _prefetch_pair(ids[b0 + p], ids[b0 + r], pair_slots)
                state[3 * j + 2] = p
    return k
