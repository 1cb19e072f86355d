"""Token ids -> bytes, fast paths for `Encoding.decode*`: one kernel call that reads a list or tuple
of ints in place and returns the text or bytes itself (decode_call_handle, kernels/decode.py
decode_list_call), the gather kernel for longer ids and for batches.

Every function returns None where it cannot answer exactly (an id to report, an element that is
not an int, a shape it does not take): the caller's checked path then answers or raises.
"""

from __future__ import annotations

import array
import numpy as np

from . import pyints
from ..kernels.decode import (CALL_HANDLE_LEN, HANDLE_INT_TYPE, HANDLE_LEN, HANDLE_LIST_TYPE, HANDLE_ONE_DIGIT_TAG,
                              HANDLE_SCRATCH, HANDLE_TOK_BYTES, HANDLE_TOK_OFFSETS, HANDLE_TUPLE_TYPE, HANDLE_VALID,
                              HANDLE_ZERO_TAG, gather_rows, gather_small_ints)
from .pyints import small_int_array
from .text import read_only_view

_ONE_ROW = np.zeros(0, dtype=np.int64)  # gather_rows: all ids are one row
_FAST_INTS = pyints.available()


def decode_handle(tok_bytes: np.ndarray, tok_offsets: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """gather_small_ints' handle of these tables (kernels/decode.py HANDLE_*); the caller keeps the
    arrays alive as long as the handle."""
    for a, dt in ((tok_bytes, np.uint8), (tok_offsets, np.int64), (valid, np.bool_)):
        if a.dtype != dt or a.ndim != 1 or not a.flags.c_contiguous:
            raise ValueError(f"table array {a.dtype}[{a.ndim}] does not match the decode handle ({np.dtype(dt)})")
    if len(tok_offsets) != len(valid) + 1 or (len(valid) and int(tok_offsets[-1]) > len(tok_bytes)):
        raise ValueError("token offsets do not match the token bytes and the vocabulary")
    h = np.zeros(HANDLE_LEN, dtype=np.int64)
    h[HANDLE_INT_TYPE], h[HANDLE_ZERO_TAG], h[HANDLE_ONE_DIGIT_TAG] = pyints.INT_TYPE, pyints.ZERO_TAG, pyints.ONE_DIGIT_TAG
    for at, a in ((HANDLE_TOK_BYTES, tok_bytes), (HANDLE_TOK_OFFSETS, tok_offsets), (HANDLE_VALID, valid)):
        h[at], h[at + 1] = a.ctypes.data, len(a)
    h.flags.writeable = False
    return h


def decode_call_handle(handle: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """decode_list_call's handle: decode_handle's `handle`, the list and tuple types, the uint8
    `scratch` (its length bounds the bytes of one call); the caller keeps both arrays alive as long
    as the handle, and uses it only where pyints.available()."""
    if handle.dtype != np.int64 or handle.shape != (HANDLE_LEN,) or handle.flags.writeable:
        raise ValueError("not a handle of decode_handle")
    if scratch.dtype != np.uint8 or scratch.ndim != 1 or not scratch.flags.c_contiguous or not scratch.flags.writeable:
        raise ValueError(f"scratch array {scratch.dtype}[{scratch.ndim}] does not match the decode call handle")
    c = np.zeros(CALL_HANDLE_LEN, dtype=np.int64)
    c[:HANDLE_LEN] = handle
    c[HANDLE_LIST_TYPE], c[HANDLE_TUPLE_TYPE] = id(list), id(tuple)
    c[HANDLE_SCRATCH], c[HANDLE_SCRATCH + 1] = scratch.ctypes.data, len(scratch)
    c.flags.writeable = False
    return c


def gather_list(seq: list | tuple, handle: np.ndarray) -> bytes | None:
    """The bytes of an exact list or tuple of ids in one kernel call that reads the int objects
    (tltok_jit.engine.pyints), or None: an item that is not an int in [0, 2**30), an unknown id, or the
    object layout check failed. `handle`: decode_handle of the tables."""
    if not _FAST_INTS:
        return None
    n = len(seq)
    out = gather_small_ints(id(seq), type(seq) is list, n, handle)
    return out.tobytes() if len(out) or not n else None  # every valid id has bytes


def gather(ids: np.ndarray, tok_bytes: np.ndarray, tok_offsets: np.ndarray, valid: np.ndarray) -> bytes | None:
    """The bytes of int64 `ids`, or None when one of them is unknown."""
    ids = read_only_view(np.ascontiguousarray(ids))  # one compiled variant; the caller's flags stay
    out, bad = gather_rows(ids, _ONE_ROW, tok_bytes, tok_offsets, valid, _ONE_ROW)
    return None if bad >= 0 else out.tobytes()


def flat_ids(batch) -> tuple[np.ndarray, np.ndarray] | None:
    """(all ids as int64, row offsets) of a list or tuple of lists or tuples of ints, or None for
    any other batch (the checked path names the row and element it refuses)."""
    if type(batch) not in (list, tuple):
        return None
    flat: list = []
    for row in batch:
        if type(row) not in (list, tuple):
            return None
        flat += row
    ids = small_int_array(flat)
    if ids is None:
        try:
            # array.array takes exactly what operator.index takes (no floats, no str), as token_id_array
            ids = np.frombuffer(array.array("q", flat), dtype=np.int64)
        except (TypeError, OverflowError):
            return None
    offsets = np.zeros(len(batch) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, batch), dtype=np.int64, count=len(batch)), out=offsets[1:])
    return ids, offsets


def gather_batch(ids: np.ndarray, row_offsets: np.ndarray, tok_bytes: np.ndarray, tok_offsets: np.ndarray,
                 valid: np.ndarray) -> list[bytes] | None:
    """The bytes of each row of `ids` (flat_ids), or None when an id is unknown."""
    offsets = np.empty_like(row_offsets)
    ids = read_only_view(np.ascontiguousarray(ids))
    out, bad = gather_rows(ids, row_offsets, tok_bytes, tok_offsets, valid, offsets)
    if bad >= 0:
        return None
    data = out.tobytes()
    o = offsets.tolist()
    return [data[o[r]:o[r + 1]] for r in range(len(o) - 1)]
