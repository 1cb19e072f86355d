"""pages.small_pages: the advice reaches the kernel, and never changes what an array holds; populate and
id_buffer commit the pages they say, and only those."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from smaps import vm_flags
from tltok_jit.engine import pages



@pytest.mark.skipif(not sys.platform.startswith("linux") or pages._MADVISE is None
                    or not os.path.isdir("/sys/kernel/mm/transparent_hugepage"),
                    reason="Linux with transparent huge pages (else the advice is refused: nothing to test)")
def test_big_buffer_is_advised_small_pages():
    a = pages.small_pages(np.empty(8 << 20, dtype=np.uint8))
    assert "nh" in vm_flags(a.ctypes.data + (4 << 20))


def test_small_buffers_and_contents_are_left_alone():
    a = np.arange(1 << 21, dtype=np.uint32)  # 8 MB, already written
    before = a.copy()
    assert pages.small_pages(a) is a
    assert np.array_equal(a, before)
    small = np.empty(1024, dtype=np.uint8)
    pages.small_pages(small)  # under the threshold: no advice, no error


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_populate_keeps_contents_and_commits_the_pages():
    a = pages.small_pages(np.empty(3 << 20, dtype=np.uint32))  # 12 MB, nothing written yet
    a[:5] = 7
    a[-5:] = 9
    lo, hi = 3, len(a) - 3
    if not pages.populate(a, lo, hi):
        pytest.skip("this system refuses MADV_POPULATE_WRITE (Linux < 5.14)")
    assert a[:5].tolist() == [7] * 5 and a[-5:].tolist() == [9] * 5
    # every whole page inside the bytes of a[lo:hi] is resident now
    rss = _rss_kb(a)
    assert rss >= (hi - lo) * 4 // 1024 - 8
    assert pages.populate(a, 0, 0) and pages.populate(a, -10, len(a) + 10)  # empty / clipped ranges



@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_id_buffer_commits_the_front_one_thread_fills():
    n = 8 << 20  # bytes of text: a 32 MB buffer (its own mapping), of which n // 4 ids = 8 MB are faulted in
    a = pages.id_buffer(n)
    assert a.dtype == np.uint32 and len(a) == n
    if not pages.populate(a, 0, 0):
        pytest.skip("this system refuses MADV_POPULATE_WRITE (Linux < 5.14)")
    rss = _rss_kb(a)
    assert n // 1024 - 8 <= rss < 2 * n // 1024
    assert len(pages.id_buffer(0)) == 1 and len(pages.id_buffer(1000)) == 1000  # (too small to populate)


def _rss_kb(a: np.ndarray) -> int:
    """Resident kB of the mappings that hold `a` (/proc/self/smaps)."""
    lo_a, hi_a = a.ctypes.data, a.ctypes.data + a.nbytes
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo < hi_a and hi > lo_a
            elif inside and head == "Rss:":
                total += int(line.split()[1])
    return total
