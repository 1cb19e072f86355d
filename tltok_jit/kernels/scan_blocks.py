"""Piece ends of 64 plain-ASCII bytes at once, from byte-class masks: the piece loop's front scanner.

Most pieces of English and code are ASCII words, punctuation, spaces and LFs, and where such a piece
ends depends only on the classes of the bytes around it. `block_piece_ends` classifies the 64 bytes
from a piece start with vector compares (jit.byte_mask64), derives every piece end among them with
mask algebra, and the piece loop pops them one bit at a time: no branch per piece on what kind of
piece comes next (the scalar scanners took ~9.5 ns a piece on English, the pops ~3 ns). Anything the
rules below do not cover (another byte, the bytes past it, the bytes past the text's end) is left to
the scalar scanners, which are also the reference the tests hold this module to, for every pattern
kind.

Byte classes: L letters (U the upper-case ones), S the space, P the other visible ASCII bytes but
digits, N the LF, D digits (not in GPT-2's patterns, whose ` ?\\p{N}+` and SmolLM2's digit split
take a space before digits), E = L | P | D. The apostrophe is P except where a contraction may
start (after a letter, digit or LF, or at the piece start, and before a letter: `'s`, `'ll`, ... a
piece of its own or a word's suffix, by pattern). Those apostrophes, CR, tab, control bytes and
non-ASCII bytes are not covered. A piece ends before byte i when
(x -> y: byte i-1 of class x, byte i of class y; the byte before the block ends a piece):
- L or D -> S, N, P; P -> S; N -> L, P; D or N -> L; any -> D;
- P -> L unless the pattern lets one such byte prefix a word (`[^\\r\\n\\p{L}\\p{N}]?\\p{L}+`, all but
  GPT-2's) and that P itself starts a piece (after L, D or N; after S or P it ends a punctuation run);
- cased patterns (o200k, Tekken): lower-case -> upper-case letter;
- digits in groups of three from a run's start (`\\p{N}{1,3}`), or one each (`\\p{N}`);
- a run of spaces (GPT-2: of spaces and LFs) before E: before its last byte (`\\s+(?!\\S)`);
- patterns with `[\\r\\n]*` after punctuation and `\\s*[\\r\\n]+`: P -> N continues the piece (the
  tail), and so do N -> N and S -> N; N -> S ends one when the LF run is such a tail, or when the
  spaces run on to E (before another LF, `\\s*[\\r\\n]+` takes them with it); GPT-2: P -> N ends one;
- o200k's tail also takes `/`: a slash after an LF is not covered.
The rules that read the byte after an end find none before an uncovered byte; only ends whose
next byte is covered are given all the same.
"""

from __future__ import annotations

import numpy as np
from numba import uint64

from .jit import LITTLE_ENDIAN, byte_mask64, njit, trailing_zeros
from .scan import DIGITS_THREE, LETTERS_ANY, TAIL_CRLF_SLASH, TAIL_NONE

BLOCK = 64  # bytes classified at once; the caller guarantees they lie inside the buffer
_ONE = uint64(1)
_SKIP_OTHER_SCRIPT = 256  # bytes left to the scalar scanners after a non-ASCII byte stops a block


@njit(inline="always")
def _reach_down(r, g):
    """r extended through runs of g towards bit 0: bit i set when g holds bits i..j-1 and r bit j."""
    for k in (1, 2, 4, 8, 16, 32):
        r |= g & (r >> uint64(k))
        g &= g >> uint64(k)
    return r


@njit(inline="always")
def _digit_groups(d):
    """(ends before digits, digits not covered) for `\\p{N}{1,3}`: a piece starts at each run's start
    and three, six, nine and twelve digits on; a run of sixteen or more is left to the scanners."""
    start = d & ~(d << _ONE)
    third = d & (d << _ONE) & (d << uint64(2))  # a digit after two digits
    g = start
    groups = start
    for _ in range(4):
        g = (g << uint64(3)) & third
        groups |= g
    return groups, (g << uint64(3)) & third


@njit(inline="always")
def block_piece_ends(bp, q, end, any_prefix, tail, cased, digits):
    """(mask, skip) for the text bp[q:end] from its piece start q (scan.ascii_rules gives the
    pattern's rules), read 64 bytes at a time: the caller guarantees bp[q:q + 64] is inside the
    buffer (bytes from `end` on count as uncovered). Bit i (1 <= i <= 62) of mask is set when a
    piece ends at q + i; every piece up to the highest bit is given. mask 0: none; leave the next
    `skip` bytes to the scalar scanners."""
    if not LITTLE_ENDIAN:
        return uint64(0), np.int64(1 << 62)
    # the bytes from `end` on are in no class: uncovered, as the rules require of what they cannot read
    inside = (_ONE << uint64(end - q)) - _ONE if end - q < BLOCK else ~uint64(0)
    L = byte_mask64(bp, q, 0x20, 0x61, 25) & inside
    S = byte_mask64(bp, q, 0, 0x20, 0) & inside
    N = byte_mask64(bp, q, 0, 0x0A, 0) & inside
    digit = byte_mask64(bp, q, 0, 0x30, 9) & inside
    P = byte_mask64(bp, q, 0, 0x21, 0x7E - 0x21) & inside & ~L & ~digit
    D = digit if tail != TAIL_NONE else uint64(0)
    # an apostrophe is punctuation unless it may begin a contraction: after a letter, digit or LF
    # (or at q) and before a letter
    apos = byte_mask64(bp, q, 0, 0x27, 0) & inside
    uncovered = ~(L | S | P | N | D) | (apos & ((L << _ONE) | (digit << _ONE) | (N << _ONE) | _ONE) & (L >> _ONE))
    if tail == TAIL_CRLF_SLASH:
        uncovered |= byte_mask64(bp, q, 0, 0x2F, 0) & (N << _ONE)
    if digits == DIGITS_THREE:
        d_ends, long_run = _digit_groups(D)
        uncovered |= long_run
    else:
        d_ends = D
    u = np.int64(trailing_zeros(uncovered)) if uncovered != uint64(0) else np.int64(64)
    if u < 3:
        high = u < 64 and (byte_mask64(bp, q, 0, 0x80, 0x7F) >> uint64(u)) & _ONE != uint64(0)
        return uint64(0), np.int64(_SKIP_OTHER_SCRIPT) if high else u + 1
    E = L | P | D
    Lb = (L << _ONE) | _ONE  # (the byte before q ends a piece: it counts as a letter here)
    Db = D << _ONE
    Pb = P << _ONE
    Nb = N << _ONE
    p_start = P & (Lb | Db | Nb)
    p_to_l = Pb & L & ~(p_start << _ONE) if any_prefix else Pb & L
    ends = ((Lb | Db) & (S | N)) | (Pb & S) | ((Lb | Db | Nb) & P) | p_to_l | ((Db | Nb) & L) | d_ends
    if tail == TAIL_NONE:
        W = S | N
        ends |= (Pb & N) | (W & (W << _ONE) & (E >> _ONE))
    else:
        spaces_to_e = _reach_down(S & (E >> _ONE), S)
        tail_lf = N & ~(N + (N & ~Nb & Pb))  # the LF runs right after punctuation
        ends |= (Nb & spaces_to_e) | ((tail_lf << _ONE) & S) | (S & (S << _ONE) & (E >> _ONE))
    if cased != LETTERS_ANY:
        U = byte_mask64(bp, q, 0, 0x41, 25) & inside
        ends |= ((L & ~U) << _ONE) & U
    mask = ends & ((_ONE << uint64(u - 1)) - _ONE) & ~_ONE
    return mask, u + 1
