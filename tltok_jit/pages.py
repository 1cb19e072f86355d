"""Small pages for the big buffers a call writes once (ids, the workers' rows, a long list's items).

With transparent huge pages on ("always", a common default), the first write into each 2 MB of a
fresh buffer makes the kernel find and zero a huge page. On a 2-core Intel Xeon VM that made the
first two-thread `encode_arrow` of 3.2 MB of documents take 34-74 ms in 10 of 14 fresh processes
instead of 17 ms, the workers' time going to the kernel; with huge pages off for the process, 17 ms
in 6 of 6. One thread on one 3.2 MB text: 46-89 ms instead of 20-24 ms in 3 of 10 processes, the
time in the kernel zeroing huge pages for the ids; 0 of 8 with the advice. Such a buffer is written
once, front to back, so 4 KB pages cost it little anywhere.
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np

_MIN_BYTES = 4 << 20  # below this a buffer spans at most a couple of huge pages
_ADVICE = getattr(mmap, "MADV_NOHUGEPAGE", None)


def _libc_madvise():
    if not sys.platform.startswith("linux") or _ADVICE is None:
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


_MADVISE = _libc_madvise()


def small_pages(a: np.ndarray) -> np.ndarray:
    """`a`, its whole pages advised MADV_NOHUGEPAGE when it holds 4 MB or more (Linux; elsewhere, or
    if the advice fails, nothing changes). Call it before anything is written to `a`; the advice
    only changes how the kernel backs the memory, never its contents."""
    small_pages_at(a.ctypes.data, a.nbytes)
    return a


def small_pages_at(address: int, nbytes: int) -> None:
    """small_pages for the memory at [address, address + nbytes), not yet written (a buffer that
    is not an array: a new list's item array)."""
    if _MADVISE is not None and nbytes >= _MIN_BYTES:
        page = mmap.PAGESIZE
        start = -(-address // page) * page
        end = (address + nbytes) // page * page
        if end > start:
            _MADVISE(start, end - start, _ADVICE)
