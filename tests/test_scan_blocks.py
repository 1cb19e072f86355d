"""The 64-byte block scanner (tltok_jit.kernels.scan_blocks) against the scalar scanners.

The piece loop takes piece ends from `block_piece_ends` where it gives them and calls the pattern's
scanner otherwise; `_ends_with_blocks` below is that loop without the look-ups. Its piece ends must
equal the scanner's alone (scan.piece_ends, itself checked against the regex and tiktoken in
test_scanners.py) for every pattern kind, on random text built from the byte classes the rules
distinguish and on the real corpora. The ids of the whole engine are checked against tiktoken on
the same kind of text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit, uint64

from conftest import SHARED, get_ours, get_tiktoken_oracle, missing_reason
from tltok_jit.kernels import scan
from tltok_jit.kernels.jit import byte_mask64, data_ptr, trailing_zeros
from tltok_jit.kernels.scan_blocks import BLOCK, block_piece_ends
from tltok_jit.kernels.scanner_slots import call_scanner
from tltok_jit.unicode.classes import class_tables

STAGE1, STAGE2, _ = class_tables()
KINDS = list(range(scan.PAT_WHOLE))  # every pattern kind with a scanner
CORPORA = SHARED / "corpora"


@njit
def _ends_with_blocks(kind, buf, start, end, stage1, stage2, out):
    """Piece ends of buf[start:end] as the piece loop finds them (encode.encode_ordinary_spans): from
    blocks where they give them, else from the scanner. Writes out[:n]; returns (n, pieces from blocks)."""
    bp, s1p, s2p, a0 = scan.scan_pointers(buf, stage1, stage2)
    any_prefix, tail, cased, digits = scan.ascii_rules(kind)
    q = np.int64(start)
    n = 0
    from_blocks = 0
    ends = uint64(0)
    block_q = q
    next_block = q
    while q < end:
        if ends == 0 and q >= next_block and q + BLOCK <= len(buf):
            ends, skip = block_piece_ends(bp, q, end, any_prefix, tail, cased, digits)
            block_q = q
            if ends == 0:
                next_block = q + skip
        if ends != 0:
            qe = block_q + np.int64(trailing_zeros(ends))
            ends &= ends - uint64(1)
            from_blocks += 1
        else:
            qe = call_scanner(kind, bp, q, np.int64(end), s1p, s2p, a0)
        out[n] = qe
        n += 1
        q = qe
    return n, from_blocks


def _check(kind: int, data: bytes, start: int = 0, end: int | None = None) -> int:
    """Assert the two scans agree on data[start:end]; returns how many pieces came from blocks."""
    buf = np.frombuffer(data, dtype=np.uint8)
    end = len(data) if end is None else end
    want = scan.piece_ends(kind, buf, start, end, STAGE1, STAGE2)
    out = np.empty(max(end - start, 1), dtype=np.int64)
    n, from_blocks = _ends_with_blocks(kind, buf, start, end, STAGE1, STAGE2, out)
    got = out[:n]
    if not np.array_equal(got, want):
        i = int(np.argmax(got[:min(len(got), len(want))] != want[:min(len(got), len(want))]))
        lo = int(want[i - 2]) if i >= 2 else start
        raise AssertionError(f"kind {kind}: piece {i} differs near {data[lo:lo + 40]!r}: "
                             f"blocks end it at {int(got[i]) - lo}, the scanner at {int(want[i]) - lo} (from {lo})")
    return from_blocks


# Fragments of every class the rules tell apart, and of the ones they leave to the scanners.
_COVERED = ["a", "b", "Z", "Ab", "aB", "word", "HTTPServer", " ", "  ", "    ", "\n", "\n\n", " \n", "\n ",
            ",", ".", "(", ")", "/", "-", '"', ".\n", "/\n", "1", "23", "456", "1234567", "12345678901234567",
            "'", "''", "'(", "')"]
_OTHER = ["'s", "'ll", "'D", "'Re", "'x", "\t", "\r", "\r\n", "\u00e9", "\u4e2d", "\x00", "\x7f", "\u00a0", "\u2019", "\n/"]
_text = st.lists(st.one_of(st.sampled_from(_COVERED), st.sampled_from(_COVERED), st.sampled_from(_OTHER)),
                 min_size=20, max_size=160).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text, cut=st.integers(0, 70), kind=st.sampled_from(KINDS))
def test_blocks_match_the_scanner(text, cut, kind):
    data = text.encode("utf-8")
    _check(kind, data)
    # a span that starts and ends inside the buffer: blocks read past its end, and must end its
    # pieces as the scanner does on the span alone
    start, end = min(cut % 8, len(data)), max(min(cut % 8, len(data)), len(data) - cut)
    _check(kind, data, start, end)


# Each rule's edge, in the middle of covered text, scanned from every offset of the first 16 bytes
# (so that it falls at each place of a block).
_EDGES = ["word-\n \n\nword", "word\n \n\nword", "word.\n  word", "word\n   word", "a  b", "a  (b", "a (b",
          "a((b", "x(b", "getValue HTTPServer aBC ABc", "x 12345678 y", "x  5", "a\n/b", "a-\n/b", "a,\nb",
          "a\n\nb", "a \nb", "1234567890123456789 x", "a  \n  b", "a.  \n\n  b", "5(b", "5 b", "\n(b", "a\n5",
          "it's", "IT'S", "don't", "we're", "it'sx", "a'b", "a' b", "a'.", "a'\n", "a'1", "('x')", "x = 's'",
          "1's", "1'st", "1'.", "\n's", "\n'st", "\n'(", " 's", " 'st", " '(", ".'s", ".'st", "''s", "a''b",
          "a'st", "a'LLx", "'", "(5", "a5", "a 5", "a  55", "\n 5", "\n5 ", ".5x", "5a", "55 5"]


@pytest.mark.parametrize("edge", _EDGES)
def test_blocks_at_each_rule(edge):
    pad = "lorem Ipsum, dolor sit amet. " * 3
    data = (pad + edge + " " + pad).encode()
    cut = len((pad + edge).encode())  # a span that ends right after the edge, the buffer going on
    for kind in KINDS:
        for start in range(16):
            _check(kind, data, start)
            _check(kind, data, start, cut)
            _check(kind, data, start, cut - 1)


@pytest.mark.parametrize("kind", KINDS)
def test_blocks_on_the_corpora(kind):
    if not CORPORA.is_dir():
        pytest.skip(missing_reason(CORPORA))
    files = sorted(CORPORA.glob("*.txt")) + sorted((CORPORA / "udhr").glob("*.txt"))[::7]
    code = "".join(Path(m.__file__).read_text(encoding="utf-8") for m in (scan, np, pytest))
    for data in [f.read_bytes()[:300_000] for f in files] + [code.encode("utf-8")]:
        _check(kind, data)


def test_blocks_take_most_english_and_code():
    """Fails when the piece loop's blocks are switched off or cover little (their point)."""
    if not (CORPORA / "english-war-and-peace.txt").is_file():
        pytest.skip(missing_reason(CORPORA / "english-war-and-peace.txt"))
    english = (CORPORA / "english-war-and-peace.txt").read_bytes()[:400_000]
    code = Path(scan.__file__).read_bytes()
    for kind in (scan.PAT_O200K, scan.PAT_CL100K, scan.PAT_GPT2):
        for data, share in ((english, 0.9), (code, 0.75)):
            pieces = len(scan.piece_ends(kind, np.frombuffer(data, np.uint8), 0, len(data), STAGE1, STAGE2))
            assert _check(kind, data) >= share * pieces


@njit
def _mask_at(buf, i, fold, lo, span):
    return byte_mask64(data_ptr(buf), i, fold, lo, span)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=64, max_size=80), fold=st.sampled_from([0, 0x20]), lo=st.integers(0, 255),
       span=st.integers(0, 255))
def test_byte_mask64(data, fold, lo, span):
    buf = np.frombuffer(data, dtype=np.uint8)
    i = len(data) - 64
    want = sum(1 << k for k, b in enumerate(data[i:i + 64]) if ((b | fold) - lo) % 256 <= span)
    assert int(_mask_at(buf, i, fold, lo, span)) == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text, name=st.sampled_from(["o200k_base", "cl100k_base", "r50k_base"]))
def test_ids_on_block_text_match_tiktoken(text, name):
    assert get_ours(name).encode_ordinary(text) == get_tiktoken_oracle(name).encode_ordinary(text)
