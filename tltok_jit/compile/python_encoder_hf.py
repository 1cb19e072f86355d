"""An exact pure-Python encoder for byte-level tokenizer.json models, serving calls while the kernels
compile (the counterpart of `interim.py`, which covers tiktoken rank files).

It runs what Hugging Face `tokenizers` runs for GPT-2, SmolLM2, Llama-3, Qwen2.5 and Mistral-Nemo:
the text is cut at the allowed added tokens (leftmost, the longest at a position); each part between
them is normalized (none, or NFC as `pipeline.normalizers.hf_nfc`), split (a `Digits` step, then the split regex
with Oniguruma's match iteration and Unicode 16 classes, each match and each gap a piece), taken as
UTF-8 bytes (ByteLevel), and each piece is merged by BPE: with `ignore_merges` a whole piece found in
the vocabulary is one token; otherwise its bytes (those the vocabulary lacks dropped) are merged by
repeatedly joining the adjacent pair of lowest merge rank, the leftmost among equal ones.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..model.description import ModelDescription
from ..model.pipeline.normalizers import NFC, hf_nfc
from ..model.pipeline.onig import compile_onig, onig_find_iter
from ..unicode import CLS_NUMBER, RUST_NUMERIC_EXTRA, char_class
from ..unicode.regex16 import unicode16_text

_CACHE_LIMIT = 1 << 16  # pieces remembered (a text repeats its words)
_HEAP_FROM = 64  # symbols: longer pieces merge with a heap (the rescan is quadratic)
_SPLIT_KINDS = ("gpt2", "llama3", "qwen2", "tekken")  # pattern kinds whose split is model.pattern alone
_KINDS = _SPLIT_KINDS + ("gpt2_digits", "whole")
_NORMALIZERS = ((), (NFC(),))


def supports(model: ModelDescription) -> bool:
    """True for tokenizer.json models this encoder reproduces exactly: byte-level BPE with merges, the
    split done by a hand-written scanner's pattern (no Python pretokenizer steps), no normalizer or
    NFC. SentencePiece-style (character-level) models and other normalizers are not covered."""
    hf = model.hf
    if hf is None or model.merges is None or model.char_level:
        return False
    return (hf.pre_steps is None and not hf.char_level and hf.normalizers in _NORMALIZERS
            and model.pattern_kind in _KINDS
            and not any(t.lstrip or t.rstrip or t.single_word for t in model.added_tokens))


def needs_hf_kernels(model: ModelDescription) -> bool:
    """Whether the kernels' path of `model` runs kernels only tokenizer.json models use (the text
    path around a normalizer or bytes the vocabulary lacks), which the worker's "hf" stage compiles."""
    hf = model.hf
    return bool(hf is not None and (hf.normalizers or hf.missing_bytes))


def _is_numeric(ch: str) -> bool:
    """Rust's `char::is_numeric`, which the `Digits` pre-tokenizer splits on."""
    return char_class(ch) == CLS_NUMBER or ord(ch) in RUST_NUMERIC_EXTRA


def _digit_pieces(s: str) -> list[str]:
    """`Digits(individual_digits=True)`: every numeric character a piece of its own."""
    out: list[str] = []
    cur = 0
    for i, ch in enumerate(s):
        if ch.isascii() and not ch.isdigit():
            continue
        if _is_numeric(ch):
            if i > cur:
                out.append(s[cur:i])
            out.append(ch)
            cur = i + 1
    if cur < len(s):
        out.append(s[cur:])
    return out


def split_isolated(rx, s: str) -> list[str]:
    """`tokenizers`' Split(rx, behavior="Isolated") of `s`: every match and every gap between matches
    is a piece, empty pieces dropped; `rx` (from `compile_onig`) sees Unicode 16 classes."""
    q = unicode16_text(s)  # same length: the positions hold for s
    spans = [m.span() for m in rx.finditer(q)]
    if any(a == e for a, e in spans):  # only with an empty match does Python's iteration differ
        spans = list(onig_find_iter(rx, q))
    out: list[str] = []
    pos = 0
    for a, e in spans:
        if a > pos:
            out.append(s[pos:a])
        if e > a:
            out.append(s[a:e])
        pos = e
    if pos < len(s):
        out.append(s[pos:])
    return out


def _merge_rescan(parts: list[bytes], ranks: dict[tuple[bytes, bytes], int]) -> list[bytes]:
    while len(parts) > 1:
        best = None
        bi = -1
        for i in range(len(parts) - 1):
            r = ranks.get((parts[i], parts[i + 1]))
            if r is not None and (best is None or r < best):
                best = r
                bi = i
        if bi < 0:
            break
        parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]
    return parts


def _merge_heap(parts: list[bytes], ranks: dict[tuple[bytes, bytes], int]) -> list[bytes]:
    """_merge_rescan in O(n log n): a heap of (rank, position) with stale entries skipped."""
    n = len(parts)
    cur: list[bytes | None] = list(parts)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    heap = []
    for i in range(n - 1):
        r = ranks.get((parts[i], parts[i + 1]))
        if r is not None:
            heap.append((r, i, parts[i], parts[i + 1]))
    heapq.heapify(heap)
    while heap:
        r, i, a, b = heapq.heappop(heap)
        j = nxt[i] if cur[i] is not None else n
        if j >= n or cur[i] != a or cur[j] != b:
            continue  # stale: a neighbour merged since this pair was pushed
        merged = a + b
        cur[i] = merged
        cur[j] = None
        k = nxt[j]
        nxt[i] = k
        if k < n:
            prv[k] = i
        p = prv[i]
        if p >= 0:
            rp = ranks.get((cur[p], merged))
            if rp is not None:
                heapq.heappush(heap, (rp, p, cur[p], merged))
        if k < n:
            rk = ranks.get((merged, cur[k]))
            if rk is not None:
                heapq.heappush(heap, (rk, i, merged, cur[k]))
    return [s for s in cur if s is not None]


def merge_parts(parts: list[bytes], ranks: dict[tuple[bytes, bytes], int]) -> list[bytes]:
    """BPE of the initial symbols `parts` (single bytes) by merge rank: the adjacent pair of lowest
    rank is joined first, the leftmost among equal ranks; returns the final symbols."""
    return _merge_heap(parts, ranks) if len(parts) >= _HEAP_FROM else _merge_rescan(list(parts), ranks)


class HFInterimEncoder:
    """`tokenizers`' encoding of one byte-level tokenizer.json model, in Python (see the module
    docstring). Same interface as `interim.InterimEncoder`."""

    def __init__(self, model: ModelDescription):
        import regex

        if not supports(model):
            raise ValueError(f"{model.name}: the Python encoder covers byte-level tokenizer.json models with a "
                             "known split pattern and no normalizer or NFC only")
        vocab = model.vocab
        self.ranks: dict[bytes, int] = vocab  # bytes -> id (encode_single_token)
        self.special: dict[str, int] = {t.content: t.id for t in model.added_tokens}
        self._ignore_merges = model.ignore_merges
        self._nfc = bool(model.hf.normalizers)
        kind = model.pattern_kind
        self._split = compile_onig(model.pattern) if kind != "whole" else None
        self._digits = kind == "gpt2_digits"
        self._regex = regex
        self._bytes = [bytes([b]) for b in range(256)]
        self._missing = bytes(b for b in range(256) if bytes([b]) not in vocab)
        # (left bytes, right bytes) -> merge rank; a repeated merge keeps the rank of its last
        # occurrence, as in HF
        merges = model.merges
        self.merge_ranks: dict[tuple[bytes, bytes], int] = dict(zip(map(tuple, merges), range(len(merges))))
        self._special_re: dict[frozenset, object] = {}
        self._cache: dict[bytes, tuple[int, ...]] = {}
        # decode bytes per id, as tables.compile_model lays them out
        n_vocab = max(vocab.values()) + 1
        for t in model.added_tokens:
            n_vocab = max(n_vocab, t.id + 1)
        by_id: list[bytes | None] = [None] * n_vocab
        for data, i in vocab.items():
            by_id[i] = data
        added_bytes = model.added_bytes or {}
        for t in model.added_tokens:
            if by_id[t.id] is None:
                content = t.content.encode("utf-8")
                by_id[t.id] = added_bytes.get(t.id, content)
        self.by_id = by_id

    # -------------------------------------------------------------- one piece
    def _piece(self, piece: bytes, out: list[int]) -> None:
        if self._ignore_merges:
            t = self.ranks.get(piece)
            if t is not None:
                out.append(t)
                return
        ids = self._cache.get(piece)
        if ids is None:
            kept = piece.translate(None, self._missing) if self._missing else piece  # lacking bytes dropped
            one = self._bytes
            vocab = self.ranks
            ids = tuple(vocab[p] for p in merge_parts([one[b] for b in kept], self.merge_ranks))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[piece] = ids
        out.extend(ids)

    # -------------------------------------------------------------- one text between added tokens
    def _segment(self, seg: str, out: list[int]) -> None:
        if self._nfc:
            seg = hf_nfc(seg)
        if not seg:
            return
        parts = _digit_pieces(seg) if self._digits else [seg]
        rx = self._split
        for part in parts:
            for p in (split_isolated(rx, part) if rx is not None else (part,)):
                self._piece(p.encode("utf-8", "surrogatepass"), out)

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of `text` (already free of lone surrogates) with added tokens as plain text."""
        out: list[int] = []
        self._segment(text, out)
        return out

    def encode(self, text: str, allowed: frozenset) -> list[int]:
        """Ids of `text` where the added tokens in `allowed` become their ids (leftmost match, the
        longest at a position, as `tokenizers`' added-token matcher finds them)."""
        if not allowed:
            return self.encode_ordinary(text)
        find = self._special_re.get(allowed)
        if find is None:
            regex = self._regex
            find = regex.compile("|".join(regex.escape(s) for s in sorted(allowed, key=len, reverse=True)))
            if len(self._special_re) < 64:
                self._special_re[allowed] = find
        out: list[int] = []
        pos = 0
        for m in find.finditer(text):
            if m.start() > pos:
                self._segment(text[pos:m.start()], out)
            out.append(self.special[m.group()])
            pos = m.end()
        if pos < len(text):
            self._segment(text[pos:], out)
        return out

    def decode_bytes(self, ids: np.ndarray) -> bytes:
        """The bytes of valid ids (the caller checked them)."""
        by_id = self.by_id
        return b"".join([by_id[i] for i in ids.tolist()])
