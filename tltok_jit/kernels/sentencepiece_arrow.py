"""SentencePiece over Arrow text columns: rows in parallel, each row normalized and encoded by the
single-text kernels of `kernels.sentencepiece`, its ids written into a region of the output.

Rows come as (buffer index, start, length) into a typed list of read-only uint8 buffers (the data
buffer of a string / large_string column, or the views and data buffers of a string_view column),
plus a validity mask; the caller has checked every row lies inside its buffer. Rows are grouped in
blocks (bounds[k]..bounds[k + 1]); workers (`encode_rows` on one thread each: the kernels release
the GIL) take blocks from an atomic counter, so the work is balanced whatever the rows cost, and
each block's rows are encoded alone: the ids do not depend on the thread count or the blocks (the
BPE segment cache is per worker and only ever returns the ids the merge gives). Plain threads
rather than a numba parallel loop: nothing more to compile for 2 threads than for 1, no threading
layer (fork-safe), and the calling thread is one of the workers.

Row r's ids go to out[ro[r]:ro[r + 1]]; a row with more ids than its region holds is marked
ST_OVERFLOW (its count kept) and a row that is not valid UTF-8 ST_INVALID_UTF8 (nothing written),
for the caller to encode on the single-text path.
"""

from __future__ import annotations

import numpy as np

from . import sentencepiece as S
from .jit import borrow, fetch_add, njit

ST_OK = 0
ST_INVALID_UTF8 = 1
ST_OVERFLOW = 2
SEGMENT_START = 1024  # characters of one BPE segment the work space holds at first (grown on demand)


@njit
def first_invalid_utf8(buf):
    """Position of the first byte of `buf` that starts no valid UTF-8 character (standard UTF-8:
    no overlongs, surrogates or code points above U+10FFFF), or -1."""
    buf = borrow(buf)
    end = buf.shape[0]
    pos = 0
    while pos < end:
        b = buf[pos]
        if b < 0x80:
            pos += 1
            continue
        if 0xE0 <= b < 0xF0 and pos + 2 < end:  # the common case of CJK text, checked inline
            b1 = buf[pos + 1]
            if ((b1 & 0xC0) == 0x80 and (buf[pos + 2] & 0xC0) == 0x80
                    and (b != 0xE0 or b1 >= 0xA0) and (b != 0xED or b1 < 0xA0)):
                pos += 3
                continue
            return np.int64(pos)
        if S.utf8_cp(buf, pos, end) < 0:
            return np.int64(pos)
        pos += S.one_char_len(b)
    return np.int64(-1)


@njit(inline="always")
def _escape_copy(row, out, add_dummy_prefix):
    """`normalize` of valid UTF-8 for a model with no charsmap, no whitespace removal and no
    user-defined pieces that escapes whitespace: the dummy prefix, then the row with each ' ' as
    U+2581 (what `SentencePieceTokenizer` builds with str.replace). `out` holds 3 * len + 3 bytes."""
    n = 0
    if add_dummy_prefix:
        out[0] = S.WS0
        out[1] = S.WS1
        out[2] = S.WS2
        n = 3
    for i in range(row.shape[0]):
        b = row[i]
        if b == S.SPACE:
            out[n] = S.WS0
            out[n + 1] = S.WS1
            out[n + 2] = S.WS2
            n += 3
        else:
            out[n] = b
            n += 1
    return n


@njit
def _run_block(k, w, bounds, bufs, rbuf, rstart, rlen, valid, ro, out, counts, status, counting,
               norm_spec, user_trie, charsmap_units, charsmap_repl, bpe, uni, unk_id, byte_fallback, byte_ids,
               valid_normalized, ck, cbytes, cids, cfill):
    """Encode (or count) the rows of block k on worker w."""
    add_dummy_prefix, remove_extra, escape, plain_escape = norm_spec
    ud_keys, ud_index, ud_value = user_trie
    is_bpe = bpe[0].shape[0] > 0
    r0 = bounds[k]
    r1 = bounds[k + 1]
    longest = np.int64(0)
    for r in range(r0, r1):
        if valid[r] and rlen[r] > longest:
            longest = rlen[r]
    cap = 3 * longest + 16  # a space becomes three bytes; charsmap rules may need more: regrown
    norm = np.empty(cap, np.uint8)
    ids = np.empty(cap + 1, np.int64)
    seg = np.int64(SEGMENT_START if is_bpe else 0)
    wi = np.empty((4, seg + 1), np.int64)
    wb = np.zeros((2, seg + 1), np.bool_)
    hs = np.empty(3 * seg + 16, np.float32)
    hw = np.empty((6, 3 * seg + 16), np.int64)
    best = np.empty(0 if is_bpe else cap + 1, np.float32)
    uwi = np.empty((2, 0 if is_bpe else cap + 1), np.int64)
    wck = ck[w]
    wcbytes = cbytes[w]
    wcids = cids[w]
    wcfill = cfill[w]
    for r in range(r0, r1):
        counts[r] = 0
        status[r] = ST_OK
        if not valid[r] or rlen[r] == 0:
            continue
        s = rstart[r]
        # borrowed: the typed list's arrays share one reference count between the workers
        row = borrow(bufs[rbuf[r]])[s:s + rlen[r]]
        if first_invalid_utf8(row) >= 0:
            status[r] = ST_INVALID_UTF8
            continue
        if plain_escape:
            n = _escape_copy(row, norm, add_dummy_prefix)
        else:
            while True:
                n = S.normalize(row, norm, charsmap_units, charsmap_repl, ud_keys, ud_index, ud_value,
                                add_dummy_prefix, remove_extra, escape)
                if n >= 0:
                    break
                cap *= 2
                norm = np.empty(cap, np.uint8)
        if ids.shape[0] < n + 1:
            ids = np.empty(n + 1, np.int64)
        text = norm[:n]
        if is_bpe:
            while True:
                c = S.bpe_encode(text, ids, wi, wb, hs, hw, wck, wcbytes, wcids, wcfill, bpe[0], bpe[1], bpe[2],
                                 bpe[3], bpe[4], bpe[5], bpe[6], bpe[7], bpe[8], bpe[9], bpe[10], bpe[11],
                                 ud_keys, ud_index, ud_value, unk_id, byte_fallback, byte_ids, valid_normalized)
                if c >= 0:
                    break
                seg *= 2  # a segment longer than the work space
                wi = np.empty((4, seg + 1), np.int64)
                wb = np.zeros((2, seg + 1), np.bool_)
                hs = np.empty(3 * seg + 16, np.float32)
                hw = np.empty((6, 3 * seg + 16), np.int64)
        else:
            if best.shape[0] < n + 1:
                best = np.empty(n + 1, np.float32)
                uwi = np.empty((2, n + 1), np.int64)
            c = S.unigram_encode(text, ids, best, uwi, uni[0], uni[1], uni[2], uni[3], uni[4], uni[5], uni[6],
                                 unk_id, byte_fallback, byte_ids)
        counts[r] = c
        if counting:
            continue
        base = ro[r]
        if c > ro[r + 1] - base:
            status[r] = ST_OVERFLOW
            continue
        for j in range(c):
            out[base + j] = np.uint32(ids[j])


@njit
def encode_rows(w, counter, bounds, bufs, rbuf, rstart, rlen, valid, ro, out, counts, status, counting,
                norm_spec, user_trie, charsmap_units, charsmap_repl, bpe, uni, unk_id, byte_fallback, byte_ids,
                valid_normalized, ck, cbytes, cids, cfill):
    """Worker w: `_run_block` for blocks taken from counter[0] (atomically) until none is left.

    The caller runs one worker per thread (this kernel releases the GIL); each has its own BPE
    cache (ck[w], ...). One worker with counter[0] = 0 encodes every block."""
    nb = bounds.shape[0] - 1
    while True:
        k = fetch_add(counter, 0)
        if k >= nb:
            break
        _run_block(k, w, bounds, bufs, rbuf, rstart, rlen, valid, ro, out, counts, status, counting,
                   norm_spec, user_trie, charsmap_units, charsmap_repl, bpe, uni, unk_id, byte_fallback,
                   byte_ids, valid_normalized, ck, cbytes, cids, cfill)


@njit
def compact(out, ro, counts, status, new_off):
    """Pack each OK row's ids (at out[ro[r]:]) to the front of `out` in place (every move goes left:
    a row's count never exceeds its region); other rows come out empty. Returns the number of ids."""
    cur = np.int64(0)
    n = counts.shape[0]
    for r in range(n):
        new_off[r] = cur
        c = counts[r]
        if c > 0 and status[r] == ST_OK:
            src = ro[r]
            if src != cur:
                for j in range(c):
                    out[cur + j] = out[src + j]
            cur += c
    new_off[n] = cur
    return cur
