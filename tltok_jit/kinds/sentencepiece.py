"""`sentencepiece`: a SentencePiece `.model` (BPE or unigram), read and run without the sentencepiece package.

`files`: {"model": "x.model"}; `options`: {"special_ids": [...]}.

Encode gives the ids of `SentencePieceProcessor.encode(text)` (no BOS/EOS): the model's normalizer
(precompiled charsmap, dummy prefix, whitespace rules), then BPE by piece score or unigram Viterbi,
unknown pieces as byte pieces with byte fallback, else one `<unk>` per run.

Decode is `SentencePieceProcessor.decode` of the ids left after dropping `special_ids`: control
pieces render nothing, the unknown piece its surface (" ⁇ "), byte pieces their UTF-8 (an invalid
byte as one U+FFFD), the leading U+2581 of the first pieces is dropped by SentencePiece's rule.
`special_ids` default: the control and unknown pieces, and user-defined pieces named like CTC
specials (`<blk>`, `<sos/eos>`, ... as icefall's bpe.model has at 0 and 1, which SentencePiece
would render as text).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..engine.text import read_only
from ..kernels import sentencepiece as K
from ..loaders.sentencepiece_model import BYTE, CONTROL, UNKNOWN, USER_DEFINED, read_sentencepiece_model
from ..tables.sentencepiece import SentencePieceTables, build_tables
from ..streaming.decode import incomplete_tail_start
from ..tokenizer import FFFD, TokenIdError, Tokenizer, TokenizerAssetError, TokenizerSpec
from .row_columns import RowColumns
from .symbol_table import SPECIAL_NAMES

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SentencePieceTokenizer", "build"]

_WS = "\u2581"
_COLUMN_LOCK = threading.Lock()


def _utf8_char(data: bytes, pos: int) -> int:
    """Length of the valid UTF-8 character at data[pos] (string_util::DecodeUTF8), 0 if invalid."""
    n = len(data) - pos
    b0 = data[pos]
    if b0 < 0x80:
        return 1
    for length, mask, lead in ((2, 0xE0, 0xC0), (3, 0xF0, 0xE0), (4, 0xF8, 0xF0)):
        if (b0 & mask) == lead:
            if n < length:
                return 0
            try:
                data[pos:pos + length].decode("utf-8")
            except UnicodeDecodeError:
                return 0
            return length
    return 0


class SentencePieceTokenizer(RowColumns, Tokenizer):
    """A `.model` behind the contract; see the module docstring. The Arrow column entry points
    (`encode_arrow`, `count_arrow`) run on the parallel column kernel
    (`tltok_jit.kinds.sentencepiece_columns`); `decode_arrow` decodes row by row (`RowColumns`)."""

    kind = "sentencepiece"

    def __init__(self, tables: SentencePieceTables, special_ids: Iterable[int] | None = None):
        m = tables.model
        self.tables = tables
        self.model = m
        self.vocab_size = len(m.pieces)
        if special_ids is None:
            self.special_ids = frozenset(
                i for i, (p, t) in enumerate(zip(m.pieces, m.types))
                if t in (CONTROL, UNKNOWN) or (t == USER_DEFINED and p in SPECIAL_NAMES))
        else:
            chosen = frozenset(special_ids)
            bad = sorted(i for i in chosen if type(i) is not int or not 0 <= i < self.vocab_size)
            if bad:
                raise TokenIdError(f"special_ids {bad} are not ids of {m.source}")
            self.special_ids = chosen
        self._strip_bos_ws = m.normalizer.add_dummy_prefix or m.normalizer.remove_extra_whitespaces
        self._remove_extra = m.normalizer.remove_extra_whitespaces
        self._int_objects = None
        self._local = threading.local()  # per-thread BPE work space
        n_spec = m.normalizer
        # Without a charsmap the normalized text holds only the input's characters, U+2581 and
        # U+FFFD: valid UTF-8 (a charsmap's replacement strings come from the file, unchecked).
        self._valid_normalized = not n_spec.precompiled_charsmap
        self._plain_escape = (not n_spec.precompiled_charsmap and not n_spec.remove_extra_whitespaces
                              and n_spec.escape_whitespaces and not any(t == USER_DEFINED for t in m.types))

    # ------------------------------------------------------------------ encode
    def normalize(self, text: str) -> str:
        """SentencePiece's normalized form of `text` (as `SentencePieceProcessor.normalize`)."""
        return self._normalize(text).tobytes().decode("utf-8")

    def _normalize(self, text: str) -> np.ndarray:
        t = self.tables
        n_spec = self.model.normalizer
        if self._plain_escape and text and not text.isascii():
            # No rules, no user-defined symbols, no whitespace removal: the normalized text is the
            # text with ' ' escaped (after the dummy prefix), which str.replace builds ~3x faster
            # than the kernel's character loop for non-ASCII text (the kernel wins on ASCII).
            prefix = "\u2581" if n_spec.add_dummy_prefix else ""
            return np.frombuffer((prefix + text.replace(" ", "\u2581")).encode("utf-8"), dtype=np.uint8)
        buf = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        cap = 3 * len(buf) + 16  # a space becomes three bytes; charsmap rules may need more: retry
        while True:
            out = np.empty(cap, np.uint8)
            n = K.normalize(buf, out, t.charsmap_units, t.charsmap_repl, *t.user_trie, n_spec.add_dummy_prefix,
                            n_spec.remove_extra_whitespaces, n_spec.escape_whitespaces)
            if n >= 0:
                # read-only as the fast path's bytes are: the encode kernels are compiled for one variant
                return read_only(out[:n])
            cap *= 2

    def encode_to_numpy(self, text: str) -> np.ndarray:
        """`encode` as an int64 array."""
        t = self.tables
        norm = self._normalize(text)
        n = len(norm)
        out = np.empty(n + 1, np.int64)  # no piece is empty: at most one id per byte
        if t.bpe is not None:
            while True:
                work = getattr(self._local, "bpe_work", None)
                if work is None:
                    work = self._local.bpe_work = K.bpe_workspace(1024)
                    self._local.bpe_cache = K.bpe_cache()
                k = K.bpe_encode(norm, out, *work, *self._local.bpe_cache, *t.bpe, *t.user_trie, t.unk_id,
                                 self.model.byte_fallback, t.byte_ids, self._valid_normalized)
                if k >= 0:
                    break
                # a segment longer than the work space: grow it (per thread, kept for later calls)
                self._local.bpe_work = K.bpe_workspace(2 * (work[0].shape[1] - 1))
        else:
            k = K.unigram_encode(norm, out, np.empty(n + 1, np.float32), np.empty((2, n + 1), np.int64),
                                 *t.unigram, t.unk_id, self.model.byte_fallback, t.byte_ids)
        return out[:k]

    def encode(self, text: str) -> list[int]:
        ids = self.encode_to_numpy(text)
        if len(ids) < 64:
            return ids.tolist()
        if self._int_objects is None:
            from ..engine.pylist import int_objects

            self._int_objects = int_objects(self.vocab_size)
        return self._int_objects.to_list(ids)

    # ------------------------------------------------------------------ columns
    def _columns(self):
        enc = getattr(self, "_column_encoder", None)
        if enc is None:
            from .sentencepiece_columns import ColumnEncoder

            with _COLUMN_LOCK:
                enc = getattr(self, "_column_encoder", None)
                if enc is None:
                    enc = self._column_encoder = ColumnEncoder(self)
        return enc

    def _column_run(self, column, num_threads, errors, counting, large_list=None):
        from ..engine.threads import resolve_threads
        from . import columns as C

        C.check_errors(errors)
        threads = resolve_threads(num_threads)
        enc = self._columns()
        if counting:
            return C.text_columns(column, lambda col, base: enc.run(col, base, threads, errors, True),
                                  C.assemble_counts)
        return C.text_columns(column, lambda col, base: enc.run(col, base, threads, errors, False),
                              lambda res, chunked: C.assemble_ids(res, chunked, large_list))

    def encode_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace",
                     large_list: bool | None = None) -> "pa.Array | pa.ChunkedArray":
        """`encode` of every row of a text column: list<uint32> (large_list<uint32> past 2**31 - 1
        ids or with large_list=True), nulls stay null, chunks kept; rows in parallel
        (num_threads None or 0: every core), the same ids for any thread count. A row that is not
        valid UTF-8 is encoded as `row.decode("utf-8", "replace")` (errors="replace") or raises
        ArrowRowError naming the row (errors="strict"). A pandas Series gives a Series of lists."""
        from ..columns.pandas_io import ids_series, is_pandas_series

        if is_pandas_series(column):
            from ..columns.arrow import as_arrow

            result = self.encode_arrow(as_arrow(column), num_threads=num_threads, errors=errors,
                                       large_list=large_list)
            return ids_series(result, column, lambda a: a.tolist())
        return self._column_run(column, num_threads, errors, False, large_list)

    def count_arrow(self, column, *, num_threads: int | None = None,
                    errors: str = "replace") -> "pa.Array | pa.ChunkedArray":
        """The number of ids of every row (int64, nulls stay null), as `encode_arrow` counts them.
        A pandas Series gives an `Int64` Series."""
        from ..columns.pandas_io import counts_series, is_pandas_series

        if is_pandas_series(column):
            from ..columns.arrow import as_arrow

            return counts_series(self.count_arrow(as_arrow(column), num_threads=num_threads, errors=errors), column)
        return self._column_run(column, num_threads, errors, True)

    # ------------------------------------------------------------------ decode
    def _piece_text(self, i: int, is_bos_ws: bool) -> tuple[str, bool]:
        """DecodeSentencePiece: (surface, whether a leading U+2581 was consumed)."""
        m = self.model
        t = m.types[i]
        if t == CONTROL:
            return "", False
        if t == UNKNOWN:
            return m.unk_surface, False
        piece = m.pieces[i]
        consumed = False
        if is_bos_ws and self._strip_bos_ws and piece.startswith(_WS):
            piece = piece[1:]
            consumed = not self._remove_extra
        return piece.replace(_WS, " "), consumed

    def _byte_surfaces(self, data: bytes, out: list[str], first: int) -> None:
        pos = 0
        while pos < len(data):
            length = _utf8_char(data, pos)
            if length == 0:
                out[first + pos] = FFFD
                pos += 1
            else:
                out[first + pos + length - 1] = data[pos:pos + length].decode("utf-8")
                pos += length

    def _surfaces(self, ids: list[int]) -> list[str]:
        """Each id's surface in SentencePiece's decode of `ids` (all of them, none dropped)."""
        types = self.model.types
        piece_bytes = self.tables.piece_bytes
        out = [""] * len(ids)
        is_bos_ws = True
        bos_ws_seen = False
        has_text = False
        byte_start = 0
        for n, i in enumerate(ids):
            if types[i] == BYTE:
                continue
            if byte_start < n:
                self._byte_surfaces(bytes(piece_bytes[j] for j in ids[byte_start:n]), out, byte_start)
                has_text = True  # a byte run always renders something
            if bos_ws_seen or has_text:
                is_bos_ws = False
            byte_start = n + 1
            text, bos_ws_seen = self._piece_text(i, is_bos_ws)
            out[n] = text
            has_text = has_text or bool(text)
        if byte_start < len(ids):
            self._byte_surfaces(bytes(piece_bytes[j] for j in ids[byte_start:]), out, byte_start)
        return out

    def _render_run(self, run: bytes | bytearray | list[int]) -> str:
        out = [""] * len(run)
        self._byte_surfaces(bytes(run), out, 0)
        return "".join(out)

    def decode_incremental(self, new_ids: Sequence[int], state: dict, *, final: bool = False) -> str:
        """O(new ids) at any length: SentencePiece's decode is a left-to-right pass whose state is
        three flags and the open run of byte pieces. A byte run renders character by character, so
        of an open run only its unfinished last character (at most 3 bytes) is held back; the rest
        is rendered once."""
        types = self.model.types
        piece_bytes = self.tables.piece_bytes
        run = bytearray(state.get("_run", b""))  # the open run's bytes not rendered yet
        in_run = state.get("_in_run", False)     # a byte piece came after the last other piece
        is_bos_ws, bos_ws_seen, has_text = state.get("_flags", (True, False, False))
        parts = []
        for i in self._kept(new_ids):
            if types[i] == BYTE:
                run.append(piece_bytes[i])
                in_run = True
                continue
            if in_run:
                if run:
                    parts.append(self._render_run(run))
                    run = bytearray()
                in_run = False
                has_text = True  # a byte run always renders something
            if bos_ws_seen or has_text:
                is_bos_ws = False
            text, bos_ws_seen = self._piece_text(i, is_bos_ws)
            parts.append(text)
            has_text = has_text or bool(text)
        if run:
            # no character spans the cut (a lead byte starts the tail), so the run renders in two parts
            cut = len(run) if final else incomplete_tail_start(bytes(run))
            if cut:
                parts.append(self._render_run(run[:cut]))
                del run[:cut]
        state["_run"] = bytes(run)
        state["_in_run"] = in_run
        state["_flags"] = (is_bos_ws, bos_ws_seen, has_text)
        delta = "".join(parts)
        text = state.pop("text", "")  # the emitted text: with no other reference left, `+=` extends it in place
        text += delta
        state["text"] = text
        return delta

    def _kept(self, ids) -> list[int]:
        ids = self.check_ids(ids)
        return [i for i in ids if i not in self.special_ids] if self.special_ids else ids

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self._surfaces(self._kept(ids)))

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        ids = self.check_ids(ids)
        keep = [n for n, i in enumerate(ids) if i not in self.special_ids]
        out = [""] * len(ids)
        for n, s in zip(keep, self._surfaces([ids[n] for n in keep])):
            out[n] = s
        return out


def build(spec: TokenizerSpec) -> SentencePieceTokenizer:
    unknown = set(spec.options) - {"special_ids"}
    if unknown:
        raise TokenizerAssetError(f"tokenizer kind 'sentencepiece': unknown options {sorted(unknown)}")
    path = spec.asset("model")
    return SentencePieceTokenizer(build_tables(read_sentencepiece_model(path)), spec.options.get("special_ids"))
