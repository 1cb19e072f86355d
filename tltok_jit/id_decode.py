"""Token ids -> bytes, fast paths for `Encoding.decode*`: a join over a per-id bytes list for short
lists of ints (no numpy, no kernel call), the gather kernel for longer ids and for batches.

Every function returns None where it cannot answer exactly (an id to report, an element that is
not an int, a shape it does not take): the caller's checked path then answers or raises.
"""

from __future__ import annotations

import array
import numpy as np

from . import pyints
from .kernels.decode import (HANDLE_INT_TYPE, HANDLE_LEN, HANDLE_ONE_DIGIT_TAG, HANDLE_TOK_BYTES, HANDLE_TOK_OFFSETS,
                             HANDLE_VALID, HANDLE_ZERO_TAG, gather_rows, gather_small_ints)
from .pyints import small_int_array
from .text import read_only_view

# Up to this many ids a list is joined in Python: one kernel call costs ~2 us before its first id,
# a join ~50 ns per id (each id's bytes object is a cache miss); they cross at ~24 ids (measured).
SHORT_IDS = 24

_ONE_ROW = np.zeros(0, dtype=np.int64)  # gather_rows: all ids are one row
_FAST_INTS = pyints.available()


def id_bytes_table(tok_bytes: np.ndarray, tok_offsets: np.ndarray, valid: np.ndarray) -> list:
    """The whole join table: every id's bytes, None for an unassigned id."""
    data = tok_bytes.tobytes()
    o = tok_offsets.tolist()
    return [data[o[i]:o[i + 1]] if ok else None for i, ok in enumerate(valid.tolist())]


def learn_ids(table: list, tokens, tok_bytes: np.ndarray, tok_offsets: np.ndarray) -> None:
    """Put the bytes of `tokens` in the join table (every one a valid id: their decode by the kernel
    just succeeded). A table filled as ids come costs nothing up front; the whole one costs tens of
    milliseconds of bytes objects (id_bytes_table)."""
    for i in tokens:
        if table[i] is None:
            table[i] = tok_bytes[tok_offsets[i]:tok_offsets[i + 1]].tobytes()


def join_ids(table: list, tokens) -> bytes | None:
    """The bytes of `tokens` (a list or tuple of ints) by one join over `table` (the bytes of each
    id, or None: unassigned or not learnt yet), or None (an id not in the table, or an element the
    checked path must report).

    Only ints and objects with __index__ index a list, as tiktoken takes them: a float, str or
    nested list fails here, an id past the table raises IndexError, an unassigned one gives a None
    the join refuses. A list index wraps negative ids, so they are left out, and a part missing
    means one was there."""
    try:
        parts = [table[i] for i in tokens if i >= 0]
        return b"".join(parts) if len(parts) == len(tokens) else None
    except Exception:  # noqa: BLE001 - whatever failed, the checked path reproduces and reports it
        return None


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


def gather_list(seq: list | tuple, handle: np.ndarray) -> bytes | None:
    """The bytes of an exact list or tuple of ids in one kernel call that reads the int objects
    (tltok_jit.pyints), or None: an item that is not an int in [0, 2**30), an unknown id, or the
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
