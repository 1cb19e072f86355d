"""list[int] from an array of token ids, fast on CPython 3.10 / 3.11.

Returning a Python list is part of the tiktoken interface, and making one costs as much as a
sizeable part of encoding: `ids.tolist()` allocates an int object per id, and gathering prebuilt
objects (`objs[ids].tolist()`) still touches every object's reference count, at random. Here the
int objects 0 .. n-1 are made once per process (`int_objects`) and made immortal the way CPython
3.12 makes its own: each reference count is raised once by IMMORTAL_BIAS (2**62), so a list holds
them without taking references of its own (the decref of each freed item cannot bring one to zero:
at a billion a second that takes 146 years), and they are never freed. A kernel writes their
addresses straight into a new list's item array; the short calls' kernels do the same
(kernels/pyresult.id_list_shared). CPython's shared small ints (0 .. 256) are raised once per
process, whatever the number of tables.

That relies on CPython's object layout (reference count first, a list's item pointer after the
variable-size header) and plain reference counting. `available()` checks the layout on live objects
at import; other interpreters and versions (3.12+ has immortal objects of its own, free-threaded
builds count references differently) use the gather path and new ints, as does anyone who sets
TLTOK_NO_FAST_LIST=1.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading

import numpy as np

from ..kernels.list_fill import fill_items as _fill, raise_counts as _raise_counts
from .pages import populate_bytes
from .threads import on_threads

_ITEMS_OFFSET = 3 * ctypes.sizeof(ctypes.c_ssize_t)  # PyObject_VAR_HEAD, then PyObject **ob_item


class _Filler:
    __slots__ = ()


_NEW_LIST = ctypes.pythonapi.PyList_New
_NEW_LIST.argtypes = [ctypes.c_ssize_t]
_NEW_LIST.restype = ctypes.py_object

# ids per worker below which filling a list on another thread costs more than it saves
MIN_IDS_PER_WORKER = 1 << 17


def _items_address(lst: list) -> int:
    return ctypes.c_void_p.from_address(id(lst) + _ITEMS_OFFSET).value or 0


def _check_layout() -> bool:
    """The assumptions, on live objects: item pointers where expected, the count at offset 0."""
    a, b = 10_001, 10_002
    lst = [a, b]
    items = _items_address(lst)
    if not items:
        return False
    if (ctypes.c_void_p.from_address(items).value != id(a)
            or ctypes.c_void_p.from_address(items + ctypes.sizeof(ctypes.c_void_p)).value != id(b)):
        return False
    probe = _Filler()
    before = sys.getrefcount(probe)
    ctypes.c_ssize_t.from_address(id(probe)).value += 3
    moved = sys.getrefcount(probe) - before
    ctypes.c_ssize_t.from_address(id(probe)).value -= 3
    return moved == 3 and sys.getrefcount(probe) == before


def _supported() -> bool:
    if os.environ.get("TLTOK_NO_FAST_LIST"):
        return False
    if platform.python_implementation() != "CPython" or sys.version_info[:2] not in ((3, 10), (3, 11)):
        return False
    if ctypes.sizeof(ctypes.c_void_p) != 8 or hasattr(sys, "gettotalrefcount"):  # 64-bit, not a debug build
        return False
    try:
        return _check_layout()
    except (ValueError, OSError):  # pragma: no cover - unusual platforms
        return False


_AVAILABLE = _supported()


def available() -> bool:
    return _AVAILABLE


IMMORTAL_BIAS = 1 << 62
_SMALL_INTS = 257  # CPython's shared small ints 0 .. 256: every table holds the same objects
_SMALL_DONE: list = [False]
_SMALL_LOCK = threading.Lock()


def _small_ints_immortal() -> None:
    """Raise the counts of the small ints 0 .. 256 by IMMORTAL_BIAS, once per process (they are in
    every table; twice would overflow)."""
    with _SMALL_LOCK:
        if not _SMALL_DONE[0]:
            small = np.array([id(i) for i in range(_SMALL_INTS)], dtype=np.int64)
            _raise_counts(small.ctypes.data, 0, len(small), IMMORTAL_BIAS)
            _SMALL_DONE[0] = True


def _addresses(objects: np.ndarray) -> np.ndarray:
    """id() of every item of a contiguous object array, as int64 (its buffer holds the PyObject*s)."""
    n = len(objects)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer((ctypes.c_int64 * n).from_address(objects.ctypes.data), dtype=np.int64).copy()


class IntObjects:
    """The int objects 0 .. n-1 and their addresses; immortal (see the module doc) where
    `available()`. Made by `int_objects`: one table per process, grown, never freed."""

    def __init__(self, n: int, base: "IntObjects | None" = None) -> None:
        m = 0 if base is None else len(base.addrs)
        # (arange's cast makes the ints in C, and the object array's items are the addresses: a
        # first call of o200k spent ~25 ms on np.array(range(n)) and a map(id) over it)
        fresh = np.arange(m, n, dtype=np.int64).astype(object)
        self.objects = fresh if base is None else np.concatenate([base.objects, fresh])
        self.addrs = _addresses(self.objects)
        self.immortal = _AVAILABLE and (base is None or base.immortal)
        if self.immortal:
            try:
                _small_ints_immortal()
                _raise_counts(self.addrs.ctypes.data, max(m, _SMALL_INTS), len(self.addrs), IMMORTAL_BIAS)
            except Exception:  # noqa: BLE001 - the kernel failed to compile: plain objects, gathered
                self.immortal = False

    @property
    def shared_addrs(self) -> np.ndarray | None:
        """The addresses a kernel may store into a list without taking references (the objects are
        immortal), else None."""
        return self.addrs if self.immortal else None

    def to_list(self, ids: np.ndarray, threads: int = 1) -> list[int]:
        """ids (every value < n, else IndexError) as a list of ints; a long one is filled on up to
        `threads` threads."""
        n = len(ids)
        if not (_AVAILABLE and self.immortal) or n == 0:
            return self.objects[ids].tolist()
        ids = np.ascontiguousarray(ids)
        if int(ids.max()) >= len(self.addrs):  # the kernel does not check
            raise IndexError(f"token id {int(ids.max())} is outside 0..{len(self.addrs) - 1}")
        return self._fill_list(ids, max(1, min(threads, n // MIN_IDS_PER_WORKER)))

    def _fill_list(self, ids: np.ndarray, workers: int) -> list[int]:
        global _AVAILABLE
        n = len(ids)
        # a new list's slots are NULL (list_dealloc and the collector skip those) and its item array
        # is not touched before the kernels write it: on a long list the page faults of its first
        # writes are much of the cost, and the workers take them in parallel
        lst = _NEW_LIST(n)
        items = _items_address(lst)
        bounds = [n * w // workers for w in range(workers + 1)]

        def fill(w: int) -> None:
            if workers == 1 and n >= MIN_IDS_PER_WORKER:  # (a short list's items are mostly resident)
                # the faults in one call (pages.populate): the first list of 750k ids in a process,
                # 4.3-4.9 ms -> 3.4-4.4 (medians 4.6 / 3.9 of 8 processes); not on two threads, where
                # the two calls at once made it slower (medians 3.3 -> 3.6 ms)
                populate_bytes(items, 8 * n)
            _fill(items, ids, bounds[w], bounds[w + 1], self.addrs)

        try:
            on_threads(workers, fill)
        except Exception:  # noqa: BLE001 - the kernel failed to compile here: never again, gather instead
            _AVAILABLE = False
            ctypes.memset(items, 0, 8 * n)  # (freeing the list then skips every slot)
            return self.objects[ids].tolist()
        return lst


_TABLE: list = [None]
_TABLE_LOCK = threading.Lock()


def int_objects(n: int) -> IntObjects:
    """The process's table of at least n int objects (the table grows, keeping the objects it has)."""
    t = _TABLE[0]
    if t is not None and len(t.addrs) >= n:
        return t
    with _TABLE_LOCK:
        t = _TABLE[0]
        if t is None or len(t.addrs) < n:
            t = _TABLE[0] = IntObjects(n, t)
        return t
