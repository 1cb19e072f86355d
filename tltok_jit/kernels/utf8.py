"""UTF-8 decoding and character classes inside kernels.

`decode_cp` never reads outside [i, end): a truncated or invalid sequence decodes as one byte of
class OTHER (code point 0xFFFD), so a malformed input cannot make a scanner run off its buffer.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np
from numba import int64 as np_int
from numba import uint64
from numba.core import cgutils, types
from numba.extending import intrinsic

from .jit import LITTLE_ENDIAN, byte_mask64, data_ptr, load_u64, njit, store_u64, trailing_zeros


@njit(inline="always")
def decode_cp(buf, i, end):
    """(code point, byte length) of the character starting at buf[i]; i < end."""
    b0 = buf[i]
    if b0 < 0x80:
        return np_int(b0), 1
    if b0 < 0xE0:
        if b0 >= 0xC2 and i + 1 < end and (buf[i + 1] & 0xC0) == 0x80:
            return ((np_int(b0) & 0x1F) << 6) | (np_int(buf[i + 1]) & 0x3F), 2
        return 0xFFFD, 1
    if b0 < 0xF0:
        if i + 2 < end and (buf[i + 1] & 0xC0) == 0x80 and (buf[i + 2] & 0xC0) == 0x80:
            cp = ((np_int(b0) & 0x0F) << 12) | ((np_int(buf[i + 1]) & 0x3F) << 6) | (np_int(buf[i + 2]) & 0x3F)
            if cp >= 0x800 and (cp < 0xD800 or cp > 0xDFFF):
                return cp, 3
        return 0xFFFD, 1
    if b0 < 0xF5 and i + 3 < end and (buf[i + 1] & 0xC0) == 0x80 and (buf[i + 2] & 0xC0) == 0x80 \
            and (buf[i + 3] & 0xC0) == 0x80:
        cp = ((np_int(b0) & 0x07) << 18) | ((np_int(buf[i + 1]) & 0x3F) << 12) \
            | ((np_int(buf[i + 2]) & 0x3F) << 6) | (np_int(buf[i + 3]) & 0x3F)
        if 0x10000 <= cp <= 0x10FFFF:
            return cp, 4
    return 0xFFFD, 1


@njit(inline="always")
def skip_unflagged8(tab, buf, i, e):
    """From i, past every group of eight bytes none of which is flagged (tab[b] == 0) while eight
    remain before e: where a byte-by-byte look has to start."""
    while i + 8 <= e and (tab[buf[i]] | tab[buf[i + 1]] | tab[buf[i + 2]] | tab[buf[i + 3]] | tab[buf[i + 4]]
                          | tab[buf[i + 5]] | tab[buf[i + 6]] | tab[buf[i + 7]]) == 0:
        i += 8
    return i


_H8 = uint64(0x8080808080808080)
_L8 = uint64(0x0101010101010101)


@njit(inline="always")
def plain_probe(tab):
    """skip_plain8's probe for a flag table `tab` (uint8[256]) that flags every non-ASCII byte: the one
    ASCII byte it flags, in all eight bytes of a word (0x80 in each when it flags none: no ASCII byte
    matches), or 0 when it flags several or NUL (skip_plain8 cannot test those; skip_unflagged8 can)."""
    b = np_int(-1)
    for c in range(128):
        if tab[c] != 0:
            if b >= 0:
                return uint64(0)
            b = c
    for c in range(128, 256):
        if tab[c] == 0:
            return uint64(0)
    return uint64(0x80 if b < 0 else b) * _L8


@njit(inline="always")
def skip_plain8(bp, i, e, probe):
    """skip_unflagged8 for the table `probe` came from (plain_probe, not 0), one load per eight bytes:
    it stops at the same group, the first with a non-ASCII byte or the probe's byte (the zero-byte
    test's false alarms fall only above a true match, in a group it stops at anyway)."""
    while i + 8 <= e:
        x = load_u64(bp, i)
        y = x ^ probe
        if ((x | ((y - _L8) & ~y)) & _H8) != uint64(0):
            break
        i += 8
    return i


@njit(inline="always")
def plain_three_ok(tab):
    """True when skip_plain_three may step over characters with E1..EC, EE, EF leads for the flag
    table `tab`: it flags none of those leads as a possible token start (bit 2)."""
    for c in range(0xE1, 0xF0):
        if (tab[c] & 2) != 0:
            return False
    return True


_EVERY_THIRD = uint64(0x9249249249249249)  # bits 0, 3, ..., 63


@njit(inline="always")
def run3(bp, i, lead):
    """How many of the 64 bytes from bp[i] (inside the buffer) consecutive three-byte characters
    cover from i on, 0..63 in steps of 3: `lead` masks the bytes that may start one (its byte k at
    bit k, as jit.byte_mask64 gives), which needs two continuation bytes after it. Little-endian
    only (byte_mask64's bit order)."""
    cont = byte_mask64(bp, i, 0, 0x80, 0x3F)
    starts = lead & (cont >> uint64(1)) & (cont >> uint64(2))
    return np_int(trailing_zeros(~starts & _EVERY_THIRD))  # bit 63 is never a start: at most 63


@njit(inline="always")
def skip_plain_three(bp, i, e):
    """From i, past the run of well-formed three-byte characters whose lead is E1..EC, EE or EF
    (every continuation byte gives a valid character: no overlong form, no surrogate), 21 at a time
    from byte masks while 64 bytes lie before e (nothing at or past e is read)."""
    if LITTLE_ENDIAN:
        while i + 64 <= e:
            k = run3(bp, i, byte_mask64(bp, i, 0, 0xE1, 0x0E) & ~byte_mask64(bp, i, 0, 0xED, 0))
            i += k
            if k < 63:
                break
    return i


@njit(inline="always")
def valid_utf8(buf, lo, hi):
    """buf[lo:hi] is well-formed UTF-8 (no surrogates, overlongs or values past U+10FFFF)."""
    i = lo
    while i < hi:
        b = buf[i]
        if b < 0x80:
            i += 1
            continue
        if b < 0xC2:
            return False
        if b < 0xE0:
            if i + 1 >= hi or (buf[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
            continue
        if b < 0xF0:
            if i + 2 >= hi or (buf[i + 1] & 0xC0) != 0x80 or (buf[i + 2] & 0xC0) != 0x80:
                return False
            if b == 0xE0 and buf[i + 1] < 0xA0:
                return False
            if b == 0xED and buf[i + 1] >= 0xA0:
                return False
            i += 3
            continue
        if b > 0xF4 or i + 3 >= hi:
            return False
        if (buf[i + 1] & 0xC0) != 0x80 or (buf[i + 2] & 0xC0) != 0x80 or (buf[i + 3] & 0xC0) != 0x80:
            return False
        if b == 0xF0 and buf[i + 1] < 0x90:
            return False
        if b == 0xF4 and buf[i + 1] >= 0x90:
            return False
        i += 4
    return True


@njit(inline="always")
def cp_class(cp, stage1, stage2):
    """The class code (unicode.classes.CLS_*) of code point `cp` (0 <= cp < 0x110000)."""
    return stage2[(np_int(stage1[cp >> 8]) << 8) | (cp & 0xFF)]


@njit(inline="always")
def class_at(buf, i, end, stage1, stage2):
    """(class code, byte length) of the character at buf[i]."""
    cp, n = decode_cp(buf, i, end)
    return cp_class(cp, stage1, stage2), n


# ----------------------------------------------------------------------------------------------
# str -> UTF-8. numba hands a str to a kernel without copying its PEP 393 buffer. Latin-1 text (ASCII
# with a few accents: most European prose): CPython's encoder takes it one character at a time
# (~1.8 GB/s), this one eight bytes at a time (~7 GB/s). Wider strings (CJK, other scripts, emoji)
# only as a batch's rows (str_utf8_rows): one pass over the joined rows instead of an encode call
# per row (1,683 rows of Chinese: 3.7 ms row by row, ~1.2 ms joined).


@intrinsic
def _data8(typingctx, s):
    """Pointer to the PEP 393 buffer of a str (meaningful as bytes when its kind is 1)."""
    if not isinstance(s, types.UnicodeType):  # unicode_type or pyargs.borrowed_str
        return None
    sig = types.CPointer(types.uint8)(s)

    def codegen(context, builder, signature, args):
        st = cgutils.create_struct_proxy(signature.args[0])(context, builder, value=args[0])
        return builder.bitcast(st.data, ir.IntType(8).as_pointer())

    return sig, codegen


str_data8 = _data8  # for the other kernel modules


def _typed_data(width):
    bits = {2: 16, 4: 32}[width]
    dtype = {2: types.uint16, 4: types.uint32}[width]

    @intrinsic
    def data(typingctx, s):
        if not isinstance(s, types.UnicodeType):
            return None
        sig = types.CPointer(dtype)(s)

        def codegen(context, builder, signature, args):
            st = cgutils.create_struct_proxy(signature.args[0])(context, builder, value=args[0])
            return builder.bitcast(st.data, ir.IntType(bits).as_pointer())

        return sig, codegen

    data.__doc__ = f"Pointer to the PEP 393 buffer of a str as uint{bits} code units (meaningful when its kind is {width})."
    return data


_data16 = _typed_data(2)
_data32 = _typed_data(4)


_HIGH8 = uint64(0x8080808080808080)
_ONES8 = uint64(0x0101010101010101)


@njit(inline="always")
def _high_bytes(p, i, e):
    """How many of the bytes p[i:e] are >= 0x80 (eight at a time)."""
    high = np_int(0)
    while i + 8 <= e:
        x = (load_u64(p, i) & _HIGH8) >> uint64(7)
        high += np_int((x * _ONES8) >> uint64(56))  # the sum of the eight 0/1 bytes
        i += 8
    while i < e:
        high += np_int(p[i] >> 7)
        i += 1
    return high


@njit(inline="always")
def _latin1_to_utf8(p, n, out, i=0):
    """Write the UTF-8 of the Latin-1 bytes p[i:n] to out (n - i + _high_bytes(p, i, n) bytes)."""
    op = data_ptr(out)
    j = 0
    while i < n:
        if i + 8 <= n:
            x = load_u64(p, i)
            if (x & _HIGH8) == uint64(0):
                store_u64(op, j, x)
                i += 8
                j += 8
                continue
        c = np_int(p[i])
        if c < 0x80:
            out[j] = c
            j += 1
        else:
            out[j] = 0xC0 | (c >> 6)
            out[j + 1] = 0x80 | (c & 0x3F)
            j += 2
        i += 1


@njit(inline="always")
def _wide_to_utf8(p, i, e, out, j):
    """Write the UTF-8 of the code points p[i:e] to out from j; the new j, or -1 at a surrogate."""
    for k in range(i, e):
        c = np_int(p[k])
        if c < 0x80:
            out[j] = c
            j += 1
        elif c < 0x800:
            out[j] = 0xC0 | (c >> 6)
            out[j + 1] = 0x80 | (c & 0x3F)
            j += 2
        elif c < 0x10000:
            if (c >> 11) == 0x1B:  # D800..DFFF
                return -1
            out[j] = 0xE0 | (c >> 12)
            out[j + 1] = 0x80 | ((c >> 6) & 0x3F)
            out[j + 2] = 0x80 | (c & 0x3F)
            j += 3
        else:
            out[j] = 0xF0 | (c >> 18)
            out[j + 1] = 0x80 | ((c >> 12) & 0x3F)
            out[j + 2] = 0x80 | ((c >> 6) & 0x3F)
            out[j + 3] = 0x80 | (c & 0x3F)
            j += 4
    return j


@njit(inline="always")
def _wide_rows(p, n, width, char_offsets, byte_offsets):
    """str_utf8_rows of the n code points at p (_data16: width 3, _data32: width 4, the most UTF-8
    bytes a code point of that kind takes). One pass into a buffer of the most bytes there can be:
    its pages past the result are never written, so never committed; the result is a view."""
    out = np.empty(width * n, dtype=np.uint8)
    j = 0
    i = 0
    for k in range(len(char_offsets)):
        e = char_offsets[k]
        j = _wide_to_utf8(p, i, e, out, j)
        if j < 0:
            return out[:0], False
        i = e
        byte_offsets[k] = j
    j = _wide_to_utf8(p, i, n, out, j)
    if j < 0:
        return out[:0], False
    return out[:j], True


@njit
def str_utf8(s):
    """(UTF-8 of `s` as a new uint8 array, True) when `s` is stored one byte per character (Latin-1),
    else (empty array, False): for one wider string CPython's encoder is as fast (1.9 MB of Chinese:
    0.85-0.9 ms, _wide_to_utf8 1.0 ms)."""
    if s._kind != 1:
        return np.empty(0, dtype=np.uint8), False
    p = _data8(s)
    n = s._length
    out = np.empty(n + _high_bytes(p, 0, n), dtype=np.uint8)
    _latin1_to_utf8(p, n, out)
    return out, True


@njit
def str_utf8_rows(s, char_offsets, byte_offsets):
    """str_utf8 of a string of rows, and byte_offsets[k] = the UTF-8 length of s[:char_offsets[k]]
    (char_offsets non-decreasing, at most len(s)); byte_offsets is left in an unspecified state when
    the result is False."""
    if s._kind == 2:
        return _wide_rows(_data16(s), s._length, 3, char_offsets, byte_offsets)
    if s._kind == 4:
        return _wide_rows(_data32(s), s._length, 4, char_offsets, byte_offsets)
    p = _data8(s)
    n = s._length
    high = np_int(0)
    i = 0
    for k in range(len(char_offsets)):
        e = char_offsets[k]
        high += _high_bytes(p, i, e)
        i = e
        byte_offsets[k] = e + high
    out = np.empty(n + high + _high_bytes(p, i, n), dtype=np.uint8)
    _latin1_to_utf8(p, n, out)
    return out, True


@njit(inline="always")
def _wide_len(p, lo, hi):
    """UTF-8 bytes of the code points p[lo:hi] (a surrogate counted as the three of U+FFFD)."""
    m = np_int(hi - lo)
    for k in range(lo, hi):
        c = np_int(p[k])
        m += np_int(c >= 0x80) + np_int(c >= 0x800) + np_int(c >= 0x10000)
    return m


@njit
def str_kind(s):
    """The PEP 393 kind of `s`: 1, 2 or 4 bytes a character."""
    return s._kind


@njit
def str_utf8_len(s, lo, hi):
    """The length of the UTF-8 of s[lo:hi], 0 <= lo <= hi <= len(s) (a surrogate counted as the three
    bytes of U+FFFD, whatever it becomes: see str_utf8_into)."""
    if s._kind == 1:
        return hi - lo + _high_bytes(_data8(s), lo, hi)
    if s._kind == 2:
        return _wide_len(_data16(s), lo, hi)
    return _wide_len(_data32(s), lo, hi)


@njit
def str_utf8_into(s, lo, hi, out):
    """Write the UTF-8 of s[lo:hi] to out (str_utf8_len(s, lo, hi) bytes); False, with out partly
    written, when that part holds a surrogate code point (tiktoken's rule for those, via UTF-16, is
    the caller's). The parts of one long text are converted on the cores that encode them."""
    if s._kind == 1:
        _latin1_to_utf8(_data8(s), hi, out, lo)
        return True
    if s._kind == 2:
        return _wide_to_utf8(_data16(s), lo, hi, out, 0) >= 0
    return _wide_to_utf8(_data32(s), lo, hi, out, 0) >= 0
