"""Token ids -> bytes: rows of ids gathered into one buffer, unknown ids found on the way; a list
or tuple of small Python ints read and gathered in one call."""

from __future__ import annotations

import numpy as np
from numba import types

from .jit import data_ptr, load_u64, njit, store_u64, view_ro, view_rw
from .pyargs import borrowed_object, call_address, object_address
from .pyints import OB_TYPE, SEQ_ITEMS, SEQ_SIZE, load_i64, small_int_at, small_ints_into
from .pyresult import py_bytes, py_none, py_text

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
            _copy_words(op, p, bp, a, b)
        else:
            for k in range(b - a):
                out[p + k] = tok_bytes[a + k]
        p += b - a
    return out[:total], np.int64(-1)


@njit(inline="always")
def _copy_words(op, p, bp, a, b):
    """Copy the bytes at bp[a:b] to op[p:] in 16-byte words: up to COPY_WORD - 1 bytes past the
    token are written (the output has that slack; the next token overwrites them), and read (the
    caller checks b + COPY_WORD <= the length at bp). Pointers, not arrays: a helper taking the
    arrays made the gather of 750k ids 2.6x slower (5.7 -> 15.0 ms)."""
    while a < b:
        store_u64(op, p, load_u64(bp, a))
        store_u64(op, p + 8, load_u64(bp, a + 8))
        a += COPY_WORD
        p += COPY_WORD


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


# decode_list_call's handle: the fields above, then the list and tuple types and the scratch
HANDLE_LIST_TYPE, HANDLE_TUPLE_TYPE, HANDLE_SCRATCH = HANDLE_LEN, HANDLE_LEN + 1, HANDLE_LEN + 2
CALL_HANDLE_LEN = HANDLE_LEN + 4


# The GIL stays held (nogil=False): the ids are read from their objects, and the result is one.
@njit(nogil=False)
def decode_list_call(ca, as_text, seq):
    """decode (as_text: errors="replace") or decode_bytes of `seq`, an exact list or tuple of
    exact ints (a borrowed object), as a new str or bytes; None when the caller's checked path
    must answer: `seq` is of another type, an item is not an int in [0, 2**30), an id is unknown,
    or the bytes do not fit the scratch (a list longer than it is not read at all).

    The call handle at address `ca` or in its slot (pyargs.call_address): a decode handle
    (HANDLE_*, id_decode.decode_call_handle), the list and tuple types and a uint8 scratch. Two
    passes over the items (check and size, then copy) with no Python code in between: nothing
    changes the sequence meanwhile."""
    at = call_address(ca)
    if at == 0:  # an emptied slot
        return py_none()
    h = view_ro(at, (CALL_HANDLE_LEN,), np.int64)
    p = object_address(seq)
    kind = load_i64(p + OB_TYPE)
    if kind == h[HANDLE_LIST_TYPE]:
        items = load_i64(p + SEQ_ITEMS)
    elif kind == h[HANDLE_TUPLE_TYPE]:
        items = p + SEQ_ITEMS
    else:
        return py_none()
    n = load_i64(p + SEQ_SIZE)
    out = view_rw(h[HANDLE_SCRATCH], (h[HANDLE_SCRATCH + 1],), np.uint8)
    room = len(out) - COPY_WORD
    if n > room:  # (most tokens have a byte or more) a long list: the gather path, without a pass here
        return py_none()
    tok_bytes = view_ro(h[HANDLE_TOK_BYTES], (h[HANDLE_TOK_BYTES + 1],), np.uint8)
    tok_offsets = view_ro(h[HANDLE_TOK_OFFSETS], (h[HANDLE_TOK_OFFSETS + 1],), np.int64)
    valid = view_ro(h[HANDLE_VALID], (h[HANDLE_VALID + 1],), np.bool_)
    int_type, zero_tag, one_tag = h[HANDLE_INT_TYPE], h[HANDLE_ZERO_TAG], h[HANDLE_ONE_DIGIT_TAG]
    total = np.int64(0)
    for i in range(n):
        t = small_int_at(load_i64(items + 8 * i), int_type, zero_tag, one_tag)
        if t < 0 or t >= len(valid) or not valid[t]:
            return py_none()
        total += tok_offsets[t + 1] - tok_offsets[t]
        if total > room:
            return py_none()
    op = data_ptr(out)
    bp = data_ptr(tok_bytes)
    nb = len(tok_bytes)
    w = np.int64(0)
    for i in range(n):
        t = small_int_at(load_i64(items + 8 * i), int_type, zero_tag, one_tag)
        a = tok_offsets[t]
        b = tok_offsets[t + 1]
        if b + COPY_WORD <= nb:
            _copy_words(op, w, bp, a, b)
        else:
            for k in range(b - a):
                out[w + k] = tok_bytes[a + k]
        w += b - a
    if as_text:
        return py_text(out, total)
    return py_bytes(out, total)


DECODE_CALL_TYPES = (types.int64, types.boolean, borrowed_object)


def decode_call_entry():
    """The compiled decode_list_call for DECODE_CALL_TYPES, called without the dispatcher."""
    return decode_list_call.compile(DECODE_CALL_TYPES)
