"""The validation pass's skips in Arrow columns (kernels/columns._scan_check): utf8.skip_plain8 (one
load per eight bytes) against skip_unflagged8 (a table look-up per byte) over plain ASCII, and
utf8.skip_plain_three over runs of three-byte characters against a reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import get_ours
from tltok_jit.kernels.jit import data_ptr, njit
from tltok_jit.kernels.utf8 import plain_probe, plain_three_ok, skip_plain8, skip_plain_three, skip_unflagged8


@njit
def _plain(buf, i, e, probe):
    return skip_plain8(data_ptr(buf), i, e, probe)


def _table(ascii_flagged: str, non_ascii: bool = True) -> np.ndarray:
    tab = np.zeros(256, dtype=np.uint8)
    if non_ascii:
        tab[0x80:] = 1
    for c in ascii_flagged:
        tab[ord(c)] |= 2
    return tab


def test_probe_names_the_one_flagged_ascii_byte():
    assert plain_probe(_table("<")) == 0x3C3C3C3C3C3C3C3C
    assert plain_probe(_table("")) == 0x8080808080808080
    assert plain_probe(_table("<[")) == 0  # several: the table's own skip
    assert plain_probe(_table("\x00")) == 0  # NUL: its broadcast would be 0
    assert plain_probe(_table("<", non_ascii=False)) == 0  # a non-ASCII byte it does not flag


data = st.lists(st.sampled_from([0x61, 0x20, 0x3C, 0x7C, 0x00, 0x3B, 0x80, 0xC3, 0xA9, 0xFF, 0x01]), max_size=90)


@settings(max_examples=400, deadline=None)
@given(raw=data, flagged=st.sampled_from(["", "<", "\x01", "a", ";"]), i=st.integers(0, 10), cut=st.integers(0, 10))
def test_stops_where_the_table_skip_stops(raw, flagged, i, cut):
    tab = _table(flagged)
    probe = plain_probe(tab)
    assert probe != 0
    buf = np.array(raw + [0x61] * 16, dtype=np.uint8)
    e = max(i, len(raw) + 16 - cut)
    got = _plain(buf, i, e, np.uint64(probe))
    assert got == skip_unflagged8(tab, buf, i, e)
    assert not tab[buf[i:got]].any()  # (and so never past a flagged byte)


# ------------------------------------------------------------------------------------------------
# utf8.skip_plain_three: runs of three-byte characters (CJK, Indic, ...) 64 bytes at a time
# ------------------------------------------------------------------------------------------------

@njit
def _three(buf, i, e):
    return skip_plain_three(data_ptr(buf), i, e)


def _plain_three_at(data: bytes, i: int, e: int) -> bool:
    return (i + 3 <= e and (0xE1 <= data[i] <= 0xEC or data[i] in (0xEE, 0xEF))
            and all(0x80 <= b <= 0xBF for b in data[i + 1:i + 3]))


# characters of every lead the skip takes, the leads it leaves (E0, ED: range checks; ASCII, two- and
# four-byte characters), and malformed bytes: a truncated character, a stray continuation byte, a
# surrogate and an overlong form
_PARTS = ["中", "文", "ก", "\u1000", "\uffef", "\ue000", "a", "\n", "é", "😀", "\u0800", "\ud7ff"]
_BAD = [b"\xe4\xb8", b"\x80", b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xef"]
three_data = st.lists(st.one_of(st.sampled_from(_PARTS).map(lambda c: c.encode("utf-8")), st.sampled_from(_BAD),
                                st.just("中".encode("utf-8") * 30)), max_size=30).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(data=three_data, i=st.integers(0, 6), cut=st.integers(0, 70))
def test_three_stops_at_the_run_end_or_the_lookahead(data, i, cut):
    e = max(i, len(data) - cut)
    buf = np.frombuffer(data + b"\xe4\xb8\xad" * 30, dtype=np.uint8)  # bytes past e that must not count
    j = _three(buf, i, e)
    assert i <= j <= e and (j - i) % 3 == 0
    assert all(_plain_three_at(data, k, e) for k in range(i, j, 3))
    assert not _plain_three_at(data, j, e) or j + 64 > e  # the run's end, or too near e to look


def test_three_ok_refuses_a_flagged_lead():
    assert plain_three_ok(_table("<"))
    tab = _table("<")
    tab[0xE4] |= 2  # an added token starts with a character of lead E4
    assert not plain_three_ok(tab)


def test_columns_of_three_byte_text_with_malformed_bytes():
    """encode_arrow's validation over rows of long runs of three-byte characters, malformed bytes at
    every offset of a 64-byte block: errors='replace' gives the ids of Python's own replacement,
    errors='strict' names the first malformed byte."""
    import pyarrow as pa

    enc = get_ours("o200k_base")
    run = "中文字ก\u1000".encode("utf-8") * 30
    for bad in _BAD:
        for at in range(0, 100, 3):
            row = run[:at] + bad + run[at:]
            out = enc.encode_arrow(pa.array([run, row, run], type=pa.binary()))
            assert out.to_pylist()[1] == enc.encode_ordinary(row.decode("utf-8", "replace"))
            with pytest.raises(ValueError, match=rf"row 1: invalid UTF-8 at byte {at}\b"):
                enc.encode_arrow(pa.array([run, row], type=pa.binary()), errors="strict")
