"""Merging a piece character by character, proved exact (mended where it is not) or handed back.

Text in scripts whose characters are several bytes (CJK above all) spends most merges inside
characters: a Han character is three bytes and two merges, and in o200k it is nearly always one
token. `merge_by_chars` starts from each character's own BPE result (a table lookup, see
`trees.char_bpe_table`), merges those tokens by rank, and then proves the result is what merging the
bytes gives: a sequence of reachable tokens is the BPE result iff every adjacent pair is
(`trees` module). Most pairs are settled by one flag test per side (`trees.boundary_flags`), the
rest by walking the two merge trees (`trees.compat_fast`). A pair that fails is mended: the bytes of
its two tokens are merged as bytes and the new tokens' pairs with their neighbours proved in turn
(each adjacent pair of a BPE result is compatible, so the pairs inside need no proof). In o200k a
quarter of the pieces of Indic, Lao or Tibetan words need that (a token that straddles two
characters wins at one place), almost always once. When mending does not settle a piece, the
caller merges its bytes as usual; the answer never depends on which route was taken.
"""

from __future__ import annotations

import numpy as np
from numba import carray

from .jit import njit
from .merge import NO_PAIR, SMALL_PIECE, _pair_memo, merge_short
from .trees import (
    F_FIRST_MB,
    F_L_AFTER_ASCII,
    F_L_AFTER_MB,
    F_LAST_MB,
    F_R_BEFORE_ASCII,
    F_R_BEFORE_MB,
    F_MONO,
    F_REACH,
    CHAR_TABLE,
    compat_fast,
)

CHAR_PIECE = 256  # pieces of up to this many bytes try the character route
_ST = CHAR_PIECE + 1  # vals[_ST + i]: token i's state (bit 0: starts a character, bit 1: made here,
# bit 2: from a window merged as bytes)
_RW = 2 * CHAR_PIECE + 2  # vals[_RW:]: the window merge's scratch
WORK_NEEDED = _RW + SMALL_PIECE
MAX_REPAIRS = 8  # windows merged as bytes in one piece before it goes to the byte route whole
_ID = np.uint64((1 << 20) - 1)
_USABLE = F_REACH | F_MONO  # a token the proofs hold for


@njit
def mend_pair(buf, pos, syms, start, m, lo, tok_offsets, tok_flags, byte_ids, byte_pairs, pair_slots, rank_ids,
              vals, memo, bloom):
    """Replace tokens lo and lo + 1 of the route's m tokens at syms[start:] (the piece begins at
    buf[pos]) by the byte merge of their bytes, their states (vals[_ST:]) by 4; returns how many
    tokens they became, or -1 when their bytes are more than SMALL_PIECE or a new token is not
    usable by the proofs. A call of its own: inlined into the route, it cost compile time in every
    kernel of the piece loop."""
    b0 = pos
    for q in range(lo):
        b0 += tok_offsets[syms[start + q] + 1] - tok_offsets[syms[start + q]]
    nb = 0
    for q in range(lo, lo + 2):
        nb += tok_offsets[syms[start + q] + 1] - tok_offsets[syms[start + q]]
    if nb > SMALL_PIECE:
        return -1
    # the tail moves right to make room for the window's bytes, then back behind its tokens (room:
    # every token outside the window covers at least one byte of the piece)
    grow = nb - 2
    for q in range(m - 1, lo + 1, -1):
        syms[start + q + grow] = syms[start + q]
        vals[_ST + q + grow] = vals[_ST + q]
    # (merge_short, not merge_piece: calling merge_piece linked its long-piece merges too)
    k = merge_short(buf, b0, nb, syms, start + lo, byte_ids, byte_pairs, pair_slots, rank_ids, vals[_RW:], memo, bloom)
    shrink = nb - k
    for q in range(lo + 2 + grow, m + grow):
        syms[start + q - shrink] = syms[start + q]
        vals[_ST + q - shrink] = vals[_ST + q]
    for q in range(lo, lo + k):
        vals[_ST + q] = 4
        if (np.int64(tok_flags[syms[start + q]]) & _USABLE) != _USABLE:
            return -1
    return k


@njit(inline="always")
def compat_memo(a, b, pair_slots, rank_ids, crank, split_l, split_r, bloom, cmemo):
    """trees.compat_fast(a, b, ...) behind a direct-mapped memo of its answers (`cmemo`: a power of
    two of uint64 words, each ((key + 1) << 1) | answer with key = a << 31 | b, so neither 0 nor all
    ones, the empty words, is an entry; empty: no memo). The answer depends on the vocabulary alone,
    so entries hold across texts and calls. A pair the flags leave open is walked down both merge
    trees, a load or three per step from tables larger than the L2 cache; the 307k adjacent token
    pairs of 三国演义's pieces over 16 bytes (o200k) are 98k distinct ones, so most walks repeat."""
    if len(cmemo) == 0:
        return compat_fast(a, b, pair_slots, rank_ids, crank, split_l, split_r, bloom)
    key = (np.uint64(a) << np.uint64(31)) | np.uint64(b)
    s = np.int64((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)) & (len(cmemo) - 1)
    e = cmemo[s]
    if (e >> np.uint64(1)) == key + np.uint64(1):
        return (e & np.uint64(1)) != 0
    ok = compat_fast(a, b, pair_slots, rank_ids, crank, split_l, split_r, bloom)
    cmemo[s] = ((key + np.uint64(1)) << np.uint64(1)) | (np.uint64(1) if ok else np.uint64(0))
    return ok


@njit(inline="always")
def merge_by_chars(buf, pos, n, syms, start, char_bpe, tok_flags, crank, split_l, split_r, pair_slots,
                   rank_ids, bloom, vals, memo, cmemo, tok_offsets, byte_ids, byte_pairs):
    """BPE of buf[pos:pos+n] (n <= CHAR_PIECE) into syms[start:]; returns the token count, or -1
    when the piece has a character outside the table or the result cannot be proved (more than
    MAX_REPAIRS mended windows, or one longer than SMALL_PIECE bytes: the caller then merges the
    bytes). `vals` is int64 scratch of length >= WORK_NEEDED. Every token of the result must have
    monotone merges (F_MONO), else -1: the proofs need it. `memo` is the merge-table memo
    (merge._pair_memo), `cmemo` the proofs' (compat_memo; either may be empty). `tok_offsets`,
    `byte_ids` and `byte_pairs` (tables.Tables) serve the mending's byte merge."""
    m = 0
    i = pos
    end = pos + n
    while i < end:
        c = np.int64(buf[i])
        if c < 0x80:
            cp = c
            ln = 1
        elif c < 0xE0:
            if c < 0xC2 or i + 1 >= end:
                return -1
            c1 = np.int64(buf[i + 1])
            if (c1 & 0xC0) != 0x80:
                return -1
            cp = ((c & 0x1F) << 6) | (c1 & 0x3F)
            ln = 2
        elif c < 0xF0:
            if i + 2 >= end:
                return -1
            c1 = np.int64(buf[i + 1])
            c2 = np.int64(buf[i + 2])
            if (c1 & 0xC0) != 0x80 or (c2 & 0xC0) != 0x80:
                return -1
            cp = ((c & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F)
            if cp < 0x800:
                return -1  # overlong: not the bytes the table was built from
            ln = 3
        else:
            return -1
        e = char_bpe[cp]  # 0 for surrogates: they go to the byte route
        k = np.int64(e >> np.uint64(60))
        if k == 0:
            return -1
        syms[start + m] = e & _ID
        vals[_ST + m] = 1
        if k > 1:
            syms[start + m + 1] = (e >> np.uint64(20)) & _ID
            vals[_ST + m + 1] = 0
            if k > 2:
                syms[start + m + 2] = (e >> np.uint64(40)) & _ID
                vals[_ST + m + 2] = 0
        m += k
        i += ln
    # merge the tokens: lowest rank, leftmost (what merge.merge_linear does, carrying the states)
    for j in range(m - 1):
        vals[j] = _pair_memo(syms[start + j], syms[start + j + 1], pair_slots, rank_ids, memo, bloom)
    while m > 1:
        best = NO_PAIR
        bi = -1
        for j in range(m - 1):
            if vals[j] < best:
                best = vals[j]
                bi = j
        if bi < 0:
            break
        syms[start + bi] = best & 0xFFFFFFFF
        vals[_ST + bi] |= 2
        for j in range(bi + 1, m - 1):
            syms[start + j] = syms[start + j + 1]
            vals[j] = vals[j + 1]
            vals[_ST + j] = vals[_ST + j + 1]
        m -= 1
        if bi > 0:
            vals[bi - 1] = _pair_memo(syms[start + bi - 1], syms[start + bi], pair_slots, rank_ids, memo, bloom)
        if bi < m - 1:
            vals[bi] = _pair_memo(syms[start + bi], syms[start + bi + 1], pair_slots, rank_ids, memo, bloom)
    # prove it: every token reachable with monotone merges, every adjacent pair compatible. A pair
    # that is not (a token that straddles characters wins there, or the merge order across
    # characters differs) is mended in place: the bytes of a window of tokens around it are merged
    # as bytes, and the pairs at the window's edges are proved in turn (inside it, each pair of a
    # BPE result is compatible)
    if (np.int64(tok_flags[syms[start]]) & _USABLE) != _USABLE:
        return -1
    win_lo = 0  # pairs (j - 1, j) with win_lo < j < win_hi lie inside the last window merged
    win_hi = 0
    repairs = 0
    j = 1
    while j < m:
        fa = np.int64(tok_flags[syms[start + j - 1]])
        fb = np.int64(tok_flags[syms[start + j]])
        if (fb & _USABLE) != _USABLE:
            return -1
        if win_lo < j < win_hi:
            j += 1
            continue
        sa = vals[_ST + j - 1]
        sb = vals[_ST + j]
        if ((sa | sb) & 4) != 0:
            ok = False  # an edge of a window: it may lie inside a character
        elif (sb & 1) != 0:
            # between whole characters: each side's flag for the other's byte class
            need_a = F_R_BEFORE_MB if (fb & F_FIRST_MB) != 0 else F_R_BEFORE_ASCII
            need_b = F_L_AFTER_MB if (fa & F_LAST_MB) != 0 else F_L_AFTER_ASCII
            ok = (fa & need_a) != 0 and (fb & need_b) != 0
        else:
            # inside a character: two tokens of its own BPE are compatible
            ok = ((sa | sb) & 2) == 0
        if ok or compat_memo(syms[start + j - 1], syms[start + j], pair_slots, rank_ids, crank, split_l, split_r,
                             bloom, cmemo):
            j += 1
            continue
        repairs += 1
        if repairs > MAX_REPAIRS:
            return -1
        lo = j - 1
        k = mend_pair(buf, pos, syms, start, m, lo, tok_offsets, tok_flags, byte_ids, byte_pairs, pair_slots, rank_ids,
                      vals, memo, bloom)
        if k < 0:
            return -1
        m += k - 2
        win_lo = lo
        win_hi = lo + k
        j = max(lo, 1)  # the window's left edge next, then its right edge
    return m


@njit
def merge_by_chars_at(bufp, nbuf, pos, n, symsp, nsyms, start, char_bpep, tok_flagsp, crankp, split_lp, split_rp,
                      n_vocab, pair_slotsp, n_slots, rank_idsp, n_ranks, bloomp, n_bloom, valsp, n_vals, memop,
                      n_memo, cmemop, n_cmemo, tok_offsetsp, byte_idsp, byte_pairsp):
    """merge_by_chars on arrays given as (data pointer, length) pairs (scan.data_ptr).

    The piece loop calls this one instead of inlining the route: inlined into every variant of the
    loop it made the first compile of a batch call take minutes, and a call that passes a dozen
    arrays spends more time on their structs than the route does on a short piece."""
    return merge_by_chars(carray(bufp, (nbuf,)), pos, n, carray(symsp, (nsyms,)), start,
                          carray(char_bpep, (CHAR_TABLE,)), carray(tok_flagsp, (n_vocab,)),
                          carray(crankp, (n_vocab,)), carray(split_lp, (n_vocab,)), carray(split_rp, (n_vocab,)),
                          carray(pair_slotsp, (n_slots,)), carray(rank_idsp, (n_ranks,)),
                          carray(bloomp, (n_bloom,)), carray(valsp, (n_vals,)), carray(memop, (n_memo,)),
                          carray(cmemop, (n_cmemo,)), carray(tok_offsetsp, (n_vocab + 1,)), carray(byte_idsp, (256,)),
                          carray(byte_pairsp, (65536,)))
