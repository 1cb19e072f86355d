"""Runs of CJK ideographs in the scanners (scan._han_run): 21 characters at a time from byte masks.

The skip takes U+4E00..U+9FFF as letters (Lo) without looking them up, so every pattern's class
table must say so; and the pieces must be the same whether a run is skipped in 64-byte blocks, one
character at a time near a segment's end, or stopped by a malformed byte. Malformed bytes decode as
one OTHER character each (utf8.decode_cp), exactly as an ASCII `#` would, so a buffer with its
malformed bytes replaced by `#` is the reference for the buffer itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import get_ours, get_tiktoken_oracle
from test_scanners import KIND_IDS, KINDS, agrees, ref_pieces, tiktoken_pieces
from tltok_jit.kernels import scan
from tltok_jit.kernels.utf8 import decode_cp
from tltok_jit.tables.bpe import PATTERN_CODES, class_tables_for
from tltok_jit.unicode.classes import CLS_LO

ALL_KINDS = list(range(scan.PAT_WHOLE))  # every kind with a scanner
_TABLES = {code: class_tables_for(name)[:2] for name, code in PATTERN_CODES.items() if code in ALL_KINDS}

# The block's first and last ideographs, its neighbours (U+4DC0..U+4DFF are symbols, U+A000 is Yi),
# Extension A, CJK punctuation and full-width forms, letters of the classes the patterns tell apart.
HAN = ["\u4e00", "\u4e2d", "\u6587", "\u9fa5", "\u9fff", "\u5000", "\u4fff"]
NEAR = ["\u4dc0", "\u4dff", "\u4db5", "\u3400", "\ua000", "\u3002", "\uff0c", "\u300c", "\uff21", "\uff41",
        "\u3005", "\u30fc", "\u3042", "\ua490"]
OTHER = ["a", "A", "Ab", "'s", " ", "\n", "1234", ",", "\u0301", "\u00e9", "\u0915\u093f", "\U0001f600"]
# malformed: a truncated ideograph, a stray continuation byte, a lead byte before ASCII, an overlong form
MALFORMED = [b"\xe4\xb8", b"\xe5", b"\x80", b"\xe9\xbf", b"\xe4\xb8a", b"\xe0\x80\x80", b"\xed\xa0\x80"]


def _ends(kind: int, data: bytes, end: int | None = None) -> list[int]:
    s1, s2 = _TABLES[kind]
    buf = np.frombuffer(data, dtype=np.uint8)
    return scan.piece_ends(kind, buf, 0, len(data) if end is None else end, s1, s2).tolist()


def _replaced(data: bytes) -> bytes:
    """data with every byte that decode_cp takes as malformed (U+FFFD, one byte) replaced by `#`."""
    buf = np.frombuffer(data, dtype=np.uint8)
    out = bytearray()
    i = 0
    while i < len(data):
        cp, n = decode_cp(buf, i, len(data))
        out += b"#" if (n == 1 and data[i] >= 0x80) else data[i:i + n]
        i += n
    return bytes(out)


def _han_heavy(max_size: int):
    run = st.lists(st.sampled_from(HAN), min_size=1, max_size=60).map("".join)
    return st.lists(st.one_of(run, run, st.sampled_from(NEAR), st.sampled_from(OTHER)), max_size=max_size).map(
        "".join)


def test_every_table_says_lo():
    cps = np.arange(0x4E00, 0xA000)
    for kind, (s1, s2) in _TABLES.items():
        cls = s2[s1[cps >> 8].astype(np.int64) * 256 + (cps & 255)]
        assert (cls == CLS_LO).all(), kind


@pytest.mark.parametrize("kind", ALL_KINDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(_han_heavy(6).map(lambda s: s.encode("utf-8")), st.sampled_from(MALFORMED)),
                      max_size=8),
       cut=st.integers(0, 400))
def test_malformed_and_cut_runs_as_hash(kind, parts, cut):
    data = b"".join(parts)
    end = min(cut, len(data))
    ref = _replaced(data[:end])  # a segment end is the end of the text to the scanner
    assert len(ref) == end
    assert _ends(kind, data, end) == _ends(kind, ref)


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_han_heavy(5))
def test_han_runs_vs_tiktoken_pieces(kind, text):
    text = text.encode("utf-8")[:200].decode("utf-8", "ignore")
    assert _pieces(kind, text) == tiktoken_pieces(kind, text)


def _pieces(kind: int, text: str) -> list[str]:
    data = text.encode("utf-8")
    out, p = [], 0
    for e in _ends(kind, data):
        out.append(data[p:e].decode("utf-8"))
        p = e
    return out


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_runs_across_blocks(kind):
    """Runs of 1..70 ideographs after prefixes of 0..70 bytes, then each neighbour of the range: every
    block offset and every way a run ends, against the regex module."""
    for n in range(1, 71, 3):
        for pre in range(0, 71, 7):
            for tail in ["a", "A", "", "\n"] + NEAR:
                text = "x" * pre + " " + "\u4e2d" * n + tail + "\u6587" * 30
                assert _pieces(kind, text) == ref_pieces(kind, text), (n, pre, tail)
                data = text.encode("utf-8")
                assert _ends(kind, data + b"\xe4\xb8", len(data)) == _ends(kind, data)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_segment_end_inside_a_run(kind):
    """A segment that ends at every byte of a long run: nothing at or past its end counts."""
    data = ("\u4e2d" * 45).encode("utf-8")
    for end in range(len(data) + 1):
        assert _ends(kind, data, end) == _ends(kind, _replaced(data[:end])), end


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_han_heavy(12))
def test_han_runs_vs_regex_module(kind, text):
    assert agrees(text)
    assert _pieces(kind, text) == ref_pieces(kind, text)


def test_long_run_ids_vs_tiktoken():
    text = ("\u4e2d\u6587" * 200 + "\uff0c" + "\u9fff\u4e00" * 40 + "ab" + "\u4e2d" * 100 + "\n") * 3
    for name in ("o200k_base", "cl100k_base", "r50k_base"):
        assert get_ours(name).encode_ordinary(text) == get_tiktoken_oracle(name).encode_ordinary(text), name
