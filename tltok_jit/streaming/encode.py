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
   matches the longest one (`match_in_trie`). Position i is *pending* when `buf[i:n]` is a proper
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
  the run ends (no incremental BPE is possible across an undecided piece boundary). They still cost
  O(new bytes) per call ("Held runs" below).

Held runs (linear time on held text)
------------------------------------
A call that ends with the live piece not final records why (`kernels.stream_encode._block_kind`),
when the reason is a run that some characters only extend; the next call, if all its new text is
such characters, changes nothing and only scans the new bytes. Two kinds, with K the live bound
(step 3) and f the scan's origin (the piece start, or the anchor in long mode), K > f:
* B_WS (the CR/LF families): the character before K is a CR/LF and [K, end) is whitespace without
  CR/LF; neutral: whitespace other than CR/LF. A piece ending in a CR/LF followed by whitespace is
  `\\s*[\\r\\n]+` (it ends after the run's last CR/LF; `\\s++$` of cl100k takes the run to the end
  of the text, at or after K) or a punctuation piece with its CR/LF tail (the tail stops at the
  whitespace); no earlier alternative matches at a whitespace start whose next character is
  whitespace. More such whitespace moves no CR/LF, so every scan still ends at >= K, inside or at
  the end of the whitespace run (not final by is_final's whitespace rule or by MARGIN), and K stays.
* B_UPPER (the cased families): the character before K = the piece end is in [U], [K, end) is Lu/Lt
  only; neutral: Lu, Lt. The piece is `[U]*` backtracked to its last [Lm Lo M] (a Lu/Lt moves no
  [Lm Lo M]), or a `[W]+` run / contraction / punctuation run that a letter after it cannot extend;
  either way its end stays, and the U-rule keeps it not final while the run reaches the end.
In both cases K is unchanged, so in long mode no new node is final and the anchor search stops
where it stopped; the new characters start no `last_cut` (neither a space after a non-space nor
punctuation) and, in the stream, every added-token decision is taken before (hold). When other text
comes, the full step runs once (O(held) once; what it settles is not held again).
Other per-call costs that grew with the held text are gone too: `last_cut` resumes where the last
call stopped (whether y is a cut depends only on the characters at and before y); the buffer is
compacted only when the dropped part is at least as long as what stays (or to make room, doubling),
so a held run is not copied per call; the id buffer is reused. In long mode, the [W]+ run of an
o200k/Tekken word (after its first Ll) is extended from where the last call stopped
(`_resume_end`), so a run of combining marks is read once; its anchors may then be any [W].

Split-pattern families
----------------------
The rules are stated per family, and each member's scanner (kernels/scan.py) has the property used:
GPT-2 (no CR/LF rule): r50k/p50k/gpt2, and SmolLM2's gpt2+digits (Digits cuts every numeric
character off first: a digit ends the regex's text, read as one character of look-ahead).
CR/LF, `\\p{L}+` words: cl100k, Llama-3 and Qwen2 (`\\p{N}{1,3}` / `\\p{N}`; no `\\s++$`, so a
whitespace run at the end of the text is cut after its last CR/LF: still >= K). CR/LF, cased words:
o200k and Mistral-Nemo's Tekken (no contraction suffix, `\\p{N}`). The contraction letters, the
`\\r\\n` / `[\\r\\n/]*` tails and the digit look-ahead all lie within MARGIN.

tokenizer.json models: those without a normalizer run as above. NFC (Qwen2.5): added tokens are
found in the raw text and each text between them is normalized on its own, as `tokenizers` does;
`stream_normalize.NormalizingSplitter` does both online (the text after the last NFC boundary is
held) and feeds an inner encoder, finished at each added token. Models whose pre-tokenization runs
in Python, character-level (SentencePiece-style) models, vocabularies missing bytes and other
normalizers raise NotImplementedError naming the reason.

Cost: every call scans the new bytes once, plus the live piece's rescan from its anchor (bounded
by LONG_MIN + the held bytes); the incremental BPE costs a reverse-trie walk and usually one
memoized compatibility check per byte, and only runs inside pieces longer than LONG_MIN.
"""

from __future__ import annotations

import codecs
import weakref

import numpy as np

from ..engine.args import check_text
from ..errors import raise_disallowed_special_token
from ..kernels import encode as _enc_k
from ..kernels import stream_encode as K
from ..kernels.trees import F_REACH
from ..model.pipeline.normalizers import NFC
from ..unicode.classes import CLS_OTHER as _CLS_OTHER
from ..hf.online_normalizer import NormalizingSplitter
from ..model.patterns import KINDS
from ..tables.bpe import TREES_MONOTONE, TREES_SAME, pattern_kind, pow2_at_least, table_config
from ..engine.text import text_to_utf8

__all__ = ["StreamEncoder", "LONG_MIN"]

LONG_MIN = 256  # live pieces at least this long are emitted incrementally (must exceed maxlen)
_INIT_CAP = 1 << 16
_POSITION_SLOTS = (K.S_SEG, K.S_PIECE, K.S_ANCH, K.S_EMIT, K.S_LAMEND, K.S_ASCAN, K.S_HELD_K, K.S_CUTDONE,
                   K.S_BLKPIECE, K.S_BLKEND, K.S_WSCAN)

_LONG_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_FORCE_SLOW_COMPAT = False  # tests: check pairs by merging them instead of the fast check
_DUMMY_LT = K.LongTables(np.full(1, -1, dtype=np.int32), np.full(1, -1, dtype=np.int64),
                         np.full(1, -1, dtype=np.int32), np.zeros(1, dtype=np.uint8),
                         np.full(1, -1, dtype=np.int64), np.full(1, -1, dtype=np.int32),
                         np.full(1, -1, dtype=np.int32), 0, 0)
_DUMMY_LW = K.new_long_work(0)


def _not_online(pipe) -> str:
    """Why a tokenizer.json pipeline has no online form here ('' when it has one)."""
    if pipe.char_level:
        return ("its model is character-level BPE (SentencePiece style) over each whole text between "
                "added tokens: no split pattern cuts the text, so no boundary settles before the end")
    if pipe.pre_steps is not None:
        return ("its pre-tokenizer has no hand-written scanner (it runs as an exact Python "
                "pretokenizer), and the boundary rules are proven for the scanners only")
    if any(not isinstance(step, NFC) for step in pipe.normalizers):
        return f"its normalizer {pipe.normalizers!r} (only NFC has an online form here)"
    return ""


_NO_DROP = np.zeros(257, dtype=np.uint8)


def _drop_mask(enc, pipe) -> np.ndarray:
    """uint8[257]: [x] = 1 for each byte x the byte-level vocabulary lacks, [256] = 1 if any. The
    stream kernels drop them per piece (as `tokenizers`) and keep punctuation pieces, the only ones
    that can hold them, out of the incremental BPE; refused when a missing byte could lie in a
    letter, digit or whitespace character, or when whole pieces are looked up first (ignore_merges)."""
    missing = pipe.missing_bytes if pipe is not None else b""
    if not missing:
        return _NO_DROP
    T = enc.tables
    s1, s2 = T.stage1, T.stage2
    for x in missing:
        if x < 0x80:
            cps = range(x, x + 1)
        elif 0xC2 <= x <= 0xF4:  # a lead byte: every character it starts
            lo, hi = {2: (0x80, 0x800), 3: (0x800, 0x10000), 4: (0x10000, 0x110000)}[
                2 if x < 0xE0 else 3 if x < 0xF0 else 4]
            shift = 6 if x < 0xE0 else 12 if x < 0xF0 else 18
            first = (x & (0x1F if x < 0xE0 else 0x0F if x < 0xF0 else 0x07)) << shift
            cps = range(max(lo, first), min(hi, first + (1 << shift)))
        elif 0x80 <= x <= 0xBF:
            raise NotImplementedError("stream encoding: the vocabulary lacks a UTF-8 continuation byte")
        else:
            continue  # C0, C1, F5-FF never occur in UTF-8
        cls = {int(s2[int(s1[cp >> 8]) * 256 + (cp & 255)]) for cp in cps}
        if cls - {_CLS_OTHER}:
            raise NotImplementedError(f"stream encoding: the vocabulary lacks byte {x:#04x}, which can lie in "
                                      "a letter, digit or whitespace character")
    if enc.description.ignore_merges:
        raise NotImplementedError("stream encoding: missing bytes together with ignore_merges")
    mask = np.zeros(257, dtype=np.uint8)
    mask[list(missing)] = 1
    mask[256] = 1
    return mask


def long_tables(enc) -> K.LongTables:
    """The incremental-BPE tables of `enc` (reverse trie of the tokens, reachability), built once."""
    enc = enc.engine  # an Encoding or its engine: the tables are the engine's
    lt = _LONG_TABLES.get(enc)
    if lt is None:
        T = enc.tables
        n_vocab = len(T.tok_offsets) - 1
        ordinary = np.zeros(n_vocab, dtype=np.bool_)
        ids = np.fromiter(enc.description.vocab.values(), dtype=np.int64, count=len(enc.description.vocab))
        ordinary[ids] = True
        lens = np.diff(T.tok_offsets)
        max_len = int(lens[ordinary].max())
        # size the hash for the trie's node count (shared suffixes: ~1/3 of the token bytes)
        vocab = enc.description.vocab
        order = np.array(sorted(vocab, key=lambda b: b[::-1]), dtype=object)
        order = np.fromiter((vocab[b] for b in order), dtype=np.int64, count=len(order))
        nodes = int(K.rev_trie_nodes(T.tok_bytes, T.tok_offsets, order))
        rt_token, rt_keys, rt_child = K.build_rev_trie(T.tok_bytes, T.tok_offsets, ordinary,
                                                       pow2_at_least(2 * nodes + 2))
        trees = table_config(T).trees  # the merge trees were built with the tables (tables._merge_trees)
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
                 errors: str = "replace", long_min: int = LONG_MIN, _normalized: bool = False):
        enc = enc.engine  # an Encoding or its engine (engine.core.Engine)
        self._engine = enc
        self._T = enc.tables
        name = getattr(enc, "name", enc)
        kind = pattern_kind(self._T)
        runtime = getattr(enc, "pipeline", None)
        hf = runtime if runtime is not None and runtime.pipe is not None else None  # tokenizer.json models
        pipe = None if hf is None or _normalized else hf.pipe
        if pipe is not None:
            why = _not_online(pipe)
            if why:
                raise NotImplementedError(f"stream encoding of {name!r} is not implemented: {why}")
        if not kind.streams:
            raise NotImplementedError(
                f"stream encoding is implemented (and its boundary rules proven) for the split patterns "
                f"{', '.join(k.label for k in KINDS.values() if k.streams)}; {name!r} uses scanner kind "
                f"{kind.name!r}")
        hf_pipe = None if hf is None else hf.pipe
        self._drop = _drop_mask(enc, hf_pipe)
        self._TP = hf.T_whole_plain if self._drop[256] else self._T
        if _normalized:  # the inner encoder of a normalizing one: plain text, no added tokens
            allowed_special, disallowed_special = set(), ()
        policy = enc.special_policy(allowed_special, disallowed_special)
        amask = self._amask = policy.allowed
        self._any_allowed = policy.any_allowed
        self._policy = policy
        # the window kept between chunks so a refused string split across them is still found:
        # UTF-8 bytes for the kernels' added-token search, characters for the regex
        self._dmax = 0
        if policy.disallowed is not None:
            self._dmax = max(len(s.encode("utf-8")) for s in policy.refused)
        elif policy.finder is not None:
            self._dmax = max(len(s) for s in policy.refused)
        self._hold = self._any_allowed or bool(policy.refused)
        codecs.lookup_error(errors)  # validate early
        self._errors = errors
        self._long_min = int(long_min)
        self._split = None  # normalizing models: added tokens and normalization in Python, then _inner
        if pipe is not None and pipe.normalizers:
            added = enc.compiled.added
            allowed = {t.content: int(self._T.added_ids[i]) for i, t in enumerate(added) if amask[i]}
            self._split = NormalizingSplitter(allowed, [t.content for t in added], pipe.normalizers)
            self._inner = StreamEncoder(enc, errors=errors, long_min=long_min, _normalized=True)
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
        """Bytes of text held (received but not yet covered by returned ids, plus kept context); for a
        normalizing model, the held raw characters plus the normalized bytes held."""
        if self._split is not None:
            return self._split.held_chars + self._inner.buffered_bytes
        return self._n - int(self._st[K.S_KEEP])

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
        self._dtail = b"" if self._policy.disallowed is not None else ""
        self._lt = _DUMMY_LT
        self._lw = _DUMMY_LW
        self._lam = np.zeros(1, dtype=np.int32)
        self._lamlen = np.zeros(1, dtype=np.int32)
        self._mark = np.zeros(1, dtype=np.uint8)
        self._out = np.empty(0, dtype=np.uint32)
        if self._split is not None:
            self._split.reset()
            self._inner._reset()

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
        policy = self._policy
        if not policy.refused:
            return
        keep = self._dmax - 1
        if policy.disallowed is not None:
            window = self._dtail + data
            arr = np.frombuffer(window, dtype=np.uint8)
            pos, idx = _enc_k.find_added(arr, 0, len(arr), self._T, policy.disallowed)
            if pos >= 0:
                self._reset()
                raise_disallowed_special_token(self._engine.compiled.added[idx].content)
            self._dtail = window[max(0, len(window) - keep):] if keep > 0 else b""
        else:
            window = self._dtail + text
            m = policy.finder.search(window)
            if m is not None:
                self._reset()
                raise_disallowed_special_token(m.group())
            self._dtail = window[max(0, len(window) - keep):] if keep > 0 else ""

    def _feed_text(self, text: str, final: bool) -> np.ndarray:
        data = text_to_utf8(text) if text else b""
        self._check_disallowed(text, data)
        if self._split is not None:
            return self._feed_normalizing(data.decode("utf-8") if data else "", final)
        return self._push(data, final)

    def _feed_normalizing(self, text: str, final: bool) -> np.ndarray:
        """Raw text through the splitter; its normalized text through the inner encoder, which is
        finished at each added token (the text between two added tokens is one text to the model)."""
        inner = self._inner
        parts = []
        for item in self._split.feed(text, final):
            if isinstance(item, str):
                parts.append(inner._feed_text(item, False))
            else:
                parts.append(inner.finish())
                parts.append(np.array([item], dtype=np.uint32))
        if final:
            parts.append(inner.finish())
        if not parts:
            return np.empty(0, dtype=np.uint32)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _make_room(self, m: int) -> None:
        """Room for m more bytes: drop the text no longer needed, grow by doubling when that is not
        enough (each byte is copied O(1) times on average)."""
        if self._n + m <= len(self._buf):
            return
        self._compact(force=True)
        need = self._n + m
        cap = len(self._buf)
        if need <= cap:
            return
        buf = np.empty(max(need, 2 * cap), dtype=np.uint8)
        buf[:self._n] = self._buf[:self._n]
        self._buf = buf
        if self._lt.max_len:
            self._grow_long(len(buf))

    def _grow_long(self, cap: int) -> None:
        # node positions run from 0 to n inclusive: one more slot than the byte buffer
        n = min(self._n + 1, len(self._lam))
        lam = np.zeros(cap + 1, dtype=np.int32)
        lamlen = np.zeros(cap + 1, dtype=np.int32)
        lam[:n] = self._lam[:n]
        lamlen[:n] = self._lamlen[:n]
        self._lam, self._lamlen = lam, lamlen
        self._mark = np.zeros(cap + 1, dtype=np.uint8)

    def _out_buffer(self, size: int) -> np.ndarray:
        if len(self._out) < size:
            self._out = np.empty(max(size, 2 * len(self._out)), dtype=np.uint32)
        return self._out

    def _push(self, data: bytes, final: bool) -> np.ndarray:
        m = len(data)
        self._make_room(m)
        if m:
            self._buf[self._n:self._n + m] = np.frombuffer(data, dtype=np.uint8)
            self._n += m
        st = self._st
        n = self._n
        cache, work = self._engine.serial_workspace()
        parts = []
        while True:
            start = st[K.S_EMIT] if st[K.S_LONG] else st[K.S_PIECE]
            out = self._out_buffer(n - start + 2)
            got = K.stream_step(self._buf, n, st, self._T, self._TP, self._drop, self._amask, self._any_allowed,
                                self._hold, final, out, cache, work[0], self._lt, self._lw, self._lam,
                                self._lamlen, self._mark, self._long_min)
            if st[K.S_ERR]:
                code = int(st[K.S_ERR])
                self._reset()
                raise RuntimeError("stream encoder: internal invariant broken ("
                                   + ("no compatible token in the incremental BPE" if code == 1 else
                                      "a long piece ended before its proven lower bound") + ")")
            parts.append(out[:got].copy())
            if not st[K.S_WANTLONG]:
                break
            self._lt = long_tables(self._engine)
            self._lw = K.new_long_work(self._lt.max_len)
            self._long_min = max(self._long_min, self._lt.max_len + 1)
            self._grow_long(len(self._buf))
        self._compact(force=False)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts)

    def _compact(self, force: bool) -> None:
        """Drop buf[:keep]. Unforced, only once the dropped part is at least as long as what stays,
        so a long held text is not copied on every call (the copy is paid for by the dropped bytes)."""
        st = self._st
        keep = int(st[K.S_KEEP])
        n = self._n
        rest = n - keep
        if keep <= 0 or (not force and keep < rest):
            return
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
