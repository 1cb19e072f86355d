"""An exact pure-Python encoder for tiktoken-style models, serving calls while the kernels compile.

The kernels take a minute or more to compile the first time a machine uses them (`tltok_jit.compile.background`
does that in a background process). Meanwhile an `Encoding` of a rank file answers `encode`,
`encode_batch`, `decode` and the Arrow calls through this module: tiktoken's algorithm written out
(the `regex` module splits, a whole piece found in the vocabulary is one token, anything else is
merged pair by pair, lowest rank first, leftmost among equal ranks), with the character classes of
Unicode 16 (`unicode.regex16`), like the kernels and tiktoken 0.14. It is about a hundred times
slower than the kernels and is the reference they are tested against.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..model.description import ModelDescription
from ..unicode.regex16 import unicode16_text

_CACHE_LIMIT = 1 << 16  # pieces remembered (a text repeats its words)
_HEAP_FROM = 64  # bytes: longer pieces merge with a heap (the rescan is quadratic)


def supports(model: ModelDescription) -> bool:
    """True for models this encoder reproduces exactly: tiktoken rank files (rank = id, whole-piece
    lookup first, all 256 bytes present, no tokenizer.json pipeline)."""
    return (model.merges is None and model.hf is None and not model.char_level
            and not model.allow_missing_bytes and model.ignore_merges)


def _merge_rescan(piece: bytes, ranks: dict[bytes, int]) -> list[int]:
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best = None
        bi = -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best):
                best = r
                bi = i
        if bi < 0:
            break
        parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]
    return [ranks[p] for p in parts]


def _merge_heap(piece: bytes, ranks: dict[bytes, int]) -> list[int]:
    """_merge_rescan in O(n log n): a heap of (rank, position) with stale entries skipped."""
    n = len(piece)
    parts: list[bytes | None] = [piece[i:i + 1] for i in range(n)]
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    heap = []
    for i in range(n - 1):
        r = ranks.get(parts[i] + parts[i + 1])
        if r is not None:
            heap.append((r, i, parts[i] + parts[i + 1]))
    heapq.heapify(heap)
    while heap:
        r, i, merged = heapq.heappop(heap)
        j = nxt[i] if parts[i] is not None else n
        if j >= n or parts[i] + parts[j] != merged:
            continue  # stale: a neighbour merged since this pair was pushed
        parts[i] = merged
        parts[j] = None
        k = nxt[j]
        nxt[i] = k
        if k < n:
            prv[k] = i
        p = prv[i]
        if p >= 0:
            m = parts[p] + merged
            rp = ranks.get(m)
            if rp is not None:
                heapq.heappush(heap, (rp, p, m))
        if k < n:
            m = merged + parts[k]
            rk = ranks.get(m)
            if rk is not None:
                heapq.heappush(heap, (rk, i, m))
    return [ranks[p] for p in parts if p is not None]


class InterimEncoder:
    """tiktoken's encoding of one model, in Python (see the module docstring)."""

    def __init__(self, model: ModelDescription):
        import regex

        if not supports(model):
            raise ValueError(f"{model.name}: the Python encoder covers tiktoken rank files only")
        self.ranks: dict[bytes, int] = model.vocab
        self.special: dict[str, int] = {t.content: t.id for t in model.added_tokens}
        self._split = regex.compile(model.pattern)
        self._special_re: dict[frozenset, object] = {}
        self._cache: dict[bytes, tuple[int, ...]] = {}
        n_vocab = max(self.ranks.values()) + 1
        for t in model.added_tokens:
            n_vocab = max(n_vocab, t.id + 1)
        by_id: list[bytes | None] = [None] * n_vocab
        for b, i in self.ranks.items():
            by_id[i] = b
        for t in model.added_tokens:
            if by_id[t.id] is None:
                by_id[t.id] = t.content.encode("utf-8")
        self.by_id = by_id

    def _piece(self, piece: bytes, out: list[int]) -> None:
        t = self.ranks.get(piece)
        if t is not None:
            out.append(t)
            return
        ids = self._cache.get(piece)
        if ids is None:
            ids = tuple(_merge_heap(piece, self.ranks) if len(piece) >= _HEAP_FROM
                        else _merge_rescan(piece, self.ranks))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[piece] = ids
        out.extend(ids)

    def _ordinary(self, text: str, out: list[int]) -> None:
        # The split sees Unicode 16 classes; the stand-ins keep every position, so the pieces are cut
        # from the original text.
        view = unicode16_text(text)
        for m in self._split.finditer(view):
            self._piece(text[m.start():m.end()].encode("utf-8", "surrogatepass"), out)

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of `text` (already free of lone surrogates) with special tokens as plain text."""
        out: list[int] = []
        self._ordinary(text, out)
        return out

    def encode(self, text: str, allowed: frozenset) -> list[int]:
        """Ids of `text` where the special tokens in `allowed` become their ids (leftmost match, the
        longest at a position, as tiktoken's regex of escaped tokens finds them)."""
        if not allowed:
            return self.encode_ordinary(text)
        find = self._special_re.get(allowed)
        if find is None:
            import regex

            find = regex.compile("|".join(regex.escape(s) for s in sorted(allowed, key=len, reverse=True)))
            if len(self._special_re) < 64:
                self._special_re[allowed] = find
        out: list[int] = []
        pos = 0
        for m in find.finditer(text):
            self._ordinary(text[pos:m.start()], out)
            out.append(self.special[m.group()])
            pos = m.end()
        self._ordinary(text[pos:], out)
        return out

    def decode_bytes(self, ids: np.ndarray) -> bytes:
        """The bytes of valid ids (the caller checked them)."""
        by_id = self.by_id
        return b"".join([by_id[i] for i in ids.tolist()])
