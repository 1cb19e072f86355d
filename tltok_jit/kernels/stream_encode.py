"""Streaming encode kernels: which bytes of a growing text are settled, and the incremental BPE that
emits the tokens of one very long piece while it is still growing.

`stream_step` is called once per fed chunk on the pending bytes `buf[0:n]` (valid UTF-8, complete
characters only: the Python side holds back an unfinished character) and writes the ids that no
continuation can change. All positions in the state array are offsets into `buf`; the caller drops
`buf[:st[S_KEEP]]` after each call and shifts the positions. The argument for every rule below is
in `tltok_jit/streaming/encode.py`'s module docstring; the function docstrings here say what they
compute.

Long pieces (Jiang & Gong's incremental BPE, as used by Dalirrooyfard & Ye): for a piece that starts
at F, lam[i] is the last token of Merge(x[F:i]) and parent(i) = i - len(lam[i]), so Merge(x[F:E]) is
the path from E to the root F. lam[i] is the unique suffix token t of x[F:i] that is compatible with
lam[i - len t] (Merge(raw(a) raw(b)) == [a, b]), or, when t is all of x[F:i], with Merge(raw t) == [t].
Every future end E >= K of the piece reaches the window (K - maxlen, K] on its path, so the path
above the lowest common ancestor of the window is final.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import int64 as i64
from numba import uint64

from ..unicode.classes import (
    CLS_LL,
    CLS_LM,
    CLS_LO,
    CLS_LT,
    CLS_LU,
    CLS_MARK,
    CLS_NUMBER,
    CLS_OTHER,
    CLS_SPACE,
)
from .encode import CFG_PATTERN, added_trie, encode_ordinary_span, match_in_trie
from .jit import njit, readonly
from .trees import compat_fast as _compat_fast
from .trees import merges_to_pair
from .scan import PAT_CL100K, PAT_GPT2, PAT_GPT2_DIGITS, PAT_LLAMA3, PAT_O200K, PAT_QWEN2, PAT_TEKKEN, next_piece
from .utf8 import class_at

# ------------------------------------------------------------------------------------ state slots
S_SEG = 0  # next byte to examine for the start of an added token
S_PIECE = 1  # start of the next piece to encode (the live piece's start F in long mode)
S_LONG = 2  # 1 while the live piece is emitted incrementally
S_ANCH = 3  # long mode: scanning from here gives the same piece end as scanning from F
S_EMIT = 4  # long mode: the piece's tokens up to this byte have been written
S_LAMEND = 5  # long mode: lam is known for positions (F, S_LAMEND]
S_ASCAN = 6  # long mode: anchor search resumes at this character boundary
S_SEENLL = 7  # long mode, o200k: an Ll character was seen in [F, S_ASCAN)
S_SEENNL = 8  # long mode: a CR/LF was seen in [F, S_ASCAN); o200k words: a non-letter (the contraction)
S_TYPE = 9  # long mode: the live piece's type (T_*)
S_NOLONG = 10  # 1: long mode disabled (set when the incremental BPE found no candidate)
S_KEEP = 11  # out: bytes before this are no longer needed
S_HELD_K = 12  # out: the live piece's known lower bound K (diagnostics)
S_ERR = 13  # out: 1 no compatible candidate at some position, 2 piece ended before K (both impossible)
S_WANTLONG = 14  # out: 1 if a long piece waits for the incremental-BPE tables (LT.max_len == 0)
S_CUTDONE = 15  # last_cut found no cut in (S_PIECE, S_CUTDONE): it resumes there
S_BLK = 16  # B_*: the live piece waits on a run that neutral characters only extend (see _block_kind)
S_BLKPIECE = 17  # S_PIECE when S_BLK was recorded
S_BLKEND = 18  # the text up to here is known to extend that run
S_WPHASE = 19  # long mode, cased kinds: the anchor lies in the piece's greedy [W]+ run (after its first Ll)
S_WSCAN = 20  # long mode, S_WPHASE: [S_ANCH, S_WSCAN) is known to be all [W]
N_STATE = 24

# Pattern families (every rule below is stated for a family; the argument covers each member):
# GPT-2 (`\s+(?!\S)` whitespace, no CR/LF rule): PAT_GPT2, PAT_GPT2_DIGITS (Digits cuts every
# numeric character off first). CR/LF (`\s*[\r\n]`): cl100k, Llama-3, Qwen2 (`\p{L}+` words) and the
# cased kinds o200k, Tekken (`[U]*[W]+` words). STREAM_KINDS are the kinds the stream encoder serves.
STREAM_KINDS = (PAT_GPT2, PAT_CL100K, PAT_O200K, PAT_LLAMA3, PAT_QWEN2, PAT_TEKKEN, PAT_GPT2_DIGITS)

B_NONE = 0
B_WS = 1  # the live bound K is just after a CR/LF; [K, end) is whitespace other than CR/LF
B_UPPER = 2  # o200k: K is the piece end, after a [Lu Lt Lm Lo M] character; [K, end) is Lu/Lt only

T_NONE = 0  # no resume anchors (the scan restarts at F every call)
T_WS = 1
T_L = 2  # \p{L} runs (r50k, cl100k)
T_N = 3  # \p{N} runs (r50k)
T_O = 4  # [^\s\p{L}\p{N}] runs
T_WORD = 5  # o200k cased words

M_L = (1 << CLS_LU) | (1 << CLS_LL) | (1 << CLS_LT) | (1 << CLS_LM) | (1 << CLS_LO)
M_O = (1 << CLS_OTHER) | (1 << CLS_MARK)
M_U = (1 << CLS_LU) | (1 << CLS_LT) | (1 << CLS_LM) | (1 << CLS_LO) | (1 << CLS_MARK)
M_ULET = (1 << CLS_LU) | (1 << CLS_LT) | (1 << CLS_LM) | (1 << CLS_LO)
M_WORD = M_U | (1 << CLS_LL)
M_UPPER = (1 << CLS_LU) | (1 << CLS_LT)  # [U] minus [W]: extends a U-run without ending a [W]+
M_W = (1 << CLS_LL) | (1 << CLS_LM) | (1 << CLS_LO) | (1 << CLS_MARK)  # [W]
M_B = M_U & M_W  # Lm Lo M

MARGIN = 4  # a piece end pe is only trusted when pe + MARGIN <= end (see is_final)


@njit(inline="always")
def _crlf_kind(kind):
    r"""The pattern has `\s*[\r\n]` (a whitespace piece ends after its run's last CR/LF)."""
    return kind != PAT_GPT2 and kind != PAT_GPT2_DIGITS


@njit(inline="always")
def _cased_kind(kind):
    r"""The pattern's words are o200k's `[^\r\n\p{L}\p{N}]?[U]*[W]+ | ...?[U]+[W]*`."""
    return kind == PAT_O200K or kind == PAT_TEKKEN


class LongTables(NamedTuple):
    """Per-encoding tables of the incremental BPE (built once, lazily)."""

    rt_token: np.ndarray  # int32[nodes]: ordinary token whose REVERSED bytes end at this node, or -1
    rt_keys: np.ndarray  # int64[cap]: node * 256 + byte, -1 = empty slot
    rt_child: np.ndarray  # int32[cap]
    reach: np.ndarray  # uint8[n_vocab]: Merge(bytes of t) == [t]
    crank: np.ndarray  # int64[n_vocab]: rank of the last merge of Merge(bytes of t), -1 for a byte
    split_l: np.ndarray  # int32[n_vocab]: left part of that merge
    split_r: np.ndarray  # int32[n_vocab]: right part
    fast: int  # 1: every token's own merges come in non-decreasing rank order: _compat_fast is exact
    max_len: int  # longest ordinary token in bytes


class LongWork(NamedTuple):
    """Per-stream scratch of the incremental BPE."""

    memo_keys: np.ndarray  # int64[cap]: a << 32 | b, -1 = empty
    memo_vals: np.ndarray  # uint8[cap]: 1 compatible, 2 not
    memo_count: np.ndarray  # int64[1]
    syms: np.ndarray  # uint32[2 * max_len + 8]
    cand_tok: np.ndarray  # int32[max_len + 1]
    cand_len: np.ndarray  # int32[max_len + 1]


MEMO_SLOTS = 1 << 14


def new_long_work(max_len: int) -> LongWork:
    return LongWork(np.full(MEMO_SLOTS, -1, dtype=np.int64), np.zeros(MEMO_SLOTS, dtype=np.uint8),
                    np.zeros(1, dtype=np.int64), np.zeros(2 * max_len + 8, dtype=np.uint32),
                    np.zeros(max_len + 1, dtype=np.int32), np.zeros(max_len + 1, dtype=np.int32))


# ------------------------------------------------------------------------------------ tables


@njit(inline="always")
def _mix(key, mask):
    return i64((uint64(key) * uint64(0x9E3779B97F4A7C15)) >> uint64(17)) & mask


@njit(cache=True)
def rev_trie_nodes(tok_bytes, tok_offsets, order):
    """Node count of the trie of reversed tokens, `order` = token ids sorted by reversed bytes."""
    nodes = 1
    pa = -1
    for t in order:
        a = tok_offsets[t]
        n = tok_offsets[t + 1] - a
        k = 0
        if pa >= 0:
            pb = tok_offsets[pa]
            pn = tok_offsets[pa + 1] - pb
            m = min(n, pn)
            while k < m and tok_bytes[a + n - 1 - k] == tok_bytes[pb + pn - 1 - k]:
                k += 1
        nodes += n - k
        pa = t
    return nodes


@njit(cache=True)
def build_rev_trie(tok_bytes, tok_offsets, ordinary, capacity):
    """Trie of the reversed bytes of every ordinary token: (rt_token, rt_keys, rt_child)."""
    n_vocab = len(tok_offsets) - 1
    total = 1
    for t in range(n_vocab):
        if ordinary[t]:
            total += tok_offsets[t + 1] - tok_offsets[t]
    rt_token = np.full(total, -1, dtype=np.int32)
    keys = np.full(capacity, -1, dtype=np.int64)
    child = np.full(capacity, -1, dtype=np.int32)
    mask = capacity - 1
    nodes = 1
    for t in range(n_vocab):
        if not ordinary[t]:
            continue
        a = tok_offsets[t]
        node = 0
        for k in range(tok_offsets[t + 1] - 1, a - 1, -1):
            key = i64(node) * 256 + i64(tok_bytes[k])
            s = _mix(key, mask)
            while keys[s] != -1 and keys[s] != key:
                s = (s + 1) & mask
            if keys[s] == -1:
                keys[s] = key
                child[s] = nodes
                nodes += 1
            node = child[s]
        rt_token[node] = t
    return rt_token[:nodes].copy(), keys, child


# ------------------------------------------------------------------------------------ characters


@njit(inline="always")
def _prev_start(buf, p):
    """Start of the character that ends at p (p > 0, valid UTF-8 before p)."""
    q = p - 1
    k = 0
    while q > 0 and k < 3 and (buf[q] & 0xC0) == 0x80:
        q -= 1
        k += 1
    return q


@njit(inline="always")
def _in(mask, c):
    return ((mask >> c) & 1) != 0


@njit
def _run_end(buf, p, end, s1, s2, mask):
    """End of the maximal run from p of characters whose class is in `mask`."""
    while p < end:
        c, n = class_at(buf, p, end, s1, s2)
        if not _in(mask, c):
            break
        p += n
    return p


@njit
def is_final(kind, buf, pe, end, s1, s2):
    """True when the piece just scanned (ending at pe, computed with the text ending at `end`) ends
    at pe whatever text follows `end`: every byte the scanner read, and every offset it compared with
    the end, is < end. See the module docstring of tltok_jit.streaming.encode for the argument."""
    if pe + MARGIN > end:
        return False
    q = _prev_start(buf, pe)
    cp, n0 = class_at(buf, q, end, s1, s2)
    ca, n1 = class_at(buf, pe, end, s1, s2)
    if cp == CLS_SPACE and ca == CLS_SPACE:
        r = _run_end(buf, pe, end, s1, s2, 1 << CLS_SPACE)
        return r + MARGIN <= end
    if _cased_kind(kind) and _in(M_U, cp) and _in(M_U, ca):
        # The scanner read past pe only if `[U]*` ran to the end u of the U-run and backtracked to
        # pe, its last [Lm Lo M]: then [pe, u) is Lu/Lt only. A [Lm Lo M] after a Lu/Lt run from pe
        # rules that out (u would lie past it), so pe was decided with bounded look-ahead.
        r = _run_end(buf, pe, end, s1, s2, M_UPPER)
        if r < end:
            c, n = class_at(buf, r, end, s1, s2)
            if _in(M_B, c):
                return True
        return r + MARGIN <= end
    return True


@njit
def last_cut(buf, pos, end, lo, s1, s2):
    r"""The last position y in (pos, end) where every scanner's pieces before y are the pieces of
    buf[pos:y] read as a whole text, whatever follows; or pos if there is none. Two kinds:
    (a) a space (0x20) after a non-whitespace character; (b) a [^\s\p{L}\p{N}] character other than
    a mark, an apostrophe or '/' after a letter or digit. No piece of any of the three patterns
    contains such a pair, so y is a piece boundary in every continuation, and the character at y
    acts on the previous piece's scanner exactly as the end of the text does (it stops letter,
    digit, punctuation and U runs, is no CR/LF, '/', apostrophe or lowercase letter).
    `lo`: positions below it were examined by an earlier call with no cut found (whether y is a cut
    depends only on the characters at and before y, which are complete and never change)."""
    q = end - 1
    stop = pos
    if lo - 1 > stop:
        stop = lo - 1
    while q > stop:
        b = buf[q]
        if (b & 0xC0) != 0x80:
            if b == 0x20:
                p = _prev_start(buf, q)
                c, n = class_at(buf, p, end, s1, s2)
                if c != CLS_SPACE:
                    return q
            elif b != 0x27 and b != 0x2F:
                c, n = class_at(buf, q, end, s1, s2)
                if c == CLS_OTHER:
                    p = _prev_start(buf, q)
                    cp, n = class_at(buf, p, end, s1, s2)
                    if _in(M_L, cp) or cp == CLS_NUMBER:
                        return q
        q -= 1
    return pos


@njit
def live_bound(kind, buf, f, pe, end, s1, s2):
    """For a live (not final) piece scanned from f to pe: (is whitespace, K) where every future scan
    of this piece ends at or after K."""
    p = f
    last = f
    nl = i64(-1)
    while p < pe:
        c, n = class_at(buf, p, end, s1, s2)
        if c != CLS_SPACE:
            return False, pe
        last = p
        b = buf[p]
        p += n
        if b == 0x0A or b == 0x0D:
            nl = p
    # all whitespace: extend over the rest of the run in the buffer (the scanner's view)
    while p < end:
        c, n = class_at(buf, p, end, s1, s2)
        if c != CLS_SPACE:
            break
        last = p
        b = buf[p]
        p += n
        if b == 0x0A or b == 0x0D:
            nl = p
    if _crlf_kind(kind) and nl >= 0:
        k = nl
    else:
        k = last
    if k > pe:
        k = pe
    return True, k


# ------------------------------------------------------------------------------------ held runs


@njit
def _neutral_end(buf, p, end, blk, s1, s2):
    """End of the run from p of characters neutral to a block of kind `blk` (B_WS: whitespace other
    than CR and LF; B_UPPER: Lu, Lt)."""
    while p < end:
        c, n = class_at(buf, p, end, s1, s2)
        if blk == B_WS:
            b = buf[p]
            if c != CLS_SPACE or b == 0x0A or b == 0x0D:
                break
        elif not _in(M_UPPER, c):
            break
        p += n
    return p


@njit
def _block_kind(kind, buf, f, k, end, s1, s2):
    """B_* when the live piece scanned from f, with lower bound K = k, is held by a run that more
    neutral characters only extend; else B_NONE. Appending neutral characters then changes nothing:
    the piece stays not final, K stays, so no id becomes final and no state moves (the argument is
    in tltok_jit/streaming/encode.py, "Held runs"); `_advance_open` then only scans the new bytes."""
    if k <= f or k >= end:
        return B_NONE
    b = buf[k - 1]
    if _crlf_kind(kind) and (b == 0x0A or b == 0x0D):
        if _neutral_end(buf, k, end, B_WS, s1, s2) == end:
            return B_WS
        return B_NONE
    if _cased_kind(kind):
        c, n = class_at(buf, _prev_start(buf, k), end, s1, s2)
        if _in(M_U, c) and _neutral_end(buf, k, end, B_UPPER, s1, s2) == end:
            return B_UPPER
    return B_NONE


@njit(inline="always")
def _record_block(kind, buf, f, k, end, st, s1, s2):
    st[S_BLK] = _block_kind(kind, buf, f, k, end, s1, s2)
    st[S_BLKPIECE] = st[S_PIECE]
    st[S_BLKEND] = end


# ------------------------------------------------------------------------------------ long pieces


@njit
def _compat_slow(a, b, T, LW, vals):
    """Merge(bytes(a) + bytes(b)) == [a, b] by merging them, memoized."""
    key = (i64(a) << 32) | i64(b)
    keys = LW.memo_keys
    mask = len(keys) - 1
    s = _mix(key, mask)
    while True:
        k = keys[s]
        if k == key:
            return LW.memo_vals[s] == 1
        if k == -1:
            break
        s = (s + 1) & mask
    ok = merges_to_pair(a, b, T.tok_bytes, T.tok_offsets, T.byte_ids, T.pair_slots, T.rank_ids, LW.syms, vals)
    if LW.memo_count[0] * 2 >= len(keys):
        keys[:] = -1
        LW.memo_count[0] = 0
        s = _mix(key, mask)
    keys[s] = key
    LW.memo_vals[s] = 1 if ok else 2
    LW.memo_count[0] += 1
    return ok


@njit
def _extend_lam(buf, f, lo, hi, lam, lamlen, T, LT, LW, vals):
    """Compute lam/lamlen for positions lo+1..hi of the piece starting at f. Returns False if some
    position has no compatible candidate (impossible for a BPE merge table; guards the theory)."""
    maxlen = LT.max_len
    keys = LT.rt_keys
    rchild = LT.rt_child
    rtok = LT.rt_token
    reach = LT.reach
    fast = LT.fast != 0
    pk = T.pair_slots
    pvals = T.rank_ids
    crank = LT.crank
    split_l = LT.split_l
    split_r = LT.split_r
    cand_tok = LW.cand_tok
    cand_len = LW.cand_len
    mask = len(keys) - 1
    for i in range(lo + 1, hi + 1):
        node = 0
        nc = 0
        lim = i - f
        if lim > maxlen:
            lim = maxlen
        for k in range(1, lim + 1):
            key = i64(node) * 256 + i64(buf[i - k])
            s = _mix(key, mask)
            child = -1
            while True:
                kk = keys[s]
                if kk == key:
                    child = rchild[s]
                    break
                if kk == -1:
                    break
                s = (s + 1) & mask
            if child < 0:
                break
            node = child
            t = rtok[node]
            if t >= 0:
                cand_tok[nc] = t
                cand_len[nc] = k
                nc += 1
        found = False
        for c in range(nc - 1, -1, -1):
            t = cand_tok[c]
            k = cand_len[c]
            j = i - k
            if reach[t] == 0:
                continue
            if j == f:
                ok = True
            elif fast:
                ok = _compat_fast(lam[j], t, pk, pvals, crank, split_l, split_r, T.pair_bloom)
            else:
                ok = _compat_slow(lam[j], t, T, LW, vals)
            if ok:
                lam[i] = t
                lamlen[i] = k
                found = True
                break
        if not found:
            return False
    return True


@njit
def _emit_path(top, bottom, lam, lamlen, out, op):
    """Write the tokens on the path from node `top` down to node `bottom`, in text order."""
    cnt = 0
    q = top
    while q > bottom:
        cnt += 1
        q -= lamlen[q]
    q = top
    for k in range(cnt):
        out[op + cnt - 1 - k] = lam[q]
        q -= lamlen[q]
    return op + cnt


@njit
def _lca(lo, hi, lamlen, mark):
    """Lowest common ancestor of the nodes lo..hi (parent(i) = i - lamlen[i]); mark is zeroed scratch
    (left zeroed)."""
    cnt = 0
    for p in range(lo, hi + 1):
        mark[p] = 1
        cnt += 1
    p = hi
    while cnt > 1:
        if mark[p]:
            mark[p] = 0
            q = p - lamlen[p]
            if mark[q]:
                cnt -= 1
            else:
                mark[q] = 1
        p -= 1
    while mark[p] == 0:
        p -= 1
    mark[p] = 0
    return p


@njit
def _piece_type(kind, buf, f, k, ws, s1, s2):
    """Type of a long live piece [f, k) from its first character after the optional prefix."""
    if ws:
        return T_WS
    p = f
    c, n = class_at(buf, p, k, s1, s2)
    p += n
    c, n = class_at(buf, p, k, s1, s2)
    if _cased_kind(kind):
        if _in(M_WORD, c):
            return T_WORD
        if c == CLS_OTHER:
            return T_O
        return T_NONE
    if _in(M_L, c):
        return T_L
    if kind == PAT_GPT2 and c == CLS_NUMBER:
        return T_N
    if _in(M_O, c):
        return T_O
    return T_NONE


@njit
def _advance_anchor(kind, buf, st, k, s1, s2):
    """Move the resume anchor to the last valid anchor R (see the docstring of stream_encode.py)
    whose character and the next one end at or before k."""
    typ = st[S_TYPE]
    f = st[S_PIECE]
    q = st[S_ASCAN]
    seen_ll = st[S_SEENLL]
    seen_nl = st[S_SEENNL]
    anch = st[S_ANCH]
    wphase = st[S_WPHASE]
    while q < k:
        c, n = class_at(buf, q, k, s1, s2)
        q2 = q + n
        if q2 >= k:
            break
        c2, n2 = class_at(buf, q2, k, s1, s2)
        if q2 + n2 > k:
            break
        if q >= f + 8:
            ok = False
            if typ == T_WS:
                ok = c == CLS_SPACE and c2 == CLS_SPACE
            elif typ == T_L:
                ok = _in(M_L, c)
            elif typ == T_N:
                ok = c == CLS_NUMBER
            elif typ == T_O:
                if _cased_kind(kind):
                    ok = c == CLS_OTHER and c2 == CLS_OTHER and seen_nl == 0
                else:
                    ok = _in(M_O, c) and _in(M_O, c2) and seen_nl == 0
            elif typ == T_WORD:
                # never inside the contraction suffix: a scan from its letters is a new word. Before
                # the first Ll: any [U] (a mark is taken as the prefix, and the U-run after it still
                # holds the piece's last [Lm Lo M], which ends at or after k > q2). From the first Ll
                # on: any [W]; the piece is then resumed by _resume_end, not by a scan from q.
                ok = seen_nl == 0 and (c == CLS_LL or (_in(M_U, c) if seen_ll == 0 else _in(M_W, c)))
                if ok and (c == CLS_LL or seen_ll == 1):
                    wphase = 1
            if ok:
                anch = q
        if c == CLS_LL:
            seen_ll = 1
        b = buf[q]
        if b == 0x0A or b == 0x0D or (typ == T_WORD and q >= f + 1 and not _in(M_WORD, c)):
            seen_nl = 1
        q = q2
    st[S_ASCAN] = q
    st[S_SEENLL] = seen_ll
    st[S_SEENNL] = seen_nl
    st[S_ANCH] = anch
    st[S_WPHASE] = wphase


@njit
def _resume_end(kind, buf, st, end, s1, s2):
    """End of the live long piece for the text ending at `end`, scanned from its anchor.

    In the [W]+ phase of a cased word (S_WPHASE) the piece from its start F is `... [W]+` up to the
    end w of the [W] run, then the contraction at w. The run is extended from where the last call
    stopped (S_WSCAN), so a long run of marks is read once. A scan from the character before w gives
    the same end unless a Lu/Lt follows w (that scan would take it into a U-run): then the end is w
    (no contraction starts with a letter)."""
    a = st[S_ANCH]
    if st[S_WPHASE] == 0:
        return next_piece(kind, buf, a, end, s1, s2)
    p = st[S_WSCAN]
    if p < a:
        p = a
    w = _run_end(buf, p, end, s1, s2, M_W)
    st[S_WSCAN] = w
    if w < end:
        c, n = class_at(buf, w, end, s1, s2)
        if _in(M_UPPER, c):
            return w
    return next_piece(kind, buf, _prev_start(buf, w), end, s1, s2)


@njit
def _long_finish(buf, pe, st, lam, lamlen, T, LT, LW, vals, out, op):
    """The live long piece ends at pe: write the rest of its tokens."""
    f = st[S_PIECE]
    if pe < st[S_LAMEND]:
        st[S_ERR] = 2  # the piece ended before its lower bound K: a broken invariant, never silent
        return op
    if not _extend_lam(buf, f, st[S_LAMEND], pe, lam, lamlen, T, LT, LW, vals):
        st[S_ERR] = 1
        return op
    op = _emit_path(pe, st[S_EMIT], lam, lamlen, out, op)
    st[S_LONG] = 0
    st[S_PIECE] = pe
    return op


@njit
def _long_progress(kind, buf, k, st, lam, lamlen, mark, T, LT, LW, vals, out, op, s1, s2):
    """The live long piece extends at least to k: write the tokens that are now final."""
    if k < st[S_LAMEND]:
        k = st[S_LAMEND]
    f = st[S_PIECE]
    if not _extend_lam(buf, f, st[S_LAMEND], k, lam, lamlen, T, LT, LW, vals):
        st[S_ERR] = 1
        return op
    st[S_LAMEND] = k
    lo = k - LT.max_len + 1
    emit = st[S_EMIT]
    if lo > emit:
        top = _lca(lo, k, lamlen, mark)
        if top > emit:
            op = _emit_path(top, emit, lam, lamlen, out, op)
            st[S_EMIT] = top
    _advance_anchor(kind, buf, st, k, s1, s2)
    return op


# ------------------------------------------------------------------------------------ the step


@njit
def _encode_pieces(kind, buf, a, b, T, TP, drop, out, op, cache, vals, s1, s2):
    """Encode buf[a:b], a text whose pieces are final. drop[256] != 0: the bytes with drop[x] != 0
    are absent from the byte-level vocabulary; as `tokenizers` does, they are removed from each
    piece that has them, and every piece is merged on its own with TP (whole-piece tables)."""
    if drop[256] == 0:
        return encode_ordinary_span(buf, a, b, T, out, op, cache, 0, vals)
    # Each piece alone, as a whole piece (TP): re-scanning a run of them as a text of its own would
    # read its end as the end of the text, where `\s+(?!\S)` no longer backs off (`\r\n` before a
    # dropped byte is `\r`, `\n`; `\n\n` before `a` is `\n`, `\n`)
    p = a
    while p < b:
        pe = next_piece(kind, buf, p, b, s1, s2)
        m = 0
        for i in range(p, pe):
            if drop[buf[i]] != 0:
                m += 1
        if m == 0:
            op = encode_ordinary_span(buf, p, pe, TP, out, op, cache, 0, vals)
        elif m < pe - p:
            kept = np.empty(pe - p - m, dtype=np.uint8)
            j = 0
            for i in range(p, pe):
                if drop[buf[i]] == 0:
                    kept[j] = buf[i]
                    j += 1
            op = encode_ordinary_span(readonly(kept), 0, j, TP, out, op, cache, 0, vals)
        p = pe
    return op


@njit(inline="always")
def _close_segment(kind, buf, seg_end, st, lam, lamlen, T, TP, drop, LT, LW, out, op, cache, vals, s1, s2):
    """The ordinary text of the open segment ends at seg_end (an added token or the end of input)."""
    st[S_BLK] = B_NONE
    if st[S_LONG] == 1:
        pe = _resume_end(kind, buf, st, seg_end, s1, s2)
        op = _long_finish(buf, pe, st, lam, lamlen, T, LT, LW, vals, out, op)
        if st[S_ERR]:
            return op
    op = _encode_pieces(kind, buf, st[S_PIECE], seg_end, T, TP, drop, out, op, cache, vals, s1, s2)
    st[S_PIECE] = seg_end
    return op


@njit(inline="always")  # one caller: a kernel of its own is one more copy of the engine for LLVM
def _advance_open(kind, buf, end, st, lam, lamlen, mark, T, TP, drop, LT, LW, out, op, cache, vals, long_min,
                  s1, s2):
    """Write the settled pieces of the open segment, whose known text ends at `end`."""
    blk = st[S_BLK]
    if blk != B_NONE:
        st[S_BLK] = B_NONE
        if st[S_BLKPIECE] == st[S_PIECE] and st[S_BLKEND] <= end:
            if _neutral_end(buf, st[S_BLKEND], end, blk, s1, s2) == end:
                st[S_BLK] = blk  # the new text only extends the held run: nothing changes
                st[S_BLKEND] = end
                return op
    while True:
        if st[S_LONG] == 1:
            pe = _resume_end(kind, buf, st, end, s1, s2)
            if is_final(kind, buf, pe, end, s1, s2):
                op = _long_finish(buf, pe, st, lam, lamlen, T, LT, LW, vals, out, op)
                if st[S_ERR]:
                    return op
                continue
            if st[S_TYPE] == T_WS:
                ws, k = live_bound(kind, buf, st[S_ANCH], pe, end, s1, s2)
            else:
                k = pe
            st[S_HELD_K] = k
            f = st[S_ANCH]  # the scan's origin (_long_progress moves the anchor)
            op = _long_progress(kind, buf, k, st, lam, lamlen, mark, T, LT, LW, vals, out, op, s1, s2)
            _record_block(kind, buf, f, k, end, st, s1, s2)
            return op
        pos = st[S_PIECE]
        y = last_cut(buf, pos, end, st[S_CUTDONE], s1, s2)
        st[S_CUTDONE] = end
        if y > pos:
            op = _encode_pieces(kind, buf, pos, y, T, TP, drop, out, op, cache, vals, s1, s2)
            pos = y
        pe = pos
        while pos < end:
            pe = next_piece(kind, buf, pos, end, s1, s2)
            if not is_final(kind, buf, pe, end, s1, s2):
                break
            op = _encode_pieces(kind, buf, pos, pe, T, TP, drop, out, op, cache, vals, s1, s2)  # one piece
            pos = pe
        st[S_PIECE] = pos
        if pos >= end:
            st[S_HELD_K] = pos
            return op
        ws, k = live_bound(kind, buf, pos, pe, end, s1, s2)
        st[S_HELD_K] = k
        typ = T_NONE
        if k - pos >= long_min:
            typ = _piece_type(kind, buf, pos, k, ws, s1, s2)
        # a punctuation piece can hold a dropped byte (they are all [^\s\p{L}\p{N}]): never long then
        no_long = drop[256] != 0 and typ != T_WS and typ != T_L and typ != T_N
        if st[S_NOLONG] != 0 or k - pos < long_min or no_long:
            _record_block(kind, buf, pos, k, end, st, s1, s2)
            return op
        if LT.max_len == 0:
            st[S_WANTLONG] = 1  # the caller builds the tables and calls again
            return op
        # enter long mode for the live piece [pos, >= k)
        st[S_LONG] = 1
        st[S_ANCH] = pos
        st[S_EMIT] = pos
        st[S_LAMEND] = pos
        st[S_ASCAN] = pos
        st[S_SEENLL] = 0
        st[S_SEENNL] = 0
        st[S_WPHASE] = 0
        st[S_WSCAN] = pos
        st[S_TYPE] = typ


@njit
def stream_step(buf, n, st, T, TP, drop, allowed, any_allowed, hold, final, out, cache, vals,
                LT, LW, lam, lamlen, mark, long_min):
    """Process the pending bytes buf[0:n]; returns the number of ids written to out.

    `hold`: check for added tokens at all (some are allowed, or some must be refused); a possible
    start of one at the end of the text is held back. `final`: the text ends at n.
    """
    buf = readonly(buf)  # the held text is writable here, read-only to the encode kernels (one variant)
    kind = T.config[CFG_PATTERN]
    s1 = T.stage1
    s2 = T.stage2
    op = 0
    st[S_ERR] = 0
    st[S_WANTLONG] = 0
    i = st[S_SEG]
    safe_end = n
    if hold:
        trie = added_trie(T)
        root = trie[0]
        while i < n:
            if root[buf[i]] < 0:
                i += 1
                continue
            t, ln, pending = match_in_trie(buf, i, n, trie, allowed)
            if pending and not final:
                safe_end = i
                break
            if t < 0:
                i += 1
                continue
            op = _close_segment(kind, buf, i, st, lam, lamlen, T, TP, drop, LT, LW, out, op, cache, vals, s1, s2)
            if st[S_ERR]:
                return op
            out[op] = T.added_ids[t]
            op += 1
            i += ln
            st[S_PIECE] = i
    else:
        i = n
    st[S_SEG] = i
    if final:
        op = _close_segment(kind, buf, n, st, lam, lamlen, T, TP, drop, LT, LW, out, op, cache, vals, s1, s2)
        st[S_KEEP] = n
        st[S_HELD_K] = n
        return op
    op = _advance_open(kind, buf, safe_end, st, lam, lamlen, mark, T, TP, drop, LT, LW, out, op, cache, vals,
                       long_min, s1, s2)
    if st[S_LONG] == 1:
        keep = st[S_ANCH]
        if st[S_EMIT] < keep:
            keep = st[S_EMIT]
    else:
        keep = st[S_PIECE]
    st[S_KEEP] = keep
    return op
