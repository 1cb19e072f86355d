"""The short whole-token table (hashing.fill_short_table / short_lookup): every token of 1..16 bytes
is found with its id, any other byte string is not, at the table's usual load and when it is nearly
full (long runs of full pairs of slots, which the lookup must walk past)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from tltok_jit.kernels.hashing import (SHORT, SHORT_WORDS, aligned_zeros, fill_short_table, pack_short, pack_short_at,
                                      short_hash, short_lookup)
from tltok_jit.kernels.jit import data_ptr


@njit
def _lookup(tab, buf, start, n):
    k0, k1 = pack_short(buf, start, n)
    return short_lookup(k0, k1, n, short_hash(k0, k1, n), tab)


def _table(tokens: list[bytes], slots: int):
    tok_bytes = np.frombuffer(b"".join(tokens) or b"\0", dtype=np.uint8)
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(t) for t in tokens])
    tab = aligned_zeros(SHORT_WORDS * slots, np.uint64)
    fill_short_table(tab, tok_bytes, offsets, np.ones(len(tokens), dtype=np.bool_))
    return tab


def _find(tab, piece: bytes) -> int:
    return int(_lookup(tab, np.frombuffer(piece, dtype=np.uint8), 0, len(piece)))


_pieces = st.binary(min_size=1, max_size=SHORT)


@settings(max_examples=150, deadline=None)
@given(tokens=st.lists(_pieces, min_size=1, max_size=300, unique=True), others=st.lists(_pieces, max_size=50),
       full=st.booleans())
def test_every_token_found_and_nothing_else(tokens, others, full):
    slots = 2
    while slots < (len(tokens) + 1 if full else 2 * len(tokens)):  # full: as few free slots as allowed
        slots *= 2
    tab = _table(tokens, slots)
    for i, t in enumerate(tokens):
        assert _find(tab, t) == i, t
    ids = {t: i for i, t in enumerate(tokens)}
    for o in others:
        assert _find(tab, o) == ids.get(o, -1), o
    # a string that differs from a token only in length (the packed words are zero-padded)
    for t in tokens[:20]:
        if len(t) < SHORT:
            assert _find(tab, t + b"\0") == ids.get(t + b"\0", -1)


@njit
def _pack_both(buf, start, n):
    a0, a1 = pack_short(buf, start, n)
    b0, b1 = pack_short_at(buf, data_ptr(buf), start, n)
    return a0, a1, b0, b1


@settings(max_examples=30, deadline=None)
@given(data=st.binary(min_size=40, max_size=40))
def test_pack_short_at_equals_pack_short(data):
    """The two-load packing (no branch on n) against the byte loop: every start and length, the
    starts within 16 bytes of the end (the byte loop's fallback) included."""
    buf = np.frombuffer(data, dtype=np.uint8)
    for start in range(len(data)):
        for n in range(1, min(SHORT, len(data) - start) + 1):
            a0, a1, b0, b1 = _pack_both(buf, start, n)
            assert (a0, a1) == (b0, b1), (start, n)
