"""Rank files shipped inside the package, gzip-compressed: r50k_base (also gpt2), cl100k_base, o200k_base.

They are OpenAI's published `.tiktoken` files, unchanged (MIT, see `LICENSE` here). gzip rather than xz:
xz would be 0.8 MB smaller in all, but decompressing o200k_base takes ~25 ms with gzip against ~95 ms
with xz, more than the ~65 ms the rank parse itself takes. `tltok_jit.registry` checks the published
sha256 of the decompressed bytes before using them.
"""

from __future__ import annotations

import gzip
from importlib import resources

__all__ = ["embedded_location", "has_embedded", "read_embedded"]


def _resource(filename: str):
    return resources.files(__name__) / f"{filename}.gz"


def embedded_location(filename: str) -> str:
    """Where the embedded copy of `filename` (e.g. "o200k_base.tiktoken") is, for messages."""
    return str(_resource(filename))


def has_embedded(filename: str) -> bool:
    """True if the package embeds a copy of `filename` (without reading it)."""
    return _resource(filename).is_file()


def read_embedded(filename: str) -> bytes | None:
    """The decompressed bytes of the embedded copy of `filename`, or None if the package has none."""
    res = _resource(filename)
    if not res.is_file():
        return None
    return gzip.decompress(res.read_bytes())
