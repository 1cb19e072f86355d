"""The merge kernel against a naive O(n^2) reference written from the definition, and the worked examples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tltok_jit.kernels.merge import SMALL_PIECE, merge_heap, merge_linear
from tltok_jit.model import ModelDescription
from tltok_jit.patterns import R50K_PATTERN
from tltok_jit.tables import compile_model


def naive_merge(symbols: list[int], pair_rank: dict[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Apply the lowest-rank pair, leftmost among equals, until none applies."""
    syms = list(symbols)
    while True:
        best = None
        for i in range(len(syms) - 1):
            v = pair_rank.get((syms[i], syms[i + 1]))
            if v is not None and (best is None or v[0] < best[0]):
                best = (v[0], i, v[1])
        if best is None:
            return syms
        _, i, merged = best
        syms[i:i + 2] = [merged]


def byte_model(merges: list[tuple[bytes, bytes]]) -> ModelDescription:
    vocab = {bytes([b]): b for b in range(256)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return ModelDescription(name="toy", vocab=vocab, merges=merges, pattern=R50K_PATTERN,
                            pattern_kind="gpt2", ignore_merges=False)


def run_kernel(tables, symbols: list[int], heap: bool) -> list[int]:
    syms = np.array([0, 0, 0] + symbols, dtype=np.uint32)  # a non-zero start offset
    if heap:
        n = merge_heap(syms, 3, len(symbols), tables.pair_keys, tables.pair_vals)
    else:
        n = merge_linear(syms, 3, len(symbols), tables.pair_keys, tables.pair_vals,
                         np.zeros(max(len(symbols), 1), dtype=np.int64))
    return syms[3:3 + n].tolist()


def pair_dict(model: ModelDescription) -> dict[tuple[int, int], tuple[int, int]]:
    out = {}
    for r, (a, b) in enumerate(model.merges):
        out.setdefault((model.vocab[a], model.vocab[b]), (r, model.vocab[a + b]))
    return out


@pytest.mark.parametrize("heap", [False, True])
def test_worked_example_hugs_pug(heap):
    model = byte_model([(b"u", b"g"), (b"h", b"ug"), (b"p", b"ug")])
    t = compile_model(model).tables
    v = model.vocab
    hugs = [v[bytes([c])] for c in b"hugs"]
    assert run_kernel(t, hugs, heap) == [v[b"hug"], v[b"s"]]
    pug = [v[bytes([c])] for c in b" pug"]
    assert run_kernel(t, pug, heap) == [v[b" "], v[b"pug"]]


@pytest.mark.parametrize("heap", [False, True])
@pytest.mark.parametrize("n,expected", [(4, [b"aaaa"]), (5, [b"aaaa", b"a"]), (6, [b"aaaa", b"aa"]),
                                        (3, [b"aa", b"a"])])
def test_lazy_removal_and_leftmost_ties(heap, n, expected):
    model = byte_model([(b"a", b"a"), (b"aa", b"aa")])
    t = compile_model(model).tables
    assert run_kernel(t, [ord("a")] * n, heap) == [model.vocab[e] for e in expected]


def random_model(seed: int, n_merges: int = 300, alphabet: bytes = b"abcde") -> ModelDescription:
    rng = np.random.default_rng(seed)
    pieces = [bytes([c]) for c in alphabet]
    merges = []
    seen = set()
    while len(merges) < n_merges:
        a = pieces[rng.integers(len(pieces))]
        b = pieces[rng.integers(len(pieces))]
        if (a, b) in seen or len(a + b) > 12:
            continue
        seen.add((a, b))
        merges.append((a, b))
        if a + b not in pieces:
            pieces.append(a + b)
    return byte_model(merges)


_MODELS = {s: random_model(s) for s in range(3)}
_TABLES = {s: compile_model(m).tables for s, m in _MODELS.items()}


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2), text=st.text(alphabet="abcde", max_size=3 * SMALL_PIECE))
def test_kernels_equal_naive_reference(seed, text):
    model = _MODELS[seed]
    symbols = [model.vocab[bytes([c])] for c in text.encode()]
    want = naive_merge(symbols, pair_dict(model))
    assert run_kernel(_TABLES[seed], symbols, heap=False) == want
    assert run_kernel(_TABLES[seed], symbols, heap=True) == want


def test_long_run_heap_equals_linear():
    model = _MODELS[1]
    t = _TABLES[1]
    rng = np.random.default_rng(7)
    text = bytes(rng.choice(list(b"abcde"), size=3000))
    symbols = [model.vocab[bytes([c])] for c in text]
    assert run_kernel(t, symbols, heap=True) == run_kernel(t, symbols, heap=False) == \
        naive_merge(symbols, pair_dict(model))
