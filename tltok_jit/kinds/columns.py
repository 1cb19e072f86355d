"""Arrow columns for registry kinds: reading text and id-list columns and building the results
(the entry points themselves: `row_columns.RowColumns`, `sentencepiece_columns`, `encoding_backed`).

The entry points have the signatures and conventions of `Encoding.encode_arrow`, `count_arrow`
and `decode_arrow` (see `tltok_jit.columns.arrow`): string, large_string, string_view (and binary kinds,
dictionaries of them, the null type) read in place; a ChunkedArray comes back chunked the same way;
a null row stays null; `list<uint32>` ids (`large_list<uint32>` past 2**31 - 1 ids, or with
`large_list=True`), int64 counts, `large_string` texts. A row that is not valid UTF-8 is encoded as
`row.decode("utf-8", "replace")` (errors="replace") or raises `ArrowRowError` naming the row and
the byte (errors="strict"). A pandas Series gives a pandas Series (`tltok_jit.columns.pandas_io`).
pyarrow is imported when this module is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numba.typed import List as TypedList

from ..columns.arrow import ArrowRowError, as_arrow, check_offsets, is_text_type
from ..engine.text import read_only_view
from ..tokenizer import TokenIdError

__all__ = [
    "LIST_MAX_IDS",
    "IdColumn",
    "TextColumn",
    "assemble_counts",
    "assemble_ids",
    "check_errors",
    "chunks_of",
    "counts_array",
    "id_columns",
    "ids_array",
    "read_ids",
    "read_text",
    "replaced_text",
    "strings_array",
    "text_columns",
    "want_large",
    "with_template",
]

LIST_MAX_IDS = 2**31 - 1  # ids a list<uint32> array holds (int32 offsets)

_VIEW_PREDICATES = [p for p in ("is_string_view", "is_binary_view") if hasattr(pa.types, p)]
_EMPTY_U8 = np.zeros(1, np.uint8)
_EMPTY_U8.flags.writeable = False


def check_errors(errors: str) -> None:
    if errors not in ("replace", "strict"):
        raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")


def chunks_of(column) -> tuple[list[pa.Array], bool]:
    """(the arrays of `column`, whether it was chunked)."""
    arr = as_arrow(column)
    if isinstance(arr, pa.ChunkedArray):
        return list(arr.chunks), True
    return [arr], False


@dataclass
class TextColumn:
    """One text array as the kernels read it: row r is bufs[rbuf[r]][rstart[r]:rstart[r] + rlen[r]]
    (read-only views, checked to lie inside the buffers); null rows have length 0 and valid False."""

    array: pa.Array
    n: int
    bufs: list
    rbuf: np.ndarray
    rstart: np.ndarray
    rlen: np.ndarray
    valid: np.ndarray

    def row_bytes(self, r: int) -> bytes:
        s = int(self.rstart[r])
        return self.bufs[int(self.rbuf[r])][s:s + int(self.rlen[r])].tobytes()

    def typed_bufs(self):
        """The buffers as a numba typed list of read-only arrays (a writable pyarrow buffer would
        give the rows another type, and the kernels they reach a second compiled variant)."""
        lst = TypedList()
        for b in self.bufs:
            lst.append(read_only_view(b))
        return lst


def _valid_mask(arr: pa.Array) -> np.ndarray:
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, bool)
    bm = arr.buffers()[0]
    if bm is None:  # the null type
        return np.zeros(n, bool)
    bits = np.unpackbits(np.frombuffer(bm, np.uint8), bitorder="little")
    return bits[arr.offset:arr.offset + n].astype(bool)


def read_text(arr: pa.Array) -> TextColumn:
    """The kernel view of a (non-dictionary) text array; ValueError when its offsets or views point
    outside its buffers."""
    t = arr.type
    n = len(arr)
    valid = _valid_mask(arr)
    zeros = np.zeros(n, np.int64)
    if pa.types.is_null(t) or n == 0:
        return TextColumn(arr, n, [_EMPTY_U8], zeros, zeros, zeros.copy(), valid)
    bufs = arr.buffers()
    if any(getattr(pa.types, p)(t) for p in _VIEW_PREDICATES):
        views_u8 = np.frombuffer(bufs[1], np.uint8, count=16 * n, offset=16 * arr.offset)
        views = views_u8.view(np.int32).reshape(n, 4)
        lens = np.where(valid, views[:, 0].astype(np.int64), 0)
        if (lens < 0).any():
            raise ValueError(f"invalid Arrow {t} array: row {int(np.argmax(lens < 0))} has a negative length")
        far = lens > 12
        rbuf = np.where(far, 1 + views[:, 2].astype(np.int64), 0)
        rstart = np.where(far, views[:, 3].astype(np.uint32).astype(np.int64), 16 * np.arange(n, dtype=np.int64) + 4)
        data = [np.frombuffer(b, np.uint8) if b is not None and b.size else _EMPTY_U8 for b in bufs[2:]]
        sizes = np.array([len(views_u8)] + [b.size if b is not None else 0 for b in bufs[2:]], np.int64)
        bad = far & ((rbuf >= len(sizes)) | (rbuf < 0))
        if not bad.any():
            bad = far & (rstart + lens > sizes[np.minimum(rbuf, len(sizes) - 1)])
        if bad.any():
            raise ValueError(f"invalid Arrow {t} array: the view of row {int(np.argmax(bad))} points outside its "
                             "data buffers")
        return TextColumn(arr, n, [read_only_view(views_u8)] + data, rbuf, rstart, lens, valid)
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    odt = np.int64 if large else np.int32
    off = np.frombuffer(bufs[1], odt, count=n + 1, offset=arr.offset * np.dtype(odt).itemsize)
    data = bufs[2]
    check_offsets(off, data.size if data is not None else 0, str(t))
    off = off.astype(np.int64)
    lens = np.where(valid, np.diff(off), 0)
    buf = np.frombuffer(data, np.uint8) if data is not None and data.size else _EMPTY_U8
    return TextColumn(arr, n, [buf], zeros, off[:-1].copy(), lens, valid)


def _check_text_type(t: pa.DataType) -> None:
    if not is_text_type(t):
        raise TypeError(f"encode_arrow reads string, large_string, string_view, binary, large_binary, "
                        f"binary_view or dictionary arrays of them; got {t}")


def text_columns(column, encode_chunk: Callable, assemble: Callable):
    """Apply `encode_chunk(TextColumn, row_base)` to each array of `column` (a dictionary's values
    once, then taken) and `assemble(results, chunked)`; results are (kind, chunk, value) as in
    `tltok_jit.columns.arrow`: ("dict", chunk, Arrow result of the dictionary) or ("res", chunk, value)."""
    arr = as_arrow(column)
    _check_text_type(arr.type)
    chunks, chunked = chunks_of(arr)
    results = []
    row_base = 0
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            inner = text_columns(chunk.dictionary, encode_chunk, assemble)
            results.append(("dict", chunk, inner))
        else:
            results.append(("res", chunk, encode_chunk(read_text(chunk), row_base)))
        row_base += len(chunk)
    return assemble(results, chunked)


def replaced_text(data: bytes, errors: str, row: int) -> str:
    """A row's text: valid UTF-8 decoded, else `decode("utf-8", "replace")` or ArrowRowError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if errors == "strict":
            pos = e.start
            raise ArrowRowError(f"row {row}: invalid UTF-8 at byte {pos} ({data[max(pos - 8, 0):pos + 8]!r}); pass "
                                "errors='replace' to encode it as bytes.decode('utf-8', 'replace') would", row) from None
        return data.decode("utf-8", "replace")


def _validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    nulls = int(len(valid) - np.count_nonzero(valid))
    if not nulls:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def ids_array(ids: np.ndarray, offsets: np.ndarray, valid: np.ndarray, large: bool) -> pa.Array:
    """A list<uint32> (large_list<uint32>) array: row r = ids[offsets[r]:offsets[r + 1]], null where not valid."""
    n = len(valid)
    ids = np.ascontiguousarray(ids, np.uint32)
    offsets = np.ascontiguousarray(offsets, np.int64 if large else np.int32)
    values = pa.Array.from_buffers(pa.uint32(), len(ids), [None, pa.py_buffer(ids)])
    validity, nulls = _validity(valid)
    typ = pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32())
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(offsets)], null_count=nulls, children=[values])


def counts_array(counts: np.ndarray, valid: np.ndarray) -> pa.Array:
    validity, nulls = _validity(valid)
    counts = np.ascontiguousarray(counts, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(valid), [validity, pa.py_buffer(counts)], null_count=nulls)


def want_large(n_ids: int, large_list: bool | None) -> bool:
    if large_list is None:
        return n_ids > LIST_MAX_IDS
    if not large_list and n_ids > LIST_MAX_IDS:
        raise OverflowError(f"{n_ids} ids do not fit a list<uint32> array (int32 offsets); pass large_list=True "
                            "or None")
    return bool(large_list)


def assemble_ids(results, chunked: bool, large_list: bool | None):
    """The list arrays of `text_columns` results whose "res" values are (ids, offsets, valid)."""
    if large_list is None:
        large = any(pa.types.is_large_list(v.type) if kind == "dict" else int(v[1][-1]) > LIST_MAX_IDS
                    for kind, _c, v in results)
    else:
        large = want_large(max([int(v[1][-1]) for kind, _c, v in results if kind == "res"] or [0]), large_list)
    out = []
    for kind, chunk, v in results:
        if kind == "dict":
            arr = v.take(chunk.indices)
            if large != pa.types.is_large_list(arr.type):
                arr = arr.cast(pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32()))
            out.append(arr)
        else:
            out.append(ids_array(v[0], v[1], v[2], large))
    typ = pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32())
    return pa.chunked_array(out, type=typ) if chunked else out[0]


def assemble_counts(results, chunked: bool):
    """The int64 arrays of `text_columns` results whose "res" values are (counts, valid)."""
    out = [v.take(chunk.indices) if kind == "dict" else counts_array(v[0], v[1]) for kind, chunk, v in results]
    return pa.chunked_array(out, type=pa.int64()) if chunked else out[0]


# ---- id-list columns ---------------------------------------------------------------------------

@dataclass
class IdColumn:
    """One list-of-integers array: row r = ids[offsets[r]:offsets[r + 1]] (int64), null where not valid."""

    array: pa.Array
    ids: np.ndarray
    offsets: np.ndarray
    valid: np.ndarray


def read_ids(arr: pa.Array, vocab_size: int, row_base: int) -> IdColumn:
    """The ids of a list / large_list / fixed_size_list array of integers, every one checked to be in
    [0, vocab_size) (TokenIdError naming the row and position otherwise)."""
    t = arr.type
    if pa.types.is_fixed_size_list(t):
        arr = arr.cast(pa.large_list(t.value_type))
        t = arr.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        raise TypeError(f"decode_arrow reads list<integer> arrays; got {t}")
    if not pa.types.is_integer(t.value_type):
        raise TypeError(f"decode_arrow reads lists of integer token ids; got {t}")
    n = len(arr)
    valid = _valid_mask(arr)
    if n == 0:
        return IdColumn(arr, np.zeros(0, np.int64), np.zeros(1, np.int64), valid)
    odt = np.int64 if pa.types.is_large_list(t) else np.int32
    off = np.frombuffer(arr.buffers()[1], odt, count=n + 1, offset=arr.offset * np.dtype(odt).itemsize)
    child = arr.values
    check_offsets(off, len(child), str(t))
    if child.null_count:
        raise ValueError("decode_arrow: a list holds a null token id")
    values = np.frombuffer(child.buffers()[1], child.type.to_pandas_dtype(), count=len(child), offset=0)
    values = values[child.offset:child.offset + len(child)]
    off = off.astype(np.int64)
    lens = np.where(valid, np.diff(off), 0)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    take = np.repeat(off[:-1] - offsets[:-1], lens) + np.arange(offsets[-1], dtype=np.int64)
    ids = values[take].astype(np.int64) if values.dtype != np.uint64 else values[take]
    bad = (ids < 0) | (ids >= vocab_size)
    if bad.any():
        i = int(np.argmax(bad))
        r = int(np.searchsorted(offsets, i, side="right") - 1)
        raise TokenIdError(f"row {row_base + r}: token id {int(ids[i])} at position {i - int(offsets[r])} is out of "
                           f"range (vocab_size={vocab_size})")
    return IdColumn(arr, ids.astype(np.int64), offsets, valid)


def id_columns(column, vocab_size: int, decode_chunk: Callable[[IdColumn, int], pa.Array]):
    """`decode_chunk(IdColumn, row_base)` of each array of `column`, chunked as it was."""
    chunks, chunked = chunks_of(column)
    out = []
    row_base = 0
    for chunk in chunks:
        out.append(decode_chunk(read_ids(chunk, vocab_size, row_base), row_base))
        row_base += len(chunk)
    return pa.chunked_array(out, type=pa.large_string()) if chunked else out[0]


def decode_rows(column, vocab_size: int, decode: Callable[[list], str]):
    """`decode(ids as a list of int)` of every valid row of a list<integer> column, rows one by one in
    Python: large_string, nulls stay null, chunked as it was."""
    def decode_chunk(col: IdColumn, row_base: int) -> pa.Array:
        o = col.offsets.tolist()
        flat = col.ids.tolist()
        return strings_array([decode(flat[o[r]:o[r + 1]]) if col.valid[r] else None for r in range(len(col.valid))],
                             col.valid)

    return id_columns(column, vocab_size, decode_chunk)


def strings_array(texts: list, valid: np.ndarray) -> pa.Array:
    """large_string array of `texts` (one per row), null where not valid."""
    return pa.array([t if v else None for t, v in zip(texts, valid)], type=pa.large_string())


def _list_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids uint32, offsets int64 from 0, valid) of a list<uint32> / large_list<uint32> array."""
    off = np.asarray(arr.offsets, dtype=np.int64)
    values = arr.values.to_numpy(zero_copy_only=False)
    ids = values[off[0]:off[-1]] if len(off) else values[:0]
    return ids, off - off[0], _valid_mask(arr)


def with_template(result, prefix: np.ndarray, suffix: np.ndarray, large_list: bool | None):
    """A list<uint32> result (Array or ChunkedArray) with `prefix` and `suffix` around every non-null row."""
    chunks, chunked = chunks_of(result)
    parts = []
    for arr in chunks:
        ids, off, valid = _list_parts(arr)
        n = len(valid)
        lens = np.diff(off)
        extra = np.where(valid, len(prefix) + len(suffix), 0)
        new_off = np.zeros(n + 1, np.int64)
        np.cumsum(lens + extra, out=new_off[1:])
        out = np.empty(int(new_off[-1]), np.uint32)
        rows = np.flatnonzero(valid)
        shift = new_off[:-1] - off[:-1] + np.where(valid, len(prefix), 0)
        out[np.arange(len(ids), dtype=np.int64) + np.repeat(shift, lens)] = ids
        if len(prefix):
            out[(new_off[rows][:, None] + np.arange(len(prefix))).ravel()] = np.tile(prefix, len(rows))
        if len(suffix):
            out[(new_off[rows + 1][:, None] - len(suffix) + np.arange(len(suffix))).ravel()] = np.tile(suffix, len(rows))
        parts.append((out, new_off, valid))
    large = want_large(max([int(p[1][-1]) for p in parts] or [0]), large_list) if large_list is not None else \
        any(int(p[1][-1]) > LIST_MAX_IDS for p in parts)
    out_arrays = [ids_array(o, f, v, large) for o, f, v in parts]
    typ = pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32())
    return pa.chunked_array(out_arrays, type=typ) if chunked else out_arrays[0]
