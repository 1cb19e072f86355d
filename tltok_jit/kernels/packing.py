"""The kernels behind `tltok_jit.packing`: documents of token ids into fixed-length rows.

A document is values[starts[d]:starts[d] + counts[d]], seen with `n_bos` (0 or 1) id before it and
`n_eos` after it: its packed length is counts[d] + n_bos + n_eos. A *segment* is a run of one
document inside one row: (document, start offset in the packed document, length). The layout
kernels (`bfd`, `concat`, `pad`) return the segments in row order, row by row, with `row_segments`
(row r holds segments row_segments[r]:row_segments[r + 1], laid out from column 0 in that order);
`fill_rows` writes the rows. Every kernel runs on one thread: the result never depends on the
thread count.
"""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit
def plan_pieces(counts, n_extra, seq_len, split):
    """(doc, start, length, n_split, n_dropped, n_empty) of the pieces the documents are cut into
    before packing: a document of packed length L = counts[d] + n_extra <= seq_len is one piece; a
    longer one is cut into whole windows of `seq_len` and the rest (`split`), or dropped
    (n_dropped); a document of length 0 gives no piece (n_empty)."""
    n_docs = len(counts)
    n_pieces = 0
    n_split = 0
    n_dropped = 0
    n_empty = 0
    for d in range(n_docs):
        total = counts[d] + n_extra
        if total == 0:
            n_empty += 1
        elif total <= seq_len:
            n_pieces += 1
        elif split:
            n_pieces += (total + seq_len - 1) // seq_len
            n_split += 1
        else:
            n_dropped += 1
    doc = np.empty(n_pieces, dtype=np.int64)
    start = np.empty(n_pieces, dtype=np.int64)
    length = np.empty(n_pieces, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        total = counts[d] + n_extra
        if total == 0 or (total > seq_len and not split):
            continue
        s = 0
        while s < total:
            n = min(seq_len, total - s)
            doc[k] = d
            start[k] = s
            length[k] = n
            k += 1
            s += n
    return doc, start, length, n_split, n_dropped, n_empty


# ------------------------------------------------------------------ best fit decreasing
# Rows with r ids of room left are kept per r in a skew heap keyed by row index (the lowest index
# on top), and a bit tree over r answers "the smallest room >= n that some row has" in O(log
# seq_len): best fit with ties to the lowest row in O(log) per piece.


@njit(inline="always")
def _heap_merge(a, b, left, right):
    """The root of the skew heap merging the heaps rooted at a and b (-1: empty)."""
    if a < 0:
        return b
    if b < 0:
        return a
    if b < a:
        a, b = b, a
    root = a
    while True:
        # a <= b: a's new left child is merge(a's right, b), its new right child its old left
        r = right[a]
        right[a] = left[a]
        if r < 0:
            left[a] = b
            return root
        if b < r:
            r, b = b, r
        left[a] = r
        a = r


@njit(inline="always")
def _tree_set(tree, width, v):
    i = v + width
    while i >= 1 and tree[i] == 0:
        tree[i] = 1
        i >>= 1


@njit(inline="always")
def _tree_clear(tree, width, v):
    i = v + width
    tree[i] = 0
    i >>= 1
    while i >= 1:
        t = tree[2 * i] | tree[2 * i + 1]
        if tree[i] == t:
            break
        tree[i] = t
        i >>= 1


@njit(inline="always")
def _tree_first_from(tree, width, v):
    """The smallest set leaf >= v, or -1."""
    i = v + width
    if tree[i]:
        return v
    while i > 1:
        if (i & 1) == 0 and tree[i + 1]:
            i += 1
            while i < width:
                i = 2 * i if tree[2 * i] else 2 * i + 1
            return i - width
        i >>= 1
    return -1


@njit
def bfd_rows(length, seq_len):
    """(order, row_segments) of best-fit decreasing over pieces of `length` (each 1..seq_len):
    pieces taken longest first (ties in input order), each put in the row with the least room left
    that fits it (ties to the lowest row), a new row when none fits. order[row_segments[r]:
    row_segments[r + 1]] are the pieces of row r in the order they were put there."""
    n = len(length)
    # counting sort on seq_len - length: longest first, stable
    first = np.zeros(seq_len + 1, dtype=np.int64)
    for i in range(n):
        first[seq_len - length[i]] += 1
    acc = 0
    for v in range(seq_len + 1):
        c = first[v]
        first[v] = acc
        acc += c
    by_length = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = seq_len - length[i]
        by_length[first[key]] = i
        first[key] += 1
    width = 1
    while width < seq_len + 1:
        width *= 2
    tree = np.zeros(2 * width, dtype=np.uint8)
    heap = np.full(seq_len + 1, -1, dtype=np.int64)  # room -> root row of its heap
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    row_of = np.empty(n, dtype=np.int64)
    used = np.zeros(n, dtype=np.int64)
    n_rows = 0
    for j in range(n):
        p = by_length[j]
        need = length[p]
        room = _tree_first_from(tree, width, need)
        if room < 0:
            r = n_rows
            n_rows += 1
        else:
            r = heap[room]
            heap[room] = _heap_merge(left[r], right[r], left, right)
            left[r] = -1
            right[r] = -1
            if heap[room] < 0:
                _tree_clear(tree, width, room)
        row_of[p] = r
        used[r] += need
        rest = seq_len - used[r]
        if rest > 0:
            heap[rest] = _heap_merge(heap[rest], r, left, right)
            _tree_set(tree, width, rest)
    # group by row, keeping the order of placement (longest first = by_length order)
    row_segments = np.zeros(n_rows + 1, dtype=np.int64)
    for i in range(n):
        row_segments[row_of[i] + 1] += 1
    for r in range(n_rows):
        row_segments[r + 1] += row_segments[r]
    fill = row_segments[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for j in range(n):
        p = by_length[j]
        r = row_of[p]
        order[fill[r]] = p
        fill[r] += 1
    return order, row_segments


@njit
def bfd(counts, n_extra, seq_len, split):
    """Segments of best-fit decreasing packing: (doc, start, length, row_segments, n_split,
    n_dropped, n_empty), see this module's docstring and `plan_pieces`."""
    doc, start, length, n_split, n_dropped, n_empty = plan_pieces(counts, n_extra, seq_len, split)
    order, row_segments = bfd_rows(length, seq_len)
    return doc[order], start[order], length[order], row_segments, n_split, n_dropped, n_empty


@njit
def pad(counts, n_extra, seq_len, split):
    """Segments of one piece per row (the same tuple as `bfd`)."""
    doc, start, length, n_split, n_dropped, n_empty = plan_pieces(counts, n_extra, seq_len, split)
    return doc, start, length, np.arange(len(doc) + 1), n_split, n_dropped, n_empty


@njit
def concat(counts, n_extra, seq_len, split):
    """Segments of the documents streamed end to end and cut every `seq_len` ids (the same tuple as
    `bfd`; n_split counts the documents cut across rows; without `split` a document longer than
    seq_len is dropped first)."""
    n_docs = len(counts)
    n_seg = 0
    total = 0
    n_dropped = 0
    n_empty = 0
    n_split = 0
    for d in range(n_docs):
        m = counts[d] + n_extra
        if m == 0:
            n_empty += 1
            continue
        if m > seq_len and not split:
            n_dropped += 1
            continue
        head = min(m, seq_len - total % seq_len)
        k = 1 + (m - head + seq_len - 1) // seq_len
        n_seg += k
        if k > 1:
            n_split += 1
        total += m
    n_rows = (total + seq_len - 1) // seq_len
    doc = np.empty(n_seg, dtype=np.int64)
    start = np.empty(n_seg, dtype=np.int64)
    length = np.empty(n_seg, dtype=np.int64)
    row_segments = np.empty(n_rows + 1, dtype=np.int64)
    row_segments[0] = 0
    k = 0
    col = 0
    row = 0
    for d in range(n_docs):
        m = counts[d] + n_extra
        if m == 0 or (m > seq_len and not split):
            continue
        s = 0
        while s < m:
            n = min(m - s, seq_len - col)
            doc[k] = d
            start[k] = s
            length[k] = n
            k += 1
            s += n
            col += n
            if col == seq_len:
                row += 1
                row_segments[row] = k
                col = 0
    if col:
        row_segments[n_rows] = k
    return doc, start, length, row_segments, n_split, n_dropped, n_empty


@njit
def fill_rows(values, doc_starts, doc_counts, bos, eos, seg_doc, seg_start, seg_len, row_segments, pad_id,
              input_ids, position_ids, labels, loss_mask):
    """Write rows [R, L]: row r holds its segments from column 0, then `pad_id` to L. A segment's
    ids are ids[start:start + length] of its document as packed (bos, the document's values, eos;
    bos / eos < 0: none); its position_ids count 0, 1, ...; labels are its ids except -100 on its
    first id (no loss across a boundary, as HF's DataCollatorWithFlattening); the padding run
    counts its own positions from 0 and has label -100; loss_mask is labels != -100."""
    n_rows, width = input_ids.shape
    n_bos = 1 if bos >= 0 else 0
    n_eos = 1 if eos >= 0 else 0
    for r in range(n_rows):
        ids = input_ids[r]
        pos = position_ids[r]
        lab = labels[r]
        mask = loss_mask[r]
        col = 0
        for k in range(row_segments[r], row_segments[r + 1]):
            d = seg_doc[k]
            n = seg_len[k]
            lo = seg_start[k]
            hi = lo + n
            total = doc_counts[d] + n_bos + n_eos
            c = col
            if n_bos and lo == 0:
                ids[c] = bos
                c += 1
                lo = 1
            tail = n_eos == 1 and hi == total
            if tail:
                hi -= 1
            if hi > lo:
                src = doc_starts[d] + lo - n_bos
                ids[c:c + hi - lo] = values[src:src + hi - lo]
                c += hi - lo
            if tail:
                ids[c] = eos
            for i in range(n):
                pos[col + i] = i
            lab[col:col + n] = ids[col:col + n]
            lab[col] = -100
            mask[col:col + n] = True
            mask[col] = False
            col += n
        ids[col:] = pad_id
        lab[col:] = -100
        mask[col:] = False
        for i in range(width - col):
            pos[col + i] = i


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of `a`: the kernels are compiled for read-only inputs only (a writable
    array would compile a second variant of each)."""
    v = a.view()
    v.flags.writeable = False
    return v


def layout(strategy: str, counts: np.ndarray, n_extra: int, seq_len: int, split: bool):
    """The layout kernel of `strategy` ("bfd", "concat", "pad") on read-only int64 `counts`, with
    its segment arrays returned read-only."""
    kernel = {"bfd": bfd, "concat": concat, "pad": pad}[strategy]
    doc, start, length, row_segments, n_split, n_dropped, n_empty = kernel(
        read_only(counts), np.int64(n_extra), np.int64(seq_len), bool(split))
    return (read_only(doc), read_only(start), read_only(length), read_only(row_segments), int(n_split),
            int(n_dropped), int(n_empty))


def warm() -> None:
    """Call every kernel once on tiny inputs of exactly the argument types `tltok_jit.packing`
    passes (read-only uint32 values and int64 index arrays, writable int64 / int32 outputs and a
    bool mask), so a package build can compile them ahead of use."""
    values = read_only(np.array([5, 6, 7, 8], dtype=np.uint32))
    starts = read_only(np.array([0, 3, 4], dtype=np.int64))
    counts = read_only(np.array([3, 1, 0], dtype=np.int64))
    for strategy in ("bfd", "concat", "pad"):
        for split in (True, False):
            doc, start, length, row_segments, *_ = layout(strategy, counts, 1, 4, split)
            for dtype in (np.int64, np.int32):
                n = len(row_segments) - 1
                ids = np.empty((n, 4), dtype=dtype)
                fill_rows(values, starts, counts, np.int64(-1), np.int64(1), doc, start, length, row_segments,
                          np.int64(0), ids, np.empty_like(ids), np.empty_like(ids), np.empty((n, 4), dtype=np.bool_))
