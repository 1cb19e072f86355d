"""list[int] from an array of token ids, fast on CPython 3.10 / 3.11.

Returning a Python list is part of the tiktoken interface, and making one costs as much as a
sizeable part of encoding: `ids.tolist()` allocates an int object per id, and gathering prebuilt
objects (`objs[ids].tolist()`) still touches every object's reference count twice, at random. Here
a kernel writes the prebuilt objects' addresses straight into a new list's item array and adds each
object's number of uses to its reference count once.

That relies on CPython's object layout (reference count first, a list's item pointer after the
variable-size header) and plain reference counting. `available()` checks the layout on live objects
at import; other interpreters and versions (3.12+ has immortal objects, free-threaded builds count
references differently) use the gather path, as does anyone who sets TLTOK_NO_FAST_LIST=1.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

from .kernels.jit import CACHE
from .threads import on_threads

_ITEMS_OFFSET = 3 * ctypes.sizeof(ctypes.c_ssize_t)  # PyObject_VAR_HEAD, then PyObject **ob_item


@intrinsic
def _store_i64(typingctx, addr, value):
    """*(int64 *)addr = value."""
    sig = types.void(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        import llvmlite.ir as ir

        p = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        builder.store(args[1], p)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _add_i64(typingctx, addr, value):
    """*(int64 *)addr += value."""
    sig = types.void(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        import llvmlite.ir as ir

        p = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        builder.store(builder.add(builder.load(p), args[1]), p)
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=CACHE, nogil=True, boundscheck=False)
def _fill(items, ids, lo, hi, addrs, uses, seen):
    """items[i] = addrs[ids[i]] (as PyObject*) for lo <= i < hi, and uses[t] = how many of those
    ids are t; seen[:k] = the distinct ids, k returned. No reference count changes (`_add_uses`
    does that, with the GIL), so parts of one list may be filled on several threads at once."""
    k = 0
    for i in range(lo, hi):
        t = ids[i]
        _store_i64(items + 8 * i, addrs[t])
        if uses[t] == 0:
            seen[k] = t
            k += 1
        uses[t] += 1
    return k


# The GIL stays held (nogil=False): the kernel changes reference counts.
@numba.njit(cache=CACHE, nogil=False, boundscheck=False)
def _add_uses(addrs, uses, seen, k):
    """Every object seen[:k] gets its uses added to its reference count; uses is all zeros again."""
    for j in range(k):
        t = seen[j]
        _add_i64(addrs[t], uses[t])  # ob_refcnt is the object's first field
        uses[t] = 0


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


class IntObjects:
    """The int objects 0 .. n-1, their addresses, and scratch counts (one row per worker, made when
    a worker first needs it)."""

    def __init__(self, n: int) -> None:
        self.objects = np.array(range(n), dtype=object)
        self.addrs = np.fromiter(map(id, self.objects), dtype=np.int64, count=n)
        self.uses: list[np.ndarray] = []
        self.seen: list[np.ndarray] = []
        self._lock = threading.Lock()  # the scratch rows are one call's at a time

    def _scratch(self, workers: int) -> None:
        while len(self.uses) < workers:
            self.uses.append(np.zeros(len(self.addrs), dtype=np.int64))
            self.seen.append(np.zeros(len(self.addrs), dtype=np.int64))

    def to_list(self, ids: np.ndarray, threads: int = 1) -> list[int]:
        """ids (every value < n, else IndexError) as a list of ints; a long one is filled on up to
        `threads` threads."""
        n = len(ids)
        if not _AVAILABLE or n == 0:
            return self.objects[ids].tolist()
        ids = np.ascontiguousarray(ids)
        if int(ids.max()) >= len(self.addrs):  # the kernel does not check
            raise IndexError(f"token id {int(ids.max())} is outside 0..{len(self.addrs) - 1}")
        workers = max(1, min(threads, n // MIN_IDS_PER_WORKER))
        with self._lock:
            return self._fill_list(ids, workers)

    def _fill_list(self, ids: np.ndarray, workers: int) -> list[int]:
        global _AVAILABLE
        n = len(ids)
        self._scratch(workers)
        # a new list's slots are NULL (list_dealloc and the collector skip those) and its item array
        # is not touched before the kernels write it: on a long list the page faults of its first
        # writes are much of the cost, and the workers take them in parallel
        lst = _NEW_LIST(n)
        items = _items_address(lst)
        bounds = [n * w // workers for w in range(workers + 1)]
        distinct = [0] * workers

        def fill(w: int) -> None:
            distinct[w] = _fill(items, ids, bounds[w], bounds[w + 1], self.addrs, self.uses[w], self.seen[w])

        try:
            on_threads(workers, fill)
        except Exception:  # noqa: BLE001 - the kernel failed to compile here: never again, gather instead
            _AVAILABLE = False
            ctypes.memset(items, 0, 8 * n)  # no slot may hold an object it has no reference to
            for u in self.uses:
                u[:] = 0
            return self.objects[ids].tolist()
        for w in range(workers):
            _add_uses(self.addrs, self.uses[w], self.seen[w], distinct[w])
        return lst
