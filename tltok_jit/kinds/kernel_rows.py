"""What the registry kinds whose rows run in their own kernels (WordPiece, Unigram) share above
their kernels: single texts through the file's template, batches of rows cut over threads, rows the
kernel leaves to the single-text path, fixed-shape batches, decode and look-ups.

A kind supplies `_encode_text(text) -> uint32 ids` (one text, no template), `_run_rows(bufs, rbuf,
rstart, rlen, valid, threads) -> (ids, offsets, status)` (usually over `row_layout`), `_fix_rows`,
`_column_chunk` and `_decode_checked`, and sets `_prefix_ids` / `_suffix_ids` from its template.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import PaddingError
from .kernel_columns import KernelColumns

__all__ = ["KernelRows", "row_layout", "text_rows", "splice_rows"]


def text_rows(texts: Sequence[str]):
    """(bufs, rbuf, rstart, rlen) of a list of str: their UTF-8 in one buffer (a numba typed list
    of one array), every row in buffer 0. A row that is not a str is refused by its index."""
    from numba.typed import List as TypedList

    enc = []
    for r, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{r}] must be a str, not {type(t).__name__}")
        enc.append(t.encode("utf-8"))
    n = len(enc)
    lens = np.fromiter(map(len, enc), np.int64, count=n)
    start = np.zeros(n, np.int64)
    if n:
        np.cumsum(lens[:-1], out=start[1:])
    data = np.frombuffer(b"".join(enc) or b"\0", np.uint8)
    data.flags.writeable = False  # (already: frombuffer of bytes) the kernels take read-only text
    bufs = TypedList()
    bufs.append(data)
    return bufs, np.zeros(n, np.int64), start, lens


def row_layout(rlen: np.ndarray, valid: np.ndarray, slack: int, threads: int, min_parallel_bytes: int):
    """(row output starts int64 [n + 1], ids uint32, counts int64 [n], status uint8 [n], worker row
    bounds int64 [threads + 1], threads): each valid row gets room for one id per byte plus `slack`;
    rows are cut into `threads` runs of about equal bytes (one thread below `min_parallel_bytes`)."""
    n = len(rlen)
    caps = np.where(valid, rlen + slack, 0)
    ro = np.zeros(n + 1, np.int64)
    np.cumsum(caps, out=ro[1:])
    out = np.empty(max(int(ro[-1]), 1), np.uint32)
    if int(rlen.sum()) < min_parallel_bytes:
        threads = 1
    threads = max(1, min(threads, n))
    cum = np.cumsum(rlen + 16)
    cuts = np.searchsorted(cum, (np.arange(1, threads) * (int(cum[-1]) if n else 0)) // threads, side="right")
    bounds = np.concatenate(([0], cuts, [n])).astype(np.int64)
    return ro, out, np.empty(n, np.int64), np.zeros(n, np.uint8), bounds, threads


def splice_rows(ids: np.ndarray, off: np.ndarray, fixed: dict) -> tuple[np.ndarray, np.ndarray]:
    """(ids uint32, offsets): rows r in `fixed` replaced by fixed[r]."""
    parts = []
    counts = np.diff(off)
    o = off.tolist()
    for r in range(len(counts)):
        parts.append(fixed[r] if r in fixed else ids[o[r]:o[r + 1]])
        counts[r] = len(parts[-1])
    new_off = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=new_off[1:])
    return (np.concatenate(parts).astype(np.uint32) if parts else np.zeros(0, np.uint32)), new_off


class KernelRows(KernelColumns):
    """Mixed in before `Tokenizer` (see the module docstring)."""

    _prefix_ids: tuple = ()
    _suffix_ids: tuple = ()

    def _set_template(self, tpl) -> None:
        """The ids around a single text under the post-processor's template `tpl` (or none)."""
        self._prefix_ids = ()
        self._suffix_ids = ()
        if tpl is not None:
            k = next(n for n, p in enumerate(tpl.single) if p[0] == "A")
            self._prefix_ids = tuple(i for p in tpl.single[:k] for i in p[1])
            self._suffix_ids = tuple(i for p in tpl.single[k + 1:] for i in p[1])

    def _with_template(self, ids: np.ndarray, add_special_tokens: bool) -> np.ndarray:
        if add_special_tokens and (self._prefix_ids or self._suffix_ids):
            return np.concatenate([np.array(self._prefix_ids, np.uint32), ids, np.array(self._suffix_ids, np.uint32)])
        return ids

    def encode_to_numpy(self, text: str, *, add_special_tokens: bool = False) -> np.ndarray:
        """`encode` as a uint32 array."""
        return self._with_template(self._encode_text(text), add_special_tokens)

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """The ids of `text` (tokenizers' `encode(text, add_special_tokens=...).ids` without the file's
        truncation and padding)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return self.encode_to_numpy(text, add_special_tokens=add_special_tokens).tolist()

    def count(self, text: str) -> int:
        return len(self._encode_text(text))

    def encode_batch(self, texts: Sequence[str], *, add_special_tokens: bool = False,
                     num_threads: int | None = None) -> list[list[int]]:
        """`encode` of each text; rows in parallel (num_threads None or 0: every core)."""
        ids, off = self.encode_batch_to_numpy(texts, num_threads=num_threads)
        o = off.tolist()
        # a list per row from its slice: fewer objects touched than slicing one list of every id
        rows = [ids[o[r]:o[r + 1]].tolist() for r in range(len(o) - 1)]
        if add_special_tokens and (self._prefix_ids or self._suffix_ids):
            pre, suf = list(self._prefix_ids), list(self._suffix_ids)
            return [pre + row + suf for row in rows]
        return rows

    def _finish_chunk(self, col, row_base: int, errors: str, counting: bool, ids, off, status):
        """A column chunk's result (see KernelColumns) once its rows ran: rows with a status encoded
        on the single-text path (status 1: invalid UTF-8, replaced or refused per `errors`)."""
        from .columns import replaced_text

        def text(r: int, s: int) -> str:
            data = col.row_bytes(r)
            return replaced_text(data, errors, row_base + r) if s == 1 else data.decode("utf-8")

        ids, off = self._fix_rows(ids, off, status, text)
        if counting:
            return np.diff(off), col.valid
        return ids, off, col.valid

    @staticmethod
    def _empty_chunk(col, counting: bool):
        return (np.zeros(0, np.int64), col.valid) if counting else (np.zeros(0, np.uint32), np.zeros(1, np.int64),
                                                                    col.valid)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """tokenizers' `decode(ids, skip_special_tokens=...)`."""
        return self._decode_checked(self.check_ids(ids), skip_special_tokens)

    def id_to_token(self, i: int) -> str | None:
        return self.model.id_to_token[i] if 0 <= i < self.vocab_size else None

    def encode_batch_padded(self, texts, pairs=None, *, num_threads: int | None = None, **options):
        """A `tltok_jit.padding.PaddedBatch` of single texts or text pairs (`pairs`, or `texts` a list
        of (a, b) tuples) through the file's template, truncation and padding; the options are
        `tltok_jit.padding.template_batch`'s."""
        from ..padding import split_pairs, template_batch

        texts, pairs = split_pairs(texts, pairs)
        return template_batch(lambda rows: self._id_rows(rows, num_threads), self.vocab_size, self.model, texts,
                              pairs, **options)

    def _id_rows(self, texts, threads):
        """(ids, row starts, row counts) of a list of str or a string column without nulls."""
        if isinstance(texts, (str, bytes)):
            raise TypeError(f"texts must be a list of str or a string column, not one {type(texts).__name__}")
        if isinstance(texts, (list, tuple)):
            for r, t in enumerate(texts):
                if not isinstance(t, str):
                    raise PaddingError(f"texts[{r}] is {t!r}: every row must be a str", "texts", r)
            ids, off = self.encode_batch_to_numpy(texts, num_threads=threads)
            return ids, off[:-1], np.diff(off)
        import pyarrow as pa

        res = self.encode_arrow(texts, num_threads=threads, large_list=True)
        if not isinstance(res, (pa.Array, pa.ChunkedArray)):  # a pandas Series in
            res = pa.array(list(res), pa.large_list(pa.uint32()))
        col = res.combine_chunks() if isinstance(res, pa.ChunkedArray) else res
        if col.null_count:
            r = int(np.flatnonzero(np.asarray(col.is_null()))[0])
            raise PaddingError(f"texts row {r} is null: every row must be a string", "texts", r)
        o = np.asarray(col.offsets, np.int64)
        return np.asarray(col.values, np.uint32), o[:-1], np.diff(o)
