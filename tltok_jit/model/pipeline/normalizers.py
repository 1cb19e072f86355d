"""tokenizer.json normalizers: `NFC`, `Prepend`, `Replace` (String pattern), in a `Sequence`.

Normalization is applied to the text between added tokens (never to the added tokens themselves),
the stages in order; an empty text stays empty (`normalize`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ...errors import TokenizerFileError, UnsupportedTokenizerError
from .fields import read_stages

__all__ = ["NFC", "NFC_POST9_RANGES", "NORMALIZERS", "Normalizer", "Prepend", "Replace", "hf_nfc", "normalize",
           "read_normalizers"]


# `tokenizers` normalizes with the `unicode-normalization-alignments` crate, whose tables are
# Unicode 9.0. Characters that are normalization-relevant in later versions (a non-zero combining
# class, a canonical decomposition, or a part of a canonical composition) are unassigned there,
# i.e. starters that never compose. Measured against `normalizers.NFC()` (tokenizers 0.23.3) from
# the Unicode 16 data: these are exactly the characters whose behaviour differs. Such a character
# is a composition and reordering barrier in Unicode 9, so NFC_9(x D y) = NFC(x) D NFC(y) whenever
# x, y contain no listed character, and there Python's NFC (any version >= 9) agrees with Unicode 9
# (normalization stability). Verified on 300k random strings of marks, decomposables and Hangul.
_NFC_POST9 = (
    "0x7fd 0x897-0x89f 0x8ca-0x8d3 0x9fe 0xc3c 0xd3b 0xd3c 0xeba 0x1715 0x1abf-0x1ace 0x1df6-0x1dfa "
    "0xa82c 0x105c9 0x105d2 0x105da 0x105e4 0x10d24-0x10d27 0x10d69-0x10d6d 0x10eab 0x10eac "
    "0x10efd-0x10eff 0x10f46-0x10f50 0x10f82-0x10f85 0x11070 0x1133b 0x11382-0x11385 0x1138b 0x1138e "
    "0x11390 0x11391 0x113b8 0x113bb 0x113c2 0x113c5 0x113c7-0x113c9 0x113ce-0x113d0 0x1145e 0x11839 "
    "0x1183a 0x11930 0x11935 0x11938 0x1193d 0x1193e 0x11943 0x119e0 0x11a34 0x11a47 0x11a99 0x11d42 "
    "0x11d44 0x11d45 0x11d97 0x11f41 0x11f42 0x1611e-0x16129 0x1612f 0x16d63 0x16d67-0x16d6a "
    "0x16ff0 0x16ff1 0x1e08f 0x1e130-0x1e136 0x1e2ae 0x1e2ec-0x1e2ef 0x1e4ec-0x1e4ef 0x1e5ee 0x1e5ef"
)


def _ranges(spec: str) -> list[tuple[int, int]]:
    out = []
    for item in spec.split():
        a, _, b = item.partition("-")
        out.append((int(a, 16), int(b or a, 16)))
    return out


NFC_POST9_RANGES = _ranges(_NFC_POST9)
_NFC_BARRIER_RE = re.compile(
    "[" + "".join(f"\\U{a:08x}" + (f"-\\U{b:08x}" if b != a else "") for a, b in NFC_POST9_RANGES) + "]")


def hf_nfc(text: str) -> str:
    """NFC exactly as `tokenizers`' NFC normalizer (Unicode 9.0 tables) computes it."""
    if _NFC_BARRIER_RE.search(text) is None:
        return unicodedata.normalize("NFC", text)
    parts = _NFC_BARRIER_RE.split(text)
    seps = _NFC_BARRIER_RE.findall(text)
    out = [unicodedata.normalize("NFC", parts[0])]
    for sep, part in zip(seps, parts[1:]):
        out.append(sep)
        out.append(unicodedata.normalize("NFC", part))
    return "".join(out)


class Normalizer:
    """One normalizer stage: `normalize(text) -> text`."""

    def normalize(self, s: str) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class NFC(Normalizer):
    """`NFC`, with the Unicode 9.0 tables of `tokenizers` (`hf_nfc`)."""

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "NFC":
        return cls()

    def normalize(self, s: str) -> str:
        return hf_nfc(s)


@dataclass(frozen=True)
class Prepend(Normalizer):
    """`Prepend`: `prepend` before the text."""

    prepend: str

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Prepend":
        s = obj.get("prepend")
        if not isinstance(s, str):
            raise TokenizerFileError(f"{where}: {fieldname}.prepend must be a string")
        return cls(s)

    def normalize(self, s: str) -> str:
        return self.prepend + s


@dataclass(frozen=True)
class Replace(Normalizer):
    """`Replace` of a String pattern `old` (non-empty) by `new`; Regex patterns are refused."""

    old: str
    new: str

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Replace":
        pat = obj.get("pattern")
        content = obj.get("content")
        if not (isinstance(pat, dict) and set(pat) == {"String"} and isinstance(pat["String"], str)):
            raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat, "only String patterns")
        if not isinstance(content, str) or not pat["String"]:
            raise TokenizerFileError(f"{where}: {fieldname} needs a non-empty pattern and a string content")
        return cls(pat["String"], content)

    def normalize(self, s: str) -> str:
        return s.replace(self.old, self.new)


NORMALIZERS = {"NFC": NFC, "Prepend": Prepend, "Replace": Replace}


def read_normalizers(obj, where: str) -> tuple[Normalizer, ...]:
    """The stages of a tokenizer.json `normalizer` value (null: none)."""
    return tuple(read_stages(obj, where, "normalizer", "normalizers", NORMALIZERS, "supported normalizers"))


def normalize(stages: tuple[Normalizer, ...], s: str) -> str:
    """`s` through the stages in order (an empty text stays empty, as in `tokenizers`)."""
    for stage in stages:
        if not s:
            return s
        s = stage.normalize(s)
    return s
