"""SentencePiece kernels: normalizer, BPE and unigram encoders over UTF-8 bytes.

Each follows the C++ it reproduces (sentencepiece v0.2.0-64): `Normalizer::Normalize` and
`NormalizePrefix` (normalizer.cc), `bpe::Model::SampleEncode` with alpha 0 (bpe_model.cc),
`unigram::Model::EncodeOptimized` (unigram_model.cc), then the unknown-piece handling of
`PopulateSentencePieceText` (sentencepiece_processor.cc). The tables come from
`tltok_jit.kinds.sentencepiece`, which validates everything indexed here; lookups into the
precompiled charsmap's double array are bounds-checked because that array comes from the file.

Hash tables are open addressing over int64 keys (-1 = empty slot) with a power-of-two size.
"""

from __future__ import annotations

import numpy as np

from .jit import borrow, njit

EMPTY = -1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
SPACE = 0x20
# U+2581 in UTF-8
WS0, WS1, WS2 = 0xE2, 0x96, 0x81


# ---------------------------------------------------------------------------------------- hashing
@njit(inline="always")
def _slot(key, mask):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask


@njit(cache=True)
def hash_build(keys_in, capacity):
    """Slots for `keys_in` (distinct, >= 0): returns (keys, index) where index[s] is the position in
    keys_in of the key at slot s."""
    keys = np.full(capacity, EMPTY, np.int64)
    index = np.full(capacity, -1, np.int64)
    mask = capacity - 1
    for i in range(keys_in.shape[0]):
        k = keys_in[i]
        s = _slot(k, mask)
        while keys[s] != EMPTY and keys[s] != k:
            s = (s + 1) & mask
        keys[s] = k
        index[s] = i
    return keys, index


@njit(inline="always")
def hash_find(keys, index, key):
    """index of `key`, or -1."""
    mask = keys.shape[0] - 1
    s = _slot(key, mask)
    while True:
        k = keys[s]
        if k == key:
            return index[s]
        if k == EMPTY:
            return -1
        s = (s + 1) & mask


# ---------------------------------------------------------------------------------------- UTF-8
@njit(inline="always")
def one_char_len(b):
    """string_util::OneCharLen: the length a lead byte announces (1 for continuation bytes)."""
    hi = b >> 4
    if hi < 12:
        return 1
    if hi < 14:
        return 2
    if hi == 14:
        return 3
    return 4


@njit(inline="always")
def _trail(b):
    return (b & 0xC0) == 0x80


@njit(inline="always")
def _valid_cp(cp):
    return cp < 0xD800 or (0xE000 <= cp <= 0x10FFFF)


@njit(inline="always")
def utf8_cp(buf, pos, end):
    """The code point of the character at pos as string_util::DecodeUTF8 decodes it, or -1 when
    invalid (DecodeUTF8 then consumes one byte; a valid one consumes `one_char_len`). One return
    value: helpers returning (cp, length) tuples ran ~15x slower in the per-character loops."""
    b0 = np.int64(buf[pos])
    if b0 < 0x80:
        return b0
    n = end - pos
    cp = np.int64(-1)
    if (b0 & 0xE0) == 0xC0:
        if n >= 2:
            b1 = np.int64(buf[pos + 1])
            c = ((b0 & 0x1F) << 6) | (b1 & 0x3F)
            if _trail(b1) and c >= 0x80:
                cp = c
    elif (b0 & 0xF0) == 0xE0:
        if n >= 3:
            b1 = np.int64(buf[pos + 1])
            b2 = np.int64(buf[pos + 2])
            c = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
            if _trail(b1) and _trail(b2) and c >= 0x800 and _valid_cp(c):
                cp = c
    elif (b0 & 0xF8) == 0xF0:
        if n >= 4:
            b1 = np.int64(buf[pos + 1])
            b2 = np.int64(buf[pos + 2])
            b3 = np.int64(buf[pos + 3])
            c = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
            if _trail(b1) and _trail(b2) and _trail(b3) and c >= 0x10000 and _valid_cp(c):
                cp = c
    return cp


# ---------------------------------------------------------------------------------------- byte tries
# A trie over bytes: node 0 is the root; the child of `node` by byte b is found under the key
# node * 256 + b in (keys, index) and is index + 1; value[node] is the piece id ending there or -1.

@njit(inline="always")
def trie_child(tkeys, tindex, node, b):
    i = hash_find(tkeys, tindex, np.int64(node) * 256 + b)
    return i + 1 if i >= 0 else -1


@njit(inline="always")
def trie_longest(tkeys, tindex, tvalue, buf, pos, end):
    """Length of the longest key of the trie that prefixes buf[pos:end] (0 if none)."""
    node = 0
    best = 0
    p = pos
    while p < end:
        node = trie_child(tkeys, tindex, node, buf[p])
        if node < 0:
            break
        p += 1
        if tvalue[node] >= 0:
            best = p - pos
    return best


# ---------------------------------------------------------------------------------------- normalizer
@njit(inline="always")
def _darts_longest(units, buf, pos, end):
    """Darts-clone commonPrefixSearch keeping the longest match: (length, value), (0, 0) if none."""
    n_units = units.shape[0]
    best_len = 0
    best_val = 0
    if n_units == 0:
        return best_len, best_val
    u = np.int64(units[0])
    node = (u >> 10) << ((u & (1 << 9)) >> 6)
    i = pos
    while i < end:
        c = np.int64(buf[i])
        node ^= c
        if node < 0 or node >= n_units:
            break
        u = np.int64(units[node])
        if (u & (0x80000000 | 0xFF)) != c:
            break
        node ^= (u >> 10) << ((u & (1 << 9)) >> 6)
        if node < 0 or node >= n_units:
            break
        i += 1
        if (u >> 8) & 1:
            best_len = i - pos
            best_val = np.int64(units[node]) & 0x7FFFFFFF
    return best_len, best_val


@njit(inline="always")
def _prefix(buf, pos, end, units, repl, ud_keys, ud_index, ud_value):
    """NormalizePrefix: (kind, start, length, consumed); kind 0 = buf[start:start+length],
    1 = repl[start:start+length], 2 = U+FFFD."""
    if ud_value.shape[0] > 1:
        m = trie_longest(ud_keys, ud_index, ud_value, buf, pos, end)
        if m > 0:
            return 0, pos, m, m
    length, value = _darts_longest(units, buf, pos, end)
    if length > 0:
        stop = value
        n = repl.shape[0]
        while stop < n and repl[stop] != 0:
            stop += 1
        return 1, value, stop - value, length
    if utf8_cp(buf, pos, end) < 0:
        return 2, 0, 3, 1
    m = one_char_len(buf[pos])
    return 0, pos, m, m


@njit(inline="always")
def _put_ws(out, n, escape):
    """Append the whitespace symbol (U+2581, or ' ' without escaping); -1 when out is full."""
    if escape:
        if n + 3 > out.shape[0]:
            return -1
        out[n] = WS0
        out[n + 1] = WS1
        out[n + 2] = WS2
        return n + 3
    if n + 1 > out.shape[0]:
        return -1
    out[n] = SPACE
    return n + 1


@njit(cache=True)
def normalize(buf, out, units, repl, ud_keys, ud_index, ud_value, add_dummy_prefix, remove_extra, escape):
    """Normalizer::Normalize of the UTF-8 bytes `buf` (treat_whitespace_as_suffix false) into `out`:
    returns the length written, or -1 if `out` is too small (the caller retries with more)."""
    # Borrowed views: every helper call would otherwise update each array's reference count.
    buf = borrow(buf)
    out = borrow(out)
    units = borrow(units)
    repl = borrow(repl)
    ud_keys = borrow(ud_keys)
    ud_index = borrow(ud_index)
    ud_value = borrow(ud_value)
    end = buf.shape[0]
    cap = out.shape[0]
    n = 0
    pos = 0
    if remove_extra:
        while pos < end:
            kind, start, length, consumed = _prefix(buf, pos, end, units, repl, ud_keys, ud_index, ud_value)
            if length != 1:
                break
            c = buf[start] if kind == 0 else (repl[start] if kind == 1 else 0)
            if c != SPACE:
                break
            pos += consumed
    if pos >= end:
        return 0
    if add_dummy_prefix:
        n = _put_ws(out, n, escape)
        if n < 0:
            return -1
    is_prev_space = remove_extra
    identity = units.shape[0] == 0 and ud_value.shape[0] <= 1
    while pos < end:
        b = buf[pos]
        if identity and b < 0x80:
            # An ASCII character without rules or user-defined symbols is its own normalization
            # (the general path below, specialised; calling into it per byte costs ~15x).
            if not (is_prev_space and b == SPACE):
                if escape and b == SPACE:
                    if n + 3 > cap:
                        return -1
                    out[n] = WS0
                    out[n + 1] = WS1
                    out[n + 2] = WS2
                    n += 3
                else:
                    if n >= cap:
                        return -1
                    out[n] = b
                    n += 1
                is_prev_space = remove_extra and b == SPACE
            pos += 1
            continue
        if identity and b >= 0xC0:
            m = one_char_len(b)
            if pos + m <= end and utf8_cp(buf, pos, end) >= 0:  # a valid character: copied
                if n + m > cap:
                    return -1
                for j in range(m):
                    out[n + j] = buf[pos + j]
                n += m
                is_prev_space = False
                pos += m
                continue
        kind, start, length, consumed = _prefix(buf, pos, end, units, repl, ud_keys, ud_index, ud_value)
        k = 0
        if is_prev_space:
            while k < length:
                c = buf[start + k] if kind == 0 else (repl[start + k] if kind == 1 else 0)
                if c != SPACE:
                    break
                k += 1
        if k < length:
            last = 0
            for j in range(k, length):
                if kind == 0:
                    c = buf[start + j]
                elif kind == 1:
                    c = repl[start + j]
                else:
                    c = (0xEF, 0xBF, 0xBD)[j]
                if escape and c == SPACE:
                    n = _put_ws(out, n, escape)
                    if n < 0:
                        return -1
                else:
                    if n >= cap:
                        return -1
                    out[n] = c
                    n += 1
                last = c
            is_prev_space = last == SPACE
        pos += consumed
        if not remove_extra:
            is_prev_space = False
    if remove_extra:
        if escape:
            while n >= 3 and out[n - 3] == WS0 and out[n - 2] == WS1 and out[n - 1] == WS2:
                n -= 3
        else:
            while n >= 1 and out[n - 1] == SPACE:
                n -= 1
    return n


# ---------------------------------------------------------------------------------------- output
@njit(inline="always")
def _emit_piece(out, n, pid, unk_id, byte_fallback, byte_ids, buf, start, stop, prev_unk):
    """PopulateSentencePieceText for one piece: an unknown piece becomes its bytes' ids with byte
    fallback, else joins a preceding unknown piece. Returns the new length; `out` has room for
    one id per byte of the text (no piece is empty)."""
    if pid == unk_id:
        if byte_fallback:
            for j in range(start, stop):
                out[n] = byte_ids[buf[j]]
                n += 1
            return n
        if prev_unk:
            return n
    out[n] = pid
    return n + 1


# ---------------------------------------------------------------------------------------- BPE
@njit(inline="always")
def _heap_better(hs, hl, a, b):
    """Entry a pops before entry b: higher score, then smaller left index."""
    return hs[a] > hs[b] or (hs[a] == hs[b] and hl[a] < hl[b])


@njit(inline="always")
def _heap_push(heap, hn, hs, hl, e):
    i = hn
    heap[i] = e
    while i > 0:
        parent = (i - 1) >> 1
        if _heap_better(hs, hl, heap[i], heap[parent]):
            t = heap[i]
            heap[i] = heap[parent]
            heap[parent] = t
            i = parent
        else:
            break
    return hn + 1


@njit(inline="always")
def _heap_pop(heap, hn, hs, hl):
    top = heap[0]
    hn -= 1
    heap[0] = heap[hn]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= hn:
            break
        best = left
        right = left + 1
        if right < hn and _heap_better(hs, hl, heap[right], heap[left]):
            best = right
        if _heap_better(hs, hl, heap[best], heap[i]):
            t = heap[i]
            heap[i] = heap[best]
            heap[best] = t
            i = best
        else:
            break
    return top, hn


@njit(inline="always")
def _maybe_pair(left, right, sym, frozen, pkeys, pindex, pmerged, pscore, hs, hl, hr, hm, ha, hb, heap, hn, ne):
    if left < 0 or right < 0 or frozen[left] or frozen[right]:
        return hn, ne
    a = sym[left]
    b = sym[right]
    if a < 0 or b < 0:
        return hn, ne
    j = hash_find(pkeys, pindex, (np.int64(a) << 32) | b)
    if j < 0:
        return hn, ne
    hs[ne] = pscore[j]
    hl[ne] = left
    hr[ne] = right
    hm[ne] = pmerged[j]
    ha[ne] = a  # the symbols as they were: a pair is stale once either has grown
    hb[ne] = b
    hn = _heap_push(heap, hn, hs, hl, ne)
    return hn, ne + 1


@njit(cache=True)
def bpe_encode(buf, out, wi, wb, hs, hw, ck, cbytes, cids, cfill, char_dense, char_keys, char_index, char_sym, char_flags, sym_out, pkeys,
               pindex, pmerged, pscore, bkeys, bindex, ud_keys, ud_index, ud_value, unk_id, byte_fallback, byte_ids,
               valid_utf8):
    """bpe::Model::SampleEncode (alpha 0) of normalized UTF-8 `buf`, then the unknown handling;
    writes the ids to `out` (one slot per byte) and returns their number, or -1 when a segment
    is longer than the work space holds (the caller retries with a larger `bpe_workspace`).

    The text is cut where no merge can span: between two characters whose pair occurs in no
    mergeable piece (`bkeys`; `char_flags` bit 0 / bit 1: the character starts / ends such a pair at
    all), and around user-defined symbols. Characters are found in `char_dense` (code points below
    its size, -1 = absent) or the (char_keys, char_index) hash. Each segment is merged alone; a
    segment's merges never interact with another's, so the result equals merging the whole text.
    Work space (from `bpe_workspace(m)`, m the longest segment in characters): wi int64 (4, m + 1),
    wb bool (2, m + 1), hs float32 (3m + 16), hw int64 (6, 3m + 16), and the segment cache
    (ck, cbytes, cids, cfill) that `bpe_cache` makes: a merged segment of a few bytes is looked up
    there before merging (words repeat), and added after (unless it holds an unknown piece, whose id
    depends on the piece before). `valid_utf8`: `buf` is known to be valid UTF-8 (a normalizer
    without a charsmap only copies the text's own characters), so code points are read unchecked.
    Continuation bytes in the middle of such text cannot occur."""
    buf = borrow(buf)
    out = borrow(out)
    starts = borrow(wi[0])
    sym = borrow(wi[1])
    prv = borrow(wi[2])
    nxt = borrow(wi[3])
    frozen = borrow(wb[0])
    alive = borrow(wb[1])
    hs = borrow(hs)
    hl = borrow(hw[0])
    hr = borrow(hw[1])
    hm = borrow(hw[2])
    ha = borrow(hw[3])
    hb = borrow(hw[4])
    heap = borrow(hw[5])
    ck = borrow(ck)
    cbytes = borrow(cbytes)
    cids = borrow(cids)
    cfill = borrow(cfill)
    char_dense = borrow(char_dense)
    char_keys = borrow(char_keys)
    char_index = borrow(char_index)
    char_sym = borrow(char_sym)
    char_flags = borrow(char_flags)
    sym_out = borrow(sym_out)
    pkeys = borrow(pkeys)
    pindex = borrow(pindex)
    pmerged = borrow(pmerged)
    pscore = borrow(pscore)
    bkeys = borrow(bkeys)
    bindex = borrow(bindex)
    ud_keys = borrow(ud_keys)
    ud_index = borrow(ud_index)
    ud_value = borrow(ud_value)
    byte_ids = borrow(byte_ids)
    end = buf.shape[0]
    seg_cap = wi.shape[1] - 1
    n_out = 0
    prev_unk = False
    pos = 0
    prev_cp = -1
    prev_k = -1
    prev_flags = 0
    m = 0
    is_frozen = False
    length = 0
    cp = np.int64(-1)
    k = np.int64(-1)
    flags = np.int64(0)
    while True:
        # Decode the character at pos once; it either extends the segment or starts the next.
        at_end = pos >= end
        boundary = at_end
        if not at_end:
            is_frozen = False
            length = 0
            if ud_value.shape[0] > 1:
                length = trie_longest(ud_keys, ud_index, ud_value, buf, pos, end)
                is_frozen = length > 0
            cp = -1
            k = -1
            if not is_frozen:
                b = buf[pos]
                if b < 0x80:
                    length = 1
                    cp = np.int64(b)
                elif valid_utf8:  # (the caller knows) every lead byte has its continuation bytes
                    length = one_char_len(b)
                    if b < 0xE0:
                        cp = ((np.int64(b) & 0x1F) << 6) | (np.int64(buf[pos + 1]) & 0x3F)
                    elif b < 0xF0:
                        cp = (((np.int64(b) & 0x0F) << 12) | ((np.int64(buf[pos + 1]) & 0x3F) << 6)
                              | (np.int64(buf[pos + 2]) & 0x3F))
                    else:
                        cp = (((np.int64(b) & 0x07) << 18) | ((np.int64(buf[pos + 1]) & 0x3F) << 12)
                              | ((np.int64(buf[pos + 2]) & 0x3F) << 6) | (np.int64(buf[pos + 3]) & 0x3F))
                else:
                    length = min(one_char_len(b), end - pos)
                    cp = utf8_cp(buf, pos, end)
                if cp >= 0:
                    k = np.int64(char_dense[cp]) if cp < char_dense.shape[0] else hash_find(char_keys, char_index, cp)
            flags = char_flags[k] if k >= 0 else 0
            # a boundary unless the two characters occur side by side in some mergeable piece
            boundary = m > 0 and (k < 0 or prev_k < 0 or (prev_flags & 1) == 0 or (flags & 2) == 0
                                  or hash_find(bkeys, bindex, (prev_cp << 21) | cp) < 0)
        if boundary and m > 0:
            starts[m] = pos
            seg0 = starts[0]
            seg_len = pos - seg0
            slot = -1
            h = np.uint64(0)
            if m > 1 and seg_len <= _CACHE_MAX_BYTES:
                h = _fnv(buf, seg0, pos)
                slot = _cache_slot(ck, cbytes, buf, seg0, seg_len, h)
                if ck[slot, 0] != 0:  # a hit: the segment's ids as merged before
                    i0 = ck[slot, 3]
                    for j in range(ck[slot, 4]):
                        out[n_out + j] = cids[i0 + j]
                    n_out += ck[slot, 4]
                    prev_unk = False
                    m = 0
            if m > 0:
                first = n_out
                packed = _merge_emit(m, out, n_out, prev_unk, starts, sym, frozen, prv, nxt, alive, hs, hl, hr,
                                     hm, ha, hb, heap, pkeys, pindex, pmerged, pscore, sym_out, unk_id,
                                     byte_fallback, byte_ids, buf)
                n_out = packed >> 1
                prev_unk = (packed & 1) == 1
                if slot >= 0:
                    _cache_put(ck, cbytes, cids, cfill, slot, h, buf, seg0, seg_len, out, first, n_out, unk_id)
                m = 0
        if at_end:
            break
        if m == 0 and not is_frozen and (k < 0 or flags == 0):
            # a character that occurs in no pair of any piece (or in no piece) is a segment of its
            # own: its id, or its bytes' ids, directly
            s0 = char_sym[k] if k >= 0 else -1
            pid = unk_id if s0 < 0 else sym_out[s0]
            if pid != unk_id:
                out[n_out] = pid
                n_out += 1
                prev_unk = False
            else:
                n_out = _emit_piece(out, n_out, pid, unk_id, byte_fallback, byte_ids, buf, pos, pos + length,
                                    prev_unk)
                prev_unk = True
            prev_cp = cp
            prev_k = k
            prev_flags = flags
            pos += length
            continue
        if m >= seg_cap:
            return -1
        starts[m] = pos
        frozen[m] = is_frozen
        if is_frozen:
            sym[m] = ud_value[_ud_node(ud_keys, ud_index, buf, pos, length)]
        else:
            sym[m] = char_sym[k] if k >= 0 else -1
        prev_cp = cp
        prev_k = k
        prev_flags = flags
        pos += length
        m += 1
    return n_out


@njit(inline="always")
def _merge_emit(m, out, n_out, prev_unk, starts, sym, frozen, prv, nxt, alive, hs, hl, hr, hm, ha, hb, heap, pkeys,
                pindex, pmerged, pscore, sym_out, unk_id, byte_fallback, byte_ids, buf):
    """Merge the segment's m symbols and write their ids; returns n_out * 2 + (last piece unknown)."""
    if m == 1:  # nothing to merge
        s0 = sym[0]
        pid = unk_id if s0 < 0 else sym_out[s0]
        n_out = _emit_piece(out, n_out, pid, unk_id, byte_fallback, byte_ids, buf, starts[0], starts[1], prev_unk)
        prev_unk = pid == unk_id
        return n_out * 2 + (1 if prev_unk else 0)
    # ---- merge
    for i in range(m):
        prv[i] = i - 1
        nxt[i] = i + 1 if i + 1 < m else -1
        alive[i] = True
    hn = 0
    ne = 0
    for i in range(1, m):
        hn, ne = _maybe_pair(i - 1, i, sym, frozen, pkeys, pindex, pmerged, pscore, hs, hl, hr, hm, ha, hb, heap, hn, ne)
    while hn > 0:
        e, hn = _heap_pop(heap, hn, hs, hl)
        left = hl[e]
        right = hr[e]
        if not alive[left] or not alive[right] or nxt[left] != right or sym[left] != ha[e] or sym[right] != hb[e]:
            continue
        sym[left] = hm[e]
        alive[right] = False
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prv[nxt[right]] = left
        hn, ne = _maybe_pair(prv[left], left, sym, frozen, pkeys, pindex, pmerged, pscore, hs, hl, hr, hm, ha, hb, heap, hn, ne)
        hn, ne = _maybe_pair(left, nxt[left], sym, frozen, pkeys, pindex, pmerged, pscore, hs, hl, hr, hm, ha, hb, heap, hn, ne)
    # ---- output
    i = 0 if m > 0 else -1
    while i >= 0:
        stop = starts[nxt[i]] if nxt[i] >= 0 else starts[m]
        s = sym[i]
        pid = unk_id if s < 0 else sym_out[s]
        n_out = _emit_piece(out, n_out, pid, unk_id, byte_fallback, byte_ids, buf, starts[i], stop, prev_unk)
        prev_unk = pid == unk_id
        i = nxt[i]
    return n_out * 2 + (1 if prev_unk else 0)


_CACHE_MAX_BYTES = 48
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@njit(inline="always")
def _fnv(buf, start, stop):
    h = _FNV_OFFSET
    for j in range(start, stop):
        h = (h ^ np.uint64(buf[j])) * _FNV_PRIME
    return h | np.uint64(1)  # never 0: 0 marks an empty slot


@njit(inline="always")
def _cache_slot(ck, cbytes, buf, start, n, h):
    """The slot holding the segment buf[start:start+n], or the empty slot where it would go."""
    mask = ck.shape[0] - 1
    s = np.int64(h >> np.uint64(40)) & mask
    hi = np.int64(h >> np.uint64(1))
    while True:
        if ck[s, 0] == 0:
            return s
        if ck[s, 0] == hi and ck[s, 2] == n:
            b0 = ck[s, 1]
            same = True
            for j in range(n):
                if cbytes[b0 + j] != buf[start + j]:
                    same = False
                    break
            if same:
                return s
        s = (s + 1) & mask


@njit(inline="always")
def _cache_put(ck, cbytes, cids, cfill, slot, h, buf, start, n, out, first, stop, unk_id):
    n_ids = stop - first
    if cfill[0] * 2 >= ck.shape[0] or cfill[1] + n > cbytes.shape[0] or cfill[2] + n_ids > cids.shape[0]:
        return  # full: later segments are merged every time
    for j in range(first, stop):
        if out[j] == unk_id:
            return
    b0 = cfill[1]
    i0 = cfill[2]
    for j in range(n):
        cbytes[b0 + j] = buf[start + j]
    for j in range(n_ids):
        cids[i0 + j] = out[first + j]
    ck[slot, 0] = np.int64(h >> np.uint64(1))
    ck[slot, 1] = b0
    ck[slot, 2] = n
    ck[slot, 3] = i0
    ck[slot, 4] = n_ids
    cfill[0] += 1
    cfill[1] += n
    cfill[2] += n_ids


def bpe_cache(slots: int = 1 << 16):
    """An empty segment cache for `bpe_encode` (kept across calls: the model's merges never change)."""
    return (np.zeros((slots, 5), np.int64), np.empty(slots * 16, np.uint8), np.empty(slots * 8, np.int64),
            np.zeros(3, np.int64))


def bpe_workspace(m: int):
    """The work arrays `bpe_encode` needs for segments of up to m characters."""
    cap = 3 * m + 16  # per segment: m - 1 initial pairs, at most 2 per merge
    return (np.empty((4, m + 1), np.int64), np.zeros((2, m + 1), np.bool_), np.empty(cap, np.float32),
            np.empty((6, cap), np.int64))


@njit(inline="always")
def _ud_node(ud_keys, ud_index, buf, pos, length):
    node = 0
    for p in range(pos, pos + length):
        node = trie_child(ud_keys, ud_index, node, buf[p])
    return node


# ---------------------------------------------------------------------------------------- unigram
@njit(cache=True)
def unigram_encode(buf, out, best, wi, tkeys, tindex, tvalue, piece_score, piece_kind, max_score, unk_score,
                   unk_id, byte_fallback, byte_ids):
    """unigram::Model::EncodeOptimized of normalized UTF-8 `buf`, then the unknown handling.

    piece_kind: 0 normal, 1 user-defined, 2 unused (skipped). Path scores are float32 sums compared
    as float32: that is what the sentencepiece 0.2.3 wheel computes (on "---" with the botchan
    unigram model, "\u2581 - --" and "\u2581 -- -" tie in float32, and the first found is kept; compared
    in double, as the C++ source reads, the second would win). `max_score` and `unk_score` are
    float32 scalars. Writes the ids to `out` (one slot per byte) and returns their number; work
    space: best float32 (n + 1), wi int64 (2, n + 1)."""
    buf = borrow(buf)
    out = borrow(out)
    best = borrow(best)
    start_at = borrow(wi[0])
    node_id = borrow(wi[1])
    tkeys = borrow(tkeys)
    tindex = borrow(tindex)
    tvalue = borrow(tvalue)
    piece_score = borrow(piece_score)
    piece_kind = borrow(piece_kind)
    byte_ids = borrow(byte_ids)
    size = buf.shape[0]
    for i in range(size + 1):
        best[i] = 0.0
        start_at[i] = -1
        node_id[i] = -1
    s = 0
    while s < size:
        till_here = best[s]
        has_single = False
        mblen = min(one_char_len(buf[s]), size - s)
        node = 0
        p = s
        while p < size:
            node = trie_child(tkeys, tindex, node, buf[p])
            if node < 0:
                break
            p += 1
            ret = tvalue[node]
            if ret < 0:
                continue
            kind = piece_kind[ret]
            if kind == 2:
                continue
            length = p - s
            if kind == 1:
                score = np.float32(np.float64(np.float32(length) * max_score) - 0.1)
            else:
                score = piece_score[ret]
            cand = score + till_here
            if start_at[p] == -1 or cand > best[p]:
                best[p] = cand
                start_at[p] = s
                node_id[p] = ret
            if not has_single and length == mblen:
                has_single = True
        if not has_single:
            t = s + mblen
            cand32 = unk_score + till_here
            if start_at[t] == -1 or cand32 > best[t]:
                best[t] = cand32
                start_at[t] = s
                node_id[t] = unk_id
        s += mblen
    # backtrack
    n_pieces = 0
    e = size
    while e > 0:
        n_pieces += 1
        e = start_at[e]
    ends = np.empty(n_pieces, np.int64)
    e = size
    k = n_pieces
    while e > 0:
        k -= 1
        ends[k] = e
        e = start_at[e]
    n_out = 0
    prev_unk = False
    begin = 0
    for k in range(n_pieces):
        stop = ends[k]
        pid = node_id[stop]
        n_out = _emit_piece(out, n_out, pid, unk_id, byte_fallback, byte_ids, buf, begin, stop, prev_unk)
        prev_unk = pid == unk_id
        begin = stop
    return n_out
