"""Proven piece boundaries inside a long text: positions where the tiktoken split patterns (and
every pattern kind with a hand-written scanner) cut whatever follows, so the text can be encoded in
parts (the column kernels split long rows there). The rules and their proof: `find_cuts` in
`tltok_jit.columns.arrow`."""

from __future__ import annotations

import numpy as np

from ..unicode.classes import CLS_LL, CLS_LM, CLS_LO, CLS_LT, CLS_LU, CLS_OTHER, CLS_SPACE
from .jit import njit
from .utf8 import cp_class, decode_cp


@njit(inline="always")
def class_before(buf, lo, q, s1, s2):
    """Class of the character that ends at byte q (exclusive), q > lo; lo is the first byte of the text.

    A non-continuation byte always starts a character in the forward decoding (decode_cp never
    consumes one as a continuation), so the character ending at q starts at the last non-continuation
    byte before q when that byte decodes to exactly [s, q); otherwise byte q-1 is a stray continuation
    byte, a one-byte OTHER character."""
    j = q - 1
    b = buf[j]
    if b < 0x80:
        return np.int64(cp_class(np.int64(b), s1, s2))
    s = j
    while s > lo and (buf[s] & 0xC0) == 0x80 and j - s < 3:
        s -= 1
    if (buf[s] & 0xC0) == 0x80:
        return np.int64(CLS_OTHER)
    cp, n = decode_cp(buf, s, q)
    if s + n == q:
        return np.int64(cp_class(cp, s1, s2))
    return np.int64(CLS_OTHER)


@njit(inline="always")
def is_letter(c):
    return c == CLS_LU or c == CLS_LL or c == CLS_LT or c == CLS_LM or c == CLS_LO


@njit
def find_cut(buf, lo, hi, start, stop, s1, s2, rule_nl, rule_sp):
    """First position p in [start, stop) that is a proven piece boundary of the text buf[lo:hi]
    (lo < p < hi), or -1. See `find_cuts` for the rules and their proof."""
    p = max(start, lo + 2)
    stop = min(stop, hi)
    while p < stop:
        b = buf[p]
        if rule_sp and b == 0x20:
            if is_letter(class_before(buf, lo, p, s1, s2)):
                return p
        elif rule_nl and buf[p - 1] == 0x0A and b != 0x2F:
            cp, n = decode_cp(buf, p, hi)
            if cp_class(cp, s1, s2) != CLS_SPACE and class_before(buf, lo, p - 1, s1, s2) != CLS_SPACE:
                return p
        p += 1
    return np.int64(-1)


@njit
def all_cuts(buf, lo, hi, s1, s2, rule_nl, rule_sp):
    out = np.empty(max(hi - lo, 0), dtype=np.int64)
    m = 0
    p = lo
    while True:
        c = find_cut(buf, lo, hi, p, hi, s1, s2, rule_nl, rule_sp)
        if c < 0:
            break
        out[m] = c
        m += 1
        p = c + 1
    return out[:m]
