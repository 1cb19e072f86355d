"""Streaming encode: ids out as text comes in, exactly `Encoding.encode`'s ids, with bounded delay.

    se = enc.stream_encoder(allowed_special=set(), disallowed_special="all")
    se.feed(text_chunk)   -> uint32 ids that no continuation can change
    se.feed_bytes(chunk)  -> the same for UTF-8 bytes (a character may be split across chunks)
    se.finish()           -> the remaining ids; the encoder is then ready for a new text

For every text and every way of cutting it into chunks, the concatenation of everything returned
equals `enc.encode(text, allowed_special=..., disallowed_special=...)`.

Semantics at the edges
----------------------
* `feed_bytes`: the bytes are decoded incrementally with `errors` ("replace" by default, one U+FFFD
  per maximal ill-formed subsequence as `bytes.decode` does; "strict" raises UnicodeDecodeError); the
  ids are those of `encode(b"".join(chunks).decode("utf-8", errors))`. An unfinished character is
  held until the next chunk (or `finish`, where it becomes U+FFFD). Mixing `feed` and `feed_bytes`
  ends an unfinished byte sequence at the switch.
* `feed(str)`: lone surrogates become U+FFFD as in `encode`; a high surrogate at the end of a chunk
  is held, so a surrogate pair cut between two chunks still combines as it does in one string.
* Disallowed special tokens (tiktoken's `disallowed_special`, default "all" minus the allowed ones):
  `encode` refuses the whole text. A stream cannot take back ids it already returned, so
  `feed`/`feed_bytes`/`finish` raise the same ValueError as `encode` as soon as the chunk that
  COMPLETES a disallowed token is fed, before anything of that chunk is encoded; the ids returned
  earlier cover only text before the token (the possible start of any special token is held back,
  see below). The encoder is reset after the error. A disallowed string that is not a special token
  (tiktoken allows that) is searched for in the decoded text in the same way.

Why an emitted id is final (the argument; tests/test_stream_encode.py attacks each step)
------------------------------------------------------------------------------------------
encode = Seg (added tokens) -> Split (the regex pieces of each segment) -> Merge (BPE per piece), and
a prefix that is final for each stage given a final input prefix is final for the composition
(Dalirrooyfard & Ye, Claim 4.19). The pending text is `buf[0:n]`, complete characters only.

1. Seg. encode scans left to right and takes at the first position where an allowed added token
   matches the longest one (`match_added`). Position i is *pending* when `buf[i:n]` is a proper
   prefix of a path in the added-token trie (of any special token: allowed ones may still match or
   grow, disallowed ones are held so no id ever covers their bytes). Text before the leftmost pending
   position is settled ordinary text; a match at a non-pending position is final. So at most
   (longest special token - 1) bytes are held by this stage.

2. Split. A scanner (`kernels/scan.py`) is a deterministic function of the bytes it reads and of its
   comparisons of offsets with `end`. If, scanning the piece at `pos` of text ending at `end`, it
   read only bytes < end and every offset it compared with end was < end, its run is identical for
   every continuation - including the end of the text and the end of the segment at a special token
   - so the piece end is final (and so is the next piece's start). `kernels.stream_encode.is_final`
   bounds what the scanners read past the piece end pe:
   * bounded look-ahead: the character that stops a run (complete, since the buffer holds complete
     characters), `[\\r\\n]*` / `[\\r\\n/]*` tails (one byte), the contraction checks at pe
     (`'s`, `'ll`, `'ſ` compare pe+1 and pe+2 with end). All below pe + 4 = pe + MARGIN.
   * unbounded look-ahead happens only where pe lies strictly INSIDE a run the scanner had to read
     to its end: a whitespace run (`\\s+(?!\\S)` gives back the run's last character; cl100k/o200k
     `\\s*[\\r\\n]` ends after the run's LAST CR/LF, so the whole run is read), and, for o200k, a
     run of [Lu Lt Lm Lo M] (`[U]*[W]+` backtracks to the run's last Lm/Lo/M when no lowercase
     letter follows; a mark prefix alone also reads the run after it). In both cases the characters
     just before and at pe are in that run, so the rule extends over the run from pe and asks that
     its end plus MARGIN is <= end.
   Everything else - `\\p{L}++`, `\\p{N}{1,3}`, `[^\\s\\p{L}\\p{N}]++`, contractions after words
   (`don` + `'t` cut anywhere), `\\r\\n` cut in the middle, a space before a word, multi-byte
   characters cut anywhere (held by the decoder) - falls under the bounded case.

3. The live piece. The first piece that is not final starts at F (a final boundary). `live_bound`
   gives K <= every future end of the piece: K = its current end for non-whitespace pieces (their
   runs only grow: possessive runs, the o200k word whose U-run backtrack point only moves right,
   tails that only extend; and K <= the end for the empty continuation too); for a whitespace piece
   K = the start of the run's last character (r50k, and runs without CR/LF) or the end of the run's
   last CR/LF (cl100k, o200k), since more text can give the last character away but never move an
   existing CR/LF out of the piece.

4. Merge inside a long piece (Jiang & Gong's incremental BPE, the "BPE queue" of Dalirrooyfard & Ye,
   section 5). lam[i] = last token of Merge(x[F:i]) is the unique suffix token t of x[F:i] with
   Merge(raw(lam[i-|t|]) raw(t)) == [lam[i-|t|], t] (or Merge(raw t) == [t] when t is all of
   x[F:i]): a sequence of tokens is a BPE output iff each adjacent pair is (their Lemma), so the
   candidate that passes is the true last token. Node i's parent is i - |lam[i]|; the tokens of
   Merge(x[F:E]) are the path from E to the root F. A parent is at most maxlen bytes back, so the
   path from any end E >= K enters the window (K - maxlen, K]; the path above the lowest common
   ancestor of the window is common to all of them and is final. Long mode starts when K - F >
   max(LONG_MIN, maxlen) (so the piece can never be one whole token, which the whole-piece lookup of
   `ignore_merges` would otherwise produce); shorter live pieces are rescanned from F at each call
   (bounded work).

5. Resuming the scan. The bytes before the emitted point are dropped, so the live piece is rescanned
   from an anchor R inside it whose scan ends where the scan from F ends, for every continuation:
   a letter (r50k/cl100k `\\p{L}++`), a digit (r50k `\\p{N}++`), two punctuation characters in a row
   before any CR/LF (so no contraction, no letter prefix, no o200k tail), two whitespace
   characters (with K's CR/LF rule above, the run after R keeps the last CR/LF), an o200k lowercase
   letter (`[W]+` from there) before the contraction suffix, if any (from a letter of `'re` the scan
   would start a new word), or an o200k Lu/Lt/Lm/Lo before the first lowercase letter (the same
   U-run, and its last Lm/Lo/M is >= R because the piece reaches K > R). R is at least 8 bytes
   (two characters) after F, so no optional prefix is involved.

Delay and memory
----------------
* Special tokens: a possible start is held at most (its length - 1) bytes. Pieces: a piece is
  emitted once its end is final, i.e. when MARGIN (4) bytes after it are known, or after the
  whitespace / o200k capital run that follows it when its end lies inside that run.
* Inside a long piece the held text is x[min(anchor, LCA):end]. The window alone keeps maxlen - 1
  bytes (128 - 1 for the three encodings); the distance from the window down to its common ancestor
  is bounded for any merge table by Dalirrooyfard & Ye's Claim 5.1 ((m + 1) * maxlen, m merges: a
  constant of the vocabulary, astronomically loose). Measured (tests/test_stream_encode.py and the
  bench): the held text never exceeded 141 bytes = maxlen + 13, for 1 MB of random letters, 200 kB
  runs of spaces, tabs, newlines, punctuation, digits, emoji, CJK, Devanagari, capitals, in all
  three encodings; the test asserts <= 2 * maxlen.
* Unbounded by necessity (exactness forbids any bounded delay, the lookback b(R) of the regex is
  infinite there): cl100k/o200k `\\s*[\\r\\n]` - a CR/LF followed by a long whitespace run without
  CR/LF: whether the piece ends at the CR/LF depends on whether another CR/LF comes; and o200k
  `[U]*[W]+` - a Lm/Lo/M followed by a long run of capitals: whether the run joins the piece
  depends on a lowercase letter after it. The tokens differ in both futures, so they are held until
  the run ends (no incremental BPE is possible across an undecided piece boundary); each call then
  rescans the held run, so these inputs also cost O(held) per call.
* Scanner kinds other than r50k/cl100k/o200k (the Llama-3, Qwen2, Tekken, SmolLM2 and whole-text
  kinds of `kernels/scan.py`) are refused with NotImplementedError: the rules above were derived
  for these three scanners only.

Cost: every call scans the new bytes once, plus the live piece's rescan from its anchor (bounded
by LONG_MIN + the held bytes); the incremental BPE costs a reverse-trie walk and usually one
memoized compatibility check per byte, and only runs inside pieces longer than LONG_MIN.
"""

from __future__ import annotations

import codecs
import weakref

import numpy as np

from .args import check_text
from .errors import raise_disallowed_special_token
from .kernels import encode as _enc_k
from .kernels import stream_encode as K
from .kernels.trees import F_REACH
from .tables import TREES_MONOTONE, TREES_SAME
from .text import text_to_utf8

__all__ = ["StreamEncoder", "LONG_MIN"]

LONG_MIN = 256  # live pieces at least this long are emitted incrementally (must exceed maxlen)
_INIT_CAP = 1 << 16
_POSITION_SLOTS = (K.S_SEG, K.S_PIECE, K.S_ANCH, K.S_EMIT, K.S_LAMEND, K.S_ASCAN, K.S_HELD_K)

_SUPPORTED_KINDS = (K.PAT_GPT2, K.PAT_CL100K, K.PAT_O200K)
_LONG_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_FORCE_SLOW_COMPAT = False  # tests: check pairs by merging them instead of the fast check
_DUMMY_LT = K.LongTables(np.full(1, -1, dtype=np.int32), np.full(1, -1, dtype=np.int64),
                         np.full(1, -1, dtype=np.int32), np.zeros(1, dtype=np.uint8),
                         np.full(1, -1, dtype=np.int64), np.full(1, -1, dtype=np.int32),
                         np.full(1, -1, dtype=np.int32), 0, 0)
_DUMMY_LW = K.new_long_work(0)


def _pow2_at_least(n: int) -> int:
    c = 16
    while c < n:
        c <<= 1
    return c


def long_tables(enc) -> K.LongTables:
    """The incremental-BPE tables of `enc` (reverse trie of the tokens, reachability), built once."""
    lt = _LONG_TABLES.get(enc)
    if lt is None:
        T = enc._t
        n_vocab = len(T.tok_offsets) - 1
        ordinary = np.zeros(n_vocab, dtype=np.bool_)
        ids = np.fromiter(enc._model.vocab.values(), dtype=np.int64, count=len(enc._model.vocab))
        ordinary[ids] = True
        lens = np.diff(T.tok_offsets)
        max_len = int(lens[ordinary].max())
        # size the hash for the trie's node count (shared suffixes: ~1/3 of the token bytes)
        vocab = enc._model.vocab
        order = np.array(sorted(vocab, key=lambda b: b[::-1]), dtype=object)
        order = np.fromiter((vocab[b] for b in order), dtype=np.int64, count=len(order))
        nodes = int(K.rev_trie_nodes(T.tok_bytes, T.tok_offsets, order))
        rt_token, rt_keys, rt_child = K.build_rev_trie(T.tok_bytes, T.tok_offsets, ordinary,
                                                       _pow2_at_least(2 * nodes + 2))
        trees = int(T.config[3])  # the merge trees were built with the tables (tables._merge_trees)
        if not trees & TREES_SAME:
            raise RuntimeError("stream encoder: the merge trees disagree with merge_symbols")
        # writable copies: the kernels are compiled for these array types (as _DUMMY_LT's)
        reach = (T.tok_flags & F_REACH).astype(np.uint8)
        lt = K.LongTables(rt_token, rt_keys, rt_child, reach, T.crank.copy(), T.split_l.copy(),
                          T.split_r.copy(), int(bool(trees & TREES_MONOTONE)), max_len)
        _LONG_TABLES[enc] = lt
    if _FORCE_SLOW_COMPAT:
        lt = lt._replace(fast=0)
    return lt


class StreamEncoder:
    """Incremental `encode` of one text at a time (see the module docstring)."""

    def __init__(self, enc, *, allowed_special=frozenset(), disallowed_special="all",
                 errors: str = "replace", long_min: int = LONG_MIN):
        self._enc = enc
        self._T = enc._t
        kind = int(self._T.config[_enc_k.CFG_PATTERN])
        if kind not in _SUPPORTED_KINDS:
            raise NotImplementedError(
                f"stream encoding is implemented (and its boundary rules proven) for the r50k/p50k/gpt2, "
                f"cl100k and o200k split patterns; {getattr(enc, 'name', enc)!r} uses scanner kind {kind}")
        amask, any_allowed, dis = enc._policy(allowed_special, disallowed_special)
        self._amask = amask
        self._any_allowed = bool(any_allowed)
        self._dis = dis
        self._dis_is_mask = isinstance(dis, np.ndarray)
        if self._dis_is_mask and not dis.any():
            self._dis = None
        self._dmax = 0
        if self._dis is not None:
            allowed = enc.special_tokens_set if allowed_special == "all" else set(allowed_special)
            refused = (enc.special_tokens_set - allowed if disallowed_special == "all"
                       else set(disallowed_special))
            if self._dis_is_mask:
                self._dmax = max(len(s.encode("utf-8")) for s in refused)
            else:
                self._dmax = max(len(s) for s in refused)
        self._hold = self._any_allowed or self._dis is not None
        codecs.lookup_error(errors)  # validate early
        self._errors = errors
        self._long_min = int(long_min)
        self._reset()

    # ------------------------------------------------------------------ public API
    def feed(self, text: str) -> np.ndarray:
        """Encode more text; returns the ids that are now final (uint32)."""
        check_text(text, bytes_hint="use feed_bytes() for UTF-8 bytes")
        prefix = self._flush_decoder()
        if self._hs:
            prefix += self._hs
            self._hs = ""
        if prefix:
            text = prefix + text
        if text and "\ud800" <= text[-1] <= "\udbff":
            self._hs = text[-1]
            text = text[:-1]
        return self._feed_text(text, False)

    def feed_bytes(self, data: bytes) -> np.ndarray:
        """Encode more UTF-8 bytes; an unfinished character is held until it completes."""
        if not isinstance(data, (bytes, bytearray)):
            try:
                memoryview(data)
            except TypeError:
                hint = " (use feed() for str)" if isinstance(data, str) else ""
                raise TypeError(f"data must be bytes, not {type(data).__name__}{hint}") from None
        text = ""
        if self._hs:
            text = self._hs
            self._hs = ""
        if self._dec is None:
            self._dec = codecs.getincrementaldecoder("utf-8")(self._errors)
        try:
            text += self._dec.decode(data, False)
        except UnicodeDecodeError:
            self._reset()
            raise
        return self._feed_text(text, False)

    def finish(self) -> np.ndarray:
        """The remaining ids; the encoder then starts over with an empty text."""
        text = self._flush_decoder() + self._hs
        self._hs = ""
        try:
            return self._feed_text(text, True)
        finally:
            self._reset()

    @property
    def buffered_bytes(self) -> int:
        """Bytes of text held (received but not yet covered by returned ids, plus kept context)."""
        return self._n

    @property
    def capacity_bytes(self) -> int:
        """Allocated size of the pending-text buffer."""
        return len(self._buf)

    # ------------------------------------------------------------------ internals
    def _reset(self) -> None:
        self._buf = np.empty(_INIT_CAP, dtype=np.uint8)
        self._n = 0
        self._st = np.zeros(K.N_STATE, dtype=np.int64)
        self._dec = None
        self._hs = ""
        self._dtail = b"" if self._dis_is_mask else ""
        self._lt = _DUMMY_LT
        self._lw = _DUMMY_LW
        self._lam = np.zeros(1, dtype=np.int32)
        self._lamlen = np.zeros(1, dtype=np.int32)
        self._mark = np.zeros(1, dtype=np.uint8)

    def _flush_decoder(self) -> str:
        dec = self._dec
        if dec is None:
            return ""
        self._dec = None
        try:
            return dec.decode(b"", True)
        except UnicodeDecodeError:
            self._reset()
            raise

    def _check_disallowed(self, text: str, data: bytes) -> None:
        dis = self._dis
        if dis is None:
            return
        keep = self._dmax - 1
        if self._dis_is_mask:
            window = self._dtail + data
            arr = np.frombuffer(window, dtype=np.uint8)
            pos, idx = _enc_k.find_added(arr, 0, len(arr), self._T, dis)
            if pos >= 0:
                self._reset()
                raise_disallowed_special_token(self._enc._compiled.added[idx].content)
            self._dtail = window[max(0, len(window) - keep):] if keep > 0 else b""
        else:
            window = self._dtail + text
            m = dis.search(window)
            if m is not None:
                self._reset()
                raise_disallowed_special_token(m.group())
            self._dtail = window[max(0, len(window) - keep):] if keep > 0 else ""

    def _feed_text(self, text: str, final: bool) -> np.ndarray:
        data = text_to_utf8(text) if text else b""
        self._check_disallowed(text, data)
        return self._push(data, final)

    def _ensure_capacity(self, need: int) -> None:
        cap = len(self._buf)
        if need <= cap:
            return
        new_cap = max(need, 2 * cap)
        buf = np.empty(new_cap, dtype=np.uint8)
        buf[:self._n] = self._buf[:self._n]
        self._buf = buf
        if self._lt.max_len:
            self._grow_long(new_cap)

    def _grow_long(self, cap: int) -> None:
        # node positions run from 0 to n inclusive: one more slot than the byte buffer
        n = min(self._n + 1, len(self._lam))
        lam = np.zeros(cap + 1, dtype=np.int32)
        lamlen = np.zeros(cap + 1, dtype=np.int32)
        lam[:n] = self._lam[:n]
        lamlen[:n] = self._lamlen[:n]
        self._lam, self._lamlen = lam, lamlen
        self._mark = np.zeros(cap + 1, dtype=np.uint8)

    def _push(self, data: bytes, final: bool) -> np.ndarray:
        m = len(data)
        self._ensure_capacity(self._n + m)
        if m:
            self._buf[self._n:self._n + m] = np.frombuffer(data, dtype=np.uint8)
            self._n += m
        st = self._st
        n = self._n
        cache, work = self._enc._serial_state()
        parts = []
        while True:
            start = st[K.S_EMIT] if st[K.S_LONG] else st[K.S_PIECE]
            out = np.empty(n - start + 2, dtype=np.uint32)
            got = K.stream_step(self._buf, n, st, self._T, self._amask, self._any_allowed, self._hold, final,
                                out, cache, work[0], self._lt, self._lw, self._lam, self._lamlen, self._mark,
                                self._long_min)
            if st[K.S_ERR]:
                code = int(st[K.S_ERR])
                self._reset()
                raise RuntimeError("stream encoder: internal invariant broken ("
                                   + ("no compatible token in the incremental BPE" if code == 1 else
                                      "a long piece ended before its proven lower bound") + ")")
            out.resize(got, refcheck=False)
            parts.append(out)
            if not st[K.S_WANTLONG]:
                break
            self._lt = long_tables(self._enc)
            self._lw = K.new_long_work(self._lt.max_len)
            self._long_min = max(self._long_min, self._lt.max_len + 1)
            self._grow_long(len(self._buf))
        self._compact()
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts)

    def _compact(self) -> None:
        st = self._st
        keep = int(st[K.S_KEEP])
        n = self._n
        if keep <= 0:
            return
        rest = n - keep
        buf = self._buf
        if len(buf) > 4 * max(rest, _INIT_CAP):
            nb = np.empty(max(2 * rest, _INIT_CAP), dtype=np.uint8)
            nb[:rest] = buf[keep:n]
            self._buf = nb
            if self._lt.max_len:
                lam, lamlen = self._lam, self._lamlen
                self._n = 0
                self._grow_long(len(nb))
                if st[K.S_LONG]:
                    self._lam[:rest + 1] = lam[keep:n + 1]
                    self._lamlen[:rest + 1] = lamlen[keep:n + 1]
        else:
            buf[:rest] = buf[keep:n]
            if st[K.S_LONG] and self._lt.max_len:
                self._lam[:rest + 1] = self._lam[keep:n + 1]
                self._lamlen[:rest + 1] = self._lamlen[keep:n + 1]
        self._n = rest
        for s in _POSITION_SLOTS:
            st[s] -= keep
        st[K.S_KEEP] = 0

