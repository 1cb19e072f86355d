"""Rank files shipped inside the package: r50k_base (also gpt2), cl100k_base, o200k_base.

They are OpenAI's published `.tiktoken` files (MIT, see `LICENSE` here), kept under 1 MB each.
r50k_base and cl100k_base are the files themselves, gzip-compressed (gzip rather than xz: it
decompresses ~4x faster). o200k_base's file is 1.7 MB gzip-compressed, so it ships as its tokens
only (`.tok.xz`: xz of the token count, one length byte per token, then the tokens' bytes, in rank
order 0 .. n-1; 0.8 MB) and the file is rebuilt from them, line for line (~0.15 s once per process that reads it).
`tltok_jit.registry` checks the published sha256 of the file's bytes before using them, rebuilt or not.
"""

from __future__ import annotations

import base64
import gzip
import lzma
import struct
from importlib import resources

__all__ = ["embedded_location", "has_embedded", "read_embedded"]

_FORMATS = (".gz", ".tok.xz")


def _resource(filename: str):
    for suffix in _FORMATS:
        res = resources.files(__name__) / f"{filename}{suffix}"
        if res.is_file():
            return res
    return resources.files(__name__) / f"{filename}.gz"


def embedded_location(filename: str) -> str:
    """Where the embedded copy of `filename` (e.g. "o200k_base.tiktoken") is, for messages."""
    return str(_resource(filename))


def has_embedded(filename: str) -> bool:
    """True if the package embeds a copy of `filename` (without reading it)."""
    return _resource(filename).is_file()


def _tiktoken_from_tokens(packed: bytes) -> bytes:
    """The `.tiktoken` file of a `.tok.xz` payload: n (uint32, little-endian), n length bytes, then
    the n tokens' bytes; rank i is token i. A payload that does not add up raises ValueError."""
    (n,) = struct.unpack_from("<I", packed)
    lengths = packed[4:4 + n]
    if len(lengths) != n or 4 + n + sum(lengths) != len(packed):
        raise ValueError("embedded token list: the lengths do not match its size")
    lines = []
    p = 4 + n
    for i, k in enumerate(lengths):
        lines.append(base64.b64encode(packed[p:p + k]) + b" " + str(i).encode())
        p += k
    return b"\n".join(lines) + b"\n"


def read_embedded(filename: str) -> bytes | None:
    """The bytes of the embedded copy of `filename` (decompressed, or rebuilt), or None if the
    package has none."""
    res = _resource(filename)
    if not res.is_file():
        return None
    if res.name.endswith(".tok.xz"):
        return _tiktoken_from_tokens(lzma.decompress(res.read_bytes()))
    return gzip.decompress(res.read_bytes())
