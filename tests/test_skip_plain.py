"""utf8.skip_plain8 (one load per eight bytes) against skip_unflagged8 (a table look-up per byte), the
validation pass's skip over plain ASCII in Arrow columns (kernels/columns._scan_check)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tltok_jit.kernels.jit import data_ptr, njit
from tltok_jit.kernels.utf8 import plain_probe, skip_plain8, skip_unflagged8


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
