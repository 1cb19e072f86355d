"""The kernels behind pylist: filling a list's item array with int objects, raising their counts.

pylist.IntObjects keeps one int object per token id alive for the whole process and makes them
immortal, so a list of ids can be filled on several threads without touching reference counts."""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import intrinsic

from .jit import njit, view_ro


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


@njit
def fill_items(items, ids, lo, hi, addrs):
    """items[i] = addrs[ids[i]] (as PyObject*) for lo <= i < hi. The objects are immortal: no
    reference count changes, so parts of one list may be filled on several threads at once."""
    for i in range(lo, hi):
        _store_i64(items + 8 * i, addrs[ids[i]])


# The GIL stays held (nogil=False): the kernel changes reference counts. It takes the addresses'
# array by its address: an array argument has numba type it in Python on a process's first call
# (which imports numpy.ma, ~20 ms of a first short encode)
@njit(nogil=False)
def raise_counts(addrs_at, lo, hi, bias):
    """Add `bias` to the reference count of the objects whose addresses are items lo .. hi-1 of the
    int64 array at `addrs_at` (ob_refcnt is their first field)."""
    addrs = view_ro(addrs_at, (hi,), np.int64)
    for j in range(lo, hi):
        _add_i64(addrs[j], bias)
