"""A list or tuple of token ids as int64, fast on CPython 3.10+ (64-bit, GIL builds).

`array.array("q", ids)` is exact (it takes what `operator.index` takes) but costs ~25 ns per id,
more than the rest of a decode. Token ids are small ints: a kernel reads them straight from the int
objects (type pointer, size field, first digit) while every item is an exact int in [0, 2**30), and
gives up on the first that is not; the caller then takes the exact slow path for the whole input.

That relies on CPython's object layout (the type after the reference count, a list's item pointer
after the variable-size header, a tuple's items inline there, an int's size field then its 30-bit
digits). `available()` checks it on live objects at import; other interpreters, layouts and
free-threaded or debug builds use array.array, as does anyone who sets TLTOK_NO_FAST_INTS=1.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import sysconfig

import numpy as np

from ..kernels.pyints import LONG_DIGIT, LONG_TAG, OB_TYPE, SEQ_ITEMS, SEQ_SIZE, read_small_ints

INT_TYPE = id(int)
# the size field of 0 and of a one-digit positive int: ob_size (3.10, 3.11) or lv_tag (3.12+:
# digits << 3 | sign, sign 1 = zero, 0 = positive)
ZERO_TAG, ONE_DIGIT_TAG = (0, 1) if sys.version_info < (3, 12) else (1, 8)
SMALL_LIMIT = 1 << 30  # one 30-bit digit


def _word(addr: int) -> int:
    return ctypes.c_ssize_t.from_address(addr).value


def _items_address(seq: list | tuple) -> int:
    """Address of the PyObject* array of an exact list or tuple."""
    return _word(id(seq) + SEQ_ITEMS) if type(seq) is list else id(seq) + SEQ_ITEMS


def _check_layout() -> bool:
    """The assumptions, on live objects: item arrays, type pointers, size fields and digits."""
    values = [0, 1, 7, 255, 256, 100_003, SMALL_LIMIT - 1]
    others = [SMALL_LIMIT, -1, -100_003, 1 << 62, True]
    for seq in (list(values), tuple(values)):
        items = _items_address(seq)
        if not items or any(_word(items + 8 * i) != id(v) for i, v in enumerate(seq)):
            return False
        if _word(id(seq) + SEQ_SIZE) != len(seq) or _word(id(seq) + OB_TYPE) != id(type(seq)):
            return False
    for v in values:
        tag = _word(id(v) + LONG_TAG)
        if _word(id(v) + OB_TYPE) != INT_TYPE or tag != (ZERO_TAG if v == 0 else ONE_DIGIT_TAG):
            return False
        if v and ctypes.c_uint32.from_address(id(v) + LONG_DIGIT).value != v:
            return False
    for v in others:  # never taken for a small int
        if _word(id(v) + OB_TYPE) == INT_TYPE and _word(id(v) + LONG_TAG) in (ZERO_TAG, ONE_DIGIT_TAG):
            return False
    return True


def _supported() -> bool:
    if os.environ.get("TLTOK_NO_FAST_INTS"):
        return False
    if platform.python_implementation() != "CPython" or sys.version_info < (3, 10):
        return False
    if ctypes.sizeof(ctypes.c_void_p) != 8 or hasattr(sys, "gettotalrefcount"):  # 64-bit, not a debug build
        return False
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    if (sys.int_info.bits_per_digit, sys.int_info.sizeof_digit) != (30, 4):
        return False
    try:
        return _check_layout()
    except (ValueError, OSError):  # pragma: no cover - unusual platforms
        return False


_AVAILABLE = _supported()


def available() -> bool:
    return _AVAILABLE


def small_int_array(seq: list | tuple) -> np.ndarray | None:
    """The items of an exact list or tuple as a read-only int64 array if every one is an exact int
    in [0, 2**30), else None (and None when the layout check failed)."""
    kind = type(seq)
    if not _AVAILABLE or (kind is not list and kind is not tuple):
        return None
    n = len(seq)
    out = np.empty(n, dtype=np.int64)
    if read_small_ints(id(seq), kind is list, n, INT_TYPE, ZERO_TAG, ONE_DIGIT_TAG, out) != n:
        return None
    out.flags.writeable = False  # the kernels are compiled for read-only ids
    return out
