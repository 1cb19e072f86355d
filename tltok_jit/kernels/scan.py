"""Pretokenization scanners: each split regex written by hand as a loop over character classes.

`next_piece_<pattern>(buf, pos, end, stage1, stage2)` returns the end offset of the match that the
pattern's `find_iter` over the segment `buf[start:end]` produces at `pos` (a match boundary, `pos < end`).
`buf` is a uint8 array of valid UTF-8 (malformed bytes decode as single OTHER characters, see utf8.py);
nothing outside `[pos, end)` is read. Regex `$` is `end` (Rust semantics: end of text only).

Every position is covered by some alternative in these patterns (the last ones are `\\s` / `\\s+` and
`[^\\s\\p{L}\\p{N}]` runs), so looping `pos = next_piece(...)` from the segment start partitions it.

How the alternations reduce to loops (leftmost-first, with backtracking where the pattern allows it):

* `\\s+(?!\\S)` on a maximal whitespace run of n characters that is followed by a non-space: the run
  minus its last character when n >= 2 (that character starts the next piece), else the alternative
  fails and the trailing `\\s` / `\\s+` takes the single character. Followed by end-of-text: the whole run.
* `\\s*[\\r\\n]` and `\\s*[\\r\\n]+`: end just after the LAST CR/LF of the maximal whitespace run.
* o200k letters (not possessive). Let U = [Lu Lt Lm Lo M], W = [Ll Lm Lo M], B = U & W = [Lm Lo M].
  From p, take the maximal U run. Alternative 1 succeeds if the character after it is Ll (then the
  piece runs to the end of the W run starting there), or else if the U run contains a B character
  (U* backtracks to the last B, which W+ then takes alone). Otherwise alternative 2 takes the U run
  (W* is empty there). The optional `[^\\r\\n\\p{L}\\p{N}]` prefix is tried first; a mark is both in the
  prefix class and in U/W, so when alternative 1 fails after a mark prefix it is retried with the
  mark as the word itself, which always succeeds with the mark alone (before alternative 2 is tried).
* `(?i:...)` contractions: Unicode simple case folding, so `'ſ` (U+017F folds to s) counts as `'s`
  in cl100k and o200k (checked against tiktoken); no other code point folds onto d/l/m/r/s/t/v/e.

Layout, for speed and compile time:

* the cores `scan_<pattern>(buf, pos, end, s1, s2, a0)` take raw pointers (`scan_pointers` makes
  them from the arrays): array arguments passed through helpers cost atomic NRT reference-count
  updates at every boundary, which more than halved the scan speed. A kernel that scans many pieces
  should call `scan_pointers` once and then `scanner_slots.call_scanner` in its loop: every
  pattern's core is compiled once, alone, as a C callback reached through a table of addresses
  (scanner_slots), so no kernel compiles a scanner its pattern does not use.
* small helpers are `inline="always"` with an ASCII fast path; the non-ASCII decode + table lookup
  is one shared non-inlined call (`_class_slow`): inlining the decoder at every site made numba's
  compile time grow to minutes for a few percent of speed.
"""

from __future__ import annotations

import ctypes
import os
import sys

import numba
import numpy as np
from numba import int64 as np_int

from ..unicode.classes import (
    CLS_LL,
    CLS_LM,
    CLS_LO,
    CLS_LT,
    CLS_LU,
    CLS_MARK,
    CLS_NUMBER,
    CLS_OTHER,
    CLS_SPACE,
)
from .jit import (
    LITTLE_ENDIAN,
    byte_mask64,
    compile_lock,
    data_ptr,
    load_u64,
    njit,
    trailing_zeros,
)
from .numba_cache import cached_cfunc
from .scanner_slots import N_SCANNERS, SCANNER_SIG, SLOTS, call_scanner
from .utf8 import cp_class, decode_cp, run3

PAT_GPT2 = 0  # r50k_base, p50k_base, gpt2
PAT_CL100K = 1
PAT_O200K = 2
# Hugging Face tokenizer.json pretokenizers (regexes evaluated by Oniguruma there; see scan_llama3 ...)
PAT_LLAMA3 = 3  # Llama-3's Split regex: cl100k without `\s++$`, not possessive
PAT_QWEN2 = 4  # Qwen2 / Qwen2.5: PAT_LLAMA3 with a single `\p{N}`
PAT_TEKKEN = 5  # Mistral-Nemo "Tekken": o200k without the contraction suffix, a single `\p{N}`
PAT_GPT2_DIGITS = 6  # SmolLM2: Digits(individual_digits) then ByteLevel's GPT-2 regex
PAT_WHOLE = 7  # no pretokenizer: the whole segment is one piece

# Class code only present in the table compiled for PAT_GPT2_DIGITS (see tables.RUST_NUMERIC_EXTRA):
# characters HF's Digits step isolates (Rust char::is_numeric, a newer Unicode) that the regex
# (Unicode 16) still sees as OTHER. No other scanner ever sees it.
CLS_DIGIT_EXTRA = 9

# Class-set bit masks: bit c set <=> class code c is in the set.
M_L = (1 << CLS_LU) | (1 << CLS_LL) | (1 << CLS_LT) | (1 << CLS_LM) | (1 << CLS_LO)  # \p{L}
M_N = 1 << CLS_NUMBER  # \p{N}
M_S = 1 << CLS_SPACE  # \s
M_O = (1 << CLS_OTHER) | (1 << CLS_MARK)  # [^\s\p{L}\p{N}]
M_U = (1 << CLS_LU) | (1 << CLS_LT) | (1 << CLS_LM) | (1 << CLS_LO) | (1 << CLS_MARK)  # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
M_W = (1 << CLS_LL) | (1 << CLS_LM) | (1 << CLS_LO) | (1 << CLS_MARK)  # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
M_B = M_U & M_W  # Lm Lo M


_CR = 0x0D
_LF = 0x0A
_SP = 0x20
_APOS = 0x27
_SLASH = 0x2F


# ----------------------------------------------------------------------------------------------
# Shared inline pieces (a new pattern variant is assembled from these). Their `buf`, `s1`, `s2` are
# raw pointers (see `data_ptr`; arrays work too but cost reference counting), `a0` is
# `stage1[0] << 8`: the stage-2 offset of the block that holds the ASCII classes (fast path).
# ----------------------------------------------------------------------------------------------

@njit
def _class_slow(buf, i, end, s1, s2):
    """(class code, byte length) of the (non-ASCII) character at i: decode + two-stage lookup."""
    cp, n = decode_cp(buf, i, end)
    return np_int(cp_class(cp, s1, s2)), np_int(n)


@njit(inline="always")
def _class(buf, i, end, s1, s2, a0):
    """(class code, byte length) of the character at i (i < end), with fast paths for ASCII and for
    well-formed three-byte characters (CJK, Indic and South-East Asian scripts: every character of
    such text; the call to _class_slow was a tenth of the time on Chinese)."""
    b = np_int(buf[i])
    if b < 0x80:
        return np_int(s2[a0 + b]), np_int(1)
    if 0xE0 <= b < 0xF0 and i + 2 < end:
        c1 = np_int(buf[i + 1])
        c2 = np_int(buf[i + 2])
        if (c1 & 0xC0) == 0x80 and (c2 & 0xC0) == 0x80:
            cp = ((b & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F)
            if cp >= 0x800 and (cp < 0xD800 or cp > 0xDFFF):  # else decode_cp's U+FFFD, one byte
                return np_int(s2[(np_int(s1[cp >> 8]) << 8) | (cp & 0xFF)]), np_int(3)
    return _class_slow(buf, i, end, s1, s2)


@njit(inline="always")
def _in(mask, c):
    return ((mask >> c) & 1) != 0


# U+4E00..U+9FFF (the CJK Unified Ideographs block and the rest of lead byte E9): every code point
# is Lo in the class tables (a test holds every pattern's table to it), so a run of them needs no
# table look-up. Their UTF-8: E4 B8..BF xx, E5..E9 xx xx.
_HAN_FIRST = 0xE4
_HAN_LAST = 0xE9


@njit
def _han_run(buf, i, end):
    """End of the run of U+4E00..U+9FFF characters from i (i itself if none starts there): 21
    characters at a time from byte masks (utf8.run3) while 64 bytes lie before `end`, then one at a
    time. Nothing at or past `end` is read."""
    if LITTLE_ENDIAN:
        while i + 64 <= end:
            k = run3(buf, i, byte_mask64(buf, i, 0, 0xE5, 4) | (
                byte_mask64(buf, i, 0, 0xE4, 0) & (byte_mask64(buf, i, 0, 0xB8, 7) >> np.uint64(1))))
            i += k
            if k < 63:
                return i
    while i + 3 <= end:
        b = np_int(buf[i])
        c1 = np_int(buf[i + 1])
        if not ((_HAN_FIRST < b <= _HAN_LAST or (b == _HAN_FIRST and c1 >= 0xB8))
                and (c1 & 0xC0) == 0x80 and (np_int(buf[i + 2]) & 0xC0) == 0x80):
            break
        i += 3
    return i


@njit(inline="always")
def _run(buf, i, end, s1, s2, a0, mask):
    """End of the maximal run starting at i of characters whose class is in `mask` (possessive X*)."""
    while i < end:
        if _in(mask, CLS_LO) and _HAN_FIRST <= buf[i] <= _HAN_LAST:
            j = _han_run(buf, i, end)
            if j > i:
                i = j
                continue
        c, n = _class(buf, i, end, s1, s2, a0)
        if not _in(mask, c):
            break
        i += n
    return i


@njit(inline="always")
def _run_max(buf, i, end, s1, s2, a0, mask, k):
    """End of the run from i of at most k characters in `mask` (X{0,k}, greedy or possessive)."""
    while k > 0 and i < end:
        c, n = _class(buf, i, end, s1, s2, a0)
        if not _in(mask, c):
            break
        i += n
        k -= 1
    return i


@njit(inline="always")
def _crlf_tail(buf, i, end):
    """End of the run of CR/LF from i (`[\\r\\n]*`)."""
    while i < end and (buf[i] == _CR or buf[i] == _LF):
        i += 1
    return i


@njit(inline="always")
def _crlf_slash_tail(buf, i, end):
    """End of the run of CR/LF/'/' from i (`[\\r\\n/]*`)."""
    while i < end:
        b = buf[i]
        if b != _CR and b != _LF and b != _SLASH:
            break
        i += 1
    return i


@njit(inline="always")
def _contraction_cs(buf, i, end):
    """Byte length of `'(?:[sdmt]|ll|ve|re)` (case-sensitive) at i, or 0. GPT-2 style."""
    if i + 1 >= end or buf[i] != _APOS:
        return 0
    b1 = buf[i + 1]
    if b1 == 0x73 or b1 == 0x64 or b1 == 0x6D or b1 == 0x74:  # s d m t
        return 2
    if i + 2 < end:
        b2 = buf[i + 2]
        if (b1 == 0x6C and b2 == 0x6C) or (b1 == 0x76 and b2 == 0x65) or (b1 == 0x72 and b2 == 0x65):
            return 3  # ll ve re
    return 0


@njit(inline="always")
def _contraction_ci(buf, i, end):
    """Byte length of `'(?i:[sdmt]|ll|ve|re)` at i, or 0 (also `(?i:'s|'t|'re|'ve|'m|'ll|'d)`).

    Rust regex `(?i)` is Unicode simple case folding: `s` also matches U+017F LATIN SMALL LETTER
    LONG S (UTF-8 C5 BF); no other non-ASCII code point folds onto these letters.
    """
    if i + 1 >= end or buf[i] != _APOS:
        return 0
    b1 = buf[i + 1]
    f1 = b1 | 0x20  # ASCII lower case (only letters can compare equal below)
    if f1 == 0x73 or f1 == 0x64 or f1 == 0x6D or f1 == 0x74:  # s d m t
        return 2
    if i + 2 < end:
        b2 = buf[i + 2]
        if b1 == 0xC5 and b2 == 0xBF:  # ſ
            return 3
        f2 = b2 | 0x20
        if (f1 == 0x6C and f2 == 0x6C) or (f1 == 0x76 and f2 == 0x65) or (f1 == 0x72 and f2 == 0x65):
            return 3  # ll ve re
    return 0


@njit(inline="always")
def _ws_scan(buf, pos, end, s1, s2, a0):
    """For a whitespace character at pos: (run_end, last_start, nl_end) of the maximal `\\s` run
    [pos, run_end): the start of its last character, and the end of its last CR/LF (-1 if none)."""
    i = pos
    last = pos
    nl = np_int(-1)
    while i < end:
        b = buf[i]
        if b < 0x80:
            if s2[a0 + b] != CLS_SPACE:
                break
            last = i
            i += 1
            if b == _LF or b == _CR:
                nl = i
        else:
            c, n = _class_slow(buf, i, end, s1, s2)
            if c != CLS_SPACE:
                break
            last = i
            i += n
    return i, last, nl


@njit(inline="always")
def _ws_lookahead(pos, run_end, last, end):
    """`\\s+(?!\\S)|\\s` (or `|\\s+`) on a run that is not followed by end of text handled elsewhere:
    all but the last character when the run has >= 2 characters and a non-space follows."""
    if run_end == end:
        return run_end  # (?!\S) holds at end of text
    if last > pos:
        return last
    return run_end  # one character: the single-\s fallback


@njit(inline="always")
def _cased_word(buf, p, end, s1, s2, a0):
    """o200k/Tekken letters from p, without prefix or contraction:
    (end of `U*W+` or -1, end of `U+W*` or -1), U/W as in the module docstring."""
    i = p
    last_b = np_int(-1)
    while i < end:
        if _HAN_FIRST <= buf[i] <= _HAN_LAST:
            j = _han_run(buf, i, end)
            if j > i:  # Lo: in U and in B
                i = j
                last_b = j
                continue
        c, n = _class(buf, i, end, s1, s2, a0)
        if not _in(M_U, c):
            if c == CLS_LL:  # U* ends right before an Ll: W+ from there, greedy
                e = _run(buf, i + n, end, s1, s2, a0, M_W)
                return e, e
            break
        if _in(M_B, c):
            last_b = i + n
        i += n
    a2 = i if i > p else np_int(-1)
    return last_b, a2


@njit(inline="always")
def _o200k_word(buf, pos, end, s1, s2, a0, c0, n0):
    """The two cased-letter alternatives of o200k/Tekken at pos (first char class c0, n0 bytes),
    without the contraction suffix; -1 if neither matches."""
    if _in(M_L, c0):
        a1, a2 = _cased_word(buf, pos, end, s1, s2, a0)
        return a1 if a1 >= 0 else a2
    # c0 is in [^\r\n\p{L}\p{N}] (caller checked): try it as the optional prefix first.
    p = pos + n0
    a1 = np_int(-1)
    a2 = np_int(-1)
    if p < end:
        a1, a2 = _cased_word(buf, p, end, s1, s2, a0)
    if a1 < 0 and c0 == CLS_MARK:
        a1 = p  # alternative 1 without the prefix: the mark alone is the word
    return a1 if a1 >= 0 else a2


# ----------------------------------------------------------------------------------------------
# ASCII fast paths: the common pieces of English and code (` word`, `Word`, `, `) decided with byte
# compares and, for letter runs, eight bytes at a time. They answer only when every character they
# looked at, and the one that ended each run, is ASCII (or the segment ends); otherwise they return
# -1 and the general scanner decides, so they never change a result.
# ----------------------------------------------------------------------------------------------

_H8 = np.uint64(0x8080808080808080)
_LO7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_ADD_A = np.uint64(0x1F1F1F1F1F1F1F1F)  # y + this has bit 7 set <=> y >= 0x61 ('a'), for y < 0x80
_ADD_Z = np.uint64(0x0505050505050505)  # ... <=> y >= 0x7B (past 'z')
_CASE = np.uint64(0x2020202020202020)


@njit(inline="always")
def _letters8(buf, i, end, fold):
    """End of the run from i of ASCII lower-case letters (all ASCII letters if `fold`)."""
    if LITTLE_ENDIAN:
        while i + 8 <= end:
            x = load_u64(buf, i)
            y = x & _LO7
            if fold:
                y |= _CASE  # A-Z -> a-z; no other byte lands in a-z
            low = (y + _ADD_A) & ~(y + _ADD_Z) & ~x & _H8
            stop = ~low & _H8
            if stop != np.uint64(0):
                return i + (np_int(trailing_zeros(stop)) >> 3)
            i += 8
    while i < end:
        b = np_int(buf[i])
        if fold:
            b = b | 0x20
        if b < 0x61 or b > 0x7A:
            break
        i += 1
    return i


@njit(inline="always")
def _ascii_done(buf, i, end):
    """True when a run that stopped at i was ended by an ASCII byte or the segment end."""
    return i >= end or buf[i] < 0x80


@njit(inline="always")
def _other_run_ascii(buf, i, end, s2, a0):
    """End of the run from i of ASCII characters of class OTHER."""
    while i < end:
        b = buf[i]
        if b >= 0x80 or s2[a0 + b] != CLS_OTHER:
            break
        i += 1
    return i


@njit(inline="always")
def _o200k_ascii(buf, pos, end, s2, a0, b):
    """scan_o200k for a piece starting with the ASCII byte b, or -1 (undecided)."""
    c = np_int(s2[a0 + b])
    p = pos
    if c == CLS_OTHER or (c == CLS_SPACE and b != _CR and b != _LF):
        p = pos + 1  # the optional [^\r\n\p{L}\p{N}] prefix
    elif c != CLS_LU and c != CLS_LL:
        return np_int(-1)
    i = p
    while i < end and 0x41 <= buf[i] <= 0x5A:  # [A-Z]* (ASCII has no Lt/Lm/Lo/M)
        i += 1
    if i < end:
        d = buf[i]
        if 0x61 <= d <= 0x7A:  # U* W+
            e = _letters8(buf, i + 1, end, False)
            if not _ascii_done(buf, e, end):
                return np_int(-1)
            return e + _contraction_ci(buf, e, end)
        if d >= 0x80:
            return np_int(-1)
    if i > p:  # U+ W* with W* empty
        return i + _contraction_ci(buf, i, end)
    # no word: ` ?[^\s\p{L}\p{N}]+[\r\n/]*` for an ASCII punctuation run
    if c == CLS_OTHER:
        e = _other_run_ascii(buf, pos + 1, end, s2, a0)
    elif b == _SP and p < end and buf[p] < 0x80 and s2[a0 + buf[p]] == CLS_OTHER:
        e = _other_run_ascii(buf, p + 1, end, s2, a0)
    else:
        return np_int(-1)
    if not _ascii_done(buf, e, end):
        return np_int(-1)
    return _crlf_slash_tail(buf, e, end)


@njit(inline="always")
def ascii_word_end(buf, pos, end, any_prefix, cased):
    """End of the piece at pos when it is an ASCII word, the commonest piece of English and code: a
    prefix, then a run of ASCII letters ended by `end` or by an ASCII byte that is not a letter;
    else -1. The prefix is an optional space, or with `any_prefix` (the patterns whose letter
    alternative starts with `[^\\r\\n\\p{L}\\p{N}]?`: every one but GPT-2's two) any ASCII byte but a
    letter, a digit, CR, LF and the apostrophe. The run is every letter (`\\p{L}+`, LETTERS_ANY), or
    (o200k's and Tekken's `[Lu..]*[Ll..]+|[Lu..]+[Ll..]*`) upper-case letters then lower-case ones
    (`HTTPServer`, `get` of `getValue`, `CHAPTER`), with o200k's contraction suffix when one
    follows (`don't`). Every scanner (PAT_* below PAT_WHOLE) ends such a piece there: its
    letter alternatives come before the others. The piece loop tries this inline before its
    indirect call to the pattern's scanner (the call alone costs ~6 ns a piece)."""
    p = pos
    b = buf[p]
    if b == _SP or (any_prefix and b < 0x80 and b != _CR and b != _LF and b != _APOS
                    and not (0x30 <= b <= 0x39) and not (0x61 <= (b | 0x20) <= 0x7A)):
        p += 1
        if p >= end:
            return np_int(-1)
    if cased != LETTERS_ANY:
        u = p
        while u < end and 0x41 <= buf[u] <= 0x5A:
            u += 1
        e = _letters8(buf, u, end, False)
        if e == p:
            return np_int(-1)
        if e < end:
            t = buf[e]
            if t >= 0x80:
                return np_int(-1)
            if t == _APOS and cased == LETTERS_CASED_SUFFIX:
                k = _contraction_end(buf, e, end, True)
                return k if k >= 0 else (e if k == -1 else np_int(-1))
        return e
    if not 0x61 <= (buf[p] | 0x20) <= 0x7A:
        return np_int(-1)
    e = _letters8(buf, p + 1, end, True)
    if e < end and buf[e] >= 0x80:
        return np_int(-1)
    return e


@njit(inline="always")
def _visible_ascii(b):
    return 0x21 <= b <= 0x7E


@njit(inline="always")
def _punct_ascii(b):
    """ASCII punctuation and symbols: visible, not a letter or a digit."""
    return _visible_ascii(b) and not (0x30 <= b <= 0x39) and not (0x61 <= (b | 0x20) <= 0x7A)


@njit(inline="always")
def _white_ascii(b):
    return b == _SP or b == _LF or b == _CR or b == 0x09


# what the punctuation alternative of a pattern adds after its run (ascii_piece_end's `tail`), and
# whether an LF run is a piece of its own (`\s*[\r\n]+` / `\s*[\r\n]` before `\s+(?!\S)`)
TAIL_NONE = 0  # GPT-2's ` ?[^\s\p{L}\p{N}]++`
TAIL_CRLF = 1  # cl100k, Llama-3, Qwen2: `[\r\n]*`
TAIL_CRLF_SLASH = 2  # o200k, Tekken: `[\r\n/]*`

# how a pattern's letter alternatives take ASCII words (ascii_word_end's `cased`)
LETTERS_ANY = 0  # `\p{L}+` (GPT-2, cl100k, Llama-3, Qwen2)
LETTERS_CASED = 1  # Tekken's `[Lu..]*[Ll..]+|[Lu..]+[Ll..]*`
LETTERS_CASED_SUFFIX = 2  # o200k's: the same, then `(?i:'s|'t|'re|'ve|'m|'ll|'d)?`

# how a pattern takes ASCII digits (ascii_piece_end's `digits`)
DIGITS_RUN = 0  # GPT-2's ` ?\p{N}+`: the whole run, after an optional space
DIGITS_ONE = 1  # Qwen2's and Tekken's `\p{N}`, SmolLM2's digit split: one digit a piece
DIGITS_THREE = 3  # cl100k's, o200k's, Llama-3's `\p{N}{1,3}`


@njit(inline="always")
def ascii_rules(kind):
    """(any_prefix, TAIL_*, LETTERS_*, DIGITS_*) of a pattern kind below PAT_WHOLE: the arguments of
    ascii_piece_end after the position, read off each pattern (and SmolLM2's digit split)."""
    if kind == PAT_GPT2:
        return False, TAIL_NONE, LETTERS_ANY, DIGITS_RUN
    if kind == PAT_GPT2_DIGITS:
        return False, TAIL_NONE, LETTERS_ANY, DIGITS_ONE
    if kind == PAT_O200K:
        return True, TAIL_CRLF_SLASH, LETTERS_CASED_SUFFIX, DIGITS_THREE
    if kind == PAT_TEKKEN:
        return True, TAIL_CRLF_SLASH, LETTERS_CASED, DIGITS_ONE
    if kind == PAT_QWEN2:
        return True, TAIL_CRLF, LETTERS_ANY, DIGITS_ONE
    return True, TAIL_CRLF, LETTERS_ANY, DIGITS_THREE  # cl100k, Llama-3


# The rarer ASCII pieces are decided by calls (each compiled once) rather than inline in every
# piece loop: inlined, they made the first compile several seconds longer for no measurable speed.


@njit
def _contraction_end(buf, pos, end, any_case):
    """End of the contraction `'s|'t|'re|'ve|'m|'ll|'d` at pos (an apostrophe), in either case with
    `any_case`; -1 when there is none; -2 when a non-ASCII character decides (with `any_case`:
    case folding matches U+017F to `s`)."""
    if pos + 1 >= end:
        return np_int(-1)
    c = np_int(buf[pos + 1])
    if c >= 0x80:
        return np_int(-2) if any_case else np_int(-1)
    if any_case:
        c |= 0x20
    if c == 0x73 or c == 0x74 or c == 0x6D or c == 0x64:  # s t m d
        return pos + 2
    if (c == 0x72 or c == 0x76 or c == 0x6C) and pos + 2 < end:  # re ve ll
        d = np_int(buf[pos + 2])
        if d >= 0x80:
            return np_int(-2) if any_case else np_int(-1)
        if any_case:
            d |= 0x20
        if d == (0x6C if c == 0x6C else 0x65):
            return pos + 3
    return np_int(-1)


@njit
def _digits_end(buf, pos, end, digits):
    """ascii_piece_end of a piece that starts with an ASCII digit, or a space and one."""
    if buf[pos] == _SP:
        if digits != DIGITS_RUN:
            return pos + 1  # `\\s+`: no other alternative takes a space before a digit
        pos += 1
    if digits == DIGITS_ONE:
        return pos + 1
    lim = end if digits == DIGITS_RUN else min(end, pos + 3)
    i = pos + 1
    while i < lim and 0x30 <= buf[i] <= 0x39:
        i += 1
    if digits == DIGITS_THREE and i == pos + 3:
        return i
    if i < end and buf[i] >= 0x80:
        return np_int(-1)  # a digit of another script may continue the run
    return i


@njit
def _gpt2_space_run_end(buf, pos, end):
    """GPT-2's `\\s+(?!\\S)` on a run of two or more spaces, tabs, CRs and LFs before a visible ASCII
    byte other than a digit: all but its last character (which goes with what follows, or is a
    piece of its own); else -1 (SmolLM2's digit split would end the regex's text at a digit)."""
    i = pos
    while i < end and _white_ascii(buf[i]):
        i += 1
    if i - pos >= 2 and i < end and _visible_ascii(buf[i]) and not (0x30 <= buf[i] <= 0x39):
        return i - 1
    return np_int(-1)


@njit(inline="always")
def ascii_piece_end(buf, pos, end, any_prefix, tail, cased, digits):
    """ascii_word_end, else the end of other common ASCII pieces that every scanner of the kind
    (any_prefix, tail, cased, digits: see ascii_word_end, TAIL_*, LETTERS_* and DIGITS_*) ends at
    the same byte; else -1:
    - a contraction at an apostrophe (`(?i:'s|'t|'re|'ve|'m|'ll|'d)`, GPT-2's in lower case), in the
      patterns that take it first (all but o200k's and Tekken's);
    - digits (`\\p{N}{1,3}`, `\\p{N}` or GPT-2's ` ?\\p{N}+`) ended by an ASCII byte or `end`, and a
      space before a digit (`\\s+` alone, but in GPT-2's patterns);
    - an optional space and a run of punctuation (` ?[^\\s\\p{L}\\p{N}]+`), ended by a space, a
      tab, VT, FF, a digit, `end`, a letter (unless the run is one character without the space and
      the pattern takes it as a word's prefix), or CR/LF (with the pattern's tail, `[\\r\\n]*` or
      `[\\r\\n/]*`, when it has one): the piece of code's `._`, `):` + LF, `, `;
    - LF before a visible ASCII byte (`\\s*[\\r\\n]+`, `\\s*[\\r\\n]` or GPT-2's `\\s`: that LF alone);
      with a tail, a run of LF before spaces and a visible ASCII byte (indented code): the LF run;
      without one (GPT-2), a run of whitespace before a visible ASCII byte: all of it but its last
      character (_gpt2_space_run_end);
    - two or more spaces before a visible ASCII byte other than a digit (indentation): all but the
      last space (`\\s+(?!\\S)`; the last one goes with what follows; SmolLM2's digit split would
      end the regex's text at a digit and keep the run whole)."""
    e = ascii_word_end(buf, pos, end, any_prefix, cased)
    if e >= 0 or pos + 1 >= end:
        return e
    b = buf[pos]
    c = buf[pos + 1]
    if b == _APOS and cased == LETTERS_ANY:  # the contractions come first (GPT-2's in lower case only)
        k = _contraction_end(buf, pos, end, tail != TAIL_NONE)
        if k >= 0:
            return k
    if 0x30 <= b <= 0x39 or (b == _SP and 0x30 <= c <= 0x39):
        return _digits_end(buf, pos, end, digits)
    if tail == TAIL_NONE and _white_ascii(b) and _white_ascii(c):
        return _gpt2_space_run_end(buf, pos, end)
    if b == _LF:
        if _visible_ascii(c):
            return pos + 1
        if tail == TAIL_NONE:
            return np_int(-1)
        i = pos + 1
        while i < end and buf[i] == _LF:
            i += 1
        j = i
        while j < end and buf[j] == _SP:
            j += 1
        # the whitespace run ends at j with no CR/LF after the LF run: its last CR/LF ends the piece
        if j < end and _visible_ascii(buf[j]):
            return i
        return np_int(-1)
    p = pos
    if b == _SP:
        if c == _SP:
            i = pos + 2
            while i < end and buf[i] == _SP:
                i += 1
            if i < end and _visible_ascii(buf[i]) and not (0x30 <= buf[i] <= 0x39):
                return i - 1
            return np_int(-1)
        p = pos + 1
        b = c
    if not _punct_ascii(b):
        return np_int(-1)
    i = p + 1
    while i < end and _punct_ascii(buf[i]):
        i += 1
    if i >= end:
        return i
    t = buf[i]
    if t == _SP or t == 0x09 or t == 0x0B or t == 0x0C or 0x30 <= t <= 0x39:
        return i
    if 0x61 <= (t | 0x20) <= 0x7A:
        # one character: a word's prefix in most patterns, a contraction's start in GPT-2's
        return i if i - pos >= 2 or not (any_prefix or b == _APOS) else np_int(-1)
    if t == _LF or t == _CR:
        if tail == TAIL_NONE:
            return i
        while i < end and (buf[i] == _LF or buf[i] == _CR or (tail == TAIL_CRLF_SLASH and buf[i] == _SLASH)):
            i += 1
        return i
    return np_int(-1)  # a control byte or a non-ASCII character: it may continue the run


@njit(inline="always")
def _letters_ascii(buf, pos, end, s2, a0, b):
    """The letter alternative on an ASCII piece, or -1 (undecided): GPT-2's ` ?\\p{L}++` (b a space or
    a letter) and cl100k's / Llama-3's `[^\\r\\n\\p{L}\\p{N}]?\\p{L}+` (b not CR, LF or a digit)."""
    c = np_int(s2[a0 + b])
    p = pos
    if c != CLS_LU and c != CLS_LL:
        p = pos + 1
        if p >= end:
            return np_int(-1)
        d = buf[p] | 0x20
        if d < 0x61 or d > 0x7A:
            return np_int(-1)
    e = _letters8(buf, p + 1, end, True)
    if not _ascii_done(buf, e, end):
        return np_int(-1)
    return e


# ----------------------------------------------------------------------------------------------
# The scanner cores (pointer arguments, see scan_pointers) and the array-level entry points
# ----------------------------------------------------------------------------------------------

@njit(inline="always")
def scan_gpt2(buf, pos, end, s1, s2, a0):
    """r50k/p50k/gpt2: `'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s`"""
    b = buf[pos]
    if b == _APOS:
        k = _contraction_cs(buf, pos, end)
        if k > 0:
            return pos + k
    if b == _SP or 0x61 <= (b | 0x20) <= 0x7A:
        r = _letters_ascii(buf, pos, end, s2, a0, b)
        if r >= 0:
            return r
    c, n = _class(buf, pos, end, s1, s2, a0)
    if c == CLS_SPACE:
        if b == _SP and pos + 1 < end:
            c2, n2 = _class(buf, pos + 1, end, s1, s2, a0)
            if c2 != CLS_SPACE:
                if _in(M_L, c2):
                    return _run(buf, pos + 1 + n2, end, s1, s2, a0, M_L)
                if c2 == CLS_NUMBER:
                    return _run(buf, pos + 1 + n2, end, s1, s2, a0, M_N)
                return _run(buf, pos + 1 + n2, end, s1, s2, a0, M_O)
        run_end, last, nl = _ws_scan(buf, pos, end, s1, s2, a0)
        return _ws_lookahead(pos, run_end, last, end)  # \s++$ | \s+(?!\S) | \s
    if _in(M_L, c):
        return _run(buf, pos + n, end, s1, s2, a0, M_L)
    if c == CLS_NUMBER:
        return _run(buf, pos + n, end, s1, s2, a0, M_N)
    return _run(buf, pos + n, end, s1, s2, a0, M_O)


@njit(inline="always")
def scan_cl100k(buf, pos, end, s1, s2, a0):
    """cl100k: `'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+|
    ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s`"""
    b = buf[pos]
    if b == _APOS:
        k = _contraction_ci(buf, pos, end)
        if k > 0:
            return pos + k
    if b < 0x80 and b != _CR and b != _LF and not 0x30 <= b <= 0x39:
        r = _letters_ascii(buf, pos, end, s2, a0, b)
        if r >= 0:
            return r
    c, n = _class(buf, pos, end, s1, s2, a0)
    if _in(M_L, c):
        return _run(buf, pos + n, end, s1, s2, a0, M_L)
    if c == CLS_NUMBER:
        return _run_max(buf, pos + n, end, s1, s2, a0, M_N, 2)
    p = pos + n
    if b != _CR and b != _LF and p < end:
        # c0 is in [^\r\n\p{L}\p{N}]: the prefix of [^\r\n\p{L}\p{N}]?+\p{L}++ (possessive: no retry without it)
        c2, n2 = _class(buf, p, end, s1, s2, a0)
        if _in(M_L, c2):
            return _run(buf, p + n2, end, s1, s2, a0, M_L)
        if c == CLS_SPACE:
            if b == _SP and _in(M_O, c2):  # ' ?[^\s\p{L}\p{N}]++[\r\n]*+' with the space
                return _crlf_tail(buf, _run(buf, p + n2, end, s1, s2, a0, M_O), end)
        else:
            return _crlf_tail(buf, _run(buf, p, end, s1, s2, a0, M_O), end)
    elif c != CLS_SPACE:
        return p  # a lone OTHER/mark at the end of the segment
    run_end, last, nl = _ws_scan(buf, pos, end, s1, s2, a0)
    if run_end == end:
        return end  # \s++$
    if nl >= 0:
        return nl  # \s*[\r\n]
    return _ws_lookahead(pos, run_end, last, end)  # \s+(?!\S) | \s


@njit(inline="always")
def scan_o200k(buf, pos, end, s1, s2, a0):
    """o200k: `[^\\r\\n\\p{L}\\p{N}]?[ULtLmLoM]*[LlLmLoM]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
    [^\\r\\n\\p{L}\\p{N}]?[ULtLmLoM]+[LlLmLoM]*(?i:...)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|
    \\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`"""
    b = buf[pos]
    if b < 0x80:
        r = _o200k_ascii(buf, pos, end, s2, a0, b)
        if r >= 0:
            return r
    c, n = _class(buf, pos, end, s1, s2, a0)
    if c == CLS_NUMBER:
        return _run_max(buf, pos + n, end, s1, s2, a0, M_N, 2)
    if b != _CR and b != _LF:
        w = _o200k_word(buf, pos, end, s1, s2, a0, c, n)
        if w >= 0:
            return w + _contraction_ci(buf, w, end)
    if c == CLS_SPACE:
        if b == _SP and pos + 1 < end:
            c2, n2 = _class(buf, pos + 1, end, s1, s2, a0)
            if _in(M_O, c2):
                return _crlf_slash_tail(buf, _run(buf, pos + 1 + n2, end, s1, s2, a0, M_O), end)
        run_end, last, nl = _ws_scan(buf, pos, end, s1, s2, a0)
        if nl >= 0:
            return nl  # \s*[\r\n]+
        return _ws_lookahead(pos, run_end, last, end)  # \s+(?!\S) | \s+
    # OTHER (marks and letters were taken by the word alternatives)
    return _crlf_slash_tail(buf, _run(buf, pos + n, end, s1, s2, a0, M_O), end)


# Hugging Face Split regexes. HF compiles them with Oniguruma, whose `\\s` is White_Space and whose
# \\p{..} classes are Unicode 16 in tokenizers 0.23 (checked code point by code point against
# `pre_tokenize_str`), i.e. exactly our table. Not possessive, but on these alternations backtracking
# never changes the match: `[^\\r\\n\\p{L}\\p{N}]?\\p{L}+` retried without the prefix starts at a
# non-letter; `\\s*[\\r\\n]+` backtracks to the last CR/LF of the whitespace run, like cl100k's
# `\\s*[\\r\\n]`. Onig's `(?i)` folds `ſ` onto `s` too (`'ſt` -> `'ſ` `t`).

@njit(inline="always")
def _llama3_core(buf, pos, end, s1, s2, a0, max_digits):
    """`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,max_digits}|
    ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+` (cl100k without `\\s++$`: a whitespace
    run that reaches the end of the segment is still cut after its last CR/LF)."""
    b = buf[pos]
    if b == _APOS:
        k = _contraction_ci(buf, pos, end)
        if k > 0:
            return pos + k
    if b < 0x80 and b != _CR and b != _LF and not 0x30 <= b <= 0x39:
        r = _letters_ascii(buf, pos, end, s2, a0, b)
        if r >= 0:
            return r
    c, n = _class(buf, pos, end, s1, s2, a0)
    if _in(M_L, c):
        return _run(buf, pos + n, end, s1, s2, a0, M_L)
    if c == CLS_NUMBER:
        return _run_max(buf, pos + n, end, s1, s2, a0, M_N, max_digits - 1)
    p = pos + n
    if b != _CR and b != _LF and p < end:
        c2, n2 = _class(buf, p, end, s1, s2, a0)
        if _in(M_L, c2):
            return _run(buf, p + n2, end, s1, s2, a0, M_L)
        if c == CLS_SPACE:
            if b == _SP and _in(M_O, c2):
                return _crlf_tail(buf, _run(buf, p + n2, end, s1, s2, a0, M_O), end)
        else:
            return _crlf_tail(buf, _run(buf, p, end, s1, s2, a0, M_O), end)
    elif c != CLS_SPACE:
        return p
    run_end, last, nl = _ws_scan(buf, pos, end, s1, s2, a0)
    if nl >= 0:
        return nl  # \\s*[\\r\\n]+
    return _ws_lookahead(pos, run_end, last, end)  # \\s+(?!\\S) | \\s+


@njit(inline="always")
def scan_llama3(buf, pos, end, s1, s2, a0):
    """Llama-3 tokenizer.json: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|
    ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`"""
    return _llama3_core(buf, pos, end, s1, s2, a0, 3)


@njit(inline="always")
def scan_qwen2(buf, pos, end, s1, s2, a0):
    """Qwen2 / Qwen2.5 tokenizer.json: Llama-3's regex with `\\p{N}` (one digit per piece)."""
    return _llama3_core(buf, pos, end, s1, s2, a0, 1)


@njit(inline="always")
def scan_tekken(buf, pos, end, s1, s2, a0):
    """Mistral-Nemo "Tekken": `[^\\r\\n\\p{L}\\p{N}]?[ULtLmLoM]*[LlLmLoM]+|[^\\r\\n\\p{L}\\p{N}]?[ULtLmLoM]+[LlLmLoM]*|
    \\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+` (o200k without contractions)."""
    b = buf[pos]
    c, n = _class(buf, pos, end, s1, s2, a0)
    if c == CLS_NUMBER:
        return pos + n
    if b != _CR and b != _LF:
        w = _o200k_word(buf, pos, end, s1, s2, a0, c, n)
        if w >= 0:
            return w
    if c == CLS_SPACE:
        if b == _SP and pos + 1 < end:
            c2, n2 = _class(buf, pos + 1, end, s1, s2, a0)
            if _in(M_O, c2):
                return _crlf_slash_tail(buf, _run(buf, pos + 1 + n2, end, s1, s2, a0, M_O), end)
        run_end, last, nl = _ws_scan(buf, pos, end, s1, s2, a0)
        if nl >= 0:
            return nl
        return _ws_lookahead(pos, run_end, last, end)
    return _crlf_slash_tail(buf, _run(buf, pos + n, end, s1, s2, a0, M_O), end)


M_DIG = (1 << CLS_NUMBER) | (1 << CLS_DIGIT_EXTRA)  # what HF's Digits step isolates


@njit(inline="always")
def scan_gpt2_digits(buf, pos, end, s1, s2, a0):
    """SmolLM2: Digits(individual_digits=true) cuts every numeric character into its own piece, then
    ByteLevel's GPT-2 regex `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`
    splits what lies between them: a digit ends the regex's text, so ` 1` is ` ` + `1` and a
    whitespace run before a digit is kept whole."""
    c, n = _class(buf, pos, end, s1, s2, a0)
    if _in(M_DIG, c):
        return pos + n
    b = buf[pos]
    if b == _APOS:
        k = _contraction_cs(buf, pos, end)
        if k > 0:
            return pos + k
    if c == CLS_SPACE:
        if b == _SP and pos + 1 < end:
            c2, n2 = _class(buf, pos + 1, end, s1, s2, a0)
            if c2 != CLS_SPACE and not _in(M_DIG, c2):
                if _in(M_L, c2):
                    return _run(buf, pos + 1 + n2, end, s1, s2, a0, M_L)
                return _run(buf, pos + 1 + n2, end, s1, s2, a0, M_O)
        run_end, last, nl = _ws_scan(buf, pos, end, s1, s2, a0)
        if run_end < end:
            c3, n3 = _class(buf, run_end, end, s1, s2, a0)
            if _in(M_DIG, c3):
                return run_end  # the digit ends this regex segment: (?!\\S) holds
        return _ws_lookahead(pos, run_end, last, end)
    if _in(M_L, c):
        return _run(buf, pos + n, end, s1, s2, a0, M_L)
    return _run(buf, pos + n, end, s1, s2, a0, M_O)


def _entry_gpt2(buf, pos, end, s1, s2, a0):
    return scan_gpt2(buf, pos, end, s1, s2, a0)


def _entry_cl100k(buf, pos, end, s1, s2, a0):
    return scan_cl100k(buf, pos, end, s1, s2, a0)


def _entry_o200k(buf, pos, end, s1, s2, a0):
    return scan_o200k(buf, pos, end, s1, s2, a0)


def _entry_llama3(buf, pos, end, s1, s2, a0):
    return scan_llama3(buf, pos, end, s1, s2, a0)


def _entry_qwen2(buf, pos, end, s1, s2, a0):
    return scan_qwen2(buf, pos, end, s1, s2, a0)


def _entry_tekken(buf, pos, end, s1, s2, a0):
    return scan_tekken(buf, pos, end, s1, s2, a0)


def _entry_gpt2_digits(buf, pos, end, s1, s2, a0):
    return scan_gpt2_digits(buf, pos, end, s1, s2, a0)


# The scanner_slots C callbacks, by PAT_* (each compiles its pattern's core alone, inlined: as a call
# of its own, the core's prologue and the callback around it were a fifth of r50k's scanning of
# Devanagari, where every piece takes the callback)
SCANNER_ENTRIES = (_entry_gpt2, _entry_cl100k, _entry_o200k, _entry_llama3, _entry_qwen2, _entry_tekken,
                   _entry_gpt2_digits)
assert len(SCANNER_ENTRIES) == N_SCANNERS == PAT_WHOLE


@njit(inline="always")
def scan_pointers(buf, stage1, stage2):
    """(buf, s1, s2, a0) for the cores from the arrays (which must outlive their use)."""
    return data_ptr(buf), data_ptr(stage1), data_ptr(stage2), np_int(stage1[0]) << 8


@njit
def next_piece_gpt2(buf, pos, end, stage1, stage2):
    """End of the r50k/p50k/gpt2 piece that starts at pos (pos < end)."""
    p, s1, s2, a0 = scan_pointers(buf, stage1, stage2)
    return scan_gpt2(p, np_int(pos), np_int(end), s1, s2, a0)


@njit
def next_piece_cl100k(buf, pos, end, stage1, stage2):
    """End of the cl100k piece that starts at pos (pos < end)."""
    p, s1, s2, a0 = scan_pointers(buf, stage1, stage2)
    return scan_cl100k(p, np_int(pos), np_int(end), s1, s2, a0)


@njit
def next_piece_o200k(buf, pos, end, stage1, stage2):
    """End of the o200k piece that starts at pos (pos < end)."""
    p, s1, s2, a0 = scan_pointers(buf, stage1, stage2)
    return scan_o200k(p, np_int(pos), np_int(end), s1, s2, a0)


@njit
def next_piece(kind, buf, pos, end, stage1, stage2):
    """End of the piece of pattern `kind` (PAT_*) that starts at pos; -1 for an unknown kind."""
    p, s1, s2, a0 = scan_pointers(buf, stage1, stage2)
    return call_scanner(kind, p, np_int(pos), np_int(end), s1, s2, a0)


@njit
def _count_loop(kind, p, pos, end, s1, s2, a0):
    """Number of pieces in [pos, end); -1 for a kind with no scanner."""
    if not 0 <= kind <= PAT_WHOLE:
        return np_int(-1)
    cnt = np_int(0)
    while pos < end:
        pos = call_scanner(kind, p, pos, end, s1, s2, a0)
        cnt += 1
    return cnt


@njit
def count_pieces(kind, buf, start, end, stage1, stage2):
    """Number of pieces of buf[start:end] (the scanning benchmark kernel); -1 for an unknown kind."""
    p, s1, s2, a0 = scan_pointers(buf, stage1, stage2)
    return _count_loop(kind, p, np_int(start), np_int(end), s1, s2, a0)


@njit
def piece_ends(kind, buf, start, end, stage1, stage2):
    """int64 array of the end offsets of the pieces of buf[start:end], in order."""
    p, s1, s2, a0 = scan_pointers(buf, stage1, stage2)
    n = _count_loop(kind, p, np_int(start), np_int(end), s1, s2, a0)
    out = np.empty(max(n, 0), dtype=np.int64)
    pos = np_int(start)
    for j in range(n):
        pos = call_scanner(kind, p, pos, np_int(end), s1, s2, a0)
        out[j] = pos
    return out


# ----------------------------------------------------------------------------------------------
# Loading the scanners into their slots (scanner_slots)
# ----------------------------------------------------------------------------------------------

_C_SIG = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                          ctypes.c_void_p, ctypes.c_int64)  # SCANNER_SIG
_loaded: dict[int, object] = {}  # kind -> its numba CFunc (which keeps the machine code alive)


def load_scanner(kind: int) -> int:
    """Compile (or load from the kernel cache) the scanner of pattern `kind` and put its address in
    its slot; returns the address (0 for PAT_WHOLE, which needs none). Safe to call from several
    threads and processes."""
    from numba.core.compiler_lock import global_compiler_lock

    kind = int(kind)
    if kind == PAT_WHOLE:
        return 0
    if not 0 <= kind < N_SCANNERS:
        raise ValueError(f"pattern kind {kind} has no scanner (0 <= kind < {N_SCANNERS})")
    cf = _loaded.get(kind)
    if cf is None:
        # numba's (reentrant) compiler lock orders the threads of this process, the file lock the processes
        with global_compiler_lock, compile_lock(SCANNER_ENTRIES[kind]):
            cf = _loaded.get(kind)
            if cf is None:
                cf = cached_cfunc(SCANNER_SIG, SCANNER_ENTRIES[kind], nopython=True, boundscheck=False)
                _loaded[kind] = cf
                SLOTS[kind] = cf.address
    return cf.address


def loaded_scanners() -> list[int]:
    """The pattern kinds whose scanner this process has loaded (or compiled)."""
    return sorted(_loaded)


def _first_call(kind: int):
    """A slot's content until its scanner is loaded: load it, then forward the call (one trip through
    Python per pattern and process; the front ends load their pattern's scanner with the tables)."""

    def first_call(buf, pos, end, s1, s2, a0):
        try:
            addr = load_scanner(kind)
        except BaseException as e:  # noqa: BLE001 - nothing can be raised through the kernel that called this
            print(f"tltok_jit: could not compile the scanner of pattern kind {kind}: {e!r}", file=sys.stderr,
                  flush=True)
            os._exit(70)
        return _C_SIG(addr)(buf, pos, end, s1, s2, a0)

    return _C_SIG(first_call)


_FIRST_CALLS = [_first_call(k) for k in range(N_SCANNERS)]  # kept: compiled code may call them any time
for _k, _cb in enumerate(_FIRST_CALLS):
    if SLOTS[_k] == 0:
        SLOTS[_k] = ctypes.cast(_cb, ctypes.c_void_p).value
