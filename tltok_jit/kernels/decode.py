"""Token ids -> bytes: rows of ids gathered into one buffer, unknown ids found on the way; a list
or tuple of small Python ints read and gathered in one call."""

from __future__ import annotations

import numpy as np

from .jit import data_ptr, load_u64, njit, store_u64, view_ro
from .pyints import small_ints_into

COPY_WORD = 16  # bytes copied per step: two unaligned 8-byte loads and stores


@njit(inline="always")
def _gather(ids, row_offsets, tok_bytes, tok_offsets, valid, byte_offsets):
    """(the bytes of all rows concatenated, -1), or (empty, the position in `ids` of the first
    unknown id: < 0, >= len(valid) or not valid). byte_offsets[r] = where row r starts in the bytes.

    Row r is ids[row_offsets[r]:row_offsets[r + 1]]; empty `row_offsets` (and `byte_offsets`, then
    not written): one row of all ids. The caller guarantees 0 = row_offsets[0] <= ... <=
    row_offsets[-1] = len(ids), len(byte_offsets) = len(row_offsets) and len(tok_offsets) =
    len(valid) + 1."""
    nv = len(valid)
    one_row = len(row_offsets) == 0
    n_rows = 1 if one_row else len(row_offsets) - 1
    total = np.int64(0)
    for r in range(n_rows):
        if not one_row:
            byte_offsets[r] = total
        a = 0 if one_row else row_offsets[r]
        e = len(ids) if one_row else row_offsets[r + 1]
        for i in range(a, e):
            t = ids[i]
            if t < 0 or t >= nv or not valid[t]:
                return np.empty(0, dtype=np.uint8), np.int64(i)
            total += tok_offsets[t + 1] - tok_offsets[t]
    if not one_row:
        byte_offsets[n_rows] = total
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
    return out[:total], np.int64(-1)


@njit
def gather_rows(ids, row_offsets, tok_bytes, tok_offsets, valid, byte_offsets):
    """_gather: (the bytes of all rows concatenated, -1), or (empty, the position in `ids` of the
    first unknown id). Row r is ids[row_offsets[r]:row_offsets[r + 1]]; empty `row_offsets` (and
    `byte_offsets`, then not written): one row of all ids; byte_offsets[r] = where row r starts."""
    return _gather(ids, row_offsets, tok_bytes, tok_offsets, valid, byte_offsets)


# a decode handle (int64, read-only): the int layout, then (address, length) of each table
HANDLE_INT_TYPE, HANDLE_ZERO_TAG, HANDLE_ONE_DIGIT_TAG = 0, 1, 2
HANDLE_TOK_BYTES, HANDLE_TOK_OFFSETS, HANDLE_VALID = 3, 5, 7
HANDLE_LEN = 9


# The GIL stays held (nogil=False) while the int objects are read (kernels/pyints.py).
@njit(nogil=False)
def gather_small_ints(seq, is_list, n, handle):
    """The bytes of the `n` ids of the list or tuple at address `seq` (pyints.read_small_ints), or
    an empty array when an item is not an exact int in [0, 2**30) or an id is unknown (n > 0).

    `handle` holds the int layout and the tables' addresses (HANDLE_*; id_decode.decode_handle):
    one argument instead of six, a third of the call's cost on a short list. The caller keeps the
    tables alive while it is used."""
    h = handle
    tok_bytes = view_ro(h[HANDLE_TOK_BYTES], (h[HANDLE_TOK_BYTES + 1],), np.uint8)
    tok_offsets = view_ro(h[HANDLE_TOK_OFFSETS], (h[HANDLE_TOK_OFFSETS + 1],), np.int64)
    valid = view_ro(h[HANDLE_VALID], (h[HANDLE_VALID + 1],), np.bool_)
    ids = np.empty(n, dtype=np.int64)
    if small_ints_into(seq, is_list, n, h[HANDLE_INT_TYPE], h[HANDLE_ZERO_TAG], h[HANDLE_ONE_DIGIT_TAG], ids) != n:
        return np.empty(0, dtype=np.uint8)
    one_row = np.empty(0, dtype=np.int64)
    out, bad = _gather(ids, one_row, tok_bytes, tok_offsets, valid, one_row)
    return out
