"""Arrow columns for the `sentencepiece` kind: `encode_arrow` / `count_arrow` on the column kernel
(`kernels.sentencepiece_arrow`), rows in parallel.

Row r gets the ids of `SentencePieceTokenizer.encode(row r)`; the result does not depend on the
thread count. Rows the kernel leaves to the single-text path: a row that is not valid UTF-8 (encoded
as its `decode("utf-8", "replace")`, or ArrowRowError with errors="strict"), and a row whose ids
outgrow the output region the kernel gave it (its bytes + 8 ids; only a charsmap that expands text,
or byte pieces for U+2581, get there).
"""

from __future__ import annotations

import threading

import numpy as np

from ..kernels import sentencepiece_arrow as KA
from ..loaders.sentencepiece_model import USER_DEFINED
from ..engine.threads import on_threads
from .columns import TextColumn, replaced_text

__all__ = ["ColumnEncoder"]

MIN_BLOCK_BYTES = 16 * 1024  # below this a block is not worth a scheduling step
BLOCKS_PER_THREAD = 8
MIN_PARALLEL_BYTES = 48 * 1024  # smaller columns are encoded on the calling thread
ROW_OVERHEAD = 64  # bytes a row counts for in the block plan besides its text (empty rows cost too)
REGION_SLACK = 8  # ids a row's output region holds beyond one per byte of its text


def _ro(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


class ColumnEncoder:
    """The column kernel's arguments for one model, and its per-worker BPE segment caches."""

    def __init__(self, tok):
        t = tok.tables
        m = t.model
        n_spec = m.normalizer
        self._tok = tok
        # plain escaping: the normalized row is the row with ' ' as U+2581 (after the dummy prefix)
        plain = (not n_spec.precompiled_charsmap and not n_spec.remove_extra_whitespaces
                 and n_spec.escape_whitespaces and not any(t == USER_DEFINED for t in m.types))
        self._norm_spec = (bool(n_spec.add_dummy_prefix), bool(n_spec.remove_extra_whitespaces),
                           bool(n_spec.escape_whitespaces), bool(plain))
        self._user_trie = tuple(_ro(a) for a in t.user_trie)
        self._units = _ro(t.charsmap_units)
        self._repl = _ro(t.charsmap_repl)
        self._byte_ids = _ro(t.byte_ids)
        self._unk_id = np.int64(t.unk_id)
        self._byte_fallback = bool(m.byte_fallback)
        # without a charsmap the normalized text holds only the row's characters, U+2581 and U+FFFD
        self._valid_normalized = not n_spec.precompiled_charsmap
        e_i64 = _ro(np.zeros(1, np.int64))
        e_f32 = _ro(np.zeros(1, np.float32))
        if t.bpe is not None:
            self._bpe = tuple(_ro(a) for a in t.bpe)
            self._uni = (e_i64, e_i64, e_i64, e_f32, e_i64, np.float32(0), np.float32(0))
        else:
            self._bpe = (_ro(np.zeros(0, np.int32)),) + (e_i64,) * 8 + (e_f32, e_i64, e_i64)
            self._uni = tuple(_ro(a) if isinstance(a, np.ndarray) else np.float32(a) for a in t.unigram)
        self._slots = 1 << 16 if t.bpe is not None else 1
        self._caches = self._new_caches(1)
        self._counter = np.zeros(1, np.int64)
        self._lock = threading.Lock()  # the caches are per worker, not per calling thread

    def _new_caches(self, workers: int):
        s = self._slots
        return (np.zeros((workers, s, 5), np.int64), np.empty((workers, s * 16), np.uint8),
                np.empty((workers, s * 8), np.int64), np.zeros((workers, 3), np.int64))

    def _plan(self, rlen: np.ndarray, threads: int) -> np.ndarray:
        """Block bounds (row indices, first 0, last n), about equal bytes each."""
        n = len(rlen)
        cum = np.cumsum(rlen + ROW_OVERHEAD)
        total = int(cum[-1])
        target = max(total // (BLOCKS_PER_THREAD * threads), MIN_BLOCK_BYTES)
        cuts = np.searchsorted(cum, np.arange(target, total, target, dtype=np.int64), side="right")
        return np.unique(np.concatenate(([0], cuts, [n]))).astype(np.int64)

    def run(self, col: TextColumn, row_base: int, threads: int, errors: str, counting: bool,
            region_slack: int = REGION_SLACK):
        """(ids, offsets, valid) or (counts, valid) of one text array."""
        n = col.n
        if n == 0:
            return (np.zeros(0, np.int64), col.valid) if counting else (np.zeros(0, np.uint32),
                                                                         np.zeros(1, np.int64), col.valid)
        rlen = col.rlen
        total = int(rlen.sum())
        threads = max(1, min(threads, n))
        if total < MIN_PARALLEL_BYTES:
            threads = 1
        bounds = self._plan(rlen, threads)
        caps = np.where(col.valid, np.maximum(rlen + region_slack, 0), 0)
        ro = np.zeros(n + 1, np.int64)
        if not counting:
            np.cumsum(caps, out=ro[1:])
        out = np.empty(max(int(ro[-1]), 1), np.uint32)
        counts = np.empty(n, np.int64)
        status = np.empty(n, np.uint8)
        args = (bounds, col.typed_bufs(), _ro(col.rbuf), _ro(col.rstart), _ro(rlen), _ro(col.valid), _ro(ro), out,
                counts, status, counting, self._norm_spec, self._user_trie, self._units, self._repl, self._bpe,
                self._uni, self._unk_id, self._byte_fallback, self._byte_ids, self._valid_normalized)
        with self._lock:
            if self._caches[0].shape[0] < threads:
                self._caches = self._new_caches(threads)
            self._counter[0] = 0
            if threads == 1:
                KA.encode_rows(np.int64(0), self._counter, *args, *self._caches)
            else:
                on_threads(threads, lambda w: KA.encode_rows(np.int64(w), self._counter, *args, *self._caches))
        redo = np.flatnonzero(status != KA.ST_OK)
        fixed = {}
        for r in redo.tolist():
            data = col.row_bytes(r)
            text = replaced_text(data, errors, row_base + r) if status[r] == KA.ST_INVALID_UTF8 else data.decode()
            fixed[r] = self._tok.encode_to_numpy(text)
        if counting:
            for r, ids in fixed.items():
                counts[r] = len(ids)
            return counts, col.valid
        new_off = np.empty(n + 1, np.int64)
        n_ids = int(KA.compact(out, ro, counts, status, new_off))
        del args
        out.resize(max(n_ids, 1), refcheck=False)  # the regions' unused tail is given back
        ids = out[:n_ids]
        if fixed:
            ids, new_off = _splice(ids, new_off, fixed)
        return ids, new_off, col.valid


def _splice(ids: np.ndarray, off: np.ndarray, fixed: dict) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `fixed` (empty in ids/off) take their ids from it."""
    n = len(off) - 1
    lens = np.diff(off)
    parts = []
    prev = 0
    for r in sorted(fixed):
        parts.append(ids[off[prev]:off[r]])
        parts.append(fixed[r].astype(np.uint32))
        lens[r] = len(fixed[r])
        prev = r + 1
    parts.append(ids[off[prev]:off[n]])
    new_off = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=new_off[1:])
    return np.concatenate(parts), new_off
