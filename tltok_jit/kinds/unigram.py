"""Unigram tokenizer.json files (T5, mT5, XLM-R style): `tltok_jit.from_file` returns a `UnigramTokenizer`.

`encode(text)` gives the ids of `tokenizers.Tokenizer.encode(text, add_special_tokens=False).ids`
(every id: no truncation, no padding); `add_special_tokens=True` adds the post-processor's single
template. Added tokens are matched in the text, as HF does. `decode` is `Tokenizer.decode(ids)`
(special tokens skipped, the file's decoder chain). The work runs in `tltok_jit.kernels.unigram`;
batches and Arrow columns run rows in parallel with the same ids for any thread count. NFC / NFKC
(first in the normalizer) run in Python on the rows they change (`hf_normalize`).
`encode_pair` and `encode_batch_padded` give pairs and type ids through the file's template, and
`encode_batch_padded` applies the file's own truncation / padding when the call gives none.
"""

from __future__ import annotations

import re
import struct
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..errors import TokenizerError, TokenizerFileError, UnsupportedTokenizerError
from ..kernels import unigram as K
from ..kernels.wordpiece import build_double_array, compact
from ..loaders.hf_unigram import UnigramModel, read_unigram_json
from ..model.pipeline.normalizers import NFC_POST9_RANGES
from ..tokenizer import Tokenizer
from ..engine.threads import on_threads
from .kernel_rows import KernelRows, row_layout, splice_rows, text_rows
from .kernel_columns import threads_of as _threads
from ..unicode.bert import bert_tables
from ..unicode.graphemes import grapheme_tables

__all__ = ["UnigramTokenizer", "UnknownCharacterError"]

REGION_SLACK = 16
MIN_PARALLEL_BYTES = 64 * 1024
K_UNK_PENALTY = 10.0


class UnknownCharacterError(TokenizerError, ValueError):
    """The text has a character no piece covers and the model has no unk_id (tokenizers raises too)."""


# Characters `tokenizers`' NFKC leaves alone (its tables predate their compatibility decompositions),
# measured against NFKC of unicodedata 14.0 on every code point; with NFC_POST9_RANGES they are
# the characters it does not know, each a barrier nothing composes across.
_NFKC_POST9 = ((0x32FF, 0x32FF), (0xA7F2, 0xA7F4), (0xAB69, 0xAB69), (0x10781, 0x10785), (0x10787, 0x107B0),
               (0x107B2, 0x107BA), (0x1F16C, 0x1F16C), (0x1FBF0, 0x1FBF9))


@lru_cache(maxsize=2)
def _barrier(form: str) -> re.Pattern:
    ranges = sorted(set(NFC_POST9_RANGES) | (set(_NFKC_POST9) if form == "NFKC" else set()))
    return re.compile("[" + "".join(f"\\U{a:08x}" + (f"-\\U{b:08x}" if b != a else "") for a, b in ranges) + "]")


def hf_normalize(form: str, text: str) -> str:
    """NFC / NFKC as `tokenizers`' normalizers compute them (their Unicode tables are older than
    Python's: the characters they do not know are left as they are, and nothing composes across
    them; checked on random strings of marks, compatibility characters and those characters)."""
    if text.isascii():
        return text
    bar = _barrier(form)
    if bar.search(text) is None:
        return unicodedata.normalize(form, text)
    parts = bar.split(text)
    seps = bar.findall(text)
    out = [unicodedata.normalize(form, parts[0])]
    for sep, part in zip(seps, parts[1:]):
        out.append(sep)
        out.append(unicodedata.normalize(form, part))
    return "".join(out)


# Rust's char::is_whitespace (the White_Space property): what lstrip / rstrip take
_WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                         "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a).view()
    a.flags.writeable = False
    return a


def _trie(pieces: list[str]) -> tuple:
    """(base, check, value) of every non-empty piece (a piece listed twice: its last id)."""
    last = {}
    for i, p in enumerate(pieces):
        if p:
            last[p.encode("utf-8")] = i
    keys = sorted(last.items())
    kb = np.frombuffer(b"".join(k for k, _ in keys) or b"\0", np.uint8)
    koff = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k, _ in keys], out=koff[1:])
    kval = np.array([v for _, v in keys], np.int64)
    base, check, value = build_double_array(_ro(kb), _ro(koff), _ro(np.zeros(len(keys), np.int64)), _ro(kval),
                                            np.int64(1))
    n = len(base)
    used = check >= 0
    if (len(check) != n or len(value) != n or int(base.min()) < 0 or int(base.max()) + 256 > n
            or int(check.max()) >= n or (used & (value >= len(pieces))).any()):
        raise TokenizerFileError("internal error: the vocabulary trie failed its checks")
    return _ro(base.astype(np.int64)), _ro(check.astype(np.int64)), _ro(value.astype(np.int64))


def _charsmap(blob: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(units uint32, replacement bytes) as spm_precompiled parses them."""
    if len(blob) < 4:
        raise TokenizerFileError(f"{where}: normalizer Precompiled.precompiled_charsmap is broken ({len(blob)} bytes)")
    (trie_size,) = struct.unpack("<I", blob[:4])
    n_units = trie_size // 4
    if 4 + 4 * n_units > len(blob):
        raise TokenizerFileError(f"{where}: normalizer Precompiled.precompiled_charsmap: trie size {trie_size} "
                                 f"does not fit the {len(blob)}-byte blob")
    units = np.frombuffer(blob, dtype="<u4", count=n_units, offset=4).astype(np.uint32)
    repl = blob[4 + 4 * n_units:]
    try:
        repl.decode("utf-8")
    except UnicodeDecodeError:
        raise TokenizerFileError(f"{where}: normalizer Precompiled.precompiled_charsmap: the replacement "
                                 "strings are not UTF-8") from None
    return _ro(units), _ro(np.frombuffer(repl or b"\0", np.uint8))


def _added(tokens, strip: dict | None = None) -> tuple:
    """(first-byte table, bytes, offsets, ids) of the added tokens matched in text; an id carries
    lstrip / rstrip in bits 40 / 41."""
    strip = strip or {}
    first = np.zeros(256, np.uint8)
    enc = [t.content.encode("utf-8") for t in tokens]
    for b in enc:
        first[b[0]] = 1
    off = np.zeros(len(enc) + 1, np.int64)
    np.cumsum([len(b) for b in enc], out=off[1:])
    data = np.frombuffer(b"".join(enc) or b"\0", np.uint8)
    flags = [(strip.get(t.content, (False, False))[0] << 40) | (strip.get(t.content, (False, False))[1] << 41)
             for t in tokens]
    return _ro(first), _ro(data), _ro(off), _ro(np.array([t.id | f for t, f in zip(tokens, flags)], np.int64))


def _rust_hex_u8(s: str) -> int | None:
    """u8::from_str_radix(s, 16): an optional '+', then hex digits."""
    if s.startswith("+"):
        s = s[1:]
    if not s or any(c not in "0123456789abcdefABCDEF" for c in s):
        return None
    return int(s, 16)


def _byte_of_token(tok: str) -> int | None:
    b = tok.encode("utf-8")
    if len(b) != 6 or not tok.startswith("<0x") or not tok.endswith(">"):
        return None
    try:
        return _rust_hex_u8(b[3:5].decode("utf-8"))
    except UnicodeDecodeError:  # not a char boundary: Rust's slice would panic; no byte
        return None


def _decode_chain(steps: tuple, tokens: list[str]) -> list[str]:
    for step in steps:
        kind = step[0]
        if kind == "metaspace":
            rep, scheme = step[1], step[2]
            tokens = [t.replace(rep, "" if (i == 0 and scheme != "never") else " ") for i, t in enumerate(tokens)]
        elif kind == "fuse":
            tokens = ["".join(tokens)]
        elif kind == "bytefallback":
            out, pend = [], []
            for t in tokens:
                b = _byte_of_token(t)
                if b is not None:
                    pend.append(b)
                    continue
                if pend:
                    try:
                        out.append(bytes(pend).decode("utf-8"))
                    except UnicodeDecodeError:
                        out.extend(["\ufffd"] * len(pend))
                    pend = []
                out.append(t)
            if pend:
                try:
                    out.append(bytes(pend).decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend(["\ufffd"] * len(pend))
            tokens = out
        elif kind == "strip":
            content, start, stop = step[1], step[2], step[3]
            new = []
            for t in tokens:
                a = 0
                for i, c in enumerate(t[:start]):
                    if c != content:
                        break
                    a = i + 1
                b = len(t)
                for i in range(stop):
                    idx = len(t) - i - 1
                    if idx < 0:  # Rust would panic (index out of range); keep what is there
                        break
                    if t[idx] != content:
                        break
                    b = idx
                new.append(t[a:b] if a <= b else "")
            tokens = new
        else:  # replace
            tokens = [t.replace(step[1], step[2]) for t in tokens]
    return tokens


class UnigramTokenizer(KernelRows, Tokenizer):
    """A Unigram tokenizer.json; see the module docstring."""

    kind = "huggingface"

    def __init__(self, model: UnigramModel):
        self.model = model
        self.name = model.name
        self.vocab_size = len(model.id_to_token)
        self.special_ids = model.special_ids
        where = model.source
        bt = bert_tables()
        g1, g2 = grapheme_tables()
        base, check, value = _trie(model.pieces)
        scores = _ro(np.array(model.scores, np.float64))
        unk_score = min(model.scores) - K_UNK_PENALTY
        byte_ids = np.full(256, -1, np.int64)
        for i, p in enumerate(model.pieces):  # the last id of a piece listed twice
            if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
                try:
                    b = int(p[3:5], 16)
                except ValueError:
                    continue
                if p == f"<0x{b:02X}>":
                    byte_ids[b] = i
        steps, args = [], []
        units = _ro(np.zeros(0, np.uint32))
        repl = _ro(np.zeros(1, np.uint8))
        rep = []
        n_pre = sum(1 for s in model.normalizer if s[0] == "precompiled")
        if n_pre > 1:
            raise UnsupportedTokenizerError(where, "normalizer.normalizers", "Precompiled",
                                            "one Precompiled step at most")
        self._form = None
        for s in model.normalizer:
            if s[0] in ("nfc", "nfkc"):  # first, in Python (hf_normalize): the kernels run the rest
                self._form = s[0].upper()
            elif s[0] == "precompiled":
                units, repl = _charsmap(s[1], where)
                steps.append(K.S_PRECOMPILED)
                args.append(0)
            elif s[0] == "lowercase":
                steps.append(K.S_LOWER)
                args.append(0)
            elif s[0] == "strip":
                steps.append(K.S_STRIP)
                args.append((1 if s[1] else 0) | (2 if s[2] else 0))
            elif s[0] == "replace_run":
                steps.append(K.S_RUNS)
                args.append(len(rep) // 2 | (s[2] << 20))
                rep += [s[1].encode("utf-8"), s[3].encode("utf-8")]
            else:
                steps.append(K.S_REPLACE)
                args.append(len(rep) // 2)
                rep += [s[1].encode("utf-8"), s[2].encode("utf-8")]
        rep_off = np.zeros(len(rep) + 1, np.int64)
        np.cumsum([len(b) for b in rep], out=rep_off[1:])
        rep_bytes = np.frombuffer(b"".join(rep) or b"\0", np.uint8)
        meta = model.metaspace
        meta_rep = (meta[0] if meta else "\u2581").encode("utf-8")
        scheme = {"always": K.P_ALWAYS, "first": K.P_FIRST, "never": K.P_NEVER}[meta[1] if meta else "always"]
        self._kargs = (base, check, value, scores, np.int64(-1 if model.unk_id is None else model.unk_id),
                       np.float64(unk_score), np.int64(model.byte_fallback), _ro(byte_ids),
                       _ro(np.array(steps, np.int64)), _ro(np.array(args, np.int64)), units, repl,
                       bt.stage1, bt.stage2, bt.seq, bt.seq_off, g1, g2, _ro(rep_bytes), _ro(rep_off),
                       np.int64(model.whitespace_split), np.int64(meta is not None),
                       _ro(np.frombuffer(meta_rep, np.uint8)), np.int64(scheme),
                       np.int64(bool(meta and meta[2])), *_added(model.added, model.strip))
        self._local = threading.local()
        self._set_template(model.template)
        self._special_strings = frozenset(t.content for t in model.added if t.special)
        self._vocab = None
        # the same tables without added tokens, for text already split at them (NFC / NFKC path)
        self._kargs_plain = self._kargs[:-4] + _added([])
        self._added_re = None
        if model.added:
            alts = sorted({t.content for t in model.added}, key=len, reverse=True)  # leftmost, then longest
            self._added_re = re.compile("|".join(re.escape(a) for a in alts))
            self._added_ids = {t.content: t.id for t in model.added}

    @classmethod
    def from_file(cls, path, config=None, *, name: str | None = None) -> "UnigramTokenizer":
        return cls(read_unigram_json(path, config, name=name))

    def __reduce__(self):
        return UnigramTokenizer, (self.model,)

    # ------------------------------------------------------------------ encode
    @staticmethod
    def _work(n: int, lattice: int = 16384) -> tuple:
        """Work buffers for a text of n bytes: grown on NEED_WORK / NEED_LATTICE, never sized for the
        worst case (the lattice arrays hold one piece, a word at most)."""
        norm = n + 64
        m = 3 * n + 64  # Metaspace: a space byte becomes the replacement's (up to 4), one more per word
        lat = min(m, lattice) + 1
        return (np.empty(norm, np.uint8), np.empty(norm, np.uint8), np.empty(m, np.uint8),
                np.empty(lat, np.float64), np.empty(lat, np.int64), np.empty(lat, np.int64),
                np.empty(lat, np.int64))

    @staticmethod
    def _grown(work: tuple, code: int) -> tuple:
        wa, wb, wm, best, st, nd, en = work
        if code == K.NEED_LATTICE:
            lat = 2 * len(best)
            return (wa, wb, wm, np.empty(lat, np.float64), np.empty(lat, np.int64), np.empty(lat, np.int64),
                    np.empty(lat, np.int64))
        norm = 2 * len(wa)
        m = 2 * len(wm)
        return (np.empty(norm, np.uint8), np.empty(norm, np.uint8), np.empty(m, np.uint8), best, st, nd, en)

    def _scratch(self, n: int) -> tuple:
        loc = self._local
        w = getattr(loc, "work", None)
        if w is None or len(w[0]) < n + 64:
            w = loc.work = self._work(max(n, 4096), len(w[3]) - 1 if w is not None else 16384)
        return w

    def _encode_bytes(self, buf: np.ndarray, first: bool = True, kargs=None) -> np.ndarray:
        n = len(buf)
        work = self._scratch(n)
        cap = 2 * n + 64
        buf = _ro(buf)
        kargs = self._kargs if kargs is None else kargs
        while True:
            out = np.empty(cap, np.uint32)
            k = K.encode_one(buf, out, np.int64(first), *work, *kargs)
            if k >= 0:
                if len(work[0]) > (1 << 22) or len(work[3]) > (1 << 20):
                    self._local.work = None  # a huge text's buffers are not kept per thread
                return out[:k]
            if k == K.ERR_NO_UNK:
                raise UnknownCharacterError(f"{self.model.source}: the text has a character no piece covers and "
                                            "model.unk_id is null (tokenizers raises MissingUnkId)")
            if k == K.NEED_WORK:
                cap *= 2
            work = self._local.work = self._grown(work, k)

    def _segments(self, text: str) -> list:
        """text split at the added tokens: str segments and int ids."""
        if self._added_re is None:
            return [text]
        out: list = []
        pos = 0
        strip = self.model.strip
        for m in self._added_re.finditer(text):
            start, stop = m.start(), m.end()
            ls, rs = strip.get(m.group(), (False, False))
            if ls:
                while start > pos and text[start - 1] in _WHITE_SPACE:
                    start -= 1
            if rs:
                while stop < len(text) and text[stop] in _WHITE_SPACE:
                    stop += 1
            if start > pos:
                out.append(text[pos:start])
            out.append(self._added_ids[m.group()])
            pos = stop
        if pos < len(text):
            out.append(text[pos:])
        return out

    def _needs_form(self, text: str) -> bool:
        """Whether NFC / NFKC changes a segment of `text` (then the Python path runs it)."""
        if self._form is None or text.isascii():
            return False
        return any(isinstance(s, str) and hf_normalize(self._form, s) != s for s in self._segments(text))

    def _encode_str(self, text: str) -> np.ndarray:
        if not self._needs_form(text):
            return self._encode_bytes(np.frombuffer(text.encode("utf-8"), np.uint8))
        parts = []
        pos = 0
        for seg in self._segments(text):
            if isinstance(seg, int):
                parts.append(np.array([seg], np.uint32))
                pos += 1
                continue
            norm = hf_normalize(self._form, seg)
            parts.append(self._encode_bytes(np.frombuffer(norm.encode("utf-8"), np.uint8), pos == 0,
                                            self._kargs_plain))
            pos += 1
        return np.concatenate(parts).astype(np.uint32) if parts else np.zeros(0, np.uint32)

    _encode_text = _encode_str

    def _run_rows(self, bufs, rbuf, rstart, rlen, valid, threads: int):
        n = len(rlen)
        ro, out, counts, status, bounds, threads = row_layout(rlen, valid, REGION_SLACK, threads, MIN_PARALLEL_BYTES)
        args = (bufs, _ro(rbuf), _ro(rstart), _ro(rlen), _ro(valid), _ro(ro), out, counts, status)
        longest = int(rlen.max()) if n else 0

        def work(w: int) -> None:
            # each worker's work buffers are its own; a row that outgrows them goes to the single-text path
            K.encode_rows(bounds[w], bounds[w + 1], *args, *self._work(min(longest, 1 << 16), 4096), *self._kargs)

        on_threads(threads, work)
        off = np.empty(n + 1, np.int64)
        m = int(compact(out, ro, counts, off))
        return out[:m], off, status

    def _fix_rows(self, ids, off, status, row_text):
        redo = np.flatnonzero(status).tolist()
        if not redo:
            return ids, off
        fixed = {r: self._encode_str(row_text(r, int(status[r]))) for r in redo}
        return splice_rows(ids, off, fixed)

    def encode_batch_to_numpy(self, texts: Sequence[str], *, num_threads: int | None = None
                              ) -> tuple[np.ndarray, np.ndarray]:
        """(ids uint32, offsets int64): text r's ids are ids[offsets[r]:offsets[r + 1]]."""
        bufs, rbuf, start, lens = text_rows(texts)
        n = len(lens)
        valid = np.ones(n, bool)
        form = None
        if self._form is not None:
            form = np.fromiter((self._needs_form(t) for t in texts), bool, count=n)
            valid &= ~form
        ids, off, status = self._run_rows(bufs, rbuf, start, lens, valid, _threads(num_threads))
        if form is not None:
            status[form] = 4
        return self._fix_rows(ids, off, status, lambda r, s: texts[r])

    # ------------------------------------------------------------------ Arrow columns
    def _column_chunk(self, col, row_base: int, threads: int, errors: str, counting: bool):
        if col.n == 0:
            return self._empty_chunk(col, counting)
        bufs = col.typed_bufs()
        valid = col.valid
        form = None
        if self._form is not None:
            # rows with a non-ASCII byte whose text NFC / NFKC changes take the Python path
            wide = np.zeros(col.n, bool)
            for b in range(len(bufs)):
                hi = np.zeros(len(bufs[b]) + 1, np.int64)
                np.cumsum(np.asarray(bufs[b]) >= 0x80, out=hi[1:])
                rows = np.flatnonzero(np.asarray(col.rbuf) == b)
                st = np.asarray(col.rstart)[rows]
                wide[rows] = hi[st + np.asarray(col.rlen)[rows]] > hi[st]
            form = np.zeros(col.n, bool)
            for r in np.flatnonzero(wide & np.asarray(col.valid)).tolist():
                data = col.row_bytes(r)
                try:
                    form[r] = self._needs_form(data.decode("utf-8"))
                except UnicodeDecodeError:
                    pass  # status 1: replaced or refused below, then encoded whole
            valid = np.asarray(col.valid) & ~form
        ids, off, status = self._run_rows(bufs, col.rbuf, col.rstart, col.rlen, valid, threads)
        if form is not None:
            status[form] = 4
        return self._finish_chunk(col, row_base, errors, counting, ids, off, status)

    # ------------------------------------------------------------------ decode
    def _decode_checked(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        table = self.model.id_to_token
        special = self._special_strings if skip_special_tokens else frozenset()
        tokens = [table[i] for i in ids if table[i] is not None and table[i] not in special]
        if self.model.decoder_null:
            return " ".join(tokens)
        return "".join(_decode_chain(self.model.decoder, tokens))

    def unsettled_count(self, ids: Sequence[int]) -> int:
        """The trailing run of `<0xXX>` tokens (ByteFallback renders a run whole: one more byte can
        turn it into U+FFFDs) with the dropped ids inside it, plus what a Replace pattern or a Strip
        at the end can still reach."""
        table = self.model.id_to_token
        special = self._special_strings
        k = 0
        bytes_ = any(s[0] == "bytefallback" for s in self.model.decoder)
        for i in reversed(ids):
            tok = table[i]
            if tok is None or tok in special or (bytes_ and _byte_of_token(tok) is not None):
                k += 1
                continue
            break
        extra = 0
        for s in self.model.decoder:
            if s[0] == "replace":
                extra = max(extra, len(s[1]))
            elif s[0] == "strip" and s[3] > 0:
                extra = max(extra, s[3] + 1)
        return min(len(ids), k + extra)

    def token_to_id(self, token: str) -> int | None:
        for t in self.model.added:
            if t.content == token:
                return t.id
        if self._vocab is None:
            self._vocab = {p: i for i, p in enumerate(self.model.pieces)}
        return self._vocab.get(token)

    # ------------------------------------------------------------------ templates and fixed-shape batches
    def _template_rows(self, a: list, b: list | None, add: bool) -> tuple[list, list]:
        """(ids, type ids) of one sequence or pair through the post-processor's template (HF's
        `encode(a, b, add_special_tokens=add)`): without it, or without add, a then b with type
        ids 0 and 1."""
        tpl = self.model.template
        if not add or tpl is None:
            return a + (b or []), [0] * len(a) + [1] * len(b or [])
        ids: list = []
        types: list = []
        for kind, piece, t in (tpl.single if b is None else tpl.pair):
            part = list(piece) if kind == "ids" else (a if kind == "A" else b)
            ids += part
            types += [t] * len(part)
        return ids, types

    def encode_pair(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True
                    ) -> tuple[list[int], list[int]]:
        """(ids, type ids) of `text` (and `pair`) as tokenizers' `encode(text, pair, add_special_tokens)`
        gives them (no truncation, no padding)."""
        a = self.encode(text)
        b = None if pair is None else self.encode(pair)
        return self._template_rows(a, b, add_special_tokens)

    def __repr__(self) -> str:
        return f"<UnigramTokenizer {self.name!r} vocab_size={self.vocab_size}>"
