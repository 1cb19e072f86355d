"""WordPiece tokenizer.json files (the BERT family): `tltok_jit.from_file` returns a `WordPieceTokenizer`.

`encode(text)` gives the ids of `tokenizers.Tokenizer.encode(text, add_special_tokens=False).ids`
(every id: no truncation, no padding, whatever the file says); `add_special_tokens=True` adds the
post-processor's single template. Added tokens are matched in the text, as HF does. `decode` is
`Tokenizer.decode(ids)` (special tokens skipped, the WordPiece decoder's rules). The work runs in
`tltok_jit.kernels.wordpiece`; batches and Arrow columns run rows in parallel with the same ids for
any thread count. `encode_batch_padded` (`tltok_jit.padding.template_batch`) gives fixed-shape batches of
single texts or pairs, with the file's own truncation and padding when the call gives none.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..errors import TokenizerFileError
from ..kernels import wordpiece as K
from ..kernels.wordpiece import _ro
from ..loaders.hf_wordpiece import WordPieceModel, read_wordpiece_json
from ..tokenizer import Tokenizer
from ..engine.threads import on_threads
from .kernel_rows import KernelRows, row_layout, splice_rows, text_rows
from .kernel_columns import threads_of as _threads
from ..unicode.bert import bert_tables

__all__ = ["WordPieceTokenizer"]

PEND = 64         # non-starters a worker reorders at once (a longer run goes to the single-text path)
REGION_SLACK = 8  # ids a row's output region holds beyond one per byte
MIN_PARALLEL_BYTES = 64 * 1024


def _trie(vocab: dict[str, int], prefix: str) -> tuple:
    """(base, check, value, root_a, root_b): every token under root 0, the tokens that start with
    `prefix` (the prefix cut off) under root 1."""
    keys = []
    for s, i in vocab.items():
        b = s.encode("utf-8")
        keys.append((0, b, i))
        if s.startswith(prefix) and len(s) > len(prefix):
            keys.append((1, b[len(prefix.encode("utf-8")):], i))
    keys.sort(key=lambda k: (k[0], k[1]))
    kb = np.frombuffer(b"".join(k[1] for k in keys), np.uint8)
    koff = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k[1]) for k in keys], out=koff[1:])
    kroot = np.array([k[0] for k in keys], np.int64)
    kval = np.array([k[2] for k in keys], np.int64)
    base, check, value = K.build_double_array(_ro(kb), _ro(koff), _ro(kroot), _ro(kval), np.int64(2))
    n = len(base)
    used = check >= 0
    if (len(check) != n or len(value) != n or int(base.min()) < 0 or int(base.max()) + 256 > n
            or int(check.max()) >= n or (used & (value >= 2**31 - 1)).any()):
        raise TokenizerFileError("internal error: the vocabulary trie failed its checks")
    return _ro(base), _ro(check), _ro(value), np.int64(0), np.int64(1)


def _added(tokens) -> tuple:
    """(first-byte table, bytes, offsets, ids) of the added tokens matched in text."""
    first = np.zeros(256, np.uint8)
    enc = [t.content.encode("utf-8") for t in tokens]
    for b in enc:
        first[b[0]] = 1
    off = np.zeros(len(enc) + 1, np.int64)
    np.cumsum([len(b) for b in enc], out=off[1:])
    data = np.frombuffer(b"".join(enc) or b"\0", np.uint8)
    return _ro(first), _ro(data), _ro(off), _ro(np.array([t.id for t in tokens], np.int64))


def _decode_cleanup(s: str) -> str:
    return (s.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",").replace(" ' ", "'")
            .replace(" n't", "n't").replace(" 'm", "'m").replace(" do not", " don't").replace(" 's", "'s")
            .replace(" 've", "'ve").replace(" 're", "'re"))


class WordPieceTokenizer(KernelRows, Tokenizer):
    """A WordPiece tokenizer.json; see the module docstring."""

    kind = "huggingface"

    def __init__(self, model: WordPieceModel):
        self.model = model
        self.name = model.name
        self.vocab_size = len(model.id_to_token)
        self.special_ids = model.special_ids
        t = bert_tables()
        nrm = model.normalizer
        opts = 0
        if nrm is not None:
            opts = ((K.O_CLEAN if nrm.clean_text else 0) | (K.O_CHINESE if nrm.handle_chinese_chars else 0)
                    | (K.O_STRIP if nrm.strip_accents else 0) | (K.O_LOWER if nrm.lowercase else 0)
                    | (K.O_NFD if nrm.nfd else 0) | (K.O_COMB_BEFORE if nrm.strip_combining == "before" else 0)
                    | (K.O_COMB_AFTER if nrm.strip_combining == "after" else 0))
        base, check, value, root_a, root_b = _trie(model.vocab, model.prefix)
        # added tokens are matched on the raw text (normalized ones are refused with a normalizer;
        # without one both match the same text)
        self._kargs = (t.stage1, t.stage2, t.seq, t.seq_off, base, check, value, root_a, root_b,
                       np.int64(model.unk_id), np.int64(model.max_chars), np.int64(model.pre_mode), np.int64(opts),
                       K.ascii_table(t.stage1, t.stage2, model.pre_mode, opts), *_added(model.added))
        self._word_bytes = 4 * model.max_chars + 8
        self._local = threading.local()
        self._set_template(model.template)

    @classmethod
    def from_file(cls, path, config=None, *, name: str | None = None) -> "WordPieceTokenizer":
        return cls(read_wordpiece_json(path, config, name=name))

    def __reduce__(self):
        return WordPieceTokenizer, (self.model,)

    # ------------------------------------------------------------------ encode
    def _scratch(self):
        loc = self._local
        if not hasattr(loc, "pend"):
            loc.pend = np.empty(PEND, np.int64)
            loc.word = np.empty(self._word_bytes, np.uint8)
        return loc

    def _encode_bytes(self, buf: np.ndarray) -> np.ndarray:
        loc = self._scratch()
        n = len(buf)
        cap = n + 16
        pend = loc.pend
        while True:
            out = np.empty(cap, np.uint32)
            k = K.encode_text(buf, np.int64(0), np.int64(n), out, np.int64(0), np.int64(cap), pend, loc.word,
                              *self._kargs)
            if k >= 0:
                return out[:k]
            if k == K.NEED_OUT:
                cap *= 2
            else:
                pend = np.empty(n + 8, np.int64)

    def _encode_text(self, text: str) -> np.ndarray:
        return self._encode_bytes(np.frombuffer(text.encode("utf-8"), np.uint8))

    def _run_rows(self, bufs, rbuf, rstart, rlen, valid, threads: int, slack: int = REGION_SLACK):
        """(ids uint32, offsets int64 [n + 1], status): every valid row encoded; rows the kernel left
        (status 1: invalid UTF-8, 2: out of room) have no ids here and status set."""
        ro, out, counts, status, bounds, threads = row_layout(rlen, valid, slack, threads, MIN_PARALLEL_BYTES)
        args = (bufs, _ro(rbuf), _ro(rstart), _ro(rlen), _ro(valid), _ro(ro), out, counts, status)
        # each worker's scratch is its own and made per call (a few hundred bytes): calls from several
        # Python threads run side by side
        wb = self._word_bytes

        def work(w: int) -> None:
            K.encode_rows(bounds[w], bounds[w + 1], *args, np.empty(PEND, np.int64), np.empty(wb, np.uint8),
                          *self._kargs)

        on_threads(threads, work)
        off = np.empty(len(rlen) + 1, np.int64)
        m = int(K.compact(out, ro, counts, off))
        return out[:m], off, status

    def _fix_rows(self, ids, off, status, row_text):
        """Rows with a status: encoded on the single-text path (`row_text(r, status)` gives the text)."""
        redo = np.flatnonzero(status).tolist()
        if not redo:
            return ids, off
        return splice_rows(ids, off, {r: self._encode_text(row_text(r, int(status[r]))) for r in redo})

    def encode_batch_to_numpy(self, texts: Sequence[str], *, num_threads: int | None = None
                              ) -> tuple[np.ndarray, np.ndarray]:
        """(ids uint32, offsets int64): text r's ids are ids[offsets[r]:offsets[r + 1]]."""
        bufs, rbuf, start, lens = text_rows(texts)
        ids, off, status = self._run_rows(bufs, rbuf, start, lens, np.ones(len(lens), bool), _threads(num_threads))
        return self._fix_rows(ids, off, status, lambda r, s: texts[r])

    # ------------------------------------------------------------------ Arrow columns
    def _column_chunk(self, col, row_base: int, threads: int, errors: str, counting: bool):
        if col.n == 0:
            return self._empty_chunk(col, counting)
        ids, off, status = self._run_rows(col.typed_bufs(), col.rbuf, col.rstart, col.rlen, col.valid, threads)
        return self._finish_chunk(col, row_base, errors, counting, ids, off, status)

    # ------------------------------------------------------------------ decode
    def _pieces(self, ids: list[int], first: bool, skip_special_tokens: bool = True) -> list[str]:
        """Each id's text in the decoder's output (dropped ids: ""); `first`: no kept token came before.
        A token's text depends only on itself and on whether it is the first kept one."""
        table = self.model.id_to_token
        special = self.special_ids if skip_special_tokens else frozenset()
        dec = self.model.decoder
        prefix, cleanup = dec if dec is not None else ("", False)
        out = []
        for i in ids:
            tok = table[i]
            if i in special or tok is None:
                out.append("")
                continue
            if not first:
                if dec is None:
                    tok = " " + tok
                else:
                    tok = tok[len(prefix):] if tok.startswith(prefix) else " " + tok
            out.append(_decode_cleanup(tok) if cleanup else tok)
            first = False
        return out

    def _decode_checked(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(self._pieces(ids, True, skip_special_tokens))

    def decode_incremental(self, new_ids: Sequence[int], state: dict, *, final: bool = False) -> str:
        """O(new ids): a token's text never changes once the next one comes (see `_pieces`)."""
        parts = self._pieces(self.check_ids(new_ids), not state.get("_started", False))
        delta = "".join(parts)
        if delta:
            state["_started"] = True
        text = state.pop("text", "")  # the emitted text: with no other reference left, `+=` extends it in place
        text += delta
        state["text"] = text
        return delta

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        return self._pieces(self.check_ids(ids), True)

    def token_to_id(self, token: str) -> int | None:
        i = self.model.vocab.get(token)
        if i is None:
            i = next((t.id for t in self.model.added if t.content == token), None)
        return i

    def __repr__(self) -> str:
        return f"<WordPieceTokenizer {self.name!r} vocab_size={self.vocab_size}>"
