"""Arrow text columns -> token ids or counts: block planning, the per-block encode / count /
validation kernel, the driver (an atomic block queue), and gathering the rows' ids.

A column is read in place: `layout` LAYOUT_OFFSETS (string / binary / large_*: row r is
data[off[r]:off[r + 1]] of bufs[0]) or LAYOUT_VIEWS (string_view / binary_view: `views` holds 16-byte
views, bufs[0] the views as bytes and bufs[1:] the variadic data buffers); `off` is int64 (for views,
the running sum of the row lengths: virtual byte positions). The validity bitmap is read bit by bit.
The caller (`tltok_jit.columns.arrow`) has checked every offset and view against its buffer.

Each worker writes the ids of its blocks one after another into its own row of `out` (dense: a
row's ids at the offset of its bytes left most of an output of 4 bytes per input byte untouched
between rows, and every page of it touched; on a fresh output that page faulting cost as much as
encoding), and `gather` puts the blocks' ids in order afterwards.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba.typed import List

from . import encode as K
from .column_cuts import find_cut
from .handle_layout import HANDLE_LEN, cache_of, handle_in, tables_of
from .jit import borrow, data_ptr, fetch_add, njit, stack_array
from .utf8 import decode_cp, plain_probe, plain_three_ok, skip_plain8, skip_plain_three, skip_unflagged8

LAYOUT_OFFSETS = 0  # string / binary / large_*: data[off[r]:off[r+1]]
LAYOUT_VIEWS = 1  # string_view / binary_view

ST_OK = 0
ST_INVALID_UTF8 = 1
ST_DISALLOWED = 2


class ColumnJob(NamedTuple):
    """One encode (or count) call over one array: what `drive` and the per-block kernel read and
    write, by name. The front end builds it in one place and the kernels pass it whole. Three
    arguments go beside it: the typed list of data buffers (`bufs`: numba types a tuple holding a
    typed list in Python on every call, ~70 us, a tuple of arrays in C), the tables `T` and the piece
    caches (tuples of arrays that other kernels take as they are)."""

    layout: int  # LAYOUT_OFFSETS or LAYOUT_VIEWS
    views: np.ndarray  # int32: the 16-byte views (LAYOUT_VIEWS), else unused
    off: np.ndarray  # int64[n + 1]: row offsets (for views: the running sum of the row lengths)
    vbits: np.ndarray  # uint8 validity bitmap, bit voff + r for row r (read only when has_nulls)
    voff: int
    has_nulls: bool
    bb: np.ndarray  # int64: block boundaries (plan_blocks)
    rstart: np.ndarray  # int64: first row starting in each block (one more entry: n)
    amask: np.ndarray  # bool per added token: allowed (matched and given its id)
    any_allowed: bool
    dmask: np.ndarray  # bool per added token: disallowed (a match is reported in hits)
    tab: np.ndarray  # uint8[256] for the validation pass (_scan_check)
    counting: bool  # count the ids instead of writing them
    out: np.ndarray  # uint32[workers, bytes + 1]: each worker's ids, its blocks' one after another
    bpos: np.ndarray  # int64[blocks, 2]: (worker, position in its row of out) of each block's ids
    counts: np.ndarray  # int64 per row: its ids (the part that starts in its block)
    heads: np.ndarray  # int64 per block: the ids of the row tail it continues
    flags: np.ndarray  # uint8 per row: 1 = invalid UTF-8 (encoded again by the caller)
    hits: np.ndarray  # int64[blocks, 3]: (row, byte in the row, added token) of a disallowed token, or row -1
    vals: np.ndarray  # int64: merge work, one row per worker
    scratch: np.ndarray  # uint32: count_span's scratch, one row per worker
    rule_nl: bool  # the cut rules usable with these masks (column_cuts)
    rule_sp: bool


@njit(inline="always")
def is_valid(vbits, voff, has_nulls, r):
    if not has_nulls:
        return True
    i = voff + r
    return ((vbits[i >> 3] >> (i & 7)) & 1) != 0


@njit(inline="always")
def row_src(layout, views, off, r):
    """(index into bufs, start byte) of row r."""
    if layout == LAYOUT_OFFSETS:
        return np.int64(0), np.int64(off[r])
    ln = views[4 * r]
    if ln <= 12:
        return np.int64(0), np.int64(16 * r + 4)
    return np.int64(1) + np.int64(views[4 * r + 2]), np.int64(np.uint32(views[4 * r + 3]))


@njit
def plan_blocks(layout, bufs, views, off, n, vbits, voff, has_nulls, target, max_blocks, s1, s2, rule_nl, rule_sp):
    """Block boundaries (virtual byte positions, strictly increasing, first off[0], last off[n]): about
    every `target` bytes, at a row start, or inside a long valid row at a proven piece boundary."""
    base = np.int64(off[0])
    endv = np.int64(off[n])
    bb = np.empty(max_blocks + 1, dtype=np.int64)
    bb[0] = base
    m = 1
    t = base + target
    while t < endv and m < max_blocks:
        lo = bb[m - 1]
        r = np.searchsorted(off, t, side="right") - 1
        rs = np.int64(off[r])
        re = np.int64(off[r + 1])
        cand = np.int64(-1)
        if rs == t:
            cand = t
        elif (rule_nl or rule_sp) and re - rs > target // 4 and is_valid(vbits, voff, has_nulls, r):
            bi, ps = row_src(layout, views, off, r)
            buf = bufs[bi]
            c = find_cut(buf, ps, ps + (re - rs), ps + (t - rs), ps + (min(re, t + target) - rs),
                          s1, s2, rule_nl, rule_sp)
            if c >= 0:
                cand = rs + (c - ps)
        if cand < 0:
            cand = rs if rs > lo else re
        if cand > lo and cand < endv:
            bb[m] = cand
            m += 1
        t += target
    bb[m] = endv
    return bb[: m + 1].copy()


@njit
def count_span(buf, a, e, T, amask, any_allowed, cache, w, vals, scratch, rule_nl, rule_sp):
    """Number of ids of buf[a:e] without keeping them: the span is encoded piecewise into the worker's
    scratch, cut at proven piece boundaries (`find_cuts`) about every len(scratch) bytes; a stretch
    with no cut is encoded into a temporary array of its size."""
    S = len(scratch)
    s1 = T.stage1
    s2 = T.stage2
    cnt = np.int64(0)
    pos = a
    while pos < e:
        stop = e
        if e - pos > S:
            c = np.int64(-1)
            if rule_nl or rule_sp:
                c = find_cut(buf, pos, e, pos + S // 2, pos + S, s1, s2, rule_nl, rule_sp)
                if c < 0:
                    c = find_cut(buf, pos, e, pos + S, e, s1, s2, rule_nl, rule_sp)
            if c > pos:
                stop = c
        if stop - pos <= S:
            cnt += K.encode_span(buf, pos, stop, T, amask, any_allowed, scratch, 0, cache, w, vals)
        else:
            tmp = np.empty(stop - pos, dtype=np.uint32)
            cnt += K.encode_span(buf, pos, stop, T, amask, any_allowed, tmp, 0, cache, w, vals)
        pos = stop
    return cnt


@njit(inline="always")
def _scan_check(buf, i, e, tab, probe, three):
    """From i, the first byte the validation must look at: (1, pos) for an invalid UTF-8 sequence,
    (2, pos) for a byte that may start a checked added token (tab bit 2), or (0, e). Plain ASCII is
    skipped 8 bytes at a time (tab[b] == 0; with one load per 8 bytes when probe = plain_probe(tab)
    is not 0), runs of three-byte characters 64 bytes at a time when `three` (plain_three_ok(tab))."""
    bp = data_ptr(buf)
    while i < e:
        i = skip_plain8(bp, i, e, probe) if probe != 0 else skip_unflagged8(tab, buf, i, e)
        if i >= e:
            break
        x = tab[buf[i]]
        if x == 0:
            i += 1
            continue
        if x & 2:
            return np.int64(2), np.int64(i)
        b = buf[i]
        if three and 0xE1 <= b <= 0xEF:
            j = skip_plain_three(bp, i, e)
            if j > i:
                i = j
                continue
        if 0xE1 <= b <= 0xEF and b != 0xED and i + 2 < e and (buf[i + 1] & 0xC0) == 0x80 \
                and (buf[i + 2] & 0xC0) == 0x80:
            i += 3  # a three-byte character that needs no range check (CJK, Indic, ...): most of such text
            continue
        cp, n = decode_cp(buf, i, e)
        if n == 1:
            return np.int64(1), np.int64(i)
        i += n
    return np.int64(0), np.int64(e)


@njit
def _check_from(buf, i, e, T, dmask, tab, probe, three):
    """The slow part of `_validate`, from a possible token start at i: (status, position, token index)."""
    trie = K.added_trie(T)
    while True:
        t, ln, _ = K.match_in_trie(buf, i, e, trie, dmask)
        if t >= 0:
            return np.int64(ST_DISALLOWED), np.int64(i), np.int64(t)
        if buf[i] < 0x80:
            i += 1
        else:
            cp, n = decode_cp(buf, i, e)
            if n == 1:
                return np.int64(ST_INVALID_UTF8), np.int64(i), np.int64(-1)
            i += n
        k, p = _scan_check(buf, i, e, tab, probe, three)
        if k == 0:
            return np.int64(ST_OK), np.int64(-1), np.int64(-1)
        if k == 1:
            return np.int64(ST_INVALID_UTF8), p, np.int64(-1)
        i = p


@njit(inline="always")
def _validate(buf, a, e, T, dmask, tab, probe, three):
    """(status, byte position, token index) of buf[a:e]: ST_OK, ST_INVALID_UTF8 at a position, or
    ST_DISALLOWED (an added token flagged in dmask starts there). T is only touched on a candidate
    token start: passing the tables tuple costs a reference-count update per field."""
    k, p = _scan_check(buf, a, e, tab, probe, three)
    if k == 0:
        return np.int64(ST_OK), np.int64(-1), np.int64(-1)
    if k == 1:
        return np.int64(ST_INVALID_UTF8), p, np.int64(-1)
    return _check_from(buf, p, e, T, dmask, tab, probe, three)


@njit(inline="always")  # one caller (drive): a kernel of its own is one more copy of the engine for LLVM
def _run_block(k, w, bufs, T, cache, handle, job, fill):
    """Encode (or count) block k on worker w: the tail of a row cut at bb[k] (counted in heads[k]), then
    the rows starting in [bb[k], bb[k+1]) (counts[r]), the last one up to bb[k+1]; their ids go to
    out[w] from `fill` on, in that order. Returns the new fill. `handle`: that of T and cache."""
    # the fields by name, once per block
    layout = job.layout
    views = job.views
    off = job.off
    vbits = job.vbits
    voff = job.voff
    has_nulls = job.has_nulls
    bb = job.bb
    rstart = job.rstart
    amask = job.amask
    any_allowed = job.any_allowed
    dmask = job.dmask
    tab = job.tab
    probe = plain_probe(tab)
    three = plain_three_ok(tab)
    counting = job.counting
    out = borrow(job.out[w])
    bpos = job.bpos
    counts = job.counts
    heads = job.heads
    flags = job.flags
    hits = job.hits
    rule_nl = job.rule_nl
    rule_sp = job.rule_sp
    wv = job.vals[w]
    ws = job.scratch[w]
    lo = bb[k]
    hi = bb[k + 1]
    r0 = rstart[k]
    r1 = rstart[k + 1]
    heads[k] = 0
    hits[k, 0] = -1
    bpos[k, 0] = w
    bpos[k, 1] = fill
    # borrowed: the typed list's arrays share one reference count between the workers, and the
    # validation loop updates it around every multi-byte character (a contended atomic on two threads)
    buf = borrow(bufs[0])
    if r0 > 0 and np.int64(off[r0]) > lo:
        h = r0 - 1
        hs = np.int64(off[h])
        bi, ps = row_src(layout, views, off, h)
        if layout != LAYOUT_OFFSETS:
            buf = borrow(bufs[bi])
        a = ps + (lo - hs)
        e = ps + (min(np.int64(off[r0]), hi) - hs)
        st, v, t = _validate(buf, a, e, T, dmask, tab, probe, three)
        if st == ST_OK:
            if counting:
                heads[k] = count_span(buf, a, e, T, amask, any_allowed, cache, w, wv, ws, rule_nl, rule_sp)
            else:
                heads[k] = K.encode_span(buf, a, e, T, amask, any_allowed, out, fill, cache, w, wv) - fill
                fill += heads[k]
        elif st == ST_INVALID_UTF8:
            flags[h] = 1
        else:
            hits[k, 0] = h
            hits[k, 1] = v - ps
            hits[k, 2] = t
            return fill
    # Rows of one buffer without added-token matching are encoded SPAN_BATCH at a time (one kernel
    # setup per batch instead of per row: that setup costs as much as a short string).
    batch = not counting and not any_allowed and layout == LAYOUT_OFFSETS
    # A batch's rows are written at fill + their byte offset from its first row (their ids fit
    # there: ids <= bytes, and fill <= the bytes this worker encoded before), then packed at fill.
    spans = np.empty(3 * K.SPAN_BATCH if batch else 0, dtype=np.int64)
    rows = np.empty(K.SPAN_BATCH if batch else 0, dtype=np.int64)
    ns = 0
    s0 = np.int64(0)
    for r in range(r0, r1):
        counts[r] = 0
        if not is_valid(vbits, voff, has_nulls, r):
            continue
        s = np.int64(off[r])
        en = min(np.int64(off[r + 1]), hi)
        if en <= s:
            continue
        bi, ps = row_src(layout, views, off, r)
        if layout != LAYOUT_OFFSETS:
            buf = borrow(bufs[bi])
        pe = ps + (en - s)
        st, v, t = _validate(buf, ps, pe, T, dmask, tab, probe, three)
        if st == ST_OK:
            if batch:
                if ns == 0:
                    s0 = s
                spans[3 * ns] = ps
                spans[3 * ns + 1] = pe
                spans[3 * ns + 2] = fill + (s - s0)
                rows[ns] = r
                ns += 1
                if ns == K.SPAN_BATCH:
                    fill = K.encode_packed_spans(buf, spans, rows, ns, off, s0, 0, handle, out, counts, w, wv, fill)
                    ns = 0
            elif counting:
                counts[r] = count_span(buf, ps, pe, T, amask, any_allowed, cache, w, wv, ws, rule_nl, rule_sp)
            else:
                counts[r] = K.encode_span(buf, ps, pe, T, amask, any_allowed, out, fill, cache, w, wv) - fill
                fill += counts[r]
        elif st == ST_INVALID_UTF8:
            flags[r] = 1
        else:
            fill = K.encode_packed_spans(buf, spans, rows, ns, off, s0, 0, handle, out, counts, w, wv, fill)
            hits[k, 0] = r
            hits[k, 1] = v - ps
            hits[k, 2] = t
            return fill
    return K.encode_packed_spans(buf, spans, rows, ns, off, s0, 0, handle, out, counts, w, wv, fill)


@njit
def one_buffer(data):
    """The `bufs` of a column of one data buffer: a typed list of `data` (read-only uint8; see
    arrow._typed)."""
    bufs = List()
    bufs.append(data)
    return bufs


@njit
def drive(w, counter, wbytes, bufs, T, cache, job, serial):
    """Worker w: blocks taken from counter[0] (atomically) until none is left; wbytes[w] = the bytes
    it encoded. Several workers run at once, each on a thread of its own (the kernels release the
    GIL). `serial` (one worker, counter at 0: the blocks in order) stops after the first block that
    finds a disallowed token and marks the blocks after it as not run. One kernel for both: each
    would be one more copy of the engine for LLVM to optimize."""
    # the block loop reads borrowed views (jit.borrow) of T, the cache and the job: every read of a
    # field updated its array's reference count, which the workers share (a contended atomic, ~4% of
    # two threads' time on documents)
    h = handle_in(T, cache, stack_array(HANDLE_LEN, np.int64))
    T = tables_of(h)
    cache = cache_of(h)
    job = ColumnJob(job.layout, borrow(job.views), borrow(job.off), borrow(job.vbits), job.voff, job.has_nulls,
                    borrow(job.bb), borrow(job.rstart), borrow(job.amask), job.any_allowed, borrow(job.dmask),
                    borrow(job.tab), job.counting, borrow(job.out), borrow(job.bpos), borrow(job.counts),
                    borrow(job.heads), borrow(job.flags), borrow(job.hits), borrow(job.vals), borrow(job.scratch),
                    job.rule_nl, job.rule_sp)
    bb = job.bb
    hits = job.hits
    nb = len(bb) - 1
    wbytes[w] = 0
    fill = np.int64(0)
    while True:
        k = fetch_add(counter, 0)
        if k >= nb:
            break
        wbytes[w] += bb[k + 1] - bb[k]
        fill = _run_block(k, w, bufs, T, cache, h, job, fill)
        if serial and hits[k, 0] >= 0:
            for j in range(k + 1, nb):
                hits[j, 0] = -1
            return


@njit
def block_starts(bpos, bb, rstart, counts, heads, flags):
    """int64[nb + 1]: where each block's ids start in a gathered result (`gather`), and the total."""
    nb = len(bb) - 1
    starts = np.empty(nb + 1, dtype=np.int64)
    cur = np.int64(0)
    for k in range(nb):
        starts[k] = cur
        r0 = rstart[k]
        if heads[k] > 0 and flags[r0 - 1] == 0:
            cur += heads[k]
        for r in range(r0, rstart[k + 1]):
            if counts[r] > 0 and flags[r] == 0:
                cur += counts[r]
    starts[nb] = cur
    return starts


@njit
def gather(wout, bpos, bb, rstart, n, counts, heads, flags, ids, new_off, in_place, k_lo, k_hi, cur):
    """The ids of blocks k_lo..k_hi-1 from the workers' rows of `wout`, in block order, into `ids` from
    `cur` (block_starts[k_lo]; workers may gather disjoint block ranges at once), and each of their
    rows' offsets into new_off (new_off[n] by the range that ends at the last block). Rows flagged in
    `flags` come out empty (a row cut by a block boundary may have ids in the block before its flag
    was found). Returns where the range's ids end. `in_place`: `ids` is the one worker's row itself
    (every move goes left; a run already where it belongs, as all are when no row is flagged, is not
    copied)."""
    for k in range(k_lo, k_hi):
        w = bpos[k, 0]
        src = bpos[k, 1]
        r0 = rstart[k]
        r1 = rstart[k + 1]
        hc = heads[k]
        if hc > 0:
            if flags[r0 - 1] == 0:
                if not (in_place and src == cur):
                    for j in range(hc):
                        ids[cur + j] = wout[w, src + j]
                cur += hc
            src += hc
        for r in range(r0, r1):
            new_off[r] = cur
            c = counts[r]
            if c > 0:
                if flags[r] == 0:
                    if not (in_place and src == cur):
                        for j in range(c):
                            ids[cur + j] = wout[w, src + j]
                    cur += c
                src += c
    if k_hi == len(bb) - 1:
        new_off[n] = cur
    return cur


@njit
def row_totals(counts, heads, rstart, flags, n):
    tot = counts[:n].copy()
    for k in range(len(heads)):
        if heads[k] > 0:
            tot[rstart[k] - 1] += heads[k]
    for r in range(n):
        if flags[r] != 0:
            tot[r] = 0
    return tot


@njit
def splice(vals, off, rows, rvals, roff, out_vals, out_off):
    """Rows `rows` (sorted) take rvals[roff[j]:roff[j+1]]; the others keep vals[off[r]:off[r+1]]."""
    n = len(off) - 1
    p = 0
    j = 0
    for r in range(n):
        out_off[r] = p
        if j < len(rows) and rows[j] == r:
            for x in range(roff[j], roff[j + 1]):
                out_vals[p] = rvals[x]
                p += 1
            j += 1
        else:
            for x in range(off[r], off[r + 1]):
                out_vals[p] = vals[x]
                p += 1
    out_off[n] = p
