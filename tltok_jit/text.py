"""Python text to the UTF-8 bytes the kernels read, with tiktoken's rule for lone surrogates."""

from __future__ import annotations

import functools

import numpy as np

from .kernels.utf8 import str_utf8, str_utf8_rows

KERNEL_UTF8_MIN = 1 << 14  # below this, calling a kernel costs more than it saves


def no_lone_surrogates(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD the way tiktoken does it (via UTF-16)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def text_to_utf8(text: str) -> bytes:
    """UTF-8 of `text`; lone surrogates become U+FFFD the way tiktoken does it (via UTF-16)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return no_lone_surrogates(text).encode("utf-8")


def common_prefix_len(a: str, b: str) -> int:
    """The length of the longest common prefix of two strings (bisection over C-speed comparisons)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def read_only(data: np.ndarray) -> np.ndarray:
    """`data`, flagged read-only: the kernels are compiled for read-only input (one variant)."""
    data.flags.writeable = False
    return data


def read_only_view(a: np.ndarray) -> np.ndarray:
    """`a` if it is read-only, else a read-only view of it (the caller's array keeps its flags): one
    compiled variant of a kernel whatever array the user passed."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


def text_to_buf(text: str) -> np.ndarray:
    """text_to_utf8 as a read-only uint8 array; long non-ASCII text is encoded by a kernel (str_utf8)."""
    if len(text) >= KERNEL_UTF8_MIN and not text.isascii():
        data, ok = str_utf8(text)
        if ok:
            return read_only(data)
    return np.frombuffer(text_to_utf8(text), dtype=np.uint8)


@functools.cache
def load_text_kernels() -> None:
    """Load (first time: compile) the str -> UTF-8 kernels, so a process pays for it when it loads a
    tokenizer rather than in its first call on a long text or batch."""
    str_utf8("\xe9")
    offsets = np.zeros(2, dtype=np.int64)
    str_utf8_rows("\xe9", offsets, offsets.copy())
