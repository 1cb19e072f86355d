"""Recycled memory for the arrays a loop makes again and again in one shape (padded batches, packed
rows): glibc hands a freed megabyte-sized block back to the system and the next batch faults every
page of it in again, several times the cost of filling it. An `Arenas` keeps the blocks it handed
out; a block no array refers to any more (only the list does) is handed out again. Reference
counts tell that exactly only with the GIL: a free-threaded build never recycles (RECYCLE).
"""

from __future__ import annotations

import sys
import sysconfig
import threading
from collections.abc import Callable

import numpy as np

__all__ = ["RECYCLE", "Arenas"]

RECYCLE = not sysconfig.get_config_var("Py_GIL_DISABLED")
_LOCK = threading.Lock()


def _unused_count() -> int:
    """sys.getrefcount of an arena only the list refers to (the interpreter's own count for the
    argument differs between versions)."""
    probe = [np.empty(1, dtype=np.uint8)]
    return sys.getrefcount(probe[0])


_UNUSED = _unused_count()


class Arenas:
    """At most `keep` blocks of `least` .. `most` bytes, each new one passed through `pages` (e.g.
    pages.small_pages; None: as numpy allocates it). `kept` is the list, oldest first."""

    def __init__(self, keep: int, most: int, least: int = 1 << 16,
                 pages: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.keep = keep
        self.most = most
        self.least = least
        self.pages = pages
        self.kept: list[np.ndarray] = []

    def _new(self, nbytes: int) -> np.ndarray:
        a = np.empty(max(nbytes, 1), dtype=np.uint8)
        return a if self.pages is None else self.pages(a)

    def take(self, nbytes: int) -> np.ndarray:
        """`nbytes` of uninitialized memory (a uint8 array): part of a kept block no earlier array
        still uses (and at most 4 times as big), else new; sizes outside least .. most are never kept."""
        if not RECYCLE or not self.least <= nbytes <= self.most:
            return self._new(nbytes)[:nbytes]
        kept = self.kept
        with _LOCK:
            for i in range(len(kept)):
                # any array viewing the block holds one more reference
                if sys.getrefcount(kept[i]) == _UNUSED and nbytes <= len(kept[i]) <= 4 * nbytes:
                    block = kept.pop(i)
                    kept.append(block)
                    return block[:nbytes]  # a view: the block is in use from here on
            block = self._new(nbytes)
            kept.append(block)
            if len(kept) > self.keep:
                del kept[0]  # its arrays, if any, keep it alive; it is never handed out again
            return block[:nbytes]
