"""Training text as batches of rows in Arrow's layout: (data uint8, offsets int64), valid UTF-8.

A source is an iterable of str, a pyarrow string array / chunked array / table (column `text`), or
files: a path, a directory (every file under it), a glob, or a list of `os.PathLike`. A `.parquet`
file is read a row group at a time (column `text`); any other file is UTF-8 text whose lines (each
with its line end, split at "\\n" only) are the rows, as `tokenizers`' `Tokenizer.train(files)` reads
them. Batches are about `batch_bytes` long, so nothing holds the whole corpus.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator

import numpy as np

BATCH_BYTES = 32 << 20

# A batch's data is a read-only uint8 array and its offsets a writable int64 array, whatever the
# source: the kernels are compiled (and shipped) for those types only.

Batch = tuple[np.ndarray, np.ndarray]


def iter_batches(source, batch_bytes: int = BATCH_BYTES) -> Iterator[Batch]:
    """The source's rows as batches (see the module docstring); ValueError naming `source` for
    anything else, a missing path, or text that is not UTF-8."""
    for data, offsets in _batches(source, batch_bytes):
        if data.flags.writeable:  # e.g. a pyarrow buffer numpy sees as writable
            data = data.view()
            data.flags.writeable = False
        yield data, offsets


def _batches(source, batch_bytes: int) -> Iterator[Batch]:
    if isinstance(source, (str, os.PathLike)):
        yield from _files(_expand(os.fspath(source)), batch_bytes)
        return
    if isinstance(source, (list, tuple)) and source and all(isinstance(p, os.PathLike) for p in source):
        paths: list[str] = []
        for p in source:
            paths.extend(_expand(os.fspath(p)))
        yield from _files(paths, batch_bytes)
        return
    if _is_arrow(source):
        yield from _arrow(source)
        return
    if isinstance(source, (bytes, bytearray)) or not isinstance(source, Iterable):
        raise ValueError(f"source: expected an iterable of str, a pyarrow string column, or file paths; "
                         f"got {type(source).__name__}")
    yield from _texts(source, batch_bytes)


def _is_arrow(obj) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith("pyarrow")


def _expand(path: str) -> list[str]:
    if os.path.isdir(path):
        out = []
        for root, dirs, files in os.walk(path):
            dirs.sort()
            out.extend(os.path.join(root, f) for f in sorted(files) if not f.startswith("."))
        if not out:
            raise ValueError(f"source: the folder {path!r} holds no files")
        return out
    if os.path.isfile(path):
        return [path]
    found = sorted(glob.glob(path, recursive=True))
    found = [p for p in found if os.path.isfile(p)]
    if not found:
        raise ValueError(f"source: no file matches {path!r}")
    return found


def _files(paths: list[str], batch_bytes: int) -> Iterator[Batch]:
    for path in paths:
        if path.endswith(".parquet"):
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            if "text" not in pf.schema_arrow.names:
                raise ValueError(f"source: {path!r} has no column 'text' (columns: {pf.schema_arrow.names})")
            for rb in pf.iter_batches(columns=["text"], batch_size=65536):
                yield from _arrow(rb.column(0))
        else:
            yield from _text_file(path, batch_bytes)


def _text_file(path: str, batch_bytes: int) -> Iterator[Batch]:
    rest = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(batch_bytes)
            if not block:
                break
            block = rest + block
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # one line longer than a block: keep reading it
                rest = block
                continue
            rest = block[cut:]
            yield _lines(block[:cut], path)
    if rest:
        yield _lines(rest, path)


def _lines(block: bytes, path: str) -> Batch:
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"source: {path!r} is not UTF-8 text ({e.reason} in a block of it)") from None
    data = np.frombuffer(block, np.uint8)
    ends = np.flatnonzero(data == 10) + 1
    if len(ends) == 0 or ends[-1] != len(data):
        ends = np.append(ends, len(data))
    offsets = np.zeros(len(ends) + 1, np.int64)
    offsets[1:] = ends
    return data, offsets


def _texts(texts: Iterable, batch_bytes: int) -> Iterator[Batch]:
    parts: list[bytes] = []
    size = 0
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"source: item {i} is a {type(t).__name__}, not a str")
        b = _utf8(t, i)
        parts.append(b)
        size += len(b)
        if size >= batch_bytes:
            yield _pack(parts)
            parts = []
            size = 0
    if parts:
        yield _pack(parts)


def _utf8(t: str, i: int) -> bytes:
    try:
        return t.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"source: item {i} holds a lone surrogate (not encodable as UTF-8)") from None


def _pack(parts: list[bytes]) -> Batch:
    data = np.frombuffer(b"".join(parts), np.uint8)
    offsets = np.zeros(len(parts) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)), out=offsets[1:])
    return data, offsets


def _arrow(obj) -> Iterator[Batch]:
    import pyarrow as pa

    if isinstance(obj, pa.Table):
        if "text" not in obj.column_names:
            raise ValueError(f"source: the table has no column 'text' (columns: {obj.column_names})")
        obj = obj.column("text")
    if isinstance(obj, pa.RecordBatch):
        if "text" not in obj.schema.names:
            raise ValueError(f"source: the record batch has no column 'text' (columns: {obj.schema.names})")
        obj = obj.column(obj.schema.get_field_index("text"))
    chunks = obj.chunks if isinstance(obj, pa.ChunkedArray) else [obj]
    for arr in chunks:
        t = arr.type
        if pa.types.is_string_view(t) if hasattr(pa.types, "is_string_view") else False:
            arr = arr.cast(pa.large_string())
            t = arr.type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise ValueError(f"source: expected a string column, got {t}")
        if len(arr) == 0:
            continue
        off_type = np.int32 if pa.types.is_string(t) else np.int64
        bufs = arr.buffers()
        offsets = np.frombuffer(bufs[1], off_type, len(arr) + 1, arr.offset * np.dtype(off_type).itemsize)
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        offsets = offsets.astype(np.int64)
        if arr.null_count:  # a null row is no text
            valid = np.asarray(arr.is_valid())
            starts = offsets[:-1].copy()
            ends = offsets[1:].copy()
            ends[~valid] = starts[~valid]
            # rows as (start, end) pairs flattened: empty rows for nulls
            lens = ends - starts
            keep = lens > 0
            starts, lens = starts[keep], lens[keep]
            data = np.concatenate([data[s:s + n] for s, n in zip(starts, lens)]) if len(lens) else data[:0]
            offsets = np.zeros(len(lens) + 1, np.int64)
            np.cumsum(lens, out=offsets[1:])
        yield data, offsets
