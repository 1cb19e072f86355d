"""Text -> token ids: added-token matching, pretokenization, whole-piece lookup, cache, merge.

`encode_span` encodes one text (buf[start:end]) into out[op:]; the row kernels run it over the rows of
a string column (offsets into one byte buffer). A text of n bytes never yields more than n ids, so a
row's ids always fit in the output region of its own bytes: workers never share output memory and
the result is the same for any thread count.
"""

from __future__ import annotations

import numpy as np
from numba import uint64

from .cache import PAIR_WORDS, cache_get, cache_get_call, cache_put, short_get, short_has, short_put, short_slot
from .handle_layout import HANDLE_LEN, cache_of, handle_in, tables_of
from .hashing import SHORT, SHORT_WORDS, hash_bytes, pack_short_at, short_hash, short_lookup, slot_of, vocab_lookup
from .jit import borrow, njit, prefetch, stack_array, trailing_zeros
from .merge import SIDE_PIECE, merge_piece, merge_side_by_side
from .merge_chars import CHAR_PIECE, merge_by_chars_at
from .scan import PAT_WHOLE, ascii_piece_end, ascii_rules, data_ptr, np_int, scan_pointers
from .scan_blocks import BLOCK, block_piece_ends
from .scanner_slots import call_scanner
from .trees import F_REACH

# Tables.config slots
CFG_PATTERN = 0
CFG_IGNORE_MERGES = 1
CFG_USE_CACHE = 2
CFG_TREES = 3  # tables.TREES_* bits; both set: the character route (merge_chars) is exact
_HIGH = uint64(0x8080808080808080)


SPAN_BATCH = 256  # rows per encode_ordinary_spans call in the row kernels
WINDOW = 256  # pieces scanned ahead of their lookups (see encode_ordinary_spans)
_NOT_LOOKED_UP = -2  # window stage marks
_LOOK_UP = -3
_MERGED = -16  # and below: merged side by side, at index _MERGED - mark of the window's merge scratch
_SIDE_SCRATCH = SIDE_PIECE * WINDOW
_SIDE_STATE = 3 * WINDOW
_LONG_TRIAL = 128  # the character route's long pieces looked up in the piece cache per count of its hits
_LONG_HIT_SHARE = 16


@njit(inline="always")
def _any_high(buf, start, end):
    for i in range(start, end):
        if buf[i] >= 0x80:
            return True
    return False


@njit(inline="always")
def _maybe_unreachable(buf, pos, n, filt):
    """False: buf[pos:pos+n] is not an unreachable token (tables.unreachable_filter); True: it may be."""
    k = ((n & 15) << 16) | (np.int64(buf[pos]) << 8) | np.int64(buf[pos + n - 1])
    return (filt[k >> 6] >> uint64(k & 63)) & uint64(1) != uint64(0)


@njit(inline="always")
def encode_ordinary_span(buf, start, end, T, out, op, cache, w, work):
    """Pretokenize and merge buf[start:end] (no added tokens); returns the new output position.
    Inlined: a kernel of its own would be one more copy of the engine for LLVM to optimize."""
    spans = stack_array(3, np.int64)
    spans[0] = start
    spans[1] = end
    spans[2] = op
    encode_ordinary_spans(buf, spans, 1, handle_in(T, cache, stack_array(HANDLE_LEN, np.int64)), out, w, work)
    return op + spans[2]


@njit
def encode_ordinary_spans(buf, spans, n_spans, h, out, w, work):
    """Encode the texts buf[spans[3k]:spans[3k+1]], k < n_spans (no added tokens), each one's ids at
    out[spans[3k+2]:]; spans[3k+2] becomes how many were written. The tables and worker w's piece
    cache are those of the handle h (handle_layout).

    A handle, not the two named tuples: passing their 32 arrays cost more than encoding a short
    string. Many texts per call, and the piece loop written out here, for the same reason: a
    per-piece call taking `T` would cost more than the piece."""
    T = tables_of(h)
    cache = cache_of(h)
    kind = T.config[CFG_PATTERN]
    words = kind < PAT_WHOLE  # every scanner ends common ASCII pieces alike (scan.ascii_piece_end)
    any_prefix, tail, cased, digits = ascii_rules(kind)
    ignore_merges = T.config[CFG_IGNORE_MERGES] != 0
    use_cache = T.config[CFG_USE_CACHE] != 0
    use_chars = (T.config[CFG_TREES] & 1) != 0
    unreach_filter = borrow(T.unreach_filter)
    # borrowed views (see jit.borrow): the per-piece helper calls then skip reference counting
    buf = borrow(buf)
    out = borrow(out)
    work = borrow(work)
    s1 = borrow(T.stage1)
    s2 = borrow(T.stage2)
    byte_ids = borrow(T.byte_ids)
    byte_pairs = borrow(T.byte_pairs)
    slots = borrow(T.vocab_slots)
    slot_hash = borrow(T.vocab_hash)
    short_vocab = borrow(T.short_vocab)
    tok_bytes = borrow(T.tok_bytes)
    tok_offsets = borrow(T.tok_offsets)
    pair_slots = borrow(T.pair_slots)
    rank_ids = borrow(T.rank_ids)
    c_hashes = borrow(cache.hashes[w])
    c_meta = borrow(cache.meta[w])
    c_keys = borrow(cache.keys[w])
    c_vals = borrow(cache.vals[w])
    c_state = borrow(cache.state[w])
    c_short = borrow(cache.short[w])
    c_pairs = borrow(cache.pairs[w])
    bp, s1p, s2p, a0 = scan_pointers(buf, s1, s2)  # the scanners read raw pointers (see scan.data_ptr)
    nbuf = len(buf)
    # the character route takes its arrays as (pointer, length) pairs (see merge_chars.merge_by_chars_at)
    outp = data_ptr(out)
    cbp = data_ptr(T.char_bpe)
    tfp = data_ptr(T.tok_flags)
    crp = data_ptr(T.crank)
    slp = data_ptr(T.split_l)
    srp = data_ptr(T.split_r)
    top = data_ptr(T.tok_offsets)
    bip = data_ptr(T.byte_ids)
    bpp = data_ptr(T.byte_pairs)
    n_vocab = len(T.tok_flags)
    tok_flags = borrow(T.tok_flags)
    psp = data_ptr(pair_slots)
    rip = data_ptr(rank_ids)
    blp = data_ptr(T.pair_bloom)
    wkp = data_ptr(work)
    cpp = data_ptr(c_pairs)
    cmp = data_ptr(c_pairs[PAIR_WORDS:])
    # the merge table answers in one probe when ids are ranks; a memo in front of it then costs more
    # than it saves
    memo = c_pairs[:0] if len(rank_ids) == 0 else c_pairs[:PAIR_WORDS]
    bloom = borrow(T.pair_bloom)
    sv_mask = (len(short_vocab) // SHORT_WORDS) - 1
    w_end = stack_array(WINDOW, np.int64)
    w_k0 = stack_array(WINDOW, np.uint64)
    w_k1 = stack_array(WINDOW, np.uint64)
    w_h = stack_array(WINDOW, np.uint64)
    w_t = stack_array(WINDOW, np.int64)
    # the window's pieces merged side by side (merge.merge_side_by_side) and its scratch
    m_start = stack_array(WINDOW, np.int64)
    m_len = stack_array(WINDOW, np.int64)
    m_count = stack_array(WINDOW, np.int64)
    m_out = stack_array(_SIDE_SCRATCH, np.uint32)
    m_ids = stack_array(_SIDE_SCRATCH, np.int64)
    m_pv = stack_array(_SIDE_SCRATCH, np.int64)
    m_keys = stack_array(_SIDE_SCRATCH, np.int64)
    m_state = stack_array(_SIDE_STATE, np.int64)
    # the character route's long pieces in the piece cache, while at least one look-up in
    # _LONG_HIT_SHARE of the last _LONG_TRIAL hit: words of Indic scripts recur; runs of Han between
    # punctuation do not, and their look-ups and puts cost more than merging them again (once off,
    # off for the rest of the call)
    long_on = True
    long_looks = 0
    long_hits = 0
    for j in range(n_spans):
        pos = spans[3 * j]
        end = spans[3 * j + 1]
        op0 = spans[3 * j + 2]
        op = op0
        block_ends = uint64(0)  # piece ends of the 64 bytes from block_q still to take (scan_blocks)
        block_q = pos
        next_block = pos if words else end
        block_fails = 0
        while pos < end:
            # A window of pieces goes through four stages: scan (and prefetch the whole-token table
            # slot of each short piece the character route does not take), look up (and prefetch the piece cache slot of each
            # miss), merge the short misses the cache lacks too (side by side), emit. The tables are
            # larger than the CPU caches; this way their misses overlap instead of stalling one
            # after another. (256 pieces: a window of unseen English then has ~8 pieces to merge,
            # enough to hide most of each merge step's probes; 64 left ~2.)
            nw = 0
            q = pos
            while nw < WINDOW and q < end:
                if block_ends == 0 and q >= next_block and q + BLOCK <= nbuf:  # (the text's last bytes too)
                    block_ends, skip = block_piece_ends(bp, q, end, any_prefix, tail, cased, digits)
                    block_q = q
                    if block_ends == 0:  # each failure in a row waits twice as long (text of other scripts)
                        next_block = q + (skip << min(block_fails, 5))
                        block_fails += 1
                    else:
                        block_fails = 0
                if block_ends != 0:  # (the ends of one block may fill more than one window)
                    qe = block_q + np_int(trailing_zeros(block_ends))
                    block_ends &= block_ends - uint64(1)
                else:
                    qe = ascii_piece_end(bp, np_int(q), np_int(end), any_prefix, tail, cased, digits) if words else np_int(-1)
                    if qe < 0:
                        qe = call_scanner(kind, bp, np_int(q), np_int(end), s1p, s2p, a0)
                w_end[nw] = qe
                w_t[nw] = _NOT_LOOKED_UP
                n = qe - q
                if n <= SHORT:  # (n >= 1: a scanner always advances; a byte too: no branch on n == 1)
                    k0, k1 = pack_short_at(buf, bp, q, n)
                    h = short_hash(k0, k1, n)
                    w_k0[nw] = k0
                    w_k1[nw] = k1
                    w_h[nw] = h
                    if not use_chars or ((k0 | k1) & _HIGH) == 0:
                        prefetch(short_vocab, SHORT_WORDS * slot_of(h, sv_mask))
                        w_t[nw] = _LOOK_UP
                    elif use_cache:  # the character route looks in the short piece cache first
                        prefetch(c_short, 8 * short_slot(h))
                nw += 1
                q = qe
            q = pos
            nc = 0  # pieces looked up that are not tokens, at m_start[:nc] (window index)
            for wi in range(nw):
                if w_t[wi] == _LOOK_UP:
                    n = w_end[wi] - q
                    t = short_lookup(w_k0[wi], w_k1[wi], n, w_h[wi], short_vocab)
                    if t >= 0 and not ignore_merges and (tok_flags[t] & F_REACH) == 0:
                        t = -1  # without ignore_merges a token is the piece's BPE only if its bytes merge to it
                    w_t[wi] = t
                    if t < 0 and n > 1:  # (a byte that is no token: the emit loop writes its byte id)
                        if use_cache:
                            prefetch(c_short, 8 * short_slot(w_h[wi]))
                        m_start[nc] = wi
                        nc += 1
                q = w_end[wi]
            # of those, the ones not cached either are merged side by side (their merge-table misses
            # overlap); the emit loop copies their ids
            nm = 0
            for c in range(nc):
                wi = m_start[c]
                q = w_end[wi - 1] if wi > 0 else pos
                n = w_end[wi] - q
                if not use_cache or not short_has(c_short, w_k0[wi], w_k1[wi], n, w_h[wi]):
                    m_start[nm] = q  # (nm <= c: the entry was read)
                    m_len[nm] = n
                    w_t[wi] = _MERGED - nm
                    nm += 1
            if nm > 0:
                merge_side_by_side(buf, m_start, m_len, nm, m_out, m_count, byte_ids, byte_pairs, pair_slots, rank_ids,
                                   m_ids, m_pv, m_keys, m_state)
            for wi in range(nw):
                pe = w_end[wi]
                t = w_t[wi]
                if t >= 0:  # a single byte or a whole token, found above: most pieces of most text
                    out[op] = t
                    op += 1
                    pos = pe
                    continue
                n = pe - pos
                if t <= _MERGED:
                    b0 = SIDE_PIECE * (_MERGED - t)
                    m = m_count[_MERGED - t]
                    for k in range(m):
                        out[op + k] = m_out[b0 + k]
                    if use_cache:
                        short_put(c_short, w_k0[wi], w_k1[wi], n, w_h[wi], out, op, m, byte_ids)
                    op += m
                    pos = pe
                    continue
                if n == 1:
                    out[op] = byte_ids[buf[pos]]
                    op += 1
                    pos = pe
                    continue
                short = n <= SHORT
                if short:
                    k0 = w_k0[wi]
                    k1 = w_k1[wi]
                else:
                    k0 = k1 = uint64(0)
                # pieces of multi-byte characters: merged from whole characters when provably exact,
                # before the whole-token lookup and the long-piece cache (both miss the CPU caches on
                # such text; a piece that is one token comes out as that token, unless the token is
                # unreachable); a short one is looked up in the short piece cache first
                chars = (use_chars and n <= CHAR_PIECE
                         and (((k0 | k1) & _HIGH) != 0 or (not short and _any_high(buf, pos, pe))))
                long_h = uint64(0)  # the hash of a long piece looked up in the piece cache and missed
                if chars:
                    if short and use_cache:
                        # words of alphabetic scripts recur (Cyrillic, Greek, Hangul, Indic words of a
                        # few letters): a hit costs one cache line, merging them again far more
                        m = short_get(c_short, k0, k1, n, w_h[wi], out, op, byte_ids)
                        if m > 0:
                            op += m
                            pos = pe
                            continue
                    elif use_cache and long_on:
                        h = hash_bytes(buf, pos, pe)
                        m = cache_get_call(c_hashes, c_meta, c_keys, c_vals, buf, pos, pe, h, out, op)
                        long_looks += 1
                        long_hits += m > 0
                        if long_looks == _LONG_TRIAL:
                            long_on = long_hits * _LONG_HIT_SHARE >= _LONG_TRIAL
                            long_looks = 0
                            long_hits = 0
                        if m > 0:
                            op += m
                            pos = pe
                            continue
                        long_h = h
                    m = merge_by_chars_at(bp, len(buf), pos, n, outp, len(out), op, cbp, tfp, crp, slp, srp, n_vocab,
                                          psp, len(pair_slots), rip, len(rank_ids), blp, len(T.pair_bloom), wkp,
                                          len(work), cpp, PAIR_WORDS, cmp, len(c_pairs) - PAIR_WORDS,
                                          top, bip, bpp)
                    if m >= 0:
                        if m > 1 and ignore_merges and _maybe_unreachable(buf, pos, n, unreach_filter):
                            if short:
                                t = short_lookup(k0, k1, n, w_h[wi], short_vocab)
                            else:
                                t = vocab_lookup(buf, pos, pe, hash_bytes(buf, pos, pe), slots, slot_hash,
                                                 tok_bytes, tok_offsets)
                            if t >= 0:  # a token that merging its bytes does not give: the whole-token rule
                                out[op] = t
                                m = 1
                        if short and use_cache:
                            short_put(c_short, k0, k1, n, w_h[wi], out, op, m, byte_ids)
                        elif long_h != 0:
                            cache_put(c_hashes, c_meta, c_keys, c_vals, c_state, buf, pos, pe, long_h, out, op, m)
                        op += m
                        pos = pe
                        continue
                    # no proof: the usual route
                # whole-token lookup first (tiktoken's rule); tokens of <= SHORT bytes have a table whose
                # hot part stays in the CPU caches, and their own small piece cache
                if short:
                    h = w_h[wi]
                    t = w_t[wi]
                    if t == _NOT_LOOKED_UP:
                        t = short_lookup(k0, k1, n, h, short_vocab) if ignore_merges else -1
                else:
                    h = hash_bytes(buf, pos, pe) if long_h == 0 else long_h
                    t = vocab_lookup(buf, pos, pe, h, slots, slot_hash, tok_bytes, tok_offsets) if ignore_merges else -1
                if t >= 0:
                    out[op] = t
                    op += 1
                    pos = pe
                    continue
                m = 0
                if use_cache and long_h == 0:  # (else the cache missed it above)
                    if short:
                        m = short_get(c_short, k0, k1, n, h, out, op, byte_ids)
                    else:
                        m = cache_get(c_hashes, c_meta, c_keys, c_vals, buf, pos, pe, h, out, op)
                if m == 0:
                    m = merge_piece(buf, pos, n, out, op, byte_ids, byte_pairs, pair_slots, rank_ids, work, memo, bloom)
                    if use_cache:
                        if not short:
                            cache_put(c_hashes, c_meta, c_keys, c_vals, c_state, buf, pos, pe, h, out, op, m)
                        else:
                            short_put(c_short, k0, k1, n, h, out, op, m, byte_ids)
                op += m
                pos = pe
        spans[3 * j + 2] = op - op0
    return 0


@njit(inline="always")
def added_trie(T):
    """The added-token trie's arrays (root, edge start, edge byte, edge child, token), borrowed
    (jit.borrow). A kernel takes them once, before its loop: reading them from T at every
    candidate byte updated their reference counts (atomically) each time, ~0.3 us per `<` of a text
    with tiktoken's default disallowed_special."""
    return (borrow(T.trie_root), borrow(T.trie_edge_start), borrow(T.trie_edge_byte), borrow(T.trie_edge_child),
            borrow(T.trie_token))


@njit(inline="always")
def match_in_trie(buf, i, end, trie, allowed):
    """Leftmost-longest allowed added token starting at buf[i]: (token index, length, pending), or
    (-1, 0, pending). `pending`: the text ends inside a trie path that continues, so a longer (or a
    first) match may still come (the stream encoder holds such a start back)."""
    root, edge_start, edge_byte, edge_child, token = trie
    node = root[buf[i]]
    best = -1
    best_len = 0
    j = i + 1
    pending = False
    while node >= 0:
        t = token[node]
        if t >= 0 and allowed[t]:
            best = t
            best_len = j - i
        e0 = edge_start[node]
        e1 = edge_start[node + 1]
        if j >= end:
            pending = e1 > e0
            break
        c = buf[j]
        child = -1
        for e in range(e0, e1):
            if edge_byte[e] == c:
                child = edge_child[e]
                break
        node = child
        j += 1
    return best, best_len, pending


@njit
def encode_span(buf, start, end, T, allowed, any_allowed, out, op, cache, w, vals):
    """Encode buf[start:end], matching the added tokens flagged in `allowed` first."""
    if not any_allowed:
        return encode_ordinary_span(buf, start, end, T, out, op, cache, w, vals)
    seg = start
    trie = added_trie(T)
    while seg < end:
        i, t, ln = next_added(buf, seg, end, trie, allowed)
        if t < 0:
            break
        op = encode_ordinary_span(buf, seg, i, T, out, op, cache, w, vals)
        out[op] = T.added_ids[t]
        op += 1
        seg = i + ln
    return encode_ordinary_span(buf, seg, end, T, out, op, cache, w, vals)


@njit(inline="always")
def _skip_no_token_start8(root, buf, i, end):
    """From i, past every group of eight bytes none of which starts an added token (every root entry
    negative: their AND is) while eight remain before end."""
    while i + 8 <= end and (root[buf[i]] & root[buf[i + 1]] & root[buf[i + 2]] & root[buf[i + 3]]
                            & root[buf[i + 4]] & root[buf[i + 5]] & root[buf[i + 6]] & root[buf[i + 7]]) < 0:
        i += 8
    return i


@njit(inline="always")
def next_added(buf, i, end, trie, allowed):
    """The leftmost-longest allowed added token at or after i: (byte pos, token index, length), or
    (end, -1, 0). Eight bytes at a time past bytes that start no token."""
    root = trie[0]
    while i < end:
        i = _skip_no_token_start8(root, buf, i, end)
        if i >= end:
            break
        if root[buf[i]] >= 0:
            t, ln, _ = match_in_trie(buf, i, end, trie, allowed)
            if t >= 0:
                return i, t, ln
        i += 1
    return end, np.int64(-1), np.int64(0)


@njit
def find_added(buf, start, end, T, mask):
    """First (leftmost-longest) occurrence of an added token flagged in `mask`: (byte pos, index) or (-1, -1)."""
    i, t, _ = next_added(buf, start, end, added_trie(T), mask)
    return (i, t) if t >= 0 else (-1, -1)


@njit
def find_added_rows(data, offsets, T, mask):
    """The first row holding an added token flagged in `mask`: (row, token index), or (-1, -1)."""
    for r in range(len(offsets) - 1):
        pos, t = find_added(data, offsets[r], offsets[r + 1], T, mask)
        if pos >= 0:
            return r, t
    return -1, -1


@njit(inline="always")
def encode_packed_spans(buf, spans, rows, ns, starts, s0, r0, h, out, counts, w, vals, fill):
    """encode_ordinary_spans (handle h) of a batch of rows whose span j was given the output offset
    fill + (starts[rows[j]] - s0) (room for its ids: ids <= bytes), then their ids packed at fill in
    span order; counts[rows[j] - r0] = each row's ids. Returns the new fill."""
    if ns == 0:
        return fill
    encode_ordinary_spans(buf, spans, ns, h, out, w, vals)
    fb = fill
    for j in range(ns):
        c = spans[3 * j + 2]
        src = fb + (np.int64(starts[rows[j]]) - s0)
        if src != fill:  # a move to the left: a forward copy is safe
            for x in range(c):
                out[fill + x] = out[src + x]
        counts[rows[j] - r0] = c
        fill += c
    return fill


@njit
def _pack_entries(buf, spans, rows, toks, ns, s0, r0, h, added_ids, out, counts, w, vals, fill):
    """encode_packed_spans for a batch whose entries are text spans (toks[j] < 0) or added tokens
    (toks[j] >= 0: an empty span, its one id added_ids[toks[j]]); counts[rows[j] - r0] grows by each
    entry's ids. Returns the new fill."""
    if ns == 0:
        return fill
    encode_ordinary_spans(buf, spans, ns, h, out, w, vals)
    fb = fill
    for j in range(ns):
        t = toks[j]
        if t >= 0:
            # (fill <= fb + the entry's byte offset: no unpacked id lives there)
            out[fill] = added_ids[t]
            counts[rows[j] - r0] += 1
            fill += 1
            continue
        c = spans[3 * j + 2]
        src = fb + (spans[3 * j] - s0)
        if src != fill:  # a move to the left: a forward copy is safe
            for x in range(c):
                out[fill + x] = out[src + x]
        counts[rows[j] - r0] += c
        fill += c
    return fill


@njit(inline="always")
def _add_entry(a, b, r, k, data, spans, rows, toks, ns, s0, r0, h, added_ids, out, counts, w, vals, fill):
    """Append to encode_chunk's batch the entry of row r: bytes [a, b) of text (k < 0) or added token k
    (a == b); a full batch is encoded and packed. Returns (ns, s0, fill)."""
    if ns == 0:
        s0 = a
    spans[3 * ns] = a
    spans[3 * ns + 1] = b
    spans[3 * ns + 2] = fill + (a - s0)
    rows[ns] = r
    toks[ns] = k
    ns += 1
    if ns == SPAN_BATCH:
        fill = _pack_entries(data, spans, rows, toks, ns, s0, r0, h, added_ids, out, counts, w, vals, fill)
        ns = 0
    return ns, s0, fill


@njit
def encode_chunk(data, offsets, valid, r0, r_lo, r_hi, T, allowed, any_allowed, out, counts, cache, w, vals):
    """Encode rows r_lo..r_hi of a string column on worker w (each worker on a thread of its own).
    Their ids are written one after another to out from 0 (out holds at least the rows' bytes);
    counts[r - r0] gets row r's number of ids (0 for a null row). Returns the number written."""
    fill = np.int64(0)
    # rows in batches: one setup per SPAN_BATCH entries (a span of text between added tokens, or an
    # added token); an entry's ids are written at fill + its byte offset from the batch's first one
    # (ids <= bytes), then packed at fill
    spans = np.empty(3 * SPAN_BATCH, dtype=np.int64)
    rows = np.empty(SPAN_BATCH, dtype=np.int64)
    toks = np.empty(SPAN_BATCH, dtype=np.int64)
    h = handle_in(T, cache, stack_array(HANDLE_LEN, np.int64))
    trie = added_trie(T)
    added_ids = borrow(T.added_ids)
    ns = 0
    s0 = np.int64(0)
    for r in range(r_lo, r_hi):
        counts[r - r0] = 0
        if valid[r] == 0:
            continue
        e = np.int64(offsets[r + 1])
        seg = np.int64(offsets[r])
        while any_allowed and seg < e:
            i, t, ln = next_added(data, seg, e, trie, allowed)
            if t < 0:
                break
            if i > seg:
                ns, s0, fill = _add_entry(seg, i, r, np.int64(-1), data, spans, rows, toks, ns, s0, r0, h, added_ids,
                                          out, counts, w, vals, fill)
            ns, s0, fill = _add_entry(i, i, r, np.int64(t), data, spans, rows, toks, ns, s0, r0, h, added_ids, out,
                                      counts, w, vals, fill)
            seg = i + ln
        if e > seg:
            ns, s0, fill = _add_entry(seg, e, r, np.int64(-1), data, spans, rows, toks, ns, s0, r0, h, added_ids, out,
                                      counts, w, vals, fill)
    return _pack_entries(data, spans, rows, toks, ns, s0, r0, h, added_ids, out, counts, w, vals, fill)


WORK_LEN = 1 << 14  # per-worker merge scratch (int64); merge kernels may use all of it


def new_work(workers: int) -> np.ndarray:
    return np.zeros((workers, WORK_LEN), dtype=np.int64)
