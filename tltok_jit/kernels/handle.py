"""Handles for calls on short texts: the tables and one worker's scratch behind one array of addresses.

Calling a kernel costs numba an unboxing per array argument (~80 ns each: type check, data pointer,
shape, a reference count), and the tables and the piece cache are 32 arrays: more than encoding a
20-character string. `handle_of` writes their addresses and shapes into one int64 array (the
layout and the kernels' views of it: handle_layout.py); `encode_text_at` takes it and hands it to
the piece engine as it is. The Python side keeps every array alive for as long as the handle is
used (the Encoding holds both).

A call handle (`call_handle_of`) is a handle followed by (address, length) of one thread's id
scratch, its merge scratch, the all-False added-token mask and a UTF-8 scratch, a flag (shared by
threads), (address, length) of the prebuilt int objects (or zeros) and the byte that starts every
added token (or -1): `encode_str_call(address of c, mode, s)` then takes three scalar arguments
instead of six arrays (in this order so that `functools.partial(entry point, address, mode)` is a
one-argument C call), which saves ~0.35 us of numba's
argument unboxing per call (a third of what a 20-character call costs outside the kernel), encodes a
non-ASCII str to UTF-8 itself (a str -> bytes -> array round trip in Python cost more than encoding 20
characters) and returns the list of ids or their count itself (pyresult.py).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.cpython.unicode import _get_code_point

from .cache import PieceCache
from .encode import encode_ordinary_spans, encode_span
from .handle_layout import CACHE_DTYPES, HANDLE_LEN, TABLE_DTYPES, cache_of, tables_of
from .jit import njit, stack_array, view_ro, view_rw
from .pyargs import borrowed_str, call_address
from .pyresult import acquire_gil, id_list, id_list_shared, py_int, py_none, release_gil
from .utf8 import str_data8 as _data8

CALL_LEN = HANDLE_LEN + 12
# encode_str_call's mode bits
AS_LIST = 1  # a list of the ids (else their number)
REFUSE_ADDED = 2  # the general route's answer for a text holding the call handle's refused byte
# encode_str_call keeps the GIL for a text of at most this many characters: releasing and taking it
# back costs ~35 ns, a few percent of a short call, and gives nothing to other threads that short
GIL_HELD_CHARS = 256


def call_handle_of(h: np.ndarray, out: np.ndarray, vals: np.ndarray, no_added: np.ndarray,
                   utf8: np.ndarray, *, shared: bool = False, int_objects: np.ndarray | None = None,
                   refused: int = -1) -> np.ndarray:
    """The handle `h` followed by the id scratch `out` (uint32), the merge scratch `vals` (int64),
    the read-only all-False added-token mask and the UTF-8 scratch `utf8` (uint8), for
    `encode_str_call`; the caller keeps the arrays alive as long as the call handle. A `shared`
    call handle serves several threads: encode_str_call then refuses (the general-route answer) a
    text it would encode with the GIL released, so no two calls ever use its scratch at once.
    `int_objects` (int64): the address of an immortal int object per id (pylist.IntObjects.addrs
    where `.immortal`), which the lists of encode_str_call then hold, without taking references,
    instead of new ints. `refused`: an ASCII byte that starts every added token (a
    text holding it takes the general route in the REFUSE_ADDED mode), or -1 (none)."""
    if h.dtype != np.int64 or h.shape != (HANDLE_LEN,) or h.flags.writeable:
        raise ValueError("not a handle of handle_of")
    for a, dt in ((out, np.uint32), (vals, np.int64), (utf8, np.uint8)):
        if a.dtype != dt or a.ndim != 1 or not a.flags.c_contiguous or not a.flags.writeable:
            raise ValueError(f"scratch array {a.dtype}[{a.ndim}] does not match the call handle layout")
    if (no_added.dtype != np.bool_ or no_added.ndim != 1 or not no_added.flags.c_contiguous
            or no_added.flags.writeable or no_added.any()):
        raise ValueError("the added-token mask of a call handle is a read-only all-False bool[:]")
    objs = (0, 0)
    if int_objects is not None:
        if int_objects.dtype != np.int64 or int_objects.ndim != 1 or not int_objects.flags.c_contiguous:
            raise ValueError("the int objects of a call handle are an int64[:] of addresses")
        objs = (int_objects.ctypes.data, len(int_objects))
    if not -1 <= refused < 0x80:
        raise ValueError(f"the refused byte of a call handle is ASCII or -1, not {refused}")
    c = np.concatenate([h, np.array([out.ctypes.data, len(out), vals.ctypes.data, len(vals),
                                     no_added.ctypes.data, len(no_added), utf8.ctypes.data, len(utf8),
                                     int(shared), *objs, refused],
                                    dtype=np.int64)])
    c.flags.writeable = False
    return c


def handle_of(T, cache: PieceCache) -> np.ndarray:
    """int64 addresses and shapes of T's and cache's arrays (see the module docstring)."""
    if len(T) != len(TABLE_DTYPES):
        raise ValueError(f"Tables has {len(T)} fields, the handle layout {len(TABLE_DTYPES)}")
    for a, dt in zip(T, TABLE_DTYPES):
        if a.dtype != dt or a.ndim != 1 or not a.flags.c_contiguous or a.flags.writeable:
            raise ValueError(f"table array {a.dtype}[{a.ndim}] does not match the handle layout ({np.dtype(dt)})")
    for a, (dt, nd) in zip(cache, CACHE_DTYPES):
        if a.dtype != dt or a.ndim != nd or not a.flags.c_contiguous or not a.flags.writeable:
            raise ValueError(f"cache array {a.dtype}[{a.ndim}] does not match the handle layout")
    # written here rather than by handle_layout.write_handle: passing arrays to a kernel has numba
    # type them in Python on a process's first call, ~20 ms of a first short encode
    fields = []
    for a in T:
        fields += (a.ctypes.data, len(a))
    for a in cache:
        fields += (a.ctypes.data, *a.shape)
    out = np.array(fields, dtype=np.int64)
    assert len(out) == HANDLE_LEN
    out.flags.writeable = False
    return out


@njit
def encode_ascii_at(s, h, allowed, any_allowed, out, vals):
    """encode_text_at of an ASCII str, read in place (its characters are its UTF-8 bytes); the
    caller checked `s.isascii()`."""
    return encode_text_at(view_ro(_data8(s), (len(s),), np.uint8), h, allowed, any_allowed, out, vals)


@njit(inline="always")
def _str_utf8_into(s, u8):
    """Write the UTF-8 of `s` to u8 (at least 4 len(s) long); returns its length, or -1 when `s` holds
    a surrogate code point (tiktoken's rule for those, via UTF-16, is the caller's general route)."""
    j = 0
    for i in range(len(s)):
        c = _get_code_point(s, i)
        if c < 0x80:
            u8[j] = c
            j += 1
        elif c < 0x800:
            u8[j] = 0xC0 | (c >> 6)
            u8[j + 1] = 0x80 | (c & 0x3F)
            j += 2
        elif c < 0x10000:
            if 0xD800 <= c <= 0xDFFF:
                return -1
            u8[j] = 0xE0 | (c >> 12)
            u8[j + 1] = 0x80 | ((c >> 6) & 0x3F)
            u8[j + 2] = 0x80 | (c & 0x3F)
            j += 3
        else:
            u8[j] = 0xF0 | (c >> 18)
            u8[j + 1] = 0x80 | ((c >> 12) & 0x3F)
            u8[j + 2] = 0x80 | ((c >> 6) & 0x3F)
            u8[j + 3] = 0x80 | (c & 0x3F)
            j += 4
    return j


@njit(inline="always")
def _holds(buf, b):
    for i in range(len(buf)):
        if buf[i] == b:
            return True
    return False


@njit(inline="always")
def _str_call_ids(s, c, refuse, out, vals):
    """encode_text_at of the UTF-8 of `s` into `out` with the rest read from the call handle `c`, the
    GIL released while a long text is encoded; the number of ids, or -1 (see encode_str_call)."""
    e = HANDLE_LEN
    allowed = view_ro(c[e + 4], (c[e + 5],), np.bool_)
    n = len(s)
    if s._is_ascii:
        if n > len(out):
            return -1
        buf = view_ro(_data8(s), (n,), np.uint8)
    else:
        u8 = view_rw(c[e + 6], (c[e + 7],), np.uint8)
        if 4 * n > len(u8) or 4 * n > len(out):  # ids <= UTF-8 bytes <= 4 per character
            return -1
        m = _str_utf8_into(s, u8)
        if m < 0:
            return -1
        buf = view_ro(c[e + 6], (m,), np.uint8)
    if refuse and c[e + 11] >= 0 and _holds(buf, c[e + 11]):  # (ASCII: never inside a character)
        return -1
    if n <= GIL_HELD_CHARS:
        return encode_text_at(buf, c, allowed, False, out, vals)
    if c[e + 8] != 0:  # a shared call handle (call_handle_of) is only used with the GIL held
        return -1
    state = release_gil()
    k = encode_text_at(buf, c, allowed, False, out, vals)
    acquire_gil(state)
    return k


@njit(nogil=False)
def encode_str_call(ca, mode, s):
    """encode_text_at(UTF-8 of s, h, no_added, False, out, vals) with h, out, vals, the mask and the
    UTF-8 scratch read from the call handle at address `ca` or in its slot (pyargs.call_address: an
    int unboxes in a fraction of an array's time; the caller keeps call_handle_of's array alive);
    no added token is allowed. Called through `str_call_entry()`, which reads `s` in place.

    Returns, in the AS_LIST mode, a new list of the ids, or None when the general route must answer
    (the scratch is too short for `s`, `s` holds a surrogate code point, or, in the REFUSE_ADDED
    mode, the call handle's refused byte); else the number of ids written to the call handle's id
    scratch, -1 for the general route. An ASCII str is read in
    place (its characters are its UTF-8 bytes). The kernel holds the GIL (it makes the result
    objects, see pyresult.py) except while it encodes a text of more than GIL_HELD_CHARS
    characters; the call handle's scratch is one thread's, or a shared one used with the GIL held."""
    a = call_address(ca)
    if a == 0:  # an emptied slot
        return py_none() if mode & AS_LIST else py_int(-1)
    c = view_ro(a, (CALL_LEN,), np.int64)
    e = HANDLE_LEN
    out = view_rw(c[e], (c[e + 1],), np.uint32)
    vals = view_rw(c[e + 2], (c[e + 3],), np.int64)
    n = _str_call_ids(s, c, mode & REFUSE_ADDED, out, vals)
    if not mode & AS_LIST:
        return py_int(n)
    if n < 0:
        return py_none()
    if c[e + 9] != 0:
        return id_list_shared(out, n, view_ro(c[e + 9], (c[e + 10],), np.int64))
    return id_list(out, n)


STR_CALL_TYPES = (types.int64, types.int64, borrowed_str)


def str_call_entry():
    """The compiled encode_str_call for STR_CALL_TYPES, called without the dispatcher: (ca, mode,
    s) with `s` a str (nothing else: the caller checks `type(s) is str`)."""
    return encode_str_call.compile(STR_CALL_TYPES)


@njit
def encode_text_at(buf, h, allowed, any_allowed, out, vals):
    """encode_span(buf, 0, len(buf), T, allowed, any_allowed, out, 0, cache, 0, vals) with T and worker 0's cache
    those of the handle `h`; returns the number of ids written to out."""
    if any_allowed:
        return encode_span(buf, 0, len(buf), tables_of(h), allowed, any_allowed, out, 0, cache_of(h), 0, vals)
    # straight to the span loop, with the handle itself: each call level between here and it that
    # passes the tables' and the cache's arrays costs more than encoding 20 characters
    spans = stack_array(3, np.int64)
    spans[0] = 0
    spans[1] = len(buf)
    spans[2] = 0
    encode_ordinary_spans(buf, spans, 1, h, out, 0, vals)
    return spans[2]
