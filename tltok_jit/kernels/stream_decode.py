"""Streaming UTF-8 decoding of token bytes, many streams per kernel call.

Each stream keeps at most 3 pending bytes: a proper prefix of a well-formed UTF-8 sequence
(Unicode Table 3-7) that the next token may still complete. Feeding a token's bytes emits, in
order, every complete character and one U+FFFD (EF BF BD) per maximal subpart of an ill-formed
subsequence -- the rule of CPython's `bytes.decode("utf-8", "replace")`, so that the chunks of a
stream plus its final flush (one U+FFFD when bytes are still pending) equal the one-shot decode.

`step_kernel` validates every token id and stream index it is given (and the output capacity)
before it reads any table or mutates any state, so a bad call changes nothing.
"""

from __future__ import annotations

import numpy as np

from .jit import njit

# step_kernel status codes (first element of its result)
OK = 0
BAD_ID = 1        # value: position in `ids` of the first id outside the vocabulary or unassigned
BAD_STREAM = 2    # value: position in `streams` of the first stream index out of range
NEED_BYTES = 3    # value: output bytes needed; `out` was too small, nothing was changed
NEED_SLOTS = 4    # value: entries needed in out_off (len(ids) + 1)
BAD_MASK = 5      # value: len(active), which is neither 0 nor len(ids)
BAD_MODE = 6      # SLOW_ONLY asked for with a mask or without a separator


@njit(inline="always")
def _seq_len(b0):
    """Length of the sequence a lead byte starts: 1 (ASCII), 2, 3, 4; 0 if it starts none."""
    if b0 < 0x80:
        return 1
    if b0 < 0xC2:
        return 0
    if b0 < 0xE0:
        return 2
    if b0 < 0xF0:
        return 3
    if b0 < 0xF5:
        return 4
    return 0


@njit(inline="always")
def _cont_ok(lead, k, b):
    """Whether byte `b` may be the k-th byte (k >= 1) of a sequence starting with `lead`."""
    if k == 1:
        if lead == 0xE0:
            return 0xA0 <= b <= 0xBF
        if lead == 0xED:
            return 0x80 <= b <= 0x9F
        if lead == 0xF0:
            return 0x90 <= b <= 0xBF
        if lead == 0xF4:
            return 0x80 <= b <= 0x8F
    return 0x80 <= b <= 0xBF


@njit(inline="always")
def _put_fffd(out, o):
    out[o] = 0xEF
    out[o + 1] = 0xBF
    out[o + 2] = 0xBD
    return o + 3


@njit(inline="always")
def _feed(data, start, end, pend, s, k, out, o):
    """Feed data[start:end] to stream `s` holding k pending bytes pend[s, :k].

    Returns (new pending count, new output position)."""
    i = start
    while i < end:
        b = data[i]
        if k == 0:
            n = _seq_len(b)
            if n == 1:
                out[o] = b
                o += 1
            elif n == 0:
                o = _put_fffd(out, o)
            else:
                pend[s, 0] = b
                k = 1
            i += 1
        else:
            lead = pend[s, 0]
            if _cont_ok(lead, k, b):
                need = _seq_len(lead)
                if k + 1 == need:
                    for j in range(k):
                        out[o + j] = pend[s, j]
                    out[o + k] = b
                    o += need
                    k = 0
                else:
                    pend[s, k] = b
                    k += 1
                i += 1
            else:
                # the pending bytes are a maximal subpart: one U+FFFD; `b` starts afresh (not consumed)
                o = _put_fffd(out, o)
                k = 0
    return k, o


@njit
def complete_table(data, offsets, valid):
    """complete[t]: token t's bytes are well-formed UTF-8 on their own (no partial character).

    Such a token, fed to a stream with nothing pending, emits exactly its own bytes: the fast path.
    `offsets` must have been checked (non-decreasing, within data) by the caller."""
    n = valid.shape[0]
    res = np.zeros(n, np.bool_)
    for t in range(n):
        if not valid[t]:
            continue
        i = offsets[t]
        end = offsets[t + 1]
        ok = True
        while i < end:
            b0 = data[i]
            need = _seq_len(b0)
            if need == 0 or i + need > end:
                ok = False
                break
            for k in range(1, need):
                if not _cont_ok(b0, k, data[i + k]):
                    ok = False
                    break
            if not ok:
                break
            i += need
        res[t] = ok
    return res


# kinds in the packed table
HOLE = 0        # unassigned id
PARTIAL = 1     # assigned; its bytes are not well-formed UTF-8 by themselves
COMPLETE = 2    # assigned; well-formed UTF-8 by itself
KIND_BITS = 2


def pack_table(offsets, valid, complete):
    """packed[t] = offsets[t] << KIND_BITS | kind(t), and packed[n_vocab] = offsets[n_vocab] << KIND_BITS.

    One int64 per token holds where its bytes are and what it is, so the kernel reads one random
    cache line per token (plus its bytes) instead of three tables."""
    kind = np.where(valid, np.where(complete, COMPLETE, PARTIAL), HOLE).astype(np.int64)
    packed = offsets.astype(np.int64) << KIND_BITS
    packed[:-1] |= kind
    return packed


# step_kernel output modes
ALL = 0         # every entry's text is written (followed by `sep` when sep >= 0); out_off: offsets
SLOW_ONLY = 1   # only entries off the fast path are written (each followed by `sep`); out_off[:n_slow]:
                # their positions j. Fast-path entries (nothing pending, COMPLETE token) emit exactly
                # their token's text, which the caller has already (e.g. a list of per-token strs).
AUTO = 2        # SLOW_ONLY when at most a quarter of the entries look slow, else ALL


@njit
def step_kernel(ids, streams, active, data, packed, pend, pcount, out, out_off, sep, mode):
    """Feed token ids[j] to stream streams[j], for j in order (a stream may appear several times).

    `active`: empty, or one flag per entry; an entry whose flag is False is skipped (its id and
    stream are not read) and emits nothing; mode AUTO then means ALL.

    `packed` is `pack_table(...)` (n_vocab + 1 entries); its offsets must have been checked.
    Mode ALL: the text emitted for entry j is written to `out` as UTF-8; with sep < 0 it is
    out[out_off[j]:out_off[j+1]]; with 0 <= sep <= 255 every entry's bytes are followed by the
    byte `sep` (0xFF, which well-formed UTF-8 never contains, lets Python split one decoded string)
    and entry j is out[out_off[j]:out_off[j+1] - 1]. Mode SLOW_ONLY: see the constant.
    Returns (status, value, n_slow): (OK, bytes written, -1 in mode ALL / the number of written
    entries in SLOW_ONLY) or an error code of this module. Nothing is read from the tables or
    changed unless every id and stream index is valid and the output arrays are large enough.
    """
    m = ids.shape[0]
    n_vocab = packed.shape[0] - 1
    n_streams = pend.shape[0]
    masked = active.shape[0] != 0
    if masked and active.shape[0] != m:
        return BAD_MASK, active.shape[0], 0
    if out_off.shape[0] < m + 1:
        return NEED_SLOTS, m + 1, 0
    need = 0
    guess_slow = 0
    for j in range(m):
        if masked and not active[j]:
            continue
        t = ids[j]
        if t < 0 or t >= n_vocab:
            return BAD_ID, j, 0
        p = packed[t]
        if (p & 3) == HOLE:
            return BAD_ID, j, 0
        s = streams[j]
        if s < 0 or s >= n_streams:
            return BAD_STREAM, j, 0
        need += (packed[t + 1] >> KIND_BITS) - (p >> KIND_BITS)
        if (p & 3) != COMPLETE or pcount[s] != 0:
            guess_slow += 1
    # every input byte, pending ones included, is emitted at most once, as at most 3 bytes
    for s in range(n_streams):
        need += pcount[s]
    need *= 3
    if sep >= 0:
        need += m
    if out.shape[0] < need:
        return NEED_BYTES, need, 0
    if mode == AUTO:
        mode = SLOW_ONLY if 4 * guess_slow <= m and sep >= 0 and not masked else ALL
    if mode == SLOW_ONLY and (masked or sep < 0):
        return BAD_MODE, mode, 0
    o = 0
    n_slow = 0
    out_off[0] = 0
    for j in range(m):
        if masked and not active[j]:
            if sep >= 0:
                out[o] = sep
                o += 1
            out_off[j + 1] = o
            continue
        t = ids[j]
        s = streams[j]
        p = packed[t]
        a = p >> KIND_BITS
        b = packed[t + 1] >> KIND_BITS
        k = np.int64(pcount[s])
        if k == 0 and (p & 3) == COMPLETE:
            if mode == SLOW_ONLY:
                continue
            for i in range(a, b):
                out[o] = data[i]
                o += 1
        else:
            k, o = _feed(data, a, b, pend, s, k, out, o)
            pcount[s] = k
        if sep >= 0:
            out[o] = sep
            o += 1
        if mode == SLOW_ONLY:
            out_off[n_slow] = j
            n_slow += 1
        else:
            out_off[j + 1] = o
    return OK, o, (n_slow if mode == SLOW_ONLY else -1)
