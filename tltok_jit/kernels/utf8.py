"""UTF-8 decoding and character classes inside kernels.

`decode_cp` never reads outside [i, end): a truncated or invalid sequence decodes as one byte of
class OTHER (code point 0xFFFD), so a malformed input cannot make a scanner run off its buffer.
"""

from __future__ import annotations

from numba import int64 as np_int

from .jit import njit


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
def cp_class(cp, stage1, stage2):
    """The class code (unicode.classes.CLS_*) of code point `cp` (0 <= cp < 0x110000)."""
    return stage2[(np_int(stage1[cp >> 8]) << 8) | (cp & 0xFF)]


@njit(inline="always")
def class_at(buf, i, end, stage1, stage2):
    """(class code, byte length) of the character at buf[i]."""
    cp, n = decode_cp(buf, i, end)
    return cp_class(cp, stage1, stage2), n


