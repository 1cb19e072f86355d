"""The short piece cache (kernels/cache.py): entries of up to SHORT_IDS ids, and entries of pieces whose
ids are their own bytes' (BYTE_RUN), of any length up to 16 — directly and through the piece loop
against the naive reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tltok_jit
from tltok_jit.kernels.cache import SHORT_IDS, SHORT_SLOTS, short_get, short_has, short_put
from tltok_jit.kernels.hashing import pack_short, short_hash
from tltok_jit.model.description import ModelDescription
from tltok_jit.model.patterns import R50K_PATTERN

from naive import naive_merge, naive_split, pair_dict

BYTE_IDS = (np.arange(256, dtype=np.int64) * 7 + 1000)  # no id equals its byte


def _put_get(piece: bytes, ids: list[int]) -> list[int] | None:
    """short_put of `ids` for `piece`, then short_get: the ids it returns, or None for a miss."""
    sc = np.zeros(8 * SHORT_SLOTS, dtype=np.uint64)
    buf = np.frombuffer(piece, dtype=np.uint8)
    k0, k1 = (np.uint64(k) for k in pack_short(buf, 0, len(piece)))  # (Python ints from a kernel)
    h = np.uint64(short_hash(k0, k1, len(piece)))
    short_put(sc, k0, k1, len(piece), h, np.array(ids, dtype=np.uint32), 0, len(ids), BYTE_IDS)
    out = np.zeros(32, dtype=np.uint32)
    m = short_get(sc, k0, k1, len(piece), h, out, 3, BYTE_IDS)
    assert (m > 0) == short_has(sc, k0, k1, len(piece), h)
    return out[3:3 + m].tolist() if m else None


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=16))
def test_byte_run_entries(piece):
    own = [int(BYTE_IDS[b]) for b in piece]
    assert _put_get(piece, own) == own  # any length: up to SHORT_IDS stored, beyond that BYTE_RUN
    if len(piece) > SHORT_IDS + 1:
        assert _put_get(piece, own[:-2] + [5]) is None  # more than SHORT_IDS ids, one fewer than bytes
    if len(piece) > SHORT_IDS:
        changed = list(own)
        changed[-1] += 1
        assert _put_get(piece, changed) is None  # as many ids as bytes, one not its byte's
    else:
        assert _put_get(piece, [9] * len(piece)) == [9] * len(piece)


def _toy() -> ModelDescription:
    vocab = {bytes([b]): b for b in range(256)}
    merges = [(b"a", b"b"), (b" ", b"a"), (b"\xc3", b"\xa9")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    return ModelDescription(name="toy-byte-runs", vocab=vocab, merges=merges, pattern=R50K_PATTERN,
                            pattern_kind="gpt2", ignore_merges=True)


def _naive(model: ModelDescription, text: str) -> list[int]:
    pairs = pair_dict(model)
    out = []
    for p in naive_split(model.pattern, text):
        out += naive_merge(list(p.encode()), pairs)
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_byte_runs_through_the_piece_loop(threads):
    """Pieces of 11-16 single-byte tokens (a run of spaces after LF, letters and multi-byte characters
    no merge joins) recur: their later copies come from BYTE_RUN entries; beside them pieces of as many
    bytes that merge once (more than SHORT_IDS ids, not all bytes: never cached)."""
    model = _toy()
    enc = tltok_jit.Encoding(model)
    parts = []
    for n in range(9, 18):
        parts += ["\n" + " " * n + "x", " " + "z" * n, " ab" + "z" * (n - 2), " " + "\u0416" * (n // 2),
                  " " + "\u00e9" + "\u0416" * (n // 2 - 1)]
    text = "".join(parts) * 40
    want = _naive(model, text)
    assert enc.encode_ordinary(text) == want
    assert enc.encode_ordinary(text) == want  # every short piece cached now
    docs = [text[i:i + 700] for i in range(0, len(text), 700)]
    assert enc.encode_ordinary_batch(docs, num_threads=threads) == [_naive(model, d) for d in docs]


def test_empty_cache_restores_a_new_cache():
    from tltok_jit.kernels.cache import empty_cache, new_cache

    fresh, used = new_cache(2), new_cache(2)
    for a in used:
        a.reshape(-1)[::7] = 5  # every array written, every memo region touched
    empty_cache(used)
    for name in ("hashes", "state", "short", "pairs"):
        assert np.array_equal(getattr(used, name), getattr(fresh, name)), name
