"""Counting the distinct pieces of a corpus: each pattern's exact scanner over Arrow-layout batches, on
several threads, each adding to its own table of distinct pieces; the tables are summed at the end,
so the counts never depend on the thread count. A pattern without a scanner is split by the `regex`
module (Hugging Face's `Split(..., "isolated")`: the text between matches is a piece too)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from ..engine.threads import resolve_threads
from ..kernels import train_bpe as K
from ..kernels.scan import load_scanner
from ..model.patterns import kind_of_pattern
from ..tables.bpe import PATTERN_CODES, class_tables_for
from .source import Batch


@dataclass
class PieceCounts:
    """Distinct pieces: piece i is data[offsets[i]:offsets[i + 1]] (UTF-8), seen counts[i] times."""

    data: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.counts)


# a batch is split over the threads in shares of at least this many bytes (a thread's start and
# its table cost more than a smaller share saves)
MIN_PART_BYTES = 1 << 16


class _Table:
    def __init__(self):
        self.arrays = K.new_table()

    def add_rows(self, data, offsets, lo, hi, kind, s1, s2):
        row, pos = lo, -1
        while row < hi:
            row, pos = K.count_rows(data, offsets, row, pos, hi, kind, s1, s2, *self.arrays)
            if row < hi:  # the table is full: grow it, go on from that piece
                self._grow(int(offsets[row + 1] - pos))

    def add_pieces(self, buf, offs, cnts):
        i = 0
        while i < len(cnts):
            i = K.add_pieces(i, buf, offs, cnts, *self.arrays)
            if i < len(cnts):
                self._grow(int(offs[i + 1] - offs[i]))

    def _grow(self, need_bytes: int) -> None:
        meta = self.arrays[-1]
        self.arrays = (*K.grow_table(*self.arrays, need_bytes), meta)

    def pieces(self) -> PieceCounts:
        T, _, _, starts, lens, counts, pool, meta = self.arrays
        return PieceCounts(*K.table_pieces(T, starts, lens, counts, pool, meta))


def count_pieces(batches: Iterable[Batch], pattern: str, *, num_threads: int | None = None,
                 on_batch: Callable[[int], None] | None = None) -> PieceCounts:
    """The distinct pieces of every row of `batches` split by `pattern` (a regex), with their counts.
    `on_batch(n_bytes)` is called after each batch."""
    kind = kind_of_pattern(pattern)
    if kind is None or kind not in PATTERN_CODES:
        warnings.warn(f"no scanner implements the pattern {pattern!r}: its pieces are split by the `regex` "
                      f"module (slow; its matches can differ from Oniguruma's)", stacklevel=3)
        return _count_with_regex(batches, pattern, on_batch)
    code = PATTERN_CODES[kind]
    load_scanner(code)
    s1, s2, _ = class_tables_for(kind)
    threads = resolve_threads(num_threads)
    tables = [_Table() for _ in range(threads)]
    for data, offsets in batches:
        n = len(offsets) - 1
        if n <= 0:
            continue
        parts = max(1, min(threads, len(data) // MIN_PART_BYTES))
        bounds = _balanced(offsets, parts)
        if parts == 1:
            tables[0].add_rows(data, offsets, 0, n, code, s1, s2)
        else:
            errors: list[BaseException] = []

            def run(t, lo, hi):
                try:
                    tables[t].add_rows(data, offsets, lo, hi, code, s1, s2)
                except BaseException as e:  # noqa: BLE001 - re-raised on the calling thread
                    errors.append(e)

            workers = [threading.Thread(target=run, args=(t, int(bounds[t]), int(bounds[t + 1])))
                       for t in range(1, parts)]
            for w in workers:
                w.start()
            run(0, int(bounds[0]), int(bounds[1]))
            for w in workers:
                w.join()
            if errors:
                raise errors[0]
        if on_batch is not None:
            on_batch(len(data))
    total = tables[0]
    for t in tables[1:]:
        p = t.pieces()
        if len(p):
            total.add_pieces(p.data, p.offsets, p.counts)
    return total.pieces()


def _balanced(offsets: np.ndarray, parts: int) -> np.ndarray:
    n = len(offsets) - 1
    total = int(offsets[-1] - offsets[0])
    targets = offsets[0] + (np.arange(1, parts, dtype=np.int64) * total) // parts
    inner = np.searchsorted(offsets, targets, side="left").astype(np.int64)
    return np.concatenate(([0], np.clip(inner, 0, n), [n])).astype(np.int64)


def _count_with_regex(batches: Iterable[Batch], pattern: str, on_batch) -> PieceCounts:
    import regex

    try:
        rx = regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"pattern: {pattern!r} is not a valid regex ({e})") from None
    counts: dict[bytes, int] = {}
    for data, offsets in batches:
        raw = data.tobytes()
        for r in range(len(offsets) - 1):
            text = raw[offsets[r]:offsets[r + 1]].decode("utf-8")
            last = 0
            for m in rx.finditer(text):
                s, e = m.span()
                if s > last:  # the text between two matches: its own piece ("isolated")
                    g = text[last:s].encode("utf-8")
                    counts[g] = counts.get(g, 0) + 1
                if e > s:
                    g = text[s:e].encode("utf-8")
                    counts[g] = counts.get(g, 0) + 1
                last = e
            if last < len(text):
                g = text[last:].encode("utf-8")
                counts[g] = counts.get(g, 0) + 1
        if on_batch is not None:
            on_batch(len(data))
    keys = list(counts)
    data = np.frombuffer(b"".join(keys), np.uint8).copy()  # writable, as a table's pieces
    offs = np.zeros(len(keys) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, keys), np.int64, len(keys)), out=offs[1:])
    return PieceCounts(data, offs, np.fromiter(counts.values(), np.int64, len(keys)))
