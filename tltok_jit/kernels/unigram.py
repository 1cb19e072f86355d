"""Unigram tokenizer.json kernels: added tokens, normalizer, pre-tokenizer and Viterbi over UTF-8.

Each step follows `tokenizers` 0.23.3: `AddedVocabulary` (leftmost, then longest match on the raw
text), the normalizers `Precompiled` (`spm_precompiled::Precompiled::normalize`: per extended
grapheme cluster, a cluster under 6 bytes replaced whole by the *first* (shortest) charsmap key
that prefixes it, else each character by its own), `Lowercase`, `Strip`, `Replace`, the
pre-tokenizers `WhitespaceSplit` and `Metaspace`, then `Unigram::encode_optimized` (path scores in
f64, a later candidate wins only when strictly better, consecutive unknowns fused) and
`Unigram::tokenize` (a fused unknown run looked up whole, then its bytes as `<0xXX>` pieces when
every one exists, else the unknown id).

The tables come from `tltok_jit.kinds.unigram`, which validates what is indexed here without a
bounds check (the vocabulary trie, the Unicode tables); reads of the charsmap's double array and
replacement strings come from the file and are bounds-checked. Text is valid UTF-8 (rows are
checked before they come here).
"""

from __future__ import annotations

import numpy as np

from .jit import njit
from .utf8 import valid_utf8

NEED_WORK = -1     # out or a text buffer (wa, wb, wm) is too small: grow them and call again
ERR_NO_UNK = -2    # an unknown character and the model has no unk_id (tokenizers raises)
NEED_LATTICE = -3  # a piece is longer than the Viterbi arrays: grow them and call again

# normalizer step kinds
S_PRECOMPILED = 0
S_LOWER = 1
S_STRIP = 2
S_REPLACE = 3
S_RUNS = 4       # Replace with a Regex run of one character: step_arg = pair index | (least run << 20)

# Metaspace prepend schemes
P_ALWAYS = 0
P_FIRST = 1
P_NEVER = 2

F_SPACE = 2             # unicode.bert: whitespace (Rust's char::is_whitespace)
LOW_SHIFT = 36          # unicode.bert: the lowercase entry
ENTRY_MASK = (1 << 20) - 1

# unicode.graphemes
G_OTHER, G_CR, G_LF, G_CONTROL, G_EXTEND, G_ZWJ, G_RI, G_PREPEND, G_SPACINGMARK, G_L, G_V, G_T, G_LV, G_LVT = range(14)
F_EXTPICT = 16
INCB_LINKER, INCB_CONSONANT, INCB_EXTEND = 1, 2, 3


@njit(inline="always")
def _clen(b):
    if b < 0x80:
        return 1
    if b < 0xE0:
        return 2
    if b < 0xF0:
        return 3
    return 4


@njit(inline="always")
def _cp(buf, i, n):
    """The code point at buf[i] (UTF-8; a truncated sequence reads what is there)."""
    b = np.int64(buf[i])
    if b < 0x80:
        return b
    if b < 0xE0:
        if i + 1 >= n:
            return b
        return ((b & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F)
    if b < 0xF0:
        if i + 2 >= n:
            return b
        return ((b & 0x0F) << 12) | ((np.int64(buf[i + 1]) & 0x3F) << 6) | (np.int64(buf[i + 2]) & 0x3F)
    if i + 3 >= n:
        return b
    return (((b & 0x07) << 18) | ((np.int64(buf[i + 1]) & 0x3F) << 12) | ((np.int64(buf[i + 2]) & 0x3F) << 6)
            | (np.int64(buf[i + 3]) & 0x3F)) & 0x1FFFFF


@njit(inline="always")
def _put_cp(dst, n, cp):
    """Append code point cp as UTF-8 at dst[n]; the new length, or -1 when dst is full."""
    cap = dst.shape[0]
    if cp < 0x80:
        if n + 1 > cap:
            return -1
        dst[n] = cp
        return n + 1
    if cp < 0x800:
        if n + 2 > cap:
            return -1
        dst[n] = 0xC0 | (cp >> 6)
        dst[n + 1] = 0x80 | (cp & 0x3F)
        return n + 2
    if cp < 0x10000:
        if n + 3 > cap:
            return -1
        dst[n] = 0xE0 | (cp >> 12)
        dst[n + 1] = 0x80 | ((cp >> 6) & 0x3F)
        dst[n + 2] = 0x80 | (cp & 0x3F)
        return n + 3
    if n + 4 > cap:
        return -1
    dst[n] = 0xF0 | (cp >> 18)
    dst[n + 1] = 0x80 | ((cp >> 12) & 0x3F)
    dst[n + 2] = 0x80 | ((cp >> 6) & 0x3F)
    dst[n + 3] = 0x80 | (cp & 0x3F)
    return n + 4


@njit(inline="always")
def _info(s1, s2, cp):
    if cp >= 0x110000:
        return s2[0] & 0
    return s2[(np.int64(s1[cp >> 8]) << 8) | (cp & 255)]


# ------------------------------------------------------------------ grapheme clusters
@njit
def grapheme_end(src, p, n, g1, g2):
    """The end of the extended grapheme cluster starting at src[p] (UAX #29, GB3-GB999 with GB9c)."""
    c = _cp(src, p, n)
    prop = np.int64(_info(g1, g2, c))
    prev = prop & 15
    i = p + _clen(src[p])
    ri = 1 if prev == G_RI else 0
    emo = 1 if prop & F_EXTPICT else 0            # 1: ExtPict Extend*, 2: ... ZWJ
    incb = 1 if (prop >> 5) == INCB_CONSONANT else 0  # 1: consonant [extend|linker]*, 2: a linker seen
    while i < n:
        c = _cp(src, i, n)
        prop = np.int64(_info(g1, g2, c))
        cur = prop & 15
        cb = prop >> 5
        join = False
        if prev == G_CR and cur == G_LF:
            join = True
        elif prev == G_CR or prev == G_LF or prev == G_CONTROL:
            join = False
        elif cur == G_CR or cur == G_LF or cur == G_CONTROL:
            join = False
        elif prev == G_L and (cur == G_L or cur == G_V or cur == G_LV or cur == G_LVT):
            join = True
        elif (prev == G_LV or prev == G_V) and (cur == G_V or cur == G_T):
            join = True
        elif (prev == G_LVT or prev == G_T) and cur == G_T:
            join = True
        elif cur == G_EXTEND or cur == G_ZWJ or cur == G_SPACINGMARK or prev == G_PREPEND:
            join = True
        elif cb == INCB_CONSONANT and incb == 2:
            join = True
        elif prev == G_ZWJ and emo == 2 and (prop & F_EXTPICT):
            join = True
        elif prev == G_RI and cur == G_RI and (ri & 1) == 1:
            join = True
        if not join:
            return i
        ri = ri + 1 if cur == G_RI else 0
        if prop & F_EXTPICT:
            emo = 1
        elif cur == G_EXTEND and emo == 1:
            emo = 1
        elif cur == G_ZWJ and emo == 1:
            emo = 2
        else:
            emo = 0
        if cb == INCB_CONSONANT:
            incb = 1
        elif cb == INCB_LINKER and incb >= 1:
            incb = 2
        elif cb == INCB_EXTEND and incb >= 1:
            pass
        else:
            incb = 0
        prev = cur
        i += _clen(src[i])
    return n


# ------------------------------------------------------------------ normalizer steps
@njit(inline="always")
def _darts_first(units, key, lo, hi):
    """spm_precompiled's DoubleArray::common_prefix_search(key)[0]: the value of the shortest key of
    the charsmap prefixing key[lo:hi] (a NUL byte ends the key), or -1. Bounds-checked."""
    n_units = units.shape[0]
    if n_units == 0:
        return -1
    u = np.int64(units[0])
    node = (u >> 10) << ((u & (1 << 9)) >> 6)
    for i in range(lo, hi):
        c = np.int64(key[i])
        if c == 0:
            return -1
        node ^= c
        if node < 0 or node >= n_units:
            return -1
        u = np.int64(units[node])
        if (u & (0x80000000 | 0xFF)) != c:
            return -1
        node ^= (u >> 10) << ((u & (1 << 9)) >> 6)
        if node < 0 or node >= n_units:
            return -1
        if (u >> 8) & 1:
            return np.int64(units[node]) & 0x7FFFFFFF
    return -1


@njit(inline="always")
def _put_repl(dst, n, repl, v):
    """Append the NUL-terminated replacement at repl[v:]; the new length, or -1 when dst is full."""
    m = repl.shape[0]
    cap = dst.shape[0]
    j = v
    while j < m and repl[j] != 0:
        if n >= cap:
            return -1
        dst[n] = repl[j]
        n += 1
        j += 1
    return n


@njit
def precompiled(src, n, dst, units, repl, g1, g2):
    """Precompiled::normalize of src[:n] into dst; the length, or -1 when dst is full. The second
    value: whether dst's first character comes from src's first cluster (its original offset 0)."""
    p = 0
    k = 0
    lead = True
    # each ASCII byte's own lookup, once per call (a one-byte cluster is looked up alone)
    asc = np.empty(128, np.int64)
    one = np.empty(1, np.uint8)
    for c in range(128):
        one[0] = c
        asc[c] = _darts_first(units, one, 0, 1)
    while p < n:
        b = src[p]
        k0 = k
        if b < 0x80 and b != 13 and (p + 1 >= n or src[p + 1] < 0x80):
            # no ASCII character but CR joins a following ASCII one (GB3): a one-byte cluster
            v = asc[b]
            if v >= 0:
                k = _put_repl(dst, k, repl, v)
                if k < 0:
                    return -1, lead
            else:
                if k >= dst.shape[0]:
                    return -1, lead
                dst[k] = b
                k += 1
            if p == 0 and k == k0:
                lead = False
            p += 1
            continue
        g = grapheme_end(src, p, n, g1, g2)
        done = False
        if g - p == _clen(b):  # one character: the cluster lookup is the character's
            v = _darts_first(units, src, p, g)
            if v >= 0:
                k = _put_repl(dst, k, repl, v)
                if k < 0:
                    return -1, lead
            else:
                if k + (g - p) > dst.shape[0]:
                    return -1, lead
                for j in range(g - p):
                    dst[k + j] = src[p + j]
                k += g - p
            done = True
        elif g - p < 6:
            v = _darts_first(units, src, p, g)
            if v >= 0:
                k = _put_repl(dst, k, repl, v)
                if k < 0:
                    return -1, lead
                done = True
        if not done:
            q = p
            while q < g:
                cl = min(_clen(src[q]), g - q)
                v = _darts_first(units, src, q, q + cl)
                if v >= 0:
                    k = _put_repl(dst, k, repl, v)
                    if k < 0:
                        return -1, lead
                else:
                    if k + cl > dst.shape[0]:
                        return -1, lead
                    for j in range(cl):
                        dst[k + j] = src[q + j]
                    k += cl
                q += cl
        if p == 0 and k == k0:
            lead = False
        p = g
    return k, lead


@njit
def lowercase(src, n, dst, s1, s2, seq, seq_off):
    """NormalizedString::lowercase (char::to_lowercase of each character) of src[:n] into dst."""
    i = 0
    k = 0
    while i < n:
        cl = _clen(src[i])
        if cl == 1:
            b = src[i]
            if k >= dst.shape[0]:
                return -1
            dst[k] = b + 32 if 65 <= b <= 90 else b
            k += 1
            i += 1
            continue
        cp = _cp(src, i, n)
        e = (np.int64(_info(s1, s2, cp)) >> LOW_SHIFT) & ENTRY_MASK
        if e == 0:
            if k + cl > dst.shape[0]:
                return -1
            for j in range(cl):
                dst[k + j] = src[i + j]
            k += cl
        else:
            for j in range(seq_off[e], seq_off[e + 1]):
                k = _put_cp(dst, k, np.int64(seq[j]))
                if k < 0:
                    return -1
        i += cl
    return k


@njit(inline="always")
def _is_space(src, i, n, s1, s2):
    b = src[i]
    if b < 0x80:
        return b == 32 or (9 <= b <= 13)
    return (np.int64(_info(s1, s2, _cp(src, i, n))) & F_SPACE) != 0


@njit
def strip(src, n, dst, left, right, s1, s2):
    """NormalizedString::strip_left / strip_right (char::is_whitespace) of src[:n] into dst; the
    length and whether the first character was kept."""
    a = 0
    if left:
        while a < n and _is_space(src, a, n, s1, s2):
            a += _clen(src[a])
    b = n
    if right:
        while b > a:
            j = b - 1
            while j > a and (src[j] & 0xC0) == 0x80:
                j -= 1
            if not _is_space(src, j, n, s1, s2):
                break
            b = j
    if b - a > dst.shape[0]:
        return -1, a == 0
    for j in range(b - a):
        dst[j] = src[a + j]
    return b - a, a == 0


@njit
def replace(src, n, dst, pat, plo, phi, con, clo, chi):
    """Every non-overlapping occurrence (left to right) of pat[plo:phi] in src[:n] replaced by
    con[clo:chi], into dst; the length and whether the first character was kept (a match at 0
    replaced by "" is not)."""
    m = phi - plo
    k = 0
    i = 0
    lead = True
    while i < n:
        hit = i + m <= n
        if hit:
            for j in range(m):
                if src[i + j] != pat[plo + j]:
                    hit = False
                    break
        if hit:
            if i == 0 and chi == clo:
                lead = False
            if k + (chi - clo) > dst.shape[0]:
                return -1, lead
            for j in range(chi - clo):
                dst[k + j] = con[clo + j]
            k += chi - clo
            i += m
        else:
            if k >= dst.shape[0]:
                return -1, lead
            dst[k] = src[i]
            k += 1
            i += 1
    return k, lead


@njit
def replace_runs(src, n, dst, pat, plo, phi, least, con, clo, chi):
    """Every run of at least `least` copies of the character pat[plo:phi] in src[:n] replaced by
    con[clo:chi] (the regex `c{least,}`, greedy, left to right), into dst; the length and whether
    the first character was kept."""
    m = phi - plo
    k = 0
    i = 0
    lead = True
    while i < n:
        r = i
        while r + m <= n:
            same = True
            for j in range(m):
                if src[r + j] != pat[plo + j]:
                    same = False
                    break
            if not same:
                break
            r += m
        if r > i and (r - i) // m >= least:
            if i == 0 and chi == clo:
                lead = False
            if k + (chi - clo) > dst.shape[0]:
                return -1, lead
            for j in range(chi - clo):
                dst[k + j] = con[clo + j]
            k += chi - clo
            i = r
        else:
            stop = r if r > i else i + _clen(src[i])
            if k + (stop - i) > dst.shape[0]:
                return -1, lead
            for j in range(stop - i):
                dst[k + j] = src[i + j]
            k += stop - i
            i = stop
    return k, lead


# ------------------------------------------------------------------ the model
@njit(inline="always")
def _lookup(base, check, value, buf, lo, hi):
    """The piece id of buf[lo:hi] exactly, or -1."""
    node = 0
    for i in range(lo, hi):
        t = base[node] + buf[i]
        if check[t] != node:
            return -1
        node = t
    return value[node]


@njit
def viterbi(buf, lo, hi, out, n, base, check, value, scores, unk_id, unk_score, byte_fallback, byte_ids, best,
            starts, nodes, ends):
    """Unigram::encode_optimized + tokenize of buf[lo:hi] (non-empty), ids appended at out[n]; the
    new count, NEED_WORK when out is short, NEED_LATTICE when the work arrays are, ERR_NO_UNK."""
    size = hi - lo
    if best.shape[0] < size + 1:
        return NEED_LATTICE
    for i in range(size + 1):
        best[i] = 0.0
        starts[i] = -1
        nodes[i] = -1
    s = 0
    while s < size:
        till = best[s]
        single = False
        mblen = min(_clen(buf[lo + s]), size - s)
        node = 0
        p = s
        while p < size:
            t = base[node] + buf[lo + p]
            if check[t] != node:
                break
            node = t
            p += 1
            v = value[node]
            if v < 0:
                continue
            cand = scores[v] + till
            if starts[p] == -1 or cand > best[p]:
                best[p] = cand
                starts[p] = s
                nodes[p] = v
            if p - s == mblen:
                single = True
        if not single:
            if unk_id < 0:
                return ERR_NO_UNK
            t = s + mblen
            cand = unk_score + till
            if starts[t] == -1 or cand > best[t]:
                best[t] = cand
                starts[t] = s
                nodes[t] = unk_id
        s += mblen
    m = 0
    e = size
    while e > 0:
        ends[m] = e
        m += 1
        e = starts[e]
    cap = out.shape[0]
    k = m - 1
    while k >= 0:
        stop = ends[k]
        begin = starts[stop]
        pid = nodes[stop]
        if pid != unk_id or unk_id < 0:
            if n >= cap:
                return NEED_WORK
            out[n] = pid
            n += 1
            k -= 1
            continue
        # a run of unknown pieces, fused
        while k > 0 and nodes[ends[k - 1]] == unk_id:
            k -= 1
            stop = ends[k]
        k -= 1
        pid = _lookup(base, check, value, buf, lo + begin, lo + stop)
        if pid < 0 and byte_fallback:
            ok = True
            for j in range(lo + begin, lo + stop):
                if byte_ids[buf[j]] < 0:
                    ok = False
                    break
            if ok:
                if n + (stop - begin) > cap:
                    return NEED_WORK
                for j in range(lo + begin, lo + stop):
                    out[n] = byte_ids[buf[j]]
                    n += 1
                continue
        if n >= cap:
            return NEED_WORK
        out[n] = pid if pid >= 0 else unk_id
        n += 1
    return n


# ------------------------------------------------------------------ one text
@njit
def _normalize(buf, lo, hi, wa, wb, steps, step_arg, units, repl, s1, s2, seq, seq_off, g1, g2, rep_bytes, rep_off):
    """The normalizer steps over buf[lo:hi]: (length, lead) with the result in wa; length -1 when a
    work buffer is short. lead: the first character comes from the text's first one."""
    n = hi - lo
    if n > wa.shape[0]:
        return -1, True
    for j in range(n):
        wa[j] = buf[lo + j]
    lead = True
    for k in range(steps.shape[0]):
        kind = steps[k]
        a = step_arg[k]
        ld = True
        if kind == S_PRECOMPILED:
            m, ld = precompiled(wa, n, wb, units, repl, g1, g2)
        elif kind == S_LOWER:
            m = lowercase(wa, n, wb, s1, s2, seq, seq_off)
        elif kind == S_STRIP:
            m, ld = strip(wa, n, wb, (a & 1) != 0, (a & 2) != 0, s1, s2)
        elif kind == S_REPLACE:
            m, ld = replace(wa, n, wb, rep_bytes, rep_off[2 * a], rep_off[2 * a + 1], rep_bytes,
                            rep_off[2 * a + 1], rep_off[2 * a + 2])
        else:
            q = a & ((1 << 20) - 1)
            m, ld = replace_runs(wa, n, wb, rep_bytes, rep_off[2 * q], rep_off[2 * q + 1], a >> 20, rep_bytes,
                                 rep_off[2 * q + 1], rep_off[2 * q + 2])
        if m < 0:
            return -1, True
        lead = lead and ld
        for j in range(m):
            wa[j] = wb[j]
        n = m
    return n, lead


@njit
def encode_text(buf, lo, hi, out, out_lo, first, wa, wb, wm, best, starts, nodes, ends, base, check, value, scores,
                unk_id, unk_score, byte_fallback, byte_ids, steps, step_arg, units, repl, s1, s2, seq, seq_off, g1,
                g2, rep_bytes, rep_off, ws_split, meta, meta_rep, scheme, msplit, add_first, add_bytes, add_off,
                add_ids):
    """The ids of the valid UTF-8 text buf[lo:hi] written from out[out_lo]; returns their number, or
    NEED_WORK / NEED_LATTICE (grow them) or ERR_NO_UNK. `first`: buf[lo] is the text's offset 0
    (Metaspace's First scheme). wa, wb: uint8 buffers for the normalized text, wm for one
    pre-tokenized word; best float64, starts / nodes / ends int64 arrays of one length, at least
    the longest piece's + 1."""
    n = out_lo
    n_add = add_ids.shape[0]
    rl = meta_rep.shape[0]
    seg = lo
    while seg <= hi:
        # the next added token at or after seg (leftmost, then longest); add_ids[t] holds the id in
        # its low 32 bits, lstrip / rstrip in bits 40 / 41
        add_id = -1
        aflags = 0
        alen = 0
        j = seg
        while j < hi:
            b = buf[j]
            if add_first[b] != 0:
                for t in range(n_add):
                    a0 = add_off[t]
                    m = add_off[t + 1] - a0
                    if m <= alen or j + m > hi or add_bytes[a0] != b:
                        continue
                    same = True
                    for q in range(1, m):
                        if buf[j + q] != add_bytes[a0 + q]:
                            same = False
                            break
                    if same:
                        add_id = add_ids[t] & 0xFFFFFFFF
                        aflags = add_ids[t] >> 40
                        alen = m
                if add_id >= 0:
                    break
            j += 1
        seg_end = j
        nxt = j + alen
        if add_id >= 0:
            if aflags & 1:  # lstrip: the token takes the whitespace before it (within this segment)
                while seg_end > seg:
                    q = seg_end - 1
                    while q > seg and (buf[q] & 0xC0) == 0x80:
                        q -= 1
                    if not _is_space(buf, q, hi, s1, s2):
                        break
                    seg_end = q
            if aflags & 2:  # rstrip: and the whitespace after it
                while nxt < hi and _is_space(buf, nxt, hi, s1, s2):
                    nxt += _clen(buf[nxt])
        if seg_end > seg:
            nl, lead = _normalize(buf, seg, seg_end, wa, wb, steps, step_arg, units, repl, s1, s2, seq, seq_off,
                                  g1, g2, rep_bytes, rep_off)
            if nl < 0:
                return NEED_WORK
            at_zero = seg == lo and lead and first != 0
            w = 0
            while w < nl:
                # one word: up to the next whitespace with WhitespaceSplit, else the whole text
                if ws_split:
                    while w < nl and _is_space(wa, w, nl, s1, s2):
                        w += _clen(wa[w])
                    if w >= nl:
                        break
                    we = w
                    while we < nl and not _is_space(wa, we, nl, s1, s2):
                        we += _clen(wa[we])
                else:
                    we = nl
                if not meta:
                    n = viterbi(wa, w, we, out, n, base, check, value, scores, unk_id, unk_score, byte_fallback,
                                byte_ids, best, starts, nodes, ends)
                    if n < 0:
                        return n
                    w = we
                    continue
                # Metaspace: ' ' -> the replacement, prepended by the scheme, split before each one
                mm = 0
                starts_rep = we - w >= rl
                if starts_rep:
                    for q in range(rl):
                        if wa[w + q] != meta_rep[q]:
                            starts_rep = False
                            break
                if wa[w] == 32:
                    starts_rep = True
                if not starts_rep and (scheme == P_ALWAYS or (scheme == P_FIRST and at_zero and w == 0)):
                    if rl > wm.shape[0]:
                        return NEED_WORK
                    for q in range(rl):
                        wm[q] = meta_rep[q]
                    mm = rl
                for q in range(w, we):
                    if wa[q] == 32:
                        if mm + rl > wm.shape[0]:
                            return NEED_WORK
                        for r in range(rl):
                            wm[mm + r] = meta_rep[r]
                        mm += rl
                    else:
                        if mm >= wm.shape[0]:
                            return NEED_WORK
                        wm[mm] = wa[q]
                        mm += 1
                if not msplit:
                    n = viterbi(wm, 0, mm, out, n, base, check, value, scores, unk_id, unk_score, byte_fallback,
                                byte_ids, best, starts, nodes, ends)
                    if n < 0:
                        return n
                else:
                    ps = 0
                    q = 0
                    while q < mm:
                        is_rep = q + rl <= mm
                        if is_rep:
                            for r in range(rl):
                                if wm[q + r] != meta_rep[r]:
                                    is_rep = False
                                    break
                        if is_rep and q > ps:
                            n = viterbi(wm, ps, q, out, n, base, check, value, scores, unk_id, unk_score,
                                        byte_fallback, byte_ids, best, starts, nodes, ends)
                            if n < 0:
                                return n
                            ps = q
                        q += rl if is_rep else _clen(wm[q])
                    if mm > ps:
                        n = viterbi(wm, ps, mm, out, n, base, check, value, scores, unk_id, unk_score,
                                    byte_fallback, byte_ids, best, starts, nodes, ends)
                        if n < 0:
                            return n
                w = we
        if add_id < 0:
            break
        if n >= out.shape[0]:
            return NEED_WORK
        out[n] = add_id
        n += 1
        seg = nxt
    return n - out_lo


@njit(cache=True)
def encode_one(buf, out, first, wa, wb, wm, best, starts, nodes, ends, base, check, value, scores, unk_id, unk_score,
               byte_fallback, byte_ids, steps, step_arg, units, repl, s1, s2, seq, seq_off, g1, g2, rep_bytes, rep_off,
               ws_split, meta, meta_rep, scheme, msplit, add_first, add_bytes, add_off, add_ids):
    """`encode_text` of the whole of `buf` into out[0:]."""
    return encode_text(buf, 0, buf.shape[0], out, 0, first, wa, wb, wm, best, starts, nodes, ends, base, check, value,
                       scores, unk_id, unk_score, byte_fallback, byte_ids, steps, step_arg, units, repl, s1, s2, seq,
                       seq_off, g1, g2, rep_bytes, rep_off, ws_split, meta, meta_rep, scheme, msplit, add_first,
                       add_bytes, add_off, add_ids)


@njit(cache=True)
def encode_rows(row_lo, row_hi, bufs, rbuf, rstart, rlen, valid, ro, out, counts, status, wa, wb, wm, best, starts,
                nodes, ends, base, check, value, scores, unk_id, unk_score, byte_fallback, byte_ids, steps, step_arg,
                units, repl, s1, s2, seq, seq_off, g1, g2, rep_bytes, rep_off, ws_split, meta, meta_rep, scheme,
                msplit, add_first, add_bytes, add_off, add_ids):
    """Rows row_lo..row_hi-1 of a text column: row r's ids at out[ro[r]:ro[r + 1]] (its region), their
    number in counts[r]; status[r] = 0, or 1 (not valid UTF-8), 2 (the region or a work buffer is too
    small), 3 (an unknown character without unk_id): such rows are left to the caller. The work
    buffers are this worker's."""
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
        k = encode_text(data, s, e, out[:ro[r + 1]], ro[r], 1, wa, wb, wm, best, starts, nodes, ends, base, check,
                        value, scores, unk_id, unk_score, byte_fallback, byte_ids, steps, step_arg, units, repl, s1,
                        s2, seq, seq_off, g1, g2, rep_bytes, rep_off, ws_split, meta, meta_rep, scheme, msplit,
                        add_first, add_bytes, add_off, add_ids)
        if k == ERR_NO_UNK:
            status[r] = 3
        elif k < 0:
            status[r] = 2
        else:
            counts[r] = k


def warm() -> None:
    """Compile (or load) every kernel here once, with the argument types production passes: tables,
    texts and row arrays read-only; outputs and work buffers writable; scalars int64 / float64."""
    from numba.typed import List as TypedList

    from ..unicode.bert import bert_tables
    from ..unicode.graphemes import grapheme_tables
    from .wordpiece import build_double_array

    def ro(a):
        a = np.ascontiguousarray(a).view()
        a.flags.writeable = False
        return a

    bt = bert_tables()
    g1, g2 = grapheme_tables()
    keys = [(b"a", 1), (b"ab", 2), (b"\xe2\x96\x81", 3)]
    kb = ro(np.frombuffer(b"".join(k for k, _ in keys), np.uint8))
    koff = ro(np.cumsum([0] + [len(k) for k, _ in keys]).astype(np.int64))
    base, check, value = build_double_array(kb, koff, ro(np.zeros(len(keys), np.int64)),
                                            ro(np.array([v for _, v in keys], np.int64)), np.int64(1))
    rep = b"x" + b"y"
    kargs = (ro(base.astype(np.int64)), ro(check.astype(np.int64)), ro(value.astype(np.int64)),
             ro(np.array([0.0, -1.0, -2.0, -3.0])), np.int64(0), np.float64(-13.0), np.int64(1),
             ro(np.full(256, -1, np.int64)), ro(np.array([S_PRECOMPILED, S_LOWER, S_STRIP, S_REPLACE, S_RUNS], np.int64)),
             ro(np.array([0, 0, 3, 0, 2 << 20], np.int64)), ro(np.zeros(0, np.uint32)), ro(np.zeros(1, np.uint8)),
             bt.stage1, bt.stage2, bt.seq, bt.seq_off, g1, g2, ro(np.frombuffer(rep, np.uint8)),
             ro(np.array([0, 1, 2], np.int64)), np.int64(1), np.int64(1), ro(np.frombuffer("\u2581".encode(), np.uint8)),
             np.int64(P_ALWAYS), np.int64(1), ro(np.zeros(256, np.uint8)), ro(np.zeros(1, np.uint8)),
             ro(np.zeros(1, np.int64)), ro(np.zeros(0, np.int64)))
    data = ro(np.frombuffer("ab Ab\u00e9 \u4e2d".encode("utf-8"), np.uint8))
    m = 256

    def work():
        return (np.empty(m, np.uint8), np.empty(m, np.uint8), np.empty(m, np.uint8), np.empty(m + 1, np.float64),
                np.empty(m + 1, np.int64), np.empty(m + 1, np.int64), np.empty(m + 1, np.int64))

    encode_one(data, np.empty(m, np.uint32), np.int64(1), *work(), *kargs)
    bufs = TypedList()
    bufs.append(data)
    n = 2
    ro_ = ro(np.array([0, len(data) + 16, 2 * len(data) + 32], np.int64))
    encode_rows(np.int64(0), np.int64(n), bufs, ro(np.zeros(n, np.int64)), ro(np.zeros(n, np.int64)),
                ro(np.full(n, len(data), np.int64)), ro(np.ones(n, np.bool_)), ro_, np.empty(int(ro_[-1]), np.uint32),
                np.empty(n, np.int64), np.empty(n, np.uint8), *work(), *kargs)
