"""Token ids -> bytes: rows of ids gathered into one buffer, unknown ids found on the way."""

from __future__ import annotations

import numpy as np

from .jit import data_ptr, load_u64, njit, store_u64

COPY_WORD = 16  # bytes copied per step: two unaligned 8-byte loads and stores


@njit
def gather_rows(ids, row_offsets, tok_bytes, tok_offsets, valid):
    """(the bytes of all rows concatenated, their byte offsets[n_rows + 1], -1), or (empty, offsets,
    the position in `ids` of the first unknown id: < 0, >= len(valid) or not valid).

    Row r is ids[row_offsets[r]:row_offsets[r + 1]]; the caller guarantees 0 = row_offsets[0] <=
    ... <= row_offsets[-1] = len(ids) and len(tok_offsets) = len(valid) + 1."""
    nv = len(valid)
    n_rows = len(row_offsets) - 1
    out_offsets = np.empty(n_rows + 1, dtype=np.int64)
    out_offsets[0] = 0
    total = np.int64(0)
    for r in range(n_rows):
        for i in range(row_offsets[r], row_offsets[r + 1]):
            t = ids[i]
            if t < 0 or t >= nv or not valid[t]:
                return np.empty(0, dtype=np.uint8), out_offsets, np.int64(i)
            total += tok_offsets[t + 1] - tok_offsets[t]
        out_offsets[r + 1] = total
    # one allocation of the exact size (+ slack for the word stores), one pass: a token is copied
    # in 16-byte words (most are shorter) and the next one overwrites what went past its end
    out = np.empty(total + COPY_WORD, dtype=np.uint8)
    op = data_ptr(out)
    bp = data_ptr(tok_bytes)
    nb = len(tok_bytes)
    p = np.int64(0)
    for i in range(len(ids)):
        t = ids[i]
        a = tok_offsets[t]
        b = tok_offsets[t + 1]
        if b + COPY_WORD <= nb:  # the last word read stays inside tok_bytes
            q = p
            while a < b:
                store_u64(op, q, load_u64(bp, a))
                store_u64(op, q + 8, load_u64(bp, a + 8))
                a += COPY_WORD
                q += COPY_WORD
            p += b - tok_offsets[t]
        else:
            while a < b:
                out[p] = tok_bytes[a]
                a += 1
                p += 1
    return out[:total], out_offsets, np.int64(-1)
