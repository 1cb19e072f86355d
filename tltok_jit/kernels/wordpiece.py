r"""WordPiece kernels: BERT normalization, pre-tokenization and greedy longest-match-first, on UTF-8.

One pass over a text's bytes, as `tokenizers` runs a WordPiece tokenizer.json:

1. added tokens (matched on the raw text, leftmost then longest) cut the text into segments;
2. each character of a segment goes through BertNormalizer's steps in HF's order: clean_text (drop
   NUL, U+FFFD, control / format / private-use characters; whitespace -> ' '), Chinese characters
   spaced, accent stripping (NFD, canonical reordering of each run of non-starters, nonspacing marks
   dropped), then lowercase (one character may become several); or the NFD / StripAccents (combining
   marks dropped, before or after) / Lowercase normalizers;
3. the normalized characters are split into words on whitespace (modes PRE_BERT, PRE_WHITESPACE_SPLIT)
   and around each punctuation character (PRE_BERT, PRE_PUNCT), or into runs of \w and of [^\w\s]
   (PRE_WHITESPACE);
4. each word is cut greedily into the longest vocabulary token at each position (a `##`-prefixed
   one after the first), over a double-array trie; a word with more than `max_chars` characters, or
   with a position no token starts, is one `unk` id.

Tables (`tltok_jit.unicode.bert`, `build_double_array`) are validated where they are built; texts
are valid UTF-8 (the caller checks column rows). Every write is checked against its buffer: a kernel
that runs out of room returns NEED_OUT / NEED_PEND and the caller retries with more.
"""

from __future__ import annotations

import numpy as np

from ..unicode.bert import (CCC_SHIFT, DEC_SHIFT, ENTRY_MASK, F_CJK, F_COMB, F_DROP, F_MARK, F_PUNCT, F_RE_SPACE,
                            F_RE_WORD, F_SPACE, LOW_SHIFT, MAX_EXPAND)
from .jit import njit
from .utf8 import valid_utf8

__all__ = ["NEED_OUT", "NEED_PEND", "PRE_BERT", "PRE_NONE", "PRE_PUNCT", "PRE_WHITESPACE", "PRE_WHITESPACE_SPLIT", "ascii_table", "build_double_array",
           "compact", "encode_rows", "encode_text", "trie_lookup", "warm"]

NEED_OUT = -1   # the output buffer is full
NEED_PEND = -2  # a run of combining marks outgrew the reordering buffer

PRE_BERT = 0              # BertPreTokenizer: split on whitespace, isolate punctuation
PRE_WHITESPACE_SPLIT = 1  # WhitespaceSplit: split on whitespace only
PRE_NONE = 2              # no pre-tokenizer: a segment is one word
PRE_PUNCT = 3             # Punctuation (isolated): isolate punctuation only
PRE_WHITESPACE = 4        # Whitespace: the runs of \w+ and of [^\w\s]+

# ASCII classes (`ascii_table`)
A_DROP = 0
A_SPACE = 1
A_PUNCT = 2
A_WORD = 3
A_END = 4  # the segment ends (an added token or the text's end): the word ends
A_OTHER = 5  # PRE_WHITESPACE: neither \w nor \s (a word is a run of one of A_WORD, A_OTHER)

# option bits of `encode_text`
O_CLEAN = 1
O_CHINESE = 2
O_STRIP = 4        # BertNormalizer's accent stripping: NFD, then nonspacing marks dropped (before lowercase)
O_LOWER = 8
O_NFD = 16         # NFD alone (the NFD normalizer)
O_COMB_BEFORE = 32  # StripAccents before Lowercase: combining marks dropped
O_COMB_AFTER = 64   # StripAccents after Lowercase

_EMPTY = -1
_ROOT = -2


# ------------------------------------------------------------------ the vocabulary trie

@njit(cache=True)
def _grown(a, cap, fill):
    out = np.full(cap, fill, a.dtype)
    out[:len(a)] = a
    return out


@njit(cache=True)
def build_double_array(kbytes, koff, kroot, kval, n_roots):
    """A double-array trie of the keys kbytes[koff[i]:koff[i + 1]] under root kroot[i] (0..n_roots-1,
    slot r), ending in value kval[i]; keys sorted by (root, bytes), none empty, none repeated.
    Returns (base, check, value): the child of node s by byte b is t = base[s] + b when
    check[t] == s; value[t] >= 0 at a key's end. len(base) >= max(base) + 256 (checked by the caller).
    A node's children go to the first free slots that fit, found along a list of the free slots."""
    n_keys = len(kval)
    cap = max(1024, 2 * (koff[n_keys] - koff[0]) + 512)
    base = np.zeros(cap, np.int32)
    check = np.full(cap, _EMPTY, np.int32)
    value = np.full(cap, -1, np.int32)
    # the free slots, a doubly linked list in slot order
    nxt = np.arange(1, cap + 1, dtype=np.int64)
    prv = np.arange(-1, cap - 1, dtype=np.int64)
    nxt[cap - 1] = -1
    head = np.int64(n_roots)
    tail = np.int64(cap - 1)
    prv[n_roots] = -1
    for r in range(n_roots):
        check[r] = _ROOT
    stack = np.empty((n_keys + n_roots + 8, 4), np.int64)
    sp = 0
    lo = 0
    for r in range(n_roots):
        hi = lo
        while hi < n_keys and kroot[hi] == r:
            hi += 1
        stack[sp, 0] = r
        stack[sp, 1] = lo
        stack[sp, 2] = hi
        stack[sp, 3] = 0
        sp += 1
        lo = hi
    labels = np.empty(256, np.int64)
    starts = np.empty(257, np.int64)
    while sp > 0:
        sp -= 1
        node = stack[sp, 0]
        lo = stack[sp, 1]
        hi = stack[sp, 2]
        d = stack[sp, 3]
        if lo < hi and koff[lo + 1] - koff[lo] == d:
            value[node] = kval[lo]  # the key ending here sorts first
            lo += 1
        nl = 0
        for i in range(lo, hi):
            b = kbytes[koff[i] + d]
            if nl == 0 or labels[nl - 1] != b:
                labels[nl] = b
                starts[nl] = i
                nl += 1
        starts[nl] = hi
        if nl == 0:
            continue
        p = head
        while True:
            if p < 0 or p - labels[0] + 256 > cap:
                old = cap
                cap = 2 * cap
                base = _grown(base, cap, 0)
                check = _grown(check, cap, _EMPTY)
                value = _grown(value, cap, -1)
                nxt = _grown(nxt, cap, -1)
                prv = _grown(prv, cap, -1)
                for s in range(old, cap):
                    nxt[s] = s + 1 if s + 1 < cap else -1
                    prv[s] = s - 1
                if tail >= 0:
                    nxt[tail] = old
                    prv[old] = tail
                else:
                    head = old
                    prv[old] = -1
                tail = cap - 1
                if p < 0:
                    p = old
                continue
            b0 = p - labels[0]
            if b0 >= 0:
                ok = True
                for k in range(1, nl):
                    if check[b0 + labels[k]] != _EMPTY:
                        ok = False
                        break
                if ok:
                    break
            p = nxt[p]
        base[node] = b0
        for k in range(nl):
            t = b0 + labels[k]
            check[t] = node
            a = prv[t]
            c = nxt[t]
            if a >= 0:
                nxt[a] = c
            else:
                head = c
            if c >= 0:
                prv[c] = a
            else:
                tail = a
            stack[sp, 0] = t
            stack[sp, 1] = starts[k]
            stack[sp, 2] = starts[k + 1]
            stack[sp, 3] = d + 1
            sp += 1
    top = 0
    for s in range(cap):
        if check[s] != _EMPTY and base[s] > top:
            top = base[s]
    size = max(top + 256, n_roots + 256)
    if size > cap:
        base = _grown(base, size, 0)
        check = _grown(check, size, _EMPTY)
        value = _grown(value, size, -1)
    return base[:size].copy(), check[:size].copy(), value[:size].copy()


@njit(cache=True)
def trie_lookup(base, check, value, root, key):
    """The value of `key` under `root` (-1: absent); for tests and load-time checks."""
    node = root
    for i in range(len(key)):
        t = base[node] + key[i]
        if check[t] != node:
            return -1
        node = t
    return value[node]


# ------------------------------------------------------------------ encoding

@njit(cache=True)
def encode_text(buf, lo, hi, out, out_lo, out_cap, pend, word, s1, s2, seq, seq_off, base, check, value, root_a,
                root_b, unk, max_chars, pre_mode, opts, asc, add_first, add_bytes, add_off, add_ids):
    """The ids of the valid UTF-8 text buf[lo:hi] written to out[out_lo:out_cap]; returns their number,
    or NEED_OUT / NEED_PEND. `pend` (int64, >= 1) holds a run of non-starters being reordered; `word`
    (uint8) holds 4 * max_chars + 4 bytes. asc[b] is ASCII byte b's class under these options (A_*),
    asc[128 + b] the byte it becomes. Added token k is add_bytes[add_off[k]:add_off[k + 1]] with id
    add_ids[k]; add_first[b] is nonzero when one starts with byte b.

    Each step turns input into `stage` (code points after clean_text, Chinese spacing, NFD and
    reordering), then `norm` (after the mark filter and lowercase, each with its pre-tokenizer class
    in bits 32+), which one block consumes into words and ids. Everything is written out in this one
    function: a call passing the arrays costs more than a character's whole work."""
    cap = out_cap
    n = out_lo
    wlen = 0
    wchars = 0
    wkind = A_WORD  # the class of the word's characters (A_WORD, or A_OTHER in PRE_WHITESPACE)
    n_pend = 0
    n_add = len(add_ids)
    pcap = len(pend)
    # a step stages the marks held back plus one character's (3 with Chinese spacing) decompositions
    stage = np.empty(pcap + 3 * MAX_EXPAND + 4, np.int64)
    norm = np.empty(MAX_EXPAND * len(stage) + 1, np.int64)
    nfd = (opts & (O_STRIP | O_NFD)) != 0
    drop_before = np.uint64((F_MARK if opts & O_STRIP else 0) | (F_COMB if opts & O_COMB_BEFORE else 0))
    drop_after = np.uint64(F_COMB if opts & O_COMB_AFTER else 0)
    lower = (opts & O_LOWER) != 0
    i = lo
    while True:
        nk = 0
        ns = 0
        blen = 0
        add_id = -1
        seg_end = i >= hi
        if not seg_end:
            b = buf[i]
            if b < 0x80 and n_pend == 0 and add_first[b] == 0:
                # ASCII: one table lookup gives what the whole normalizer and pre-tokenizer do
                c = asc[b]
                i += 1
                if c == A_WORD and wkind == A_WORD:
                    if wchars < max_chars:
                        word[wlen] = asc[128 + b]
                        wlen += 1
                    wchars += 1
                    continue
                if c == A_DROP:
                    continue
                norm[0] = np.int64(asc[128 + b]) | (np.int64(c) << 32)
                nk = 1
            else:
                if add_first[b] != 0:
                    # an added token here (leftmost, then longest) ends the segment
                    for k in range(n_add):
                        a0 = add_off[k]
                        m = add_off[k + 1] - a0
                        if m <= blen or i + m > hi or add_bytes[a0] != b:
                            continue
                        same = True
                        for j in range(1, m):
                            if buf[i + j] != add_bytes[a0 + j]:
                                same = False
                                break
                        if same:
                            add_id = add_ids[k]
                            blen = m
                    seg_end = add_id >= 0
                if not seg_end:
                    # one character through clean_text and Chinese spacing into `stage`
                    if b < 0x80:
                        cp = np.int64(b)
                        i += 1
                    elif b < 0xE0:
                        cp = (np.int64(b & 0x1F) << 6) | (buf[i + 1] & 0x3F)
                        i += 2
                    elif b < 0xF0:
                        cp = (np.int64(b & 0x0F) << 12) | (np.int64(buf[i + 1] & 0x3F) << 6) | (buf[i + 2] & 0x3F)
                        i += 3
                    else:
                        cp = ((np.int64(b & 0x07) << 18) | (np.int64(buf[i + 1] & 0x3F) << 12)
                              | (np.int64(buf[i + 2] & 0x3F) << 6) | (buf[i + 3] & 0x3F))
                        i += 4
                    inf = s2[(np.int64(s1[cp >> 8]) << 8) | (cp & 255)]
                    if opts & O_CLEAN:
                        if inf & F_DROP:
                            continue
                        if inf & F_SPACE:
                            cp = 32
                    if (opts & O_CHINESE) and (inf & F_CJK):
                        nq = 3
                    else:
                        nq = 1
                    for qi in range(nq):
                        c = cp if (nq == 1 or qi == 1) else 32
                        if not nfd:
                            stage[ns] = c
                            ns += 1
                            continue
                        # NFD, then canonical ordering: non-starters wait in `pend` (sorted by class, stable)
                        ci = s2[(np.int64(s1[c >> 8]) << 8) | (c & 255)]
                        e = np.int64((ci >> np.uint64(DEC_SHIFT)) & np.uint64(ENTRY_MASK))
                        d0 = seq_off[e] if e != 0 else 0
                        d1 = seq_off[e + 1] if e != 0 else 1
                        for dk in range(d0, d1):
                            x = np.int64(seq[dk]) if e != 0 else c
                            xi = s2[(np.int64(s1[x >> 8]) << 8) | (x & 255)]
                            ccc = np.int64((xi >> np.uint64(CCC_SHIFT)) & np.uint64(255))
                            if ccc == 0:
                                for k in range(n_pend):
                                    stage[ns] = pend[k] & 0x1FFFFF
                                    ns += 1
                                n_pend = 0
                                stage[ns] = x
                                ns += 1
                            else:
                                if n_pend >= pcap:
                                    return NEED_PEND
                                key = (ccc << 21) | x
                                j = n_pend
                                while j > 0 and (pend[j - 1] >> 21) > ccc:
                                    pend[j] = pend[j - 1]
                                    j -= 1
                                pend[j] = key
                                n_pend += 1
        if seg_end:
            for k in range(n_pend):
                stage[ns] = pend[k] & 0x1FFFFF
                ns += 1
            n_pend = 0
        # stage -> norm: accent stripping's mark filter, lowercase, StripAccents after it, the
        # pre-tokenizer's class
        for si in range(ns):
            x = stage[si]
            xi = s2[(np.int64(s1[x >> 8]) << 8) | (x & 255)]
            if xi & drop_before:
                continue
            e = np.int64((xi >> np.uint64(LOW_SHIFT)) & np.uint64(ENTRY_MASK)) if lower else 0
            d0 = seq_off[e] if e != 0 else 0
            d1 = seq_off[e + 1] if e != 0 else 1
            for dk in range(d0, d1):
                y = np.int64(seq[dk]) if e != 0 else x
                yi = s2[(np.int64(s1[y >> 8]) << 8) | (y & 255)] if e != 0 else xi
                if yi & drop_after:
                    continue
                if pre_mode == PRE_WHITESPACE:
                    cls = A_SPACE if yi & F_RE_SPACE else (A_WORD if yi & F_RE_WORD else A_OTHER)
                elif (yi & F_SPACE) and (pre_mode == PRE_BERT or pre_mode == PRE_WHITESPACE_SPLIT):
                    cls = A_SPACE
                elif (yi & F_PUNCT) and (pre_mode == PRE_BERT or pre_mode == PRE_PUNCT):
                    cls = A_PUNCT
                else:
                    cls = A_WORD
                norm[nk] = y | (np.int64(cls) << 32)
                nk += 1
        if seg_end:
            norm[nk] = np.int64(A_END) << 32
            nk += 1
        # norm -> words -> ids
        for k in range(nk):
            y = norm[k] & 0x1FFFFF
            c = norm[k] >> 32
            if (c == A_WORD or c == A_OTHER) and (wchars == 0 or c == wkind):
                wkind = c
                if wchars < max_chars:
                    if y < 0x80:
                        word[wlen] = y
                        wlen += 1
                    elif y < 0x800:
                        word[wlen] = 0xC0 | (y >> 6)
                        word[wlen + 1] = 0x80 | (y & 63)
                        wlen += 2
                    elif y < 0x10000:
                        word[wlen] = 0xE0 | (y >> 12)
                        word[wlen + 1] = 0x80 | ((y >> 6) & 63)
                        word[wlen + 2] = 0x80 | (y & 63)
                        wlen += 3
                    else:
                        word[wlen] = 0xF0 | (y >> 18)
                        word[wlen + 1] = 0x80 | ((y >> 12) & 63)
                        word[wlen + 2] = 0x80 | ((y >> 6) & 63)
                        word[wlen + 3] = 0x80 | (y & 63)
                        wlen += 4
                wchars += 1
                continue
            # a space, the segment's end, a punctuation character or a change of run class ends the
            # word; a punctuation character is then a word of its own, a run character starts one
            for rep in range(2 if c != A_SPACE and c != A_END else 1):
                if rep == 1:
                    wlen = 0
                    if y < 0x80:
                        word[0] = y
                        wlen = 1
                    elif y < 0x800:
                        word[0] = 0xC0 | (y >> 6)
                        word[1] = 0x80 | (y & 63)
                        wlen = 2
                    elif y < 0x10000:
                        word[0] = 0xE0 | (y >> 12)
                        word[1] = 0x80 | ((y >> 6) & 63)
                        word[2] = 0x80 | (y & 63)
                        wlen = 3
                    else:
                        word[0] = 0xF0 | (y >> 18)
                        word[1] = 0x80 | ((y >> 12) & 63)
                        word[2] = 0x80 | ((y >> 6) & 63)
                        word[3] = 0x80 | (y & 63)
                        wlen = 4
                    wchars = 1
                    if c != A_PUNCT:  # the first character of the next run: kept, not a word yet
                        wkind = c
                        break
                if wchars == 0:
                    continue
                if wchars > max_chars:
                    if n >= cap:
                        return NEED_OUT
                    out[n] = unk
                    n += 1
                else:
                    # greedy longest match first: the longest token at `start`, then a continuation
                    n0 = n
                    start = 0
                    root = root_a
                    while start < wlen:
                        node = root
                        best = -1
                        bid = -1
                        j = start
                        while j < wlen:
                            t = base[node] + word[j]
                            if check[t] != node:
                                break
                            node = t
                            v = value[t]
                            if v >= 0:
                                best = j + 1
                                bid = v
                            j += 1
                        if best < 0:  # no token starts here: the whole word is unk
                            n = n0
                            bid = unk
                            start = wlen
                        else:
                            start = best
                        if n >= cap:
                            return NEED_OUT
                        out[n] = bid
                        n += 1
                        root = root_b
                wlen = 0
                wchars = 0
        if seg_end:
            if i >= hi:
                break
            if n >= cap:
                return NEED_OUT
            out[n] = add_id
            n += 1
            i += blen
    return n - out_lo


@njit(cache=True)
def encode_rows(row_lo, row_hi, bufs, rbuf, rstart, rlen, valid, ro, out, counts, status, pend, word, s1, s2, seq,
                seq_off, base, check, value, root_a, root_b, unk, max_chars, pre_mode, opts, asc, add_first, add_bytes,
                add_off, add_ids):
    """Rows row_lo..row_hi-1 of a text column: row r's ids at out[ro[r]:ro[r + 1]] (its region), their
    number in counts[r]; status[r] = 0, or 1 (not valid UTF-8), 2 (the region or `pend` is too small):
    such rows are left to the caller. `pend` and `word` are this worker's."""
    for r in range(row_lo, row_hi):
        counts[r] = 0
        status[r] = 0
        if not valid[r]:
            continue
        data = bufs[rbuf[r]]
        s = rstart[r]
        e = s + rlen[r]
        if not valid_utf8(data, s, e):
            status[r] = 1
            continue
        k = encode_text(data, s, e, out, ro[r], ro[r + 1], pend, word, s1, s2, seq, seq_off, base, check, value,
                        root_a, root_b, unk, max_chars, pre_mode, opts, asc, add_first, add_bytes, add_off, add_ids)
        if k < 0:
            status[r] = 2
        else:
            counts[r] = k


@njit(cache=True)
def compact(out, ro, counts, new_off):
    """Move each row's ids from its region out[ro[r]:] to the front, back to back; new_off gets the
    row offsets (len(counts) + 1); returns the number of ids."""
    n = len(counts)
    w = 0
    new_off[0] = 0
    for r in range(n):
        s = ro[r]
        c = counts[r]
        if s != w:
            for k in range(c):
                out[w + k] = out[s + k]
        w += c
        new_off[r + 1] = w
    return w


def ascii_table(s1, s2, pre_mode: int, opts: int) -> np.ndarray:
    """asc for `encode_text`: ASCII byte b's class (A_*) at [b] and the byte it becomes at [128 + b]."""
    asc = np.empty(256, np.uint8)
    for b in range(128):
        f = int(s2[int(s1[0]) * 256 + b])
        out = b
        if (opts & O_CLEAN) and (f & F_DROP):
            cls = A_DROP
        else:
            if (opts & O_CLEAN) and (f & F_SPACE):
                out = 32
                f = int(s2[int(s1[0]) * 256 + 32])
            if pre_mode == PRE_WHITESPACE:
                cls = A_SPACE if f & F_RE_SPACE else (A_WORD if f & F_RE_WORD else A_OTHER)
            elif (f & F_SPACE) and pre_mode in (PRE_BERT, PRE_WHITESPACE_SPLIT):
                cls = A_SPACE
            elif (f & F_PUNCT) and pre_mode in (PRE_BERT, PRE_PUNCT):
                cls = A_PUNCT
            else:
                cls = A_WORD
            if (opts & O_LOWER) and ord("A") <= out <= ord("Z"):
                out += 32
        asc[b] = cls
        asc[128 + b] = out
    asc.flags.writeable = False
    return asc


def _ro(a: np.ndarray) -> np.ndarray:
    """A read-only view (the kernels are compiled for read-only tables and inputs)."""
    a = np.ascontiguousarray(a).view()
    a.flags.writeable = False
    return a


def warm() -> None:
    """Compile (or load) every kernel here once, with the argument types production passes: tables,
    texts and row arrays read-only; outputs and scratch writable; scalars int64."""
    from numba.typed import List as TypedList

    from ..unicode.bert import bert_tables

    t = bert_tables()
    keys = sorted([(0, b"a", 0), (0, b"ab", 1), (0, b"[UNK]", 2), (1, b"b", 3)])
    kb = _ro(np.frombuffer(b"".join(k[1] for k in keys), np.uint8))
    koff = _ro(np.cumsum([0] + [len(k[1]) for k in keys]).astype(np.int64))
    base, check, value = build_double_array(kb, koff, _ro(np.array([k[0] for k in keys], np.int64)),
                                            _ro(np.array([k[2] for k in keys], np.int64)), np.int64(2))
    base, check, value = _ro(base), _ro(check), _ro(value)
    trie_lookup(base, check, value, np.int64(0), _ro(np.frombuffer(b"ab", np.uint8)))
    add = (_ro(np.zeros(256, np.uint8)), _ro(np.zeros(1, np.uint8)), _ro(np.zeros(1, np.int64)),
           _ro(np.zeros(0, np.int64)))
    opts = O_CLEAN | O_CHINESE | O_STRIP | O_LOWER
    kargs = (t.stage1, t.stage2, t.seq, t.seq_off, base, check, value, np.int64(0), np.int64(1), np.int64(2),
             np.int64(100), np.int64(PRE_BERT), np.int64(opts), ascii_table(t.stage1, t.stage2, PRE_BERT, opts), *add)
    data = _ro(np.frombuffer("ab, Abé 中".encode("utf-8"), np.uint8))
    pend = np.empty(8, np.int64)
    word = np.empty(408, np.uint8)
    out = np.empty(len(data) + 16, np.uint32)
    encode_text(data, np.int64(0), np.int64(len(data)), out, np.int64(0), np.int64(len(out)), pend, word, *kargs)
    bufs = TypedList()
    bufs.append(data)
    n = 2
    ro = np.array([0, len(data) + 8, 2 * len(data) + 16], np.int64)
    counts = np.empty(n, np.int64)
    out2 = np.empty(ro[-1], np.uint32)
    encode_rows(np.int64(0), np.int64(n), bufs, _ro(np.zeros(n, np.int64)), _ro(np.zeros(n, np.int64)),
                _ro(np.full(n, len(data), np.int64)), _ro(np.ones(n, np.bool_)), _ro(ro), out2, counts,
                np.empty(n, np.uint8), pend, word, *kargs)
    compact(out2, ro, counts, np.empty(n + 1, np.int64))
