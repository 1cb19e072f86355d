"""Token ids -> bytes, fast paths for `Encoding.decode*`: a join over a per-id bytes list for short
lists of ints (no numpy, no kernel call), the gather kernel for longer ids and for batches.

Every function returns None where it cannot answer exactly (an id to report, an element that is
not an int, a shape it does not take): the caller's checked path then answers or raises.
"""

from __future__ import annotations

import array
import numpy as np

from . import pyints
from .kernels.decode import gather_rows, gather_small_ints
from .pyints import small_int_array

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


def gather_list(seq: list | tuple, tok_bytes: np.ndarray, tok_offsets: np.ndarray, valid: np.ndarray) -> bytes | None:
    """The bytes of an exact list or tuple of ids in one kernel call that reads the int objects
    (tltok_jit.pyints), or None: an item that is not an int in [0, 2**30), an unknown id, or the
    object layout check failed."""
    if not _FAST_INTS:
        return None
    out, status = gather_small_ints(id(seq), type(seq) is list, len(seq), pyints.INT_TYPE, pyints.ZERO_TAG,
                                    pyints.ONE_DIGIT_TAG, tok_bytes, tok_offsets, valid)
    return out.tobytes() if status == -1 else None


def gather(ids: np.ndarray, tok_bytes: np.ndarray, tok_offsets: np.ndarray, valid: np.ndarray) -> bytes | None:
    """The bytes of int64 `ids`, or None when one of them is unknown."""
    out, bad = gather_rows(_read_only(ids), _ONE_ROW, tok_bytes, tok_offsets, valid, _ONE_ROW)
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
    out, bad = gather_rows(_read_only(ids), row_offsets, tok_bytes, tok_offsets, valid, offsets)
    if bad >= 0:
        return None
    data = out.tobytes()
    o = offsets.tolist()
    return [data[o[r]:o[r + 1]] for r in range(len(o) - 1)]


def _read_only(ids: np.ndarray) -> np.ndarray:
    """A C-contiguous read-only view (one compiled variant of the kernel; the caller's array keeps
    its flags)."""
    if not ids.flags.writeable and ids.flags.c_contiguous:
        return ids
    view = np.ascontiguousarray(ids).view()
    view.flags.writeable = False
    return view

