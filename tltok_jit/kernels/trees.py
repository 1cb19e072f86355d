"""Each token's own merge tree, and what it tells about pairs of adjacent tokens.

A token t is *reachable* when merging its bytes alone gives [t]; its tree is then recorded by its
last merge (split_l[t], split_r[t] at rank crank[t]). Two facts make trees useful to the encoders:

* A sequence of reachable tokens is the BPE result of its bytes iff every adjacent pair (a, b) is,
  i.e. Merge(bytes(a) + bytes(b)) == [a, b] (GitHub's `bpe` crate builds on this); `compat_fast`
  decides a pair from the two trees without merging.
* Which symbols can ever stand at the boundary of a pair: the right spine of a's tree (a, split_r[a],
  split_r[split_r[a]], ...) and the left spine of b's. `boundary_flags` precomputes, per token, that
  no symbol of one spine can be merged with ANY symbol that may face it before the spine symbol is
  itself consumed: such a side never lets a merge cross the boundary, whatever the neighbour is.
"""

from __future__ import annotations

import numpy as np

from .hashing import EMPTY_PAIR, PAIR_ID_BITS, PAIR_RANK_BITS, bloom_may_have, pair_lookup
from .jit import njit
from .merge import merge_linear, merge_symbols

# tok_flags bits
F_REACH = 1  # Merge(bytes(t)) == [t]
F_R_BEFORE_MB = 2  # t's right spine never merges across into a neighbour that starts with a byte >= 0x80
F_R_BEFORE_ASCII = 4  # ... into a neighbour that starts with an ASCII byte
F_L_AFTER_MB = 8  # t's left spine never merges across into a neighbour that ends with a byte >= 0x80
F_L_AFTER_ASCII = 16  # ... into a neighbour that ends with an ASCII byte
F_LAST_MB = 32  # t's last byte is >= 0x80
F_FIRST_MB = 64  # t's first byte is >= 0x80
F_MONO = 128  # t's own merges come in non-decreasing rank order (the proofs of merge_chars need it)

CHAR_TABLE = 1 << 16  # char_bpe covers U+0000..U+FFFF (1-3 byte characters)
_ID_MASK = (1 << PAIR_ID_BITS) - 1


@njit(inline="always")
def _byte_symbols(t, tok_bytes, tok_offsets, byte_ids, syms, at):
    """syms[at:] = the byte tokens of token t's bytes; returns their number."""
    a = tok_offsets[t]
    n = tok_offsets[t + 1] - a
    for k in range(n):
        syms[at + k] = byte_ids[tok_bytes[a + k]]
    return n


@njit(cache=True)
def token_trees(tok_bytes, tok_offsets, byte_ids, pair_slots, rank_ids, ordinary, max_len):
    """For every ordinary token t: bit 0 of reach[t] is set iff merging its bytes gives exactly [t];
    for those, the last merge of that process: split_l[t], split_r[t] and its rank crank[t] (-1 for
    single bytes), and bit 1 of reach[t] is set when that process does NOT merge in non-decreasing
    rank order. Also whether every such process is monotone (what `compat_fast` needs for any pair).
    The merge loop is `merge.merge_linear`'s (lowest rank, leftmost), recording the last merge; the
    result is cross-checked against `merge_symbols`."""
    n_vocab = len(tok_offsets) - 1
    reach = np.zeros(n_vocab, dtype=np.uint8)
    crank = np.full(n_vocab, -1, dtype=np.int64)
    split_l = np.full(n_vocab, -1, dtype=np.int32)
    split_r = np.full(n_vocab, -1, dtype=np.int32)
    monotone = np.ones(1, dtype=np.bool_)
    syms = np.empty(max_len + 1, dtype=np.uint32)
    vals = np.empty(max_len + 8, dtype=np.int64)
    pv = np.empty(max_len + 8, dtype=np.int64)
    pk = pair_slots
    pvals = rank_ids
    nopair = np.int64(0x7FFFFFFFFFFFFFFF)
    for t in range(n_vocab):
        if not ordinary[t]:
            continue
        n = _byte_symbols(t, tok_bytes, tok_offsets, byte_ids, syms, 0)
        if n == 1:
            if syms[0] == t:
                reach[t] = 1
            continue
        for i in range(n - 1):
            v = pair_lookup(syms[i], syms[i + 1], pk, pvals)
            pv[i] = v if v >= 0 else nopair
        m = n
        last_l = -1
        last_r = -1
        last_rank = np.int64(-1)
        mono = True
        while m > 1:
            best = nopair
            bi = -1
            for i in range(m - 1):
                if pv[i] < best:
                    best = pv[i]
                    bi = i
            if bi < 0:
                break
            last_l = syms[bi]
            last_r = syms[bi + 1]
            if (best >> 32) < last_rank:
                mono = False
            last_rank = best >> 32
            syms[bi] = best & 0xFFFFFFFF
            for i in range(bi + 1, m - 1):
                syms[i] = syms[i + 1]
                pv[i] = pv[i + 1]
            m -= 1
            if bi > 0:
                v = pair_lookup(syms[bi - 1], syms[bi], pk, pvals)
                pv[bi - 1] = v if v >= 0 else nopair
            if bi < m - 1:
                v = pair_lookup(syms[bi], syms[bi + 1], pk, pvals)
                pv[bi] = v if v >= 0 else nopair
        if m == 1 and syms[0] == t:
            reach[t] = 1
            if not mono:
                monotone[0] = False
                reach[t] = 3
            crank[t] = last_rank
            split_l[t] = last_l
            split_r[t] = last_r
    # cross-check with the production merge
    for t in range(n_vocab):
        if not ordinary[t]:
            continue
        n = _byte_symbols(t, tok_bytes, tok_offsets, byte_ids, syms, 0)
        m = merge_symbols(syms, 0, n, pk, pvals, vals)
        if (m == 1 and syms[0] == t) != ((reach[t] & 1) == 1):
            return reach, crank, split_l, split_r, False, monotone[0]
    return reach, crank, split_l, split_r, True, monotone[0]


@njit(inline="always")
def compat_fast(a, b, pk, pvals, crank, split_l, split_r, bloom):
    """Merge(bytes(a) + bytes(b)) == [a, b] for reachable a, b, without merging (the check of
    GitHub's `bpe` crate, `is_valid_token_pair`, restated with ranks). Going back in time from
    (a, b), the pair at the boundary is (L, R): the last symbol of a's merge tree and the first of
    b's at that moment. The pair existed until the next merge that replaced L or R (`limit`); BPE
    would have merged it across the boundary if its rank is below that merge's, or equal to it when
    the replaced symbol is R (the boundary pair is then the leftmost). Undoing the later of the two
    merges that created L and R steps back one state; both single bytes: never crossed. Exact when
    each side's own merges come in non-decreasing rank order (`token_trees` checks that): the two
    sides then interleave by rank, so the pair is chosen iff it beats the merge that ends its state.
    `bloom` (hashing.build_pair_bloom) skips the table for most absent pairs."""
    limit = np.int64(0x7FFFFFFFFFFFFFFF)
    left = np.int64(a)
    right = np.int64(b)
    while True:
        if bloom_may_have(left, right, bloom):
            v = pair_lookup(left, right, pk, pvals)
            if v >= 0 and (v >> 32) < limit:
                return False
        rl = crank[left]
        rr = crank[right]
        if rl < 0 and rr < 0:
            return True
        if rl > rr:
            limit = rl
            left = split_r[left]
        else:
            limit = rr + 1
            right = split_l[right]


@njit(inline="always")
def _is_cont(b):
    return (b & 0xC0) == 0x80


@njit(inline="always")
def _may_end_char(tok_bytes, a, e):
    """tok_bytes[a:e] may end where a character ends: its last character is whole, or it is 1-3
    continuation bytes (the tail of a character that began before it)."""
    i = e - 1
    while i >= a and _is_cont(tok_bytes[i]):
        i -= 1
    if i < a:
        return e - a <= 3
    c = tok_bytes[i]
    if c < 0x80:
        need = 1
    elif c >= 0xF0:
        need = 4
    elif c >= 0xE0:
        need = 3
    else:
        need = 2
    return e - i == need


@njit(inline="always")
def _spine_safe(t, crank, child, lowest_mb, lowest_as):
    """Walk t's spine (child = split_r: the right one, split_l: the left one): is every symbol on it
    consumed by its parent's merge before any crossing merge of each neighbour class could take it?"""
    ok_mb = True
    ok_as = True
    p = t
    while crank[p] >= 0:
        x = child[p]
        if lowest_mb[x] <= crank[p]:
            ok_mb = False
        if lowest_as[x] <= crank[p]:
            ok_as = False
        p = x
    return ok_mb, ok_as


@njit
def merges_to_pair(a, b, tok_bytes, tok_offsets, byte_ids, pair_slots, rank_ids, syms, vals):
    """Merge(bytes(a) + bytes(b)) == [a, b], by merging (syms: uint32 scratch, vals: int64 scratch,
    both of length >= the two tokens' bytes)."""
    na = _byte_symbols(a, tok_bytes, tok_offsets, byte_ids, syms, 0)
    nb = _byte_symbols(b, tok_bytes, tok_offsets, byte_ids, syms, na)
    m = merge_symbols(syms, 0, na + nb, pair_slots, rank_ids, vals)
    return m == 2 and syms[0] == a and syms[1] == b


@njit(cache=True)
def boundary_flags(tok_bytes, tok_offsets, pair_slots, reach, crank, split_l, split_r):
    """uint8[n_vocab] of F_* bits, for tokens that sit between whole characters.

    At a boundary between whole characters, the symbols that can face each other are a suffix x of
    the left token (it ends where a character ends, though it may begin inside one) and a prefix y
    of the right one (it begins where a character begins). Only merges (x, y) of that shape can
    cross it; their lowest
    rank per x (per y), split by the class of y's first byte (x's last byte), is compared with the
    rank of the merge that consumes x in the spine (y). If every spine symbol is consumed first,
    with merges in rank order (monotone trees) no crossing merge can ever be the lowest available
    one: the side is safe with any neighbour of that class. Flags are 0 for unreachable tokens."""
    n_vocab = len(tok_offsets) - 1
    big = np.int64(1) << 62
    l_mb = np.full(n_vocab, big, dtype=np.int64)  # lowest rank of (x, y), y starting with a byte >= 0x80
    l_as = np.full(n_vocab, big, dtype=np.int64)
    r_mb = np.full(n_vocab, big, dtype=np.int64)  # lowest rank of (x, y), x ending with a byte >= 0x80
    r_as = np.full(n_vocab, big, dtype=np.int64)
    idm = np.uint64(_ID_MASK)
    for s in range(len(pair_slots)):
        v = pair_slots[s]
        if v == EMPTY_PAIR:
            continue
        key = v >> np.uint64(PAIR_RANK_BITS)
        rank = np.int64(v & np.uint64((1 << PAIR_RANK_BITS) - 1))
        x = np.int64(key >> np.uint64(PAIR_ID_BITS))
        y = np.int64(key & idm)
        xa = tok_offsets[x]
        xe = tok_offsets[x + 1]
        ya = tok_offsets[y]
        if xe == xa or tok_offsets[y + 1] == ya:
            continue
        y0 = tok_bytes[ya]
        if _is_cont(y0) or not _may_end_char(tok_bytes, xa, xe):
            continue
        if y0 >= 0x80:
            l_mb[x] = min(l_mb[x], rank)
        else:
            l_as[x] = min(l_as[x], rank)
        if tok_bytes[xe - 1] >= 0x80:
            r_mb[y] = min(r_mb[y], rank)
        else:
            r_as[y] = min(r_as[y], rank)
    flags = np.zeros(n_vocab, dtype=np.uint8)
    for t in range(n_vocab):
        if (reach[t] & 1) == 0:
            continue
        f = F_REACH
        if (reach[t] & 2) == 0:
            f |= F_MONO
        if tok_bytes[tok_offsets[t + 1] - 1] >= 0x80:
            f |= F_LAST_MB
        if tok_bytes[tok_offsets[t]] >= 0x80:
            f |= F_FIRST_MB
        ok_mb, ok_as = _spine_safe(t, crank, split_r, l_mb, l_as)
        if ok_mb:
            f |= F_R_BEFORE_MB
        if ok_as:
            f |= F_R_BEFORE_ASCII
        ok_mb, ok_as = _spine_safe(t, crank, split_l, r_mb, r_as)
        if ok_mb:
            f |= F_L_AFTER_MB
        if ok_as:
            f |= F_L_AFTER_ASCII
        flags[t] = f
    return flags


@njit(cache=True)
def char_bpe_table(byte_ids, pair_slots, rank_ids):
    """uint64[CHAR_TABLE]: the BPE of each 1-3 byte character's UTF-8 alone, packed as
    count << 60 | id0 | id1 << 20 | id2 << 40; 0 for surrogates, characters with a byte that is not a
    token, and results with an id that does not fit 20 bits."""
    out = np.zeros(CHAR_TABLE, dtype=np.uint64)
    syms = np.empty(4, dtype=np.uint32)
    vals = np.empty(8, dtype=np.int64)
    b = np.empty(3, dtype=np.int64)
    for cp in range(CHAR_TABLE):
        if 0xD800 <= cp < 0xE000:
            continue
        if cp < 0x80:
            n = 1
            b[0] = cp
        elif cp < 0x800:
            n = 2
            b[0] = 0xC0 | (cp >> 6)
            b[1] = 0x80 | (cp & 0x3F)
        else:
            n = 3
            b[0] = 0xE0 | (cp >> 12)
            b[1] = 0x80 | ((cp >> 6) & 0x3F)
            b[2] = 0x80 | (cp & 0x3F)
        ok = True
        for k in range(n):
            t = byte_ids[b[k]]
            if t < 0:
                ok = False
            syms[k] = t
        if not ok:
            continue
        m = merge_linear(syms, 0, n, pair_slots, rank_ids, vals)
        e = np.uint64(m) << np.uint64(60)
        for k in range(m):
            if syms[k] > _ID_MASK:
                ok = False
            e |= np.uint64(syms[k]) << np.uint64(20 * k)
        if ok:
            out[cp] = e
    return out
