"""Argument checks shared by the front ends: a wrong type is a TypeError naming the argument.

The kernels see only what passes here: a float id truncated to an int, a str read as a list of
characters or a negative thread count would otherwise give wrong answers rather than errors.
"""

from __future__ import annotations

import array
import operator

import numpy as np

from .pyints import small_int_array

_INT64_MAX = np.iinfo(np.int64).max


def _kind(value) -> str:
    return type(value).__name__


def check_text(value, arg: str = "text", *, bytes_hint: str = "decode it first") -> str:
    """`value` if it is a str, else TypeError naming `arg` (bytes get `bytes_hint`)."""
    if isinstance(value, str):
        return value
    hint = f" ({bytes_hint})" if isinstance(value, (bytes, bytearray, memoryview)) else ""
    raise TypeError(f"{arg} must be a str, not {_kind(value)}{hint}")


def check_int(value, arg: str) -> int:
    """`value` as an int if it is one (bool, numpy integers included), else TypeError naming `arg`."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{arg} must be an int, not {_kind(value)} ({value!r})") from None


def check_threads(value, arg: str = "num_threads") -> int | None:
    """A thread count: an int (0 or less: every core) or None."""
    return None if value is None else check_int(value, arg)


def token_id_array(tokens, out_of_range, arg: str = "tokens") -> np.ndarray:
    """A sequence (or 1-d integer array) of token ids as int64; TypeError naming the first element
    that is not an int. `out_of_range(value)` builds the error for an id that does not fit int64."""
    if isinstance(tokens, np.ndarray):
        if tokens.ndim != 1:
            raise TypeError(f"{arg} must be a 1-d array of token ids, not a {tokens.ndim}-d array of shape "
                            f"{tokens.shape}")
        if tokens.dtype.kind not in "iub":
            raise TypeError(f"{arg} must hold integer token ids, not {tokens.dtype}")
        if tokens.dtype == np.uint64 and tokens.size and int(tokens.max()) > _INT64_MAX:
            raise out_of_range(int(tokens[np.argmax(tokens > _INT64_MAX)]))
        return tokens.astype(np.int64, copy=False)
    if isinstance(tokens, (str, bytes, bytearray, memoryview)) or tokens is None:
        raise TypeError(f"{arg} must be a sequence of int token ids, not {_kind(tokens)}")
    if not isinstance(tokens, (list, tuple)):
        try:
            tokens = list(tokens)
        except TypeError:
            raise TypeError(f"{arg} must be a sequence of int token ids, not {_kind(tokens)}") from None
    small = small_int_array(tokens)  # every id an exact int below 2**30: read from the objects
    if small is not None:
        return small
    try:
        # array.array takes exactly what operator.index takes (no floats, no str), and is fast
        return np.frombuffer(array.array("q", tokens), dtype=np.int64)
    except (TypeError, OverflowError):
        pass
    for i, t in enumerate(tokens):  # the slow path names the culprit
        try:
            v = operator.index(t)
        except TypeError:
            raise TypeError(f"{arg}[{i}] must be an int token id, not {_kind(t)} ({t!r})") from None
        if not -_INT64_MAX - 1 <= v <= _INT64_MAX:
            raise out_of_range(v)
    raise AssertionError("unreachable: every id is an int64")
