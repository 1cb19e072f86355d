"""`HFRuntime`: the pipeline a tokenizer.json Encoding runs (pipeline_kernels.KernelPipeline's kernel
paths, with the tokenizer.json stages around them).

`loaders.hf_json` describes the pipeline (`HFPipeline`: `pipeline` stage objects); this runs it:
added tokens found in the raw text, the text between them normalized, pretokenized in Python when no
scanner implements the pre-tokenizer, bytes the vocabulary lacks dropped, the post-processor's ids
around a sequence, and the decoder chain. Texts the kernels encode exactly on their own go straight
to them.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence

import numpy as np

from .decoder_chain import DecoderChain
from ..kernels.encode_chars import encode_chars_rows, encode_rows_plain, pack_rows, rows_with_bytes, split_added
from ..kernels.hashing import token_id_of_bytes
from ..kernels.scan import PAT_WHOLE, piece_ends
from ..loaders.hf_json import HFPipeline
from ..engine.kernel_pipeline import KernelPipeline
from ..model.pipeline.normalizers import NFC, normalize
from ..model.pipeline.pre_tokenizers import pre_tokenize
from ..engine.special_policy import SpecialPolicy
from ..tables.bpe import table_config, with_config
from ..engine.text import ascii_view, below_u0300, read_only, read_only_view, text_to_buf

__all__ = ["HFRuntime", "KernelPipeline"]


class HFRuntime(KernelPipeline):
    """Runs an HFPipeline around the kernels of one Encoding."""

    kernels_only = False

    def __init__(self, enc, engine, pipe: HFPipeline):
        super().__init__(enc, engine)
        self.pipe = pipe
        self.missing = pipe.missing_bytes
        self.has_norm = bool(pipe.normalizers)
        # the kernel path is exact for a text when nothing below applies to it
        self.always_text_path = pipe.char_level or pipe.pre_steps is not None
        self.prefix = np.array(pipe.prefix_ids, dtype=np.uint32)
        self.suffix = np.array(pipe.suffix_ids, dtype=np.uint32)
        self.pre_steps = pipe.pre_steps
        self.nfc_only = pipe.normalizers == (NFC(),)
        # whether some texts need Python around the kernels (else every path is the kernels' own)
        self.needs_python = self.always_text_path or self.has_norm or bool(self.missing)

    @property
    def chain(self) -> DecoderChain | None:
        return self.pipe.chain  # built on first use

    @property
    def prefix_ids(self) -> tuple[int, ...]:
        return self.pipe.prefix_ids

    @property
    def suffix_ids(self) -> tuple[int, ...]:
        return self.pipe.suffix_ids

    @property
    def template(self):
        return self.pipe.template

    @property
    def truncation(self):
        return self.pipe.truncation

    @property
    def padding(self):
        return self.pipe.padding

    # -------------------------------------------------------------- tables (built on first use)
    # Lazy: while the kernels compile in the background, the Encoding answers from the Python
    # encoder (interim_hf) and must not build its tables yet.
    @functools.cached_property
    def T(self):
        return self.engine.tables

    def _whole_variant(self, ignore: bool):
        """The tables with PAT_WHOLE: one row = one piece (Python-made pieces)."""
        return with_config(self.T, pattern_kind=PAT_WHOLE, ignore_merges=ignore)

    @functools.cached_property
    def T_whole(self):
        """PAT_WHOLE with the model's ignore_merges."""
        return self._whole_variant(table_config(self.T).ignore_merges)

    @functools.cached_property
    def T_whole_plain(self):
        """PAT_WHOLE without ignore_merges (pieces whose dropped bytes make the whole-piece lookup moot)."""
        return self._whole_variant(False)

    # -------------------------------------------------------------- normalization
    def normalize(self, s: str) -> str:
        return normalize(self.pipe.normalizers, s)

    def text_is_plain(self, text: str, data) -> bool:
        """Whether the byte-level kernels alone encode `text` exactly (normalization changes nothing
        in it and it has no byte the vocabulary lacks). `data`: its UTF-8, bytes or a uint8 array."""
        if self.always_text_path:
            return False
        if self.missing and len(bytes(data).translate(None, self.missing)) != len(data):
            return False
        if self.has_norm:
            if self.nfc_only:
                # Python-NFC-stable => tokenizers-NFC-stable (hf_nfc splits at Unicode-9 barriers, and the
                # parts of an NFC string are NFC); text of characters below U+0300 is NFC whatever they
                # are (the check looked at each: 3.7 ms of 3.2 MB of English with a few accents); an
                # ASCII str says so itself, without the pass over its bytes
                return text.isascii() or below_u0300(data) or unicodedata.is_normalized("NFC", text)
            n = self.normalize(text)
            if n is not text and n != text:
                return False
        return True

    # -------------------------------------------------------------- encoding
    def _run_rows_offsets(self, rows: list[bytes], T) -> tuple[np.ndarray, np.ndarray]:
        """(ids of all rows, int64 offsets of each row's ids in them)."""
        if not rows:
            return np.empty(0, dtype=np.uint32), np.zeros(1, dtype=np.int64)
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(rows), dtype=np.uint8)
        out = np.empty(max(len(data), 1), dtype=np.uint32)
        counts = np.empty(len(rows), dtype=np.int64)
        cache, work = self.engine.serial_workspace()
        if self.pipe.char_level:
            encode_chars_rows(data, offsets, T, self.pipe.fallback_ids, self.pipe.unk_id, self.pipe.fuse_unk,
                              out, counts, work[0])
        else:
            encode_rows_plain(data, offsets, T, out, counts, cache, work[0])
        dst = np.empty(int(counts.sum()), dtype=np.uint32)
        pack_rows(out, offsets, counts, dst)
        id_off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=id_off[1:])
        return dst, id_off

    def _run_rows(self, rows: list[bytes], T) -> np.ndarray:
        return self._run_rows_offsets(rows, T)[0]

    def _char_rows(self, seg: str, at_start: bool) -> list[bytes]:
        """Character-level pipelines: the kernel rows (words) of one text between added tokens."""
        seg = self.normalize(seg)
        if not seg:
            return []
        if self.pre_steps is not None:
            return [p.encode("utf-8") for p in pre_tokenize(self.pre_steps, seg, at_start)]
        return [seg.encode("utf-8")]

    def _segment_ids(self, seg: str, at_start: bool = True) -> list[np.ndarray]:
        """Ids of one text between added tokens (normalized here); at_start: it begins the text."""
        if self.pipe.char_level:
            rows = self._char_rows(seg, at_start)
            return [self._run_rows(rows, self.T)] if rows else []
        seg = self.normalize(seg)
        if not seg:
            return []
        data = seg.encode("utf-8")
        if self.pre_steps is None and not (self.missing and len(data.translate(None, self.missing)) != len(data)):
            buf = np.frombuffer(data, dtype=np.uint8)
            return [self.engine.encode_buf(buf, self.engine.no_added, False)]
        # pieces from the Python pretokenizer, or from the scanner when bytes must be dropped
        if self.pre_steps is not None:
            pieces = [p.encode("utf-8") for p in pre_tokenize(self.pre_steps, seg)]
        else:
            buf = np.frombuffer(data, dtype=np.uint8)
            ends = piece_ends(table_config(self.T).pattern_kind, buf, 0, len(buf), self.T.stage1,
                              self.T.stage2).tolist()
            starts = [0] + ends[:-1]
            pieces = [data[a:b] for a, b in zip(starts, ends)]
        if not self.missing:
            return [self._run_rows(pieces, self.T_whole)]
        out = []
        clean: list[bytes] = []
        for p in pieces:
            q = p.translate(None, self.missing)
            if len(q) == len(p):
                clean.append(p)
                continue
            if clean:
                out.append(self._run_rows(clean, self.T_whole))
                clean = []
            if self.engine.description.ignore_merges:
                t = token_id_of_bytes(self.T, p)
                if t >= 0:
                    out.append(np.array([t], dtype=np.uint32))
                    continue
            if q:
                out.append(self._run_rows([q], self.T_whole_plain))
        if clean:
            out.append(self._run_rows(clean, self.T_whole))
        return out

    def encode_text_path(self, data: bytes, amask: np.ndarray, any_allowed: bool) -> np.ndarray:
        """Added tokens found in the raw text, normalization and encoding segment by segment."""
        buf = np.frombuffer(data, dtype=np.uint8)
        parts: list[np.ndarray] = []
        pos = 0
        if any_allowed and len(buf):
            starts, ends, idx = split_added(buf, self.T, amask)
            added_ids = self.T.added_ids
            for a, e, t in zip(starts.tolist(), ends.tolist(), idx.tolist()):
                if a > pos:
                    parts += self._segment_ids(data[pos:a].decode("utf-8"), pos == 0)
                parts.append(np.array([added_ids[t]], dtype=np.uint32))
                pos = e
        if pos < len(data):
            parts += self._segment_ids(data[pos:].decode("utf-8"), pos == 0)
        if not parts:
            return np.empty(0, dtype=np.uint32)
        return np.concatenate(parts).astype(np.uint32, copy=False)

    def encode(self, text: str, policy: SpecialPolicy, allowed_special, add_special_tokens: bool,
               num_threads: int | None) -> np.ndarray:
        # an ASCII str's own characters (no copy), or the UTF-8 kernel for a long text (CPython's
        # encoder took 1.2 ms of 3 MB in a first call); `data` does not outlive this call
        data = ascii_view(text) if text.isascii() else text_to_buf(text)
        self.engine.check_disallowed(text, data, policy)
        return self.encode_utf8(text, data, policy.allowed, policy.any_allowed, add_special_tokens)

    def encode_utf8(self, text: str, data, amask, any_allowed: bool, add_special_tokens: bool) -> np.ndarray:
        """The ids of `text` (`data`: its UTF-8, bytes or a read-only uint8 array), one text through
        the whole pipeline."""
        if self.text_is_plain(text, data):
            ids = self.engine.encode_buf(np.frombuffer(data, dtype=np.uint8), amask, any_allowed)
        else:
            ids = self.encode_text_path(bytes(data), amask, any_allowed)
        if add_special_tokens and (len(self.prefix) or len(self.suffix)):
            ids = np.concatenate((self.prefix, ids, self.suffix))
        return ids

    def add_template(self, ids: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows with the post-processor's prefix / suffix ids around each."""
        if not (len(self.prefix) or len(self.suffix)):
            return ids, offsets
        n = len(offsets) - 1
        o = offsets.tolist()
        parts = []
        for r in range(n):
            parts += [self.prefix, ids[o[r]:o[r + 1]], self.suffix]
        extra = len(self.prefix) + len(self.suffix)
        new_offsets = offsets + extra * np.arange(n + 1, dtype=np.int64)
        flat = np.concatenate(parts).astype(np.uint32, copy=False) if parts else np.empty(0, dtype=np.uint32)
        return flat, new_offsets - new_offsets[0]

    @staticmethod
    def _rows_with(lut: np.ndarray, arr: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """bool per row: whether the row holds a byte b with lut[b]."""
        out = np.zeros(len(offsets) - 1, dtype=bool)
        rows_with_bytes(read_only(lut.astype(np.uint8)), read_only_view(arr),
                        read_only_view(np.ascontiguousarray(offsets, dtype=np.int64)), out)
        return out

    def _encode_rows_char_level(self, arr, offsets, valid, amask, any_allowed: bool):
        """Character-level batches: each text is split at its added tokens, normalized and pretokenized in
        Python, and the words of ALL texts go through one kernel call."""
        n = len(offsets) - 1
        raw = arr.tobytes()
        o = offsets.tolist()
        cand = None
        if any_allowed:
            cand = self._rows_with(np.asarray(self.T.trie_root) >= 0, arr, offsets)
        added_ids = self.T.added_ids
        words: list[bytes] = []
        plans: list = [None] * n  # per text: (first word, end word) or a list of word ranges / added ids
        for r in range(n):
            if not valid[r]:
                plans[r] = (len(words), len(words))
                continue
            b = raw[o[r]:o[r + 1]]
            try:
                text = b.decode("utf-8")
            except UnicodeDecodeError:  # as encode() of the replaced text
                text = b.decode("utf-8", "replace")
                b = text.encode("utf-8")
            if cand is None or not cand[r]:
                w0 = len(words)
                words += self._char_rows(text, True)
                plans[r] = (w0, len(words))
                continue
            buf = np.frombuffer(b, dtype=np.uint8)
            starts, ends, idx = split_added(buf, self.T, amask)
            plan = []
            pos = 0
            for a, e, t in zip(starts.tolist(), ends.tolist(), idx.tolist()):
                if a > pos:
                    w0 = len(words)
                    words += self._char_rows(b[pos:a].decode("utf-8"), pos == 0)
                    plan.append((w0, len(words)))
                plan.append(int(added_ids[t]))
                pos = e
            if pos < len(b):
                w0 = len(words)
                words += self._char_rows(b[pos:].decode("utf-8"), pos == 0)
                plan.append((w0, len(words)))
            plans[r] = plan
        ids, word_off = self._run_rows_offsets(words, self.T)
        wo = word_off.tolist()
        results = []
        for plan in plans:
            if isinstance(plan, tuple):
                results.append(ids[wo[plan[0]]:wo[plan[1]]])
                continue
            parts = [ids[wo[p[0]]:wo[p[1]]] if isinstance(p, tuple) else np.array([p], dtype=np.uint32)
                     for p in plan]
            results.append(np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32))
        lens = np.fromiter((len(x) for x in results), dtype=np.int64, count=n)
        new_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=new_offsets[1:])
        flat = np.concatenate(results).astype(np.uint32, copy=False) if n else np.empty(0, dtype=np.uint32)
        return flat, new_offsets

    def _suspect_rows(self, arr: np.ndarray, offsets: np.ndarray) -> np.ndarray | None:
        """bool per row: whether the row may need the Python path (a non-ASCII byte where NFC is the only
        normalizer, a byte the vocabulary lacks); None when every row needs the per-row check."""
        n = len(offsets) - 1
        if self.always_text_path or (self.has_norm and not self.nfc_only):
            return None
        lut = np.zeros(256, dtype=bool)
        if self.has_norm:
            lut[0x80:] = True  # ASCII is NFC-stable
        if self.missing:
            lut[np.frombuffer(self.missing, dtype=np.uint8)] = True
        if not lut.any():
            return np.zeros(n, dtype=bool)
        return self._rows_with(lut, arr, offsets)

    def encode_rows(self, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, amask, any_allowed: bool,
                    num_threads: int, texts: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Encoding.encode_rows for pipelines that need Python: rows the kernels encode exactly go
        through them in parallel, the others one by one through the text path. `texts`: the str of
        each row (the rows are their UTF-8), read by the NFC check instead of the row decoded again."""
        if not self.needs_python:
            return super().encode_rows(data, offsets, valid, amask, any_allowed, num_threads)
        n = len(offsets) - 1
        arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        if self.pipe.char_level:
            return self._encode_rows_char_level(arr, offsets, valid, amask, any_allowed)
        # the rows' own str tell which of them need NFC (nothing else sends a row to the text path)
        nfc_by_str = texts is not None and self.nfc_only and not self.missing and not self.always_text_path
        if nfc_by_str:
            # only a row whose str is not ASCII may need NFC, and str.isascii() reads a flag the str
            # keeps: no pass over the rows' bytes (rows_with_bytes took 1 ms of 3.2 MB)
            suspect = np.fromiter((not t.isascii() for t in texts), dtype=bool, count=n)
        else:
            suspect = self._suspect_rows(arr, offsets)
        live = np.asarray(valid, dtype=bool)
        check = np.flatnonzero(live if suspect is None else suspect & live)
        # rows the kernels cannot encode exactly, by the text path; every other row stays in `arr` and
        # goes to the kernels in one parallel call (no per-row Python objects but for the checked rows)
        python_rows: dict[int, np.ndarray] = {}
        if nfc_by_str:
            # the NFC check alone, on the str each row was made from: one whose lone surrogates became
            # U+FFFD in its row is NFC exactly when the row is (both are starters that never compose)
            for r in check.tolist():
                if not unicodedata.is_normalized("NFC", texts[r]):
                    python_rows[r] = self.encode_text_path(arr[offsets[r]:offsets[r + 1]].tobytes(), amask,
                                                           any_allowed)
            check = check[:0]
        for r in check.tolist():
            b = arr[offsets[r]:offsets[r + 1]].tobytes()
            try:
                t = b.decode("utf-8")
            except UnicodeDecodeError:  # as encode() of the replaced text
                t = b.decode("utf-8", "replace")
                python_rows[r] = self.encode_text_path(t.encode("utf-8"), amask, any_allowed)
                continue
            if not self.text_is_plain(t, b):
                python_rows[r] = self.encode_text_path(b, amask, any_allowed)
        if not python_rows:
            return self.engine.encode_rows(arr, offsets, valid, amask, any_allowed, num_threads)
        kernel_valid = live.astype(np.uint8)
        kernel_valid[list(python_rows)] = 0
        ids, io = self.engine.encode_rows(arr, offsets, kernel_valid, amask, any_allowed, num_threads)
        lens = np.diff(io)
        for r, res in python_rows.items():
            lens[r] = len(res)
        new_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=new_offsets[1:])
        flat = np.empty(int(new_offsets[-1]), dtype=np.uint32)
        done = 0  # rows before this one are in flat
        for r in sorted(python_rows):  # the kernels' rows between them are contiguous in ids
            flat[new_offsets[done]:new_offsets[r]] = ids[io[done]:io[r]]
            flat[new_offsets[r]:new_offsets[r + 1]] = python_rows[r]
            done = r + 1
        flat[new_offsets[done]:] = ids[io[done]:]
        return flat, new_offsets

    def encode_arrow(self, array, *, num_threads, allowed_special, disallowed_special, errors, large_list,
                     counting: bool):
        """Arrow columns for pipelines that need Python: rows read as bytes and encoded like `encode`
        of `row.decode("utf-8", errors)` (null rows stay null). Row errors (invalid UTF-8 with
        errors="strict", a disallowed special token) raise `ArrowRowError` naming the row in the
        whole input, across chunks."""
        if not self.needs_python:
            return super().encode_arrow(array, num_threads=num_threads, allowed_special=allowed_special,
                                        disallowed_special=disallowed_special, errors=errors,
                                        large_list=large_list, counting=counting)
        import pyarrow as pa

        from ..columns.arrow import ArrowRowError, as_arrow, validate_text_array

        if errors not in ("replace", "strict"):
            raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
        arr = as_arrow(array)
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        out_chunks = []
        row_base = 0
        for chunk in chunks:
            validate_text_array(chunk)
            vals = []
            for r, b in enumerate(_row_bytes(chunk)):
                if b is None:
                    vals.append(None)
                    continue
                row = row_base + r
                try:
                    text = b.decode("utf-8")
                except UnicodeDecodeError as e:
                    if errors == "strict":
                        raise ArrowRowError(f"row {row}: invalid UTF-8 at byte {e.start} "
                                            f"({b[max(e.start - 8, 0):e.start + 8]!r}); pass errors='replace' to "
                                            f"encode it as bytes.decode('utf-8', 'replace') would", row) from None
                    text = b.decode("utf-8", "replace")
                try:
                    vals.append(self.enc.encode_to_numpy(text, allowed_special=allowed_special,
                                                         disallowed_special=disallowed_special))
                except ValueError as e:
                    raise ArrowRowError(f"row {row}: {e}", row) from None
            row_base += len(chunk)
            if counting:
                out_chunks.append(pa.array([None if v is None else len(v) for v in vals], type=pa.int64()))
            else:
                total = sum(len(v) for v in vals if v is not None)
                large = large_list if large_list is not None else total > 2**31 - 1
                typ = pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32())
                out_chunks.append(pa.array(vals, type=typ))
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array(out_chunks, type=out_chunks[0].type if out_chunks else
                                    (pa.int64() if counting else pa.list_(pa.uint32())))
        return out_chunks[0]

    def decode_arrow(self, list_array, errors: str, num_threads: int):
        if self.pipe.decoder is None:
            return super().decode_arrow(list_array, errors, num_threads)
        import pyarrow as pa

        from ..columns.arrow import as_arrow

        arr = as_arrow(list_array)
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        out = [pa.array([None if v is None else self.enc.decode(v) for v in c.to_pylist()], type=pa.large_string())
               for c in chunks]
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array(out, type=pa.large_string())
        return out[0]

    # -------------------------------------------------------------- decoding
    def decode_bytes(self, ids: np.ndarray) -> bytes:
        if self.pipe.decoder is None:
            return super().decode_bytes(ids)
        return self.decode_python(ids).encode("utf-8", "surrogatepass")

    def decode(self, ids: np.ndarray, errors: str) -> str:
        if self.pipe.decoder is None:
            return super().decode(ids, errors)
        return self.decode_python(ids)

    def decode_python(self, ids: np.ndarray) -> str:
        """The decoder chain over token strings, as `tokenizers` runs it."""
        return self.pipe.chain.decode(ids.tolist())


_AS_BINARY = {"string": "binary", "large_string": "large_binary", "string_view": "binary_view"}


def _row_bytes(chunk) -> list:
    """The rows of a string / binary (or dictionary-encoded) Arrow array as bytes, None for a null:
    string rows are read as binary, so bytes that are not UTF-8 reach the caller instead of raising."""
    import pyarrow as pa

    if pa.types.is_dictionary(chunk.type):
        values = _row_bytes(chunk.dictionary)
        return [None if i is None else values[i] for i in chunk.indices.to_pylist()]
    binary = _AS_BINARY.get(str(chunk.type))
    if binary is not None:
        chunk = chunk.view(getattr(pa, binary)())
    return [None if v is None else bytes(v) for v in chunk.to_pylist()]
