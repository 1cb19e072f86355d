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

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

from .kernels.jit import CACHE

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


# The GIL stays held (nogil=False): the kernel changes reference counts.
@numba.njit(cache=CACHE, nogil=False, boundscheck=False)
def _fill(items, ids, addrs, uses, seen):
    """items[i] = addrs[ids[i]] (as PyObject*), then every object's count += its uses.
    `uses` is all zeros on entry and on exit; `seen` is scratch of the same length."""
    k = 0
    for i in range(len(ids)):
        t = ids[i]
        _store_i64(items + 8 * i, addrs[t])
        if uses[t] == 0:
            seen[k] = t
            k += 1
        uses[t] += 1
    for j in range(k):
        t = seen[j]
        _add_i64(addrs[t], uses[t])  # ob_refcnt is the object's first field
        uses[t] = 0


class _Filler:
    __slots__ = ()


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
    """The int objects 0 .. n-1, their addresses, and scratch counts (one per vocabulary)."""

    def __init__(self, n: int) -> None:
        self.objects = np.array(range(n), dtype=object)
        self.addrs = np.fromiter(map(id, self.objects), dtype=np.int64, count=n)
        self.uses = np.zeros(n, dtype=np.int64)
        self.seen = np.zeros(n, dtype=np.int64)

    def to_list(self, ids: np.ndarray) -> list[int]:
        """ids (every value < n, else IndexError) as a list of ints."""
        global _AVAILABLE
        n = len(ids)
        if not _AVAILABLE or n == 0:
            return self.objects[ids].tolist()
        ids = np.ascontiguousarray(ids)
        if int(ids.max()) >= len(self.addrs):  # the kernel does not check
            raise IndexError(f"token id {int(ids.max())} is outside 0..{len(self.addrs) - 1}")
        filler = _Filler()
        lst = [filler] * n
        try:
            _fill(_items_address(lst), ids, self.addrs, self.uses, self.seen)
        except Exception:  # noqa: BLE001 - the kernel failed to compile here: never again, gather instead
            _AVAILABLE = False
            return self.objects[ids].tolist()
        # the list no longer holds the filler: give back its n references
        ctypes.c_ssize_t.from_address(id(filler)).value -= n
        return lst
