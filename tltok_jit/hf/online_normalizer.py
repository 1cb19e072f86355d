"""Online front half of a tokenizer.json pipeline with a normalizer: added tokens found in the raw
text, then the text between them normalized as soon as no continuation can change it.

`tokenizers` matches added tokens (not `normalized`) in the raw text and normalizes each text
between two of them on its own, so the splitter here does the same, online:

* Added tokens: the leftmost match, the longest one there, as the kernels' `match_in_trie`. A position
  whose rest of the text is a proper prefix of some added token is *pending* (a longer or a first
  match may still come); the first pending position and what follows it are held. A match that
  starts before it is final (no longer token can match there, no earlier position can start one).
* NFC (Unicode 9.0, as `hf_nfc`): NFC(x + y) = NFC(x) + NFC(y) when y begins with a character that
  has a normalization boundary before it in every context: a starter (combining class 0) that is
  its own NFC and combines with nothing before it (NFC_Quick_Check = Yes). `hf_nfc` also cuts
  before and after each character it treats as a Unicode-9 barrier. The text after the last such
  boundary is held; only the new text is searched for one, so each character is looked at O(1)
  times.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

from ..model.pipeline.normalizers import NFC, NFC_POST9_RANGES, hf_nfc

__all__ = ["NormalizingSplitter", "nfc_boundary_before"]


_LAST_NORMALIZING = 0x30000  # no code point at or above has a combining class or a decomposition (checked)


@functools.lru_cache(maxsize=1)
def _nfc_unstable() -> frozenset[int]:
    """Code points with no NFC boundary before them (NFC_Quick_Check != Yes or combining class != 0),
    from the `unicodedata` tables `hf_nfc` normalizes with."""
    out: set[int] = set()
    for cp in range(_LAST_NORMALIZING):
        ch = chr(cp)
        if unicodedata.combining(ch):
            out.add(cp)
            continue
        d = unicodedata.decomposition(ch)
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if unicodedata.normalize("NFC", ch) != ch:
            out.add(cp)  # NFC_QC = No: never left as it is
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == ch:
            out.add(parts[1])  # the second half of a primary composite combines backward (QC = Maybe)
    out.update(range(0x1161, 0x1176))  # Hangul vowel jamo join a preceding L (algorithmic, not listed)
    out.update(range(0x11A8, 0x11C3))  # trailing consonants join a preceding LV syllable
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def _barriers() -> frozenset[int]:
    return frozenset(cp for a, b in NFC_POST9_RANGES for cp in range(a, b + 1))


def nfc_boundary_before(prev: str, ch: str) -> bool:
    """For adjacent characters prev, ch: hf_nfc(x + prev + ch + y) == hf_nfc(x + prev) + hf_nfc(ch + y)
    for all x, y."""
    c = ord(ch)
    if c < 0x300:  # below the combining marks: starters that never combine backward
        return True
    bars = _barriers()
    return c in bars or ord(prev) in bars or c not in _nfc_unstable()


class NormalizingSplitter:
    """Raw text in; out, in order, settled normalized text (str) and added-token ids (int)."""

    def __init__(self, allowed: dict[str, int], all_tokens: Iterable[str], normalizers: tuple):
        if normalizers != (NFC(),):
            raise NotImplementedError(f"online normalizer {normalizers!r}: only NFC is implemented")
        tokens = [t for t in all_tokens if t]
        self._prefixes = frozenset(t[:k] for t in tokens for k in range(1, len(t)))
        self._maxlen = max((len(t) for t in tokens), default=0)
        ordered = sorted(allowed, key=len, reverse=True)  # at one position the longest one matches
        self._ids = dict(allowed)
        self._match = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.reset()

    def reset(self) -> None:
        self._raw = ""  # unsplit raw text (starts at a pending position or is empty)
        self._hold: list[str] = []  # raw ordinary text after the last normalization boundary
        self._held = 0
        self._last = ""  # its last character

    @property
    def held_chars(self) -> int:
        return len(self._raw) + self._held

    def _pending_start(self, raw: str, pos: int) -> int:
        n = len(raw)
        for i in range(max(pos, n - self._maxlen + 1), n):
            if raw[i:] in self._prefixes:
                return i
        return n

    def _ordinary(self, text: str, closes: bool, out: list) -> None:
        """Ordinary text; `closes`: an added token or the end of the text follows it. Only `text` is
        searched for the last boundary (the held text has none); the held parts are joined once."""
        if closes:
            self._hold.append(text)
            t = "".join(self._hold)
            self._hold, self._held, self._last = [], 0, ""
            if t:
                out.append(hf_nfc(t))
            return
        if not text:
            return
        cut = -1
        for i in range(len(text) - 1, 0, -1):
            if nfc_boundary_before(text[i - 1], text[i]):
                cut = i
                break
        if cut < 0 and self._last and nfc_boundary_before(self._last, text[0]):
            cut = 0
        self._last = text[-1]
        if cut < 0:
            self._hold.append(text)
            self._held += len(text)
            return
        self._hold.append(text[:cut])
        released = "".join(self._hold)
        if released:
            out.append(hf_nfc(released))
        self._hold = [text[cut:]]
        self._held = len(text) - cut

    def feed(self, text: str, final: bool) -> list:
        """Split more raw text (lone surrogates already replaced); `final`: the text ends here."""
        raw = self._raw + text if self._raw else text
        out: list = []
        pos = 0
        while True:
            m = self._match.search(raw, pos) if self._match is not None else None
            p = len(raw) if final else self._pending_start(raw, pos)
            if m is not None and m.start() < p:
                self._ordinary(raw[pos:m.start()], True, out)
                out.append(self._ids[m.group()])
                pos = m.end()
                continue
            self._ordinary(raw[pos:p], final, out)
            self._raw = raw[p:]
            return out
