"""Python ints of a list or tuple -> int64, read straight from the objects (see tltok_jit.engine.pyints,
which checks the object layout this relies on before anything calls it)."""

from __future__ import annotations

import llvmlite.ir
import numba
import numba.extending
import numpy as np

from .jit import njit

OB_TYPE = 8  # PyObject: ob_refcnt, then ob_type
SEQ_SIZE = 16  # PyObject_VAR_HEAD: the header, then ob_size (a list's or a tuple's length)
SEQ_ITEMS = 24  # PyObject_VAR_HEAD, then a list's ob_item pointer or a tuple's items
LONG_TAG = 16  # PyLongObject: ob_size (3.10, 3.11) or lv_tag (3.12+) after the object header
LONG_DIGIT = 24  # the first 30-bit digit


def _load(width: int, result):
    @numba.extending.intrinsic
    def load(typingctx, addr):
        """The `width`-bit value at address `addr` (an int64)."""
        if not isinstance(addr, numba.types.Integer):
            return None
        sig = result(addr)

        def codegen(context, builder, signature, args):
            p = builder.inttoptr(args[0], llvmlite.ir.IntType(width).as_pointer())
            v = builder.load(p)
            return builder.zext(v, llvmlite.ir.IntType(64)) if width < 64 else v

        return sig, codegen

    return load


load_i64 = _load(64, numba.types.int64)
load_u32 = _load(32, numba.types.int64)


@njit(inline="always")
def small_ints_into(seq, is_list, n, int_type, zero_tag, one_digit_tag, out):
    """out[i] = item i of the list (`is_list`) or tuple at address `seq` while it is an exact int in
    [0, 2**30) (a zero or one-digit int: its size field is `zero_tag` or `one_digit_tag`); returns
    how many were read (n: all of them). Objects of any other type or value are never read beyond
    their type and size fields. The caller holds the GIL."""
    items = load_i64(seq + SEQ_ITEMS) if is_list else seq + SEQ_ITEMS
    for i in range(n):
        v = small_int_at(load_i64(items + 8 * i), int_type, zero_tag, one_digit_tag)
        if v < 0:
            return np.int64(i)
        out[i] = v
    return np.int64(n)


@njit(inline="always")
def small_int_at(obj, int_type, zero_tag, one_digit_tag):
    """The value of the object at address `obj` if it is an exact int in [0, 2**30), else -1 (an
    object of another type or value is not read beyond its type and size fields)."""
    if load_i64(obj + OB_TYPE) != int_type:
        return np.int64(-1)
    tag = load_i64(obj + LONG_TAG)
    if tag == one_digit_tag:
        return load_u32(obj + LONG_DIGIT)
    if tag == zero_tag:
        return np.int64(0)
    return np.int64(-1)


# The GIL stays held (nogil=False): no other thread may change or free the objects while they are read.
@njit(nogil=False)
def read_small_ints(seq, is_list, n, int_type, zero_tag, one_digit_tag, out):
    """small_ints_into as a kernel of its own."""
    return small_ints_into(seq, is_list, n, int_type, zero_tag, one_digit_tag, out)
