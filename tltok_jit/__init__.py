"""tltok-jit: exact tiktoken / Hugging Face byte-level BPE token ids from Numba kernels."""

from __future__ import annotations

import threading

from .encoding import Encoding
from .model import AddedToken, ModelDescription, TokenizerFileError

__all__ = [
    "AddedToken",
    "ByteTokenizer",
    "Encoding",
    "ModelDescription",
    "MultiStreamDecoder",
    "StreamDecoder",
    "TokenizerFileError",
    "get_encoding",
    "list_encoding_names",
]
__version__ = "0.1.0"

_ENCODINGS: dict[str, Encoding] = {}
_LOCK = threading.Lock()


def get_encoding(name: str) -> Encoding:
    """A known encoding by name ("gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base", ...).

    The rank file is found in $TLTOK_DATA, then the user cache, then downloaded and hash-checked.
    Instances are shared (built once per process).
    """
    enc = _ENCODINGS.get(name)
    if enc is not None:
        return enc
    with _LOCK:
        enc = _ENCODINGS.get(name)
        if enc is None:
            from .registry import load_description

            enc = Encoding(load_description(name))
            _ENCODINGS[name] = enc
    return enc


def list_encoding_names() -> list[str]:
    from .registry import list_encoding_names as names

    return names()


def __getattr__(attr: str):
    # Imported lazily so `import tltok_jit` stays cheap.
    if attr == "ByteTokenizer":
        from .bytetok import ByteTokenizer

        return ByteTokenizer
    if attr in ("StreamDecoder", "MultiStreamDecoder"):
        from . import stream

        return getattr(stream, attr)
    raise AttributeError(f"module 'tltok_jit' has no attribute {attr!r}")
