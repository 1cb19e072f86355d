"""pages.small_pages: the advice reaches the kernel, and never changes what an array holds."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from tltok_jit import pages


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping that holds `address` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not sys.platform.startswith("linux") or pages._MADVISE is None
                    or not os.path.isdir("/sys/kernel/mm/transparent_hugepage"),
                    reason="Linux with transparent huge pages (else the advice is refused: nothing to test)")
def test_big_buffer_is_advised_small_pages():
    a = pages.small_pages(np.empty(8 << 20, dtype=np.uint8))
    assert "nh" in _vm_flags(a.ctypes.data + (4 << 20))


def test_small_buffers_and_contents_are_left_alone():
    a = np.arange(1 << 21, dtype=np.uint32)  # 8 MB, already written
    before = a.copy()
    assert pages.small_pages(a) is a
    assert np.array_equal(a, before)
    small = np.empty(1024, dtype=np.uint8)
    pages.small_pages(small)  # under the threshold: no advice, no error
