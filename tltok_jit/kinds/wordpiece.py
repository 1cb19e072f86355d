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

from ..errors import PaddingError, TokenizerFileError
from ..kernels import wordpiece as K
from ..kernels.wordpiece import _ro
from ..loaders.hf_wordpiece import WordPieceModel, read_wordpiece_json
from ..tokenizer import Tokenizer
from .kernel_columns import KernelColumns
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


def _on_threads(n: int, work) -> None:
    if n <= 1:
        work(0)
        return
    errors = []

    def run(w):
        try:
            work(w)
        except BaseException as e:  # noqa: BLE001 - raised on the calling thread
            errors.append(e)

    ts = [threading.Thread(target=run, args=(w,)) for w in range(1, n)]
    for t in ts:
        t.start()
    run(0)
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


class WordPieceTokenizer(KernelColumns, Tokenizer):
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
        tpl = model.template
        self._prefix_ids: tuple = ()
        self._suffix_ids: tuple = ()
        if tpl is not None:
            k = next(n for n, p in enumerate(tpl.single) if p[0] == "A")
            self._prefix_ids = tuple(i for p in tpl.single[:k] for i in p[1])
            self._suffix_ids = tuple(i for p in tpl.single[k + 1:] for i in p[1])

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

    def encode_to_numpy(self, text: str, *, add_special_tokens: bool = False) -> np.ndarray:
        """`encode` as a uint32 array."""
        ids = self._encode_bytes(np.frombuffer(text.encode("utf-8"), np.uint8))
        if add_special_tokens and (self._prefix_ids or self._suffix_ids):
            ids = np.concatenate([np.array(self._prefix_ids, np.uint32), ids, np.array(self._suffix_ids, np.uint32)])
        return ids

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """The ids of `text` (tokenizers' `encode(text, add_special_tokens=...).ids` without the file's
        truncation and padding)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return self.encode_to_numpy(text, add_special_tokens=add_special_tokens).tolist()

    def count(self, text: str) -> int:
        return len(self._encode_bytes(np.frombuffer(text.encode("utf-8"), np.uint8)))

    def _run_rows(self, bufs, rbuf, rstart, rlen, valid, threads: int, slack: int = REGION_SLACK):
        """(ids uint32, offsets int64 [n + 1], status): every valid row encoded; rows the kernel left
        (status 1: invalid UTF-8, 2: out of room) have no ids here and status set."""
        n = len(rlen)
        caps = np.where(valid, rlen + slack, 0)
        ro = np.zeros(n + 1, np.int64)
        np.cumsum(caps, out=ro[1:])
        out = np.empty(max(int(ro[-1]), 1), np.uint32)
        counts = np.empty(n, np.int64)
        status = np.zeros(n, np.uint8)
        total = int(rlen.sum())
        if total < MIN_PARALLEL_BYTES:
            threads = 1
        threads = max(1, min(threads, n))
        cum = np.cumsum(rlen + 16)
        cuts = np.searchsorted(cum, (np.arange(1, threads) * (int(cum[-1]) if n else 0)) // threads, side="right")
        bounds = np.concatenate(([0], cuts, [n])).astype(np.int64)
        args = (bufs, _ro(rbuf), _ro(rstart), _ro(rlen), _ro(valid), _ro(ro), out, counts, status)
        # each worker's scratch is its own and made per call (a few hundred bytes): calls from several
        # Python threads run side by side
        wb = self._word_bytes

        def work(w: int) -> None:
            K.encode_rows(bounds[w], bounds[w + 1], *args, np.empty(PEND, np.int64), np.empty(wb, np.uint8),
                          *self._kargs)

        _on_threads(threads, work)
        off = np.empty(n + 1, np.int64)
        m = int(K.compact(out, ro, counts, off))
        return out[:m], off, status

    def _fix_rows(self, ids, off, status, row_text):
        """Rows with a status: encoded on the single-text path (`row_text(r, status)` gives the text)."""
        redo = np.flatnonzero(status).tolist()
        if not redo:
            return ids, off
        from .sentencepiece_columns import _splice  # the same splice the SentencePiece columns use

        fixed = {r: self._encode_bytes(np.frombuffer(row_text(r, int(status[r])).encode("utf-8"), np.uint8))
                 for r in redo}
        ids, off = _splice(ids, off, fixed)
        return ids.astype(np.uint32, copy=False), off

    def encode_batch_to_numpy(self, texts: Sequence[str], *, num_threads: int | None = None
                              ) -> tuple[np.ndarray, np.ndarray]:
        """(ids uint32, offsets int64): text r's ids are ids[offsets[r]:offsets[r + 1]]."""
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
        bufs = TypedList()
        bufs.append(data)
        ids, off, status = self._run_rows(bufs, np.zeros(n, np.int64), start, lens, np.ones(n, bool),
                                          _threads(num_threads))
        return self._fix_rows(ids, off, status, lambda r, s: texts[r])

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

    # ------------------------------------------------------------------ Arrow columns
    def _column_chunk(self, col, row_base: int, threads: int, errors: str, counting: bool):
        from .columns import replaced_text

        if col.n == 0:
            return (np.zeros(0, np.int64), col.valid) if counting else (np.zeros(0, np.uint32),
                                                                        np.zeros(1, np.int64), col.valid)
        ids, off, status = self._run_rows(col.typed_bufs(), col.rbuf, col.rstart, col.rlen, col.valid, threads)

        def text(r: int, s: int) -> str:
            data = col.row_bytes(r)
            return replaced_text(data, errors, row_base + r) if s == 1 else data.decode("utf-8")

        ids, off = self._fix_rows(ids, off, status, text)
        if counting:
            return np.diff(off), col.valid
        return ids, off, col.valid

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

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """tokenizers' `decode(ids, skip_special_tokens=...)`."""
        return self._decode_checked(self.check_ids(ids), skip_special_tokens)

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

    def id_to_token(self, i: int) -> str | None:
        return self.model.id_to_token[i] if 0 <= i < self.vocab_size else None

    def token_to_id(self, token: str) -> int | None:
        i = self.model.vocab.get(token)
        if i is None:
            i = next((t.id for t in self.model.added if t.content == token), None)
        return i

    # ------------------------------------------------------------------ fixed-shape batches
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

        res = self.encode_arrow(texts, num_threads=threads)
        chunks = list(res.chunks) if isinstance(res, pa.ChunkedArray) else [res]
        vals, starts, counts = [], [], []
        shift = 0
        base = 0
        for c in chunks:
            if c.null_count:
                r = base + int(np.argmin(c.is_valid().to_numpy(zero_copy_only=False)))
                raise PaddingError(f"texts row {r} is null: every row must be a string", "texts", r)
            o = np.asarray(c.offsets, np.int64)
            vals.append(c.values.to_numpy())
            starts.append(o[:-1] + shift)
            counts.append(np.diff(o))
            shift += len(vals[-1])
            base += len(c)
        if not vals:
            return np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(vals), np.concatenate(starts), np.concatenate(counts)

    def __repr__(self) -> str:
        return f"<WordPieceTokenizer {self.name!r} vocab_size={self.vocab_size}>"
