"""Small pages for the big buffers a call writes once (ids, the workers' rows), and faulting such
pages in ahead of a copy or fill (`populate`, `populate_bytes`).

With transparent huge pages on ("always", a common default), the first write into each 2 MB of a
fresh buffer makes the kernel find and zero a huge page. On a 2-core Intel Xeon VM that made the
first two-thread `encode_arrow` of 3.2 MB of documents take 34-74 ms in 10 of 14 fresh processes
instead of 17 ms, the workers' time going to the kernel; with huge pages off for the process, 17 ms
in 6 of 6. One thread on one 3.2 MB text: 46-89 ms instead of 20-24 ms in 3 of 10 processes, the
time in the kernel zeroing huge pages for the ids; 0 of 8 with the advice. Such a buffer is written
once, front to back, so 4 KB pages cost it little anywhere. (Not a long list's item array: the
advice cost its first fill ~1.7 ms of 26 on 750k ids, and 1 process in 10 still stalled, in malloc.)
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np

_MIN_BYTES = 4 << 20  # below this a buffer spans at most a couple of huge pages
_ADVICE = getattr(mmap, "MADV_NOHUGEPAGE", None)
# Linux >= 5.14: fault pages in writable, contents untouched (older kernels refuse it: EINVAL)
_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23 if sys.platform.startswith("linux") else None)


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
_populate_ok = [_MADVISE is not None and _POPULATE_WRITE is not None]


def small_pages(a: np.ndarray) -> np.ndarray:
    """`a`, its whole pages advised MADV_NOHUGEPAGE when it holds 4 MB or more (Linux; elsewhere, or
    if the advice fails, nothing changes). Call it before anything is written to `a`; the advice
    only changes how the kernel backs the memory, never its contents."""
    if _MADVISE is not None and a.nbytes >= _MIN_BYTES:
        page = mmap.PAGESIZE
        start = -(-a.ctypes.data // page) * page
        end = (a.ctypes.data + a.nbytes) // page * page
        if end > start:
            _MADVISE(start, end - start, _ADVICE)
    return a


def populate(a: np.ndarray, lo: int, hi: int) -> bool:
    """Fault in the whole pages of the bytes of a[lo:hi] (a 1-D contiguous array) as a write to each
    would, without changing a byte of them (MADV_POPULATE_WRITE). Before a big copy into fresh
    memory: one call takes the faults for ~1.2 us a page, a memmove taking them one by one ~3.5 (a
    2-core VM). The GIL is released meanwhile. False when the system cannot (nothing happened)."""
    lo, hi = max(lo, 0), min(hi, len(a))
    return populate_bytes(a.ctypes.data + lo * a.itemsize, (hi - lo) * a.itemsize)


def populate_bytes(address: int, nbytes: int) -> bool:
    """populate() of the nbytes of memory at `address` (memory the caller owns and will write)."""
    if not _populate_ok[0]:
        return False
    page = mmap.PAGESIZE
    start = -(-address // page) * page
    end = (address + max(nbytes, 0)) // page * page
    if end > start and _MADVISE(start, end - start, _POPULATE_WRITE) != 0:
        _populate_ok[0] = False  # refused (an older kernel): never asked again
        return False
    return True


# A fresh buffer one thread fills front to back: below this many bytes of text its faults are few
_FILL_POPULATE_MIN = 1 << 18
# fewer ids than this many bytes of text (o200k English ~4.5 bytes a token, code ~2.5, CJK and
# other scripts 1-2.5), so the pages of text // 4 ids are almost always written
_BYTES_PER_ID = 4


def id_buffer(n_bytes: int) -> np.ndarray:
    """An uninitialized uint32 array for the ids of `n_bytes` of UTF-8 (never more ids than bytes)
    that one thread fills front to back: small pages (small_pages), and the pages of its first
    n_bytes // 4 ids faulted in by one call (populate). A first write faulted ~2.3 us a page on a
    2-core VM, the one call ~1.3 (a page it faults in and nobody writes costs those 1.3 us for
    nothing, so not every page the ids could reach)."""
    a = small_pages(np.empty(max(n_bytes, 1), dtype=np.uint32))
    if n_bytes >= _FILL_POPULATE_MIN:
        populate(a, 0, n_bytes // _BYTES_PER_ID)
    return a
