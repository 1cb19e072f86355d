"""Arrow list<integer> columns of token ids -> UTF-8 bytes: per-row lengths (finding unknown ids),
then the bytes gathered and checked for valid UTF-8; each kernel takes a range of rows, so that
threads of their own can share a column (the kernels release the GIL)."""

from __future__ import annotations

import numpy as np

from .columns import is_valid
from .jit import njit
from .utf8 import decode_cp


@njit
def decode_lengths(ids, loff, r_lo, r_hi, vbits, voff, has_nulls, tok_offsets, valid, lens, bad):
    """For rows r_lo..r_hi: lens[r] = bytes of row r; bad[r] = position (in the row) of its first
    unknown id, or -1."""
    nv = len(valid)
    for r in range(r_lo, r_hi):
        lens[r] = 0
        bad[r] = -1
        if not is_valid(vbits, voff, has_nulls, r):
            continue
        a = np.int64(loff[r])
        b = np.int64(loff[r + 1])
        tot = np.int64(0)
        for i in range(a, b):
            t = np.int64(ids[i])
            if t < 0 or t >= nv or not valid[t]:
                bad[r] = i - a
                break
            tot += tok_offsets[t + 1] - tok_offsets[t]
        lens[r] = tot


@njit
def decode_gather(ids, loff, r_lo, r_hi, vbits, voff, has_nulls, tok_bytes, tok_offsets, out_off, out, flags):
    """For rows r_lo..r_hi: write row r's bytes at out[out_off[r]:]; flags[r] = 1 if they are not
    valid UTF-8."""
    for r in range(r_lo, r_hi):
        flags[r] = 0
        if not is_valid(vbits, voff, has_nulls, r):
            continue
        p = out_off[r]
        for i in range(np.int64(loff[r]), np.int64(loff[r + 1])):
            t = np.int64(ids[i])
            for x in range(tok_offsets[t], tok_offsets[t + 1]):
                out[p] = tok_bytes[x]
                p += 1
        i = out_off[r]
        e = out_off[r + 1]
        while i < e:
            if out[i] < 0x80:
                i += 1
                continue
            cp, n1 = decode_cp(out, i, e)
            if n1 == 1:
                flags[r] = 1
                break
            i += n1


@njit
def utf8_error_at(buf, a, e):
    i = a
    while i < e:
        if buf[i] < 0x80:
            i += 1
            continue
        cp, n = decode_cp(buf, i, e)
        if n == 1:
            return i - a
        i += n
    return np.int64(-1)
