"""Packing documents of token ids into fixed-length training rows that keep document boundaries.

`pack(ids, seq_len, strategy=...)` lays documents (an Arrow `list<uint32>` column, a list of id
arrays, or a padded id batch) into rows of `seq_len` ids and returns a `PackedBatch`:

* ``bfd`` (best-fit decreasing, as TRL's ``packing_strategy="bfd"``): documents longest first (ties
  in input order), each into the row with the least room left that fits it (ties to the lowest
  row), a new row when none fits. A document longer than `seq_len` is cut first into whole windows
  and its rest (``long_documents="split"``) or dropped and counted (``"drop"``).
* ``concat`` (Megatron / nanoGPT): the documents end to end, cut every `seq_len` ids; a document
  cut across rows gives a segment in each.
* ``pad``: one document (or window of one) per row.

`eos_id` / `bos_id` are put after / before every document before packing. Within a row each
document's run (a *segment*) has position_ids 0, 1, ... and labels equal to its ids except -100 on
its first id: a model that shifts labels (HF's causal LMs, torchtune's recipes) never learns across
a boundary, exactly what HF's `DataCollatorWithFlattening` gives each sequence. The padding at the
end of a row has `pad_id`, label -100 and its own positions from 0 (so models that find
boundaries where position_ids drop to 0, as HF's flash-attention path does, see it as a sequence of
its own). `seq_lens` is torchtune's layout: the row's segment lengths, then the padding run, summing
to seq_len (zeros after, to the widest row); `cu_seqlens` is FlashAttention's varlen layout over
`input_ids.reshape(-1)` (every segment and padding run).

A null row of an Arrow column is an error naming the row (HF's collators and torch fail on a None
row too); an empty document (no ids and no eos/bos) gives no segment and is counted.

The rows (up to 64 MB of them) are written into memory of an earlier result that no array refers
to any more (a result, or a view of it, kept by the caller is never written). `layout_documents` and
`fill` split the work for a loader: where every segment goes, then any rows of it when needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .errors import PackingError
from .kernels import packing as kernels
from .engine.arenas import Arenas

__all__ = ["Layout", "PackedBatch", "PackingError", "STRATEGIES", "documents", "fill", "layout_documents", "pack",
           "pack_column", "pack_documents", "packed_table", "rows_memory", "torchtune_fields", "write_parquet"]

STRATEGIES = ("bfd", "concat", "pad")
LONG_DOCUMENTS = ("split", "drop")
IGNORE_INDEX = -100  # label of an id without loss (HF's and torchtune's ignore index)
DTYPES = {"int64": np.int64, "int32": np.int32}


@dataclass(frozen=True, slots=True, eq=False)
class PackedBatch:
    """Rows of packed documents as numpy arrays.

    input_ids, position_ids, labels [N, seq_len] (the dtype asked, int64 by default), loss_mask
    [N, seq_len] bool (labels != -100); seq_lens [N, K] int32: segment lengths then the padding run,
    0 after; cu_seqlens [M + 1] int32 and max_seqlen: FlashAttention's varlen layout of every segment
    and padding run of `input_ids.reshape(-1)`; doc_index [S, 3] int64: (source row, start in the
    packed document, length) of every segment, row by row; row_segments [N + 1]: row r holds segments
    row_segments[r]:row_segments[r + 1] of doc_index. Counts: documents (input rows), split (cut into
    several segments), dropped (longer than seq_len with long_documents="drop"), empty (no ids),
    tokens (non-pad ids)."""

    input_ids: np.ndarray
    position_ids: np.ndarray
    labels: np.ndarray
    loss_mask: np.ndarray
    seq_lens: np.ndarray
    cu_seqlens: np.ndarray
    max_seqlen: int
    doc_index: np.ndarray
    row_segments: np.ndarray
    documents: int
    split: int
    dropped: int
    empty: int
    tokens: int

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    @property
    def seq_len(self) -> int:
        return self.input_ids.shape[1]

    @property
    def fill(self) -> float:
        """Non-pad ids / all slots (1.0 for no rows)."""
        slots = self.input_ids.size
        return self.tokens / slots if slots else 1.0


# ------------------------------------------------------------------ arguments
def _int(value, arg: str, least: int, most: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise PackingError(f"{arg} must be an int, not {type(value).__name__} ({value!r})", arg)
    v = int(value)
    if v < least or (most is not None and v > most):
        bound = f"in [{least}, {most}]" if most is not None else f"at least {least}"
        raise PackingError(f"{arg} must be {bound}, not {v}", arg)
    return v


def check_choice(value, arg: str, allowed) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise PackingError(f"{arg} must be one of {', '.join(map(repr, allowed))}, not {value!r}", arg)
    return value


def check_token(value, arg: str, top: int, vocab_size: int | None) -> int:
    """A checked id: an int in [0, vocab_size) (or what the output dtype holds)."""
    if vocab_size is not None:
        top = min(top, vocab_size - 1)
    return _int(value, arg, 0, top)


# ------------------------------------------------------------------ inputs
def _null_error(row: int) -> PackingError:
    return PackingError(f"ids row {row} is null: every row must be a list of ids (drop or fill null rows first)",
                        "ids", row)


def _as_ids(values: np.ndarray, offsets: np.ndarray | None, what: str) -> np.ndarray:
    """`values` as uint32, checked to be ids (integers in [0, 2**32))."""
    if values.dtype == np.uint32:
        return values
    if values.size == 0:
        return np.empty(0, dtype=np.uint32)
    if values.dtype.kind not in "iu":
        raise PackingError(f"{what} must hold integer ids, not {values.dtype}", "ids")
    bad = np.flatnonzero((values < 0) | (values > 0xFFFFFFFF)) if values.dtype.kind == "i" else \
        np.flatnonzero(values > 0xFFFFFFFF)
    if len(bad):
        i = int(bad[0])
        row = int(np.searchsorted(offsets, i, side="right") - 1) if offsets is not None else None
        raise PackingError(f"ids row {row}: {values[i]} is not a token id (ids are in [0, 2**32))", "ids", row)
    return values.astype(np.uint32)


def _from_arrow(ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import pyarrow as pa

    chunks = list(ids.chunks) if isinstance(ids, pa.ChunkedArray) else [ids]
    t = ids.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_integer(t.value_type):
        raise PackingError(f"ids must be a list<uint32> column (or a list of another integer type), not Arrow {t}",
                           "ids")
    values, starts, counts = [], [], []
    base = shift = 0
    for c in chunks:
        if c.null_count:
            raise _null_error(base + int(np.argmin(c.is_valid().to_numpy(zero_copy_only=False))))
        # the offsets of a (sliced) list array index its whole values child
        off = np.asarray(c.offsets).astype(np.int64)
        child = c.values
        if child.null_count:
            i = int(np.argmin(child.is_valid().to_numpy(zero_copy_only=False)))
            row = base + int(np.searchsorted(off, i, side="right") - 1)
            raise PackingError(f"ids row {row} holds a null id", "ids", row)
        values.append(_as_ids(child.to_numpy(), off, "ids"))
        starts.append(off[:-1] + shift)
        counts.append(np.diff(off))
        base += len(c)
        shift += len(child)
    if len(chunks) == 1:
        return values[0], starts[0], counts[0]
    if not chunks:
        return np.empty(0, np.uint32), np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(values), np.concatenate(starts), np.concatenate(counts)


def _from_padded(input_ids, attention_mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ids = np.asarray(input_ids)
    mask = np.asarray(attention_mask)
    if ids.ndim != 2 or mask.shape != ids.shape:
        raise PackingError(f"a padded batch needs input_ids and attention_mask of one 2-D shape, not {ids.shape} "
                           f"and {mask.shape}", "ids")
    n, width = ids.shape
    real = mask != 0
    counts = real.sum(axis=1).astype(np.int64)
    first = np.argmax(real, axis=1).astype(np.int64)
    last = width - 1 - np.argmax(real[:, ::-1], axis=1)
    gap = np.flatnonzero((counts > 0) & (last - first + 1 != counts))
    if len(gap):
        r = int(gap[0])
        raise PackingError(f"row {r} of the padded batch has padding between its ids (attention_mask is not one run "
                           "of 1s)", "ids", r)
    flat = np.ascontiguousarray(ids).reshape(-1)
    starts = np.arange(n, dtype=np.int64) * width + np.where(counts > 0, first, 0)
    return _as_ids(flat, np.arange(n + 1, dtype=np.int64) * width, "input_ids"), starts, counts


def _from_list(ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    docs = ids if isinstance(ids, (list, tuple)) else list(ids)
    arrays = []
    for r, d in enumerate(docs):
        if d is None:
            raise _null_error(r)
        a = np.asarray(d)
        if a.ndim != 1:
            raise PackingError(f"ids row {r} must be 1-D ids, not an array of shape {a.shape}", "ids", r)
        arrays.append(a if a.size else np.empty(0, dtype=np.uint32))
    counts = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if not arrays:
        return np.empty(0, np.uint32), offsets[:-1], counts
    values = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
    return _as_ids(values, offsets, "ids"), offsets[:-1], counts


def documents(ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, starts, counts) of the documents of `ids`: document d is values[starts[d]:
    starts[d] + counts[d]] (uint32; an Arrow column's values are not copied).

    >>> values, starts, counts = documents([[1, 2], [3]])
    >>> values.tolist(), starts.tolist(), counts.tolist()
    ([1, 2, 3], [0, 2], [2, 1])
    """
    module = type(ids).__module__.partition(".")[0]
    if module == "pyarrow":
        return _from_arrow(ids)
    if isinstance(ids, Mapping) and "input_ids" in ids:
        if "attention_mask" not in ids:
            raise PackingError("a padded batch needs its attention_mask to tell ids from padding", "ids")
        return _from_padded(ids["input_ids"], ids["attention_mask"])
    if hasattr(ids, "input_ids") and hasattr(ids, "attention_mask"):
        return _from_padded(ids.input_ids, ids.attention_mask)
    if isinstance(ids, np.ndarray) and ids.ndim == 2:  # rows of one length, no padding
        n, width = ids.shape
        offsets = np.arange(n + 1, dtype=np.int64) * width
        return _as_ids(np.ascontiguousarray(ids).reshape(-1), offsets, "ids"), offsets[:-1], np.full(n, width, np.int64)
    if isinstance(ids, (str, bytes)) or (isinstance(ids, np.ndarray) and ids.ndim != 1):
        raise PackingError(f"ids must be a list column, a list of id arrays or a padded batch, not "
                           f"{type(ids).__name__}", "ids")
    return _from_list(ids)


# ------------------------------------------------------------------ packing
def pack(ids, seq_len: int, *, strategy: str = "bfd", eos_id: int | None = None, bos_id: int | None = None,
         long_documents: str = "split", pad_id: int = 0, vocab_size: int | None = None,
         dtype: str = "int64", num_threads: int = 0) -> PackedBatch:
    """Pack the documents of `ids` into rows of `seq_len` ids (see this module's docstring).

    `ids`: a `list<uint32>` Arrow column (any integer list or large_list, chunked or sliced), a list
    of id arrays, a 2-D array (rows of one length), or a padded batch (`PaddedBatch`, or a mapping with input_ids and
    attention_mask). `vocab_size`, when given, bounds eos_id, bos_id, pad_id and every id. The rows
    are written on `num_threads` threads (0: every CPU; the layout is one thread's, and the result
    is the same for any count).

    >>> b = pack([[1, 2, 3], [4, 5], [6]], 4, pad_id=9)
    >>> b.input_ids.tolist()
    [[1, 2, 3, 6], [4, 5, 9, 9]]
    >>> b.position_ids.tolist(), b.labels.tolist()
    ([[0, 1, 2, 0], [0, 1, 0, 1]], [[-100, 2, 3, -100], [-100, 5, -100, -100]])
    >>> b.seq_lens.tolist(), b.cu_seqlens.tolist(), b.doc_index.tolist()
    ([[3, 1], [2, 2]], [0, 3, 4, 6, 8], [[0, 0, 3], [2, 0, 1], [1, 0, 2]])
    """
    seq_len = _int(seq_len, "seq_len", 2)
    strategy = check_choice(strategy, "strategy", STRATEGIES)
    long_documents = check_choice(long_documents, "long_documents", LONG_DOCUMENTS)
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise PackingError(f"dtype must be 'int64' or 'int32', not {dtype!r}", "dtype")
    out = DTYPES[dtype]
    top = int(np.iinfo(out).max) if out == np.int32 else 0xFFFFFFFF
    if vocab_size is not None:
        vocab_size = _int(vocab_size, "vocab_size", 1)
    eos = -1 if eos_id is None else check_token(eos_id, "eos_id", top, vocab_size)
    bos = -1 if bos_id is None else check_token(bos_id, "bos_id", top, vocab_size)
    pad_id = check_token(pad_id, "pad_id", top, vocab_size)
    if isinstance(num_threads, (bool, np.bool_)) or not isinstance(num_threads, (int, np.integer)) or num_threads < 0:
        raise PackingError(f"num_threads must be an int of at least 0, not {num_threads!r}", "num_threads")
    values, starts, counts = documents(ids)
    limit = min(top, vocab_size - 1) if vocab_size is not None else top
    _check_range(values, starts, counts, limit, vocab_size)
    return pack_documents(values, starts, counts, seq_len, strategy=strategy, eos=eos, bos=bos,
                          split=long_documents == "split", pad_id=pad_id, dtype=out, num_threads=int(num_threads))


def _check_range(values, starts, counts, limit: int, vocab_size: int | None) -> None:
    if limit >= 0xFFFFFFFF or not len(counts) or not values.size:
        return
    lo, hi = int(starts.min()), int((starts + counts).max())
    used = values[lo:hi]
    if used.size and int(used.max()) > limit:
        i = lo + int(np.argmax(used > limit))
        row = int(np.argmax((starts <= i) & (i < starts + counts)))
        what = f"outside the vocabulary of {vocab_size}" if vocab_size is not None else "too large for int32"
        raise PackingError(f"ids row {row} holds id {int(values[i])}, {what}", "ids", row)


@dataclass(frozen=True, slots=True, eq=False)
class Layout:
    """Where every segment of checked documents goes, before any row is written: row r holds
    segments row_segments[r]:row_segments[r + 1] of (seg_doc, seg_start, seg_len); document d is
    values[starts[d]:starts[d] + counts[d]] with bos / eos (-1: none) around it, and doc_index
    names it source_rows[d] (None: d). Read-only arrays; `fill` writes any rows of it."""

    values: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    bos: int
    eos: int
    seq_len: int
    seg_doc: np.ndarray
    seg_start: np.ndarray
    seg_len: np.ndarray
    row_segments: np.ndarray
    source_rows: np.ndarray | None
    split: int
    dropped: int
    empty: int

    def __len__(self) -> int:
        return len(self.row_segments) - 1

    def boundaries(self):
        """(seq_lens [N, K] int32, cu_seqlens int32, max_seqlen, tokens) of the rows."""
        return _boundaries(self.seg_len, self.row_segments, self.seq_len)

    def doc_index(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """doc_index [S, 3] int64 of the segments of rows lo:hi (all by default)."""
        hi = len(self) if hi is None else hi
        a, z = int(self.row_segments[lo]), int(self.row_segments[hi])
        if a == z:
            return np.empty((0, 3), np.int64)
        doc = self.seg_doc[a:z]
        out = np.empty((z - a, 3), dtype=np.int64)
        out[:, 0] = doc if self.source_rows is None else self.source_rows[doc]
        out[:, 1] = self.seg_start[a:z]
        out[:, 2] = self.seg_len[a:z]
        return out


def layout_documents(values: np.ndarray, starts: np.ndarray, counts: np.ndarray, seq_len: int, *, strategy: str,
                     eos: int = -1, bos: int = -1, split: bool = True, source_rows: np.ndarray | None = None,
                     rng: np.random.Generator | None = None) -> Layout:
    """The `Layout` of `pack` over checked documents values[starts[d]:starts[d] + counts[d]]
    (uint32 values, int64 starts and counts; eos / bos -1 for none). With `rng` the rows come in
    the order rng.permutation(rows) gives."""
    ro = kernels.read_only
    values = ro(np.ascontiguousarray(values, dtype=np.uint32))
    starts = ro(np.ascontiguousarray(starts, dtype=np.int64))
    counts = ro(np.ascontiguousarray(counts, dtype=np.int64))
    n_extra = (eos >= 0) + (bos >= 0)
    seg_doc, seg_start, seg_len, row_segments, n_split, n_dropped, n_empty = kernels.layout(
        strategy, counts, n_extra, seq_len, split)
    n_rows = len(row_segments) - 1
    if rng is not None and n_rows > 1:
        seg_doc, seg_start, seg_len, row_segments = (ro(a) for a in _reorder_rows(
            rng.permutation(n_rows), seg_doc, seg_start, seg_len, row_segments))
    if n_rows * seq_len >= 2**31:
        raise PackingError(f"{n_rows} rows of {seq_len} ids are too many for int32 cu_seqlens: pack fewer documents "
                           "per call", "ids")
    rows = None if source_rows is None else ro(np.asarray(source_rows, dtype=np.int64))
    return Layout(values=values, starts=starts, counts=counts, bos=int(bos), eos=int(eos), seq_len=int(seq_len),
                  seg_doc=seg_doc, seg_start=seg_start, seg_len=seg_len, row_segments=row_segments,
                  source_rows=rows, split=n_split, dropped=n_dropped, empty=n_empty)


def pack_documents(values: np.ndarray, starts: np.ndarray, counts: np.ndarray, seq_len: int, *, strategy: str,
                   eos: int = -1, bos: int = -1, split: bool = True, pad_id: int = 0, dtype=np.int64,
                   source_rows: np.ndarray | None = None, rng: np.random.Generator | None = None,
                   num_threads: int = 0) -> PackedBatch:
    """`pack` of checked documents values[starts[d]:starts[d] + counts[d]] (uint32 values, int64
    starts and counts; eos / bos -1 for none); doc_index names source_rows[d] (default d). With
    `rng` the rows come in the order rng.permutation(rows) gives (laid out in that order, so the
    rows of a shuffled batch are a slice, not a copy). `num_threads` as in `pack`."""
    lay = layout_documents(values, starts, counts, seq_len, strategy=strategy, eos=eos, bos=bos, split=split,
                           source_rows=source_rows, rng=rng)
    out = rows_memory(len(lay), seq_len, dtype)
    fill(lay, 0, len(lay), out, pad_id, num_threads)
    seq_lens, cu_seqlens, max_seqlen, tokens = lay.boundaries()
    input_ids, position_ids, labels, loss_mask = out
    return PackedBatch(input_ids=input_ids, position_ids=position_ids, labels=labels, loss_mask=loss_mask,
                       seq_lens=seq_lens, cu_seqlens=cu_seqlens, max_seqlen=max_seqlen, doc_index=lay.doc_index(),
                       row_segments=np.array(lay.row_segments), documents=len(lay.counts), split=lay.split,
                       dropped=lay.dropped, empty=lay.empty, tokens=tokens)


# A batch's rows are written into recycled memory (engine/arenas.py, a list of packing's own): a
# fresh buffer's first write faults in every page, several times the cost of the fill itself, and
# a loop packing chunk after chunk of one size would pay that on every call (glibc hands freed
# blocks of this size back to the system). Rows of a whole chunk are bigger than padded batches, so
# packing keeps fewer, bigger arenas, on the pages numpy gives (huge pages where the system allows
# them for a large array): an arena is faulted in once, then written again and again, and on a
# loaded 2-core VM a fill of 20 MB of rows took 3.1 ms of CPU on huge pages against 4.0 on 4 KB
# pages (medians of 30). Rows too big to keep are on numpy's pages too: a first pack of 107 MB of
# rows took 111-185 ms on 4 KB pages, 47-527 ms on huge pages (compaction stalls), but the same
# pack again 121 ms on 4 KB pages against 18-23 ms on huge pages.
ROW_ARENAS = Arenas(keep=2, most=1 << 26)  # rows over 64 MB are not kept


def rows_memory(n_rows: int, seq_len: int, dtype, arenas: Arenas | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Uninitialized (input_ids, position_ids, labels [n_rows, seq_len] of `dtype`, loss_mask bool)
    in one block of recycled memory (`arenas`: ROW_ARENAS by default), for `fill`."""
    cells = n_rows * seq_len
    item = np.dtype(dtype).itemsize
    buf = (ROW_ARENAS if arenas is None else arenas).take(cells * (3 * item + 1))
    ints = [buf[i * cells * item:(i + 1) * cells * item].view(dtype).reshape(n_rows, seq_len) for i in range(3)]
    mask = buf[3 * cells * item:].view(np.bool_).reshape(n_rows, seq_len)
    return ints[0], ints[1], ints[2], mask


_PARALLEL_SLOTS = 1 << 19  # output slots per thread of the fill (fewer: a thread costs more than it saves)


def _cpus() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fill(lay: Layout, lo: int, hi: int, out, pad_id: int, num_threads: int = 1) -> None:
    """Write rows lo:hi of `lay` into `out` (input_ids, position_ids, labels, loss_mask of hi - lo
    rows, C-contiguous; the ints of one dtype), in parts on threads (the kernel releases the GIL;
    each part writes its own rows, so the result is the same for any thread count; 0: every CPU)."""
    import threading

    n_rows, seq_len = hi - lo, lay.seq_len
    if n_rows <= 0:
        return
    parts = max(1, min(num_threads or _cpus(), n_rows * seq_len // _PARALLEL_SLOTS))
    bos, eos, pad = np.int64(lay.bos), np.int64(lay.eos), np.int64(pad_id)
    if parts == 1:  # a loader's batch: no more Python than the call
        kernels.fill_rows(lay.values, lay.starts, lay.counts, bos, eos, lay.seg_doc, lay.seg_start, lay.seg_len,
                          lay.row_segments[lo:hi + 1], pad, *out)
        return
    bounds = [n_rows * p // parts for p in range(parts + 1)]

    def run(p: int) -> None:
        a, z = bounds[p], bounds[p + 1]
        kernels.fill_rows(lay.values, lay.starts, lay.counts, bos, eos, lay.seg_doc, lay.seg_start, lay.seg_len,
                          lay.row_segments[lo + a:lo + z + 1], pad, *(x[a:z] for x in out))

    workers = [threading.Thread(target=run, args=(p,)) for p in range(1, parts)]
    for w in workers:
        w.start()
    try:
        run(0)
    finally:
        for w in workers:
            w.join()


def _reorder_rows(order, seg_doc, seg_start, seg_len, row_segments):
    """The segment arrays with row i made of the segments of row order[i]."""
    n_seg = np.diff(row_segments)[order]
    new = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(n_seg, out=new[1:])
    idx = np.repeat(row_segments[:-1][order] - new[:-1], n_seg) + np.arange(int(new[-1]), dtype=np.int64)
    return seg_doc[idx], seg_start[idx], seg_len[idx], new


def _boundaries(seg_len: np.ndarray, row_segments: np.ndarray, seq_len: int):
    """(seq_lens [N, K] int32, cu_seqlens int32, max_seqlen, tokens) of a layout."""
    n_rows = len(row_segments) - 1
    if n_rows == 0:
        return np.zeros((0, 0), np.int32), np.zeros(1, np.int32), 0, 0
    n_seg = np.diff(row_segments)
    row_tokens = np.add.reduceat(seg_len, row_segments[:-1])  # every row holds a segment
    padding = seq_len - row_tokens
    padded = padding > 0
    width = int((n_seg + padded).max())
    seq_lens = np.zeros((n_rows, width), dtype=np.int32)
    seg_row = np.repeat(np.arange(n_rows, dtype=np.int64), n_seg)
    seq_lens[seg_row, np.arange(len(seg_len), dtype=np.int64) - row_segments[:-1][seg_row]] = seg_len
    seq_lens[np.flatnonzero(padded), n_seg[padded]] = padding[padded]
    runs = seq_lens[seq_lens > 0]  # row-major: each row's runs in order
    cu_seqlens = np.zeros(len(runs) + 1, dtype=np.int32)
    np.cumsum(runs, out=cu_seqlens[1:])
    return seq_lens, cu_seqlens, int(runs.max()), int(row_tokens.sum())


# ------------------------------------------------------------------ writers
def packed_table(batch: PackedBatch):
    """The rows of `batch` as a pyarrow Table that HF `datasets` loads: input_ids, labels and
    position_ids as `fixed_size_list<int32>[seq_len]`, seq_lens as `list<int32>` (the segments, then
    the padding run). Splitting a row by its seq_lens into features of input_ids and labels and
    giving them to HF's `DataCollatorWithFlattening` gives back the row's ids, labels,
    position_ids and cu_seq_lens.

    >>> packed_table(pack([[1, 2, 3], [4]], 4)).column("seq_lens").to_pylist()
    [[3, 1]]
    """
    import pyarrow as pa

    s = batch.seq_len

    def column(a):
        return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(a, dtype=np.int32).reshape(-1)), s)

    width = (batch.seq_lens > 0).sum(axis=1)
    offsets = np.zeros(len(batch) + 1, dtype=np.int32)
    np.cumsum(width, out=offsets[1:])
    seq_lens = pa.ListArray.from_arrays(pa.array(offsets), pa.array(batch.seq_lens[batch.seq_lens > 0]))
    return pa.table({"input_ids": column(batch.input_ids), "labels": column(batch.labels),
                     "position_ids": column(batch.position_ids), "seq_lens": seq_lens})


def write_parquet(batches, path, **parquet_options) -> int:
    """Write a PackedBatch (or an iterable of them, all of one seq_len) to a Parquet file at `path`,
    one row group per batch; returns the number of rows written. Read it with
    `datasets.Dataset.from_parquet(path)` or `pyarrow.parquet.read_table(path)`."""
    import pyarrow.parquet as pq

    if isinstance(batches, PackedBatch):
        batches = [batches]
    writer = None
    rows = 0
    try:
        for b in batches:
            table = packed_table(b)
            if writer is None:
                writer = pq.ParquetWriter(str(path), table.schema, **parquet_options)
            elif table.schema != writer.schema:
                raise PackingError(f"batches of seq_len {b.seq_len} cannot join a file of another seq_len", "batches")
            writer.write_table(table)
            rows += len(b)
    finally:
        if writer is not None:
            writer.close()
    return rows


def torchtune_fields(batch: PackedBatch) -> dict:
    """torchtune `PackedDataset`'s fields of every row: tokens, labels, input_pos [N, seq_len]
    int64 and seq_lens (a list of N int64 arrays, each summing to seq_len: the segments, then the
    padding run). input_pos of the padding continues from the last segment's, capped at
    seq_len - 1, as torchtune pads a pack; labels are unshifted (torchtune's recipes shift them),
    -100 on each segment's first id and on the padding.

    >>> torchtune_fields(pack([[1, 2], [3]], 4))["input_pos"].tolist()
    [[0, 1, 0, 1]]
    """
    pos = batch.position_ids.astype(np.int64)
    s = batch.seq_len
    n = len(batch)
    if n:
        real = s - _padding(batch)  # >= 1: every row holds a segment
        cols = np.arange(s, dtype=np.int64)[None, :]
        last = pos[np.arange(n), real - 1][:, None]
        pos = np.where(cols < real[:, None], pos, np.minimum(last + 1 + cols - real[:, None], s - 1))
    width = (batch.seq_lens > 0).sum(axis=1)
    seq_lens = [batch.seq_lens[r, :width[r]].astype(np.int64) for r in range(n)]
    return {"tokens": batch.input_ids.astype(np.int64), "labels": batch.labels.astype(np.int64),
            "input_pos": pos, "seq_lens": seq_lens}


def _padding(batch: PackedBatch) -> np.ndarray:
    """The padding run of each row (0 for a full row)."""
    return batch.seq_len - np.add.reduceat(batch.doc_index[:, 2], batch.row_segments[:-1])


def pack_column(column, seq_len: int, **options):
    """(pyarrow Table of packed rows, PackedBatch) of an Arrow `list<uint32>` column: `pack` then
    `packed_table`; the one call a command line's `--pack N --strategy S` needs per chunk.

    >>> import pyarrow as pa
    >>> table, batch = pack_column(pa.array([[1, 2], [3]], pa.list_(pa.uint32())), 4, strategy="concat")
    >>> table.num_rows, batch.fill
    (1, 0.75)
    """
    batch = pack(column, seq_len, **options)
    return packed_table(batch), batch
