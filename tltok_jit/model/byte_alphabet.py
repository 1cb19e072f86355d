"""GPT-2's byte alphabet: the printable stand-in character of every byte, used by byte-level vocabularies."""

from __future__ import annotations

import re

__all__ = ["BYTE_TO_CHAR", "CHAR_TO_BYTE", "beta_decode", "bytes_to_unicode"]


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> character map: printable bytes stand for themselves, the other 68 map to
    U+0100, U+0101, ... in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}
# str.translate table: byte-alphabet character -> the latin-1 character of its byte
_TO_LATIN1 = {ord(c): chr(b) for c, b in CHAR_TO_BYTE.items()}
_BETA_RE = re.compile("[" + "".join(re.escape(c) for c in CHAR_TO_BYTE) + "]*")


def beta_decode(s: str) -> bytes | None:
    """Bytes of a byte-alphabet string, or None if a character is outside the alphabet."""
    if _BETA_RE.fullmatch(s) is None:
        return None
    return s.translate(_TO_LATIN1).encode("latin-1")
