"""Python text to the UTF-8 bytes the kernels read, with tiktoken's rule for lone surrogates."""

from __future__ import annotations

import ctypes
import functools
import platform
import sys

import numpy as np

from ..kernels.utf8 import str_kind, str_utf8, str_utf8_into, str_utf8_len, str_utf8_rows

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


def _ascii_data_offset() -> int | None:
    """Where a compact ASCII str's characters start (CPython: right after its header, NUL-terminated),
    checked on live strings; None elsewhere."""
    if platform.python_implementation() != "CPython" or hasattr(sys, "gettotalrefcount"):
        return None
    off = sys.getsizeof("") - 1
    for s in ("", "a", "tokens " * 41, "".join(map(chr, range(1, 128)))):
        if sys.getsizeof(s) != off + len(s) + 1 or ctypes.string_at(id(s) + off, len(s) + 1) != s.encode() + b"\0":
            return None
    return off


_ASCII_DATA = _ascii_data_offset()


def ascii_view(text: str) -> np.ndarray:
    """The UTF-8 of an ASCII `text` (the caller checked `text.isascii()`) as a read-only uint8 array:
    a view of the str's own characters where the layout check passed (no copy of a long text; valid
    while the caller holds `text`, so the view must not outlive the call that made it), else a copy."""
    if _ASCII_DATA is None or type(text) is not str or sys.getsizeof(text) != _ASCII_DATA + len(text) + 1:
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)  # (or a str of another layout)
    # (np.frombuffer, not np.ctypeslib.as_array: that one's first call in a process took ~0.5 ms)
    view = np.frombuffer((ctypes.c_uint8 * len(text)).from_address(id(text) + _ASCII_DATA), dtype=np.uint8)
    return read_only(view)


def below_u0300(data) -> bool:
    """Every character of the UTF-8 `data` (bytes or a uint8 array) is below U+0300: no byte from
    0xCC up. Each such character is a starter that is NFC on its own (tests/test_text_utf8.py holds
    the Unicode database to it), so such a text is NFC."""
    a = np.frombuffer(data, dtype=np.uint8)
    return len(a) == 0 or int(a.max()) < 0xCC


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
    tokenizer rather than in its first call on a long text or batch (the parts of a split text:
    str_utf8_len, str_utf8_into)."""
    str_utf8("\xe9")
    offsets = np.zeros(2, dtype=np.int64)
    for s in ("\xe9", "\u65e5", "\U0001f600"):  # one variant, three kinds of str
        str_utf8_rows(s, offsets, offsets.copy())
        str_utf8_into(s, 0, 1, np.empty(str_utf8_len(s, 0, 1), dtype=np.uint8))
        str_kind(s)
