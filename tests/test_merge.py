"""The merge kernels against a naive O(n^2) reference written from the definition, the worked examples,
and (long pieces) against tiktoken on the real vocabularies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tltok_jit.kernels.merge import (LONG_PIECE, SIDE_PIECE, SMALL_PIECE, merge_heap, merge_heap_in, merge_linear,
                                     merge_long_blocks, merge_piece, merge_side_by_side, merge_symbols)
from tltok_jit.model.description import ModelDescription
from tltok_jit.model.patterns import R50K_PATTERN
from tltok_jit.tables.bpe import compile_model

from naive import naive_merge, pair_dict, split_regex


def byte_model(merges: list[tuple[bytes, bytes]]) -> ModelDescription:
    vocab = {bytes([b]): b for b in range(256)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return ModelDescription(name="toy", vocab=vocab, merges=merges, pattern=R50K_PATTERN,
                            pattern_kind="gpt2", ignore_merges=False)


def run_kernel(tables, symbols: list[int], heap: bool) -> list[int]:
    syms = np.array([0, 0, 0] + symbols, dtype=np.uint32)  # a non-zero start offset
    if heap:
        n = merge_heap(syms, 3, len(symbols), tables.pair_slots, tables.rank_ids)
    else:
        n = merge_linear(syms, 3, len(symbols), tables.pair_slots, tables.rank_ids,
                         np.zeros(max(len(symbols), 1), dtype=np.int64))
    return syms[3:3 + n].tolist()


def run_long(tables, symbols: list[int], block: int, overlap: int) -> tuple[list[int], np.ndarray]:
    """merge_long_blocks with tiny blocks, so short inputs cross many cuts. Returns (ids, counters):
    failed stitches, blocks, rank-table growths, heap fallback (1 lower rank, 2 too much rework),
    widened cut zones."""
    syms = np.array([7, 7, 7] + symbols + [7], dtype=np.uint32)  # non-zero start, something after
    info = np.zeros(5, dtype=np.int64)
    n = merge_long_blocks(syms, 3, len(symbols), tables.pair_slots, tables.rank_ids, block, overlap, info)
    assert syms[3 + len(symbols)] == 7
    return syms[3:3 + n].tolist(), info


KERNELS = ["linear", "heap", "long"]


def run_any(tables, symbols: list[int], kernel: str) -> list[int]:
    if kernel == "long":
        return run_long(tables, symbols, 2, 2)[0]
    return run_kernel(tables, symbols, kernel == "heap")


def rand_bytes(rng, alphabet: bytes, n: int) -> bytes:
    return rng.choice(np.frombuffer(alphabet, dtype=np.uint8), n).tobytes()


@pytest.mark.parametrize("kernel", KERNELS)
def test_worked_example_hugs_pug(kernel):
    model = byte_model([(b"u", b"g"), (b"h", b"ug"), (b"p", b"ug")])
    t = compile_model(model).tables
    v = model.vocab
    hugs = [v[bytes([c])] for c in b"hugs"]
    assert run_any(t, hugs, kernel) == [v[b"hug"], v[b"s"]]
    pug = [v[bytes([c])] for c in b" pug"]
    assert run_any(t, pug, kernel) == [v[b" "], v[b"pug"]]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n,expected", [(4, [b"aaaa"]), (5, [b"aaaa", b"a"]), (6, [b"aaaa", b"aa"]),
                                        (3, [b"aa", b"a"])])
def test_lazy_removal_and_leftmost_ties(kernel, n, expected):
    model = byte_model([(b"a", b"a"), (b"aa", b"aa")])
    t = compile_model(model).tables
    assert run_any(t, [ord("a")] * n, kernel) == [model.vocab[e] for e in expected]


@pytest.mark.parametrize("kernel", KERNELS)
def test_merge_to_id_zero_at_rank_zero(kernel):
    """A pair's packed value is rank << 32 | merged id, so the first merge producing id 0 packs to 0:
    a pair like any other, not "no pair" (tokenizer.json ids are arbitrary; 0 can be a merged token)."""
    vocab = {b"ab": 0, **{bytes([b]): b + 1 for b in range(256)}, b"abc": 257}
    model = ModelDescription(name="toy-id0", vocab=vocab, merges=[(b"a", b"b"), (b"ab", b"c")],
                             pattern=R50K_PATTERN, pattern_kind="gpt2", ignore_merges=False)
    t = compile_model(model).tables
    symbols = [vocab[bytes([c])] for c in b"abcab"]
    assert run_any(t, symbols, kernel) == [257, 0]


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
    T = _TABLES[seed]
    data = np.frombuffer(b"xy" + text.encode(), dtype=np.uint8)  # non-zero byte offset
    syms = np.zeros(len(text) + 5, dtype=np.uint32)
    memo = np.full(64, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)  # tiny: slots get reused
    # twice with the memo (the second run answers from it), then without a memo behind the Bloom filter
    for m, bloom in ((memo, memo[:0]), (memo, memo[:0]), (memo[:0], T.pair_bloom)):
        n = merge_piece(data, 2, len(text), syms, 0, T.byte_ids, T.byte_pairs, T.pair_slots, T.rank_ids,
                        np.zeros(16384, dtype=np.int64), m, bloom)
        assert syms[:n].tolist() == want  # the dense byte-pair start (short) and the scratch heap (longer)
    syms = np.array([0, 0] + symbols, dtype=np.uint32)
    n = merge_heap_in(syms, 2, len(symbols), T.pair_slots, T.rank_ids, np.zeros(6 * len(symbols) + 1, dtype=np.int64))
    assert syms[2:2 + n].tolist() == want


def test_long_run_heap_equals_linear():
    model = _MODELS[1]
    t = _TABLES[1]
    rng = np.random.default_rng(7)
    text = rand_bytes(rng, b"abcde", 3000)
    symbols = [model.vocab[bytes([c])] for c in text]
    assert run_kernel(t, symbols, heap=True) == run_kernel(t, symbols, heap=False) == \
        naive_merge(symbols, pair_dict(model))


# ---------------------------------------------------------------------------------------------------
# Long pieces: merge_long_blocks (blocks, bucket queue, stitching, fallbacks)


def shuffled_model(seed: int, n_merges: int = 200, alphabet: bytes = b"abcd") -> ModelDescription:
    """A random model whose merge list is then shuffled: a merge's parts may come from LATER merges,
    so a merge often makes a pair of lower rank than its own (the case the bucket queue hands to the
    heap)."""
    model = random_model(seed, n_merges, alphabet)
    order = np.random.default_rng(seed + 100).permutation(len(model.merges))
    return byte_model([model.merges[i] for i in order])


def splits_model(tokens: list[bytes]) -> ModelDescription:
    """tiktoken-style: no merge list, rank = id, every split of every token into two tokens merges."""
    vocab = {bytes([b]): b for b in range(256)}
    for tok in tokens:
        vocab.setdefault(tok, len(vocab))
    return ModelDescription(name="toy-splits", vocab=vocab, merges=None, pattern=R50K_PATTERN,
                            pattern_kind="gpt2", ignore_merges=False)


def splits_pair_dict(model: ModelDescription) -> dict[tuple[int, int], tuple[int, int]]:
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for tok, i in model.vocab.items():
        for c in range(1, len(tok)):
            a, b = model.vocab.get(tok[:c]), model.vocab.get(tok[c:])
            if a is not None and b is not None and ((a, b) not in out or out[(a, b)][0] > i):
                out[(a, b)] = (i, i)
    return out


_SHUFFLED = {s: shuffled_model(s) for s in range(2)}
_SHUFFLED_TABLES = {s: compile_model(m).tables for s, m in _SHUFFLED.items()}


def symbols_of(model: ModelDescription, text: bytes) -> list[int]:
    return [model.vocab[bytes([c])] for c in text]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2), text=st.text(alphabet="abcde", max_size=250), block=st.integers(1, 40),
       overlap=st.integers(2, 24))
def test_long_equals_naive_reference(seed, text, block, overlap):
    model = _MODELS[seed]
    symbols = symbols_of(model, text.encode())
    got, info = run_long(_TABLES[seed], symbols, block, overlap)
    assert got == naive_merge(symbols, pair_dict(model))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 1), text=st.text(alphabet="abcd", max_size=200), block=st.integers(1, 40),
       overlap=st.integers(2, 24))
def test_long_equals_naive_reference_lower_rank_pairs(seed, text, block, overlap):
    model = _SHUFFLED[seed]
    symbols = symbols_of(model, text.encode())
    want = naive_merge(symbols, pair_dict(model))
    assert run_long(_SHUFFLED_TABLES[seed], symbols, block, overlap)[0] == want
    assert run_kernel(_SHUFFLED_TABLES[seed], symbols, heap=True) == want


@pytest.mark.parametrize("kernel", KERNELS)
def test_lower_rank_pair_hf_merges(kernel):
    """Merging (a, b) at rank 1 makes (ab, c), rank 0: it must be merged before any other rank-1 pair."""
    model = byte_model([(b"ab", b"c"), (b"a", b"b"), (b"c", b"a")])
    t = compile_model(model).tables
    text = b"abcab" * 7 + b"ca"
    symbols = symbols_of(model, text)
    want = naive_merge(symbols, pair_dict(model))
    assert run_any(t, symbols, kernel) == want
    if kernel == "long":
        got, info = run_long(t, symbols_of(model, text * 40), 16, 8)
        assert info[3] == 1  # handed to the heap
        assert got == run_kernel(t, symbols_of(model, text * 40), heap=True)


@pytest.mark.parametrize("kernel", KERNELS)
def test_lower_rank_pair_tiktoken_splits(kernel):
    """tiktoken-style ranks: "abc" (id 256) splits as ab + c; "ab" has id 257. Merging a + b (rank 257)
    makes the pair (ab, c) of rank 256."""
    model = splits_model([b"abc", b"ab", b"ca", b"bb"])
    t = compile_model(model).tables
    rng = np.random.default_rng(3)
    text = rand_bytes(rng, b"abc", 300)
    symbols = symbols_of(model, text)
    want = naive_merge(symbols, splits_pair_dict(model))
    assert run_any(t, symbols, kernel) == want
    if kernel == "long":
        got, info = run_long(t, symbols, 32, 8)
        assert got == want and info[3] == 1


def test_long_paths_are_exercised():
    """Failed stitches (blocks rerun together), rank-table growth, widened cut zones, the rework cap:
    each path is taken by some input here, and the result always equals the heap's."""
    seen = np.zeros(5, dtype=np.int64)
    # 300 merges nothing here uses come first: the real ones have ranks above the first rank table
    filler = [(bytes([x]), bytes([y])) for x in range(0x30, 0x3A) for y in range(0x41, 0x5F)]
    doubling = byte_model(filler + [(b"a" * k, b"a" * k) for k in (1, 2, 4, 8, 16, 32)] + [(b"b", b"a")])
    cases = [(_MODELS[1], _TABLES[1], rand_bytes(np.random.default_rng(7), b"abcde", 3000)),
             (doubling, compile_model(doubling).tables, b"a" * 700 + b"ba" * 50 + b"a" * 300)]
    for model, t, text in cases:
        symbols = symbols_of(model, text)
        want = run_kernel(t, symbols, heap=True)
        for block, overlap in [(1, 2), (3, 2), (8, 4), (16, 8), (64, 16), (1000, 64)]:
            got, info = run_long(t, symbols, block, overlap)
            assert got == want, (block, overlap, info)
            seen = np.maximum(seen, info)
    assert seen[0] > 0 and seen[2] > 0 and seen[3] == 2 and seen[4] > 0, seen


def test_long_run_heap_equals_long():
    model = _MODELS[2]
    t = _TABLES[2]
    rng = np.random.default_rng(11)
    symbols = symbols_of(model, rand_bytes(rng, b"abcde", 20000))
    got, info = run_long(t, symbols, 512, 64)
    assert info[3] == 0
    assert got == run_kernel(t, symbols, heap=True)


# --- the real vocabularies against tiktoken ----------------------------------------------------------


def _long_inputs() -> dict[str, bytes]:
    rng = np.random.default_rng(2024)
    out = {
        "lowercase": bytes(rng.integers(97, 123, 60_000, dtype=np.uint8)),
        "a-run": b"a" * 30_000,
        "ab": rand_bytes(rng, b"ab", 20_000),
        "hex": rand_bytes(rng, b"0123456789abcdef", 20_000),
        "bytes": bytes(rng.integers(0, 256, 10_000, dtype=np.uint8)),
        "digits": bytes(rng.integers(48, 58, 10_000, dtype=np.uint8)),
        "dashes": b"-" * 5_000,
    }
    words = ("international", "communication", "the", "and", "extraordinary", "representatives",
             "pneumonoultramicroscopic", "of", "unbelievable", "zebra")
    out["words"] = "".join(words[i] for i in rng.integers(0, len(words), 6000)).encode()
    out["chinese"] = "".join(chr(c) for c in rng.integers(0x4E00, 0x4E00 + 3000, 6000)).encode()
    return out


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_long_pieces_equal_tiktoken(name, tiktoken_oracle, ours):
    ref = tiktoken_oracle(name)
    enc = ours(name)
    T = enc.engine.tables
    for label, data in _long_inputs().items():
        want = list(ref._encode_single_piece(data))
        syms = T.byte_ids[np.frombuffer(data, dtype=np.uint8)].astype(np.uint32)
        info = np.zeros(5, dtype=np.int64)
        for block, overlap in [(300, 16), (4096, 256)]:
            s = syms.copy()
            info[:] = 0
            n = merge_long_blocks(s, 0, len(s), T.pair_slots, T.rank_ids, block, overlap, info)
            assert s[:n].tolist() == want, (label, block, overlap)
        assert info[3] == 0, (label, info)  # the default lengths never need the heap here
        s = np.concatenate([np.zeros(5, np.uint32), syms])
        n = merge_symbols(s, 5, len(syms), T.pair_slots, T.rank_ids, np.zeros(SMALL_PIECE + 8, np.int64))
        assert s[5:5 + n].tolist() == want, label


@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_encode_long_piece_equals_tiktoken(name, tiktoken_oracle, ours):
    rng = np.random.default_rng(5)
    text = "".join(chr(c) for c in rng.integers(97, 123, 3 * LONG_PIECE + 17))
    text = "Start " + text + " end, and " + "a" * LONG_PIECE + "!"
    assert list(ours(name).encode_ordinary(text)) == tiktoken_oracle(name).encode_ordinary(text)


# ---------------------------------------------------------------------------------------------------
# Short pieces merged side by side (merge_side_by_side, the piece loop's route for a window's misses)


def run_side(tables, pieces: list[bytes]) -> list[list[int]]:
    """merge_side_by_side over `pieces` (2..SIDE_PIECE bytes each) in one call: each piece's ids."""
    k = len(pieces)
    data = np.frombuffer(b"xyz" + b"".join(pieces) + b"w", dtype=np.uint8)  # bytes before and after
    starts = 3 + np.cumsum([0] + [len(p) for p in pieces[:-1]]).astype(np.int64)
    lens = np.array([len(p) for p in pieces], dtype=np.int64)
    out = np.full(SIDE_PIECE * k, 7, dtype=np.uint32)
    counts = np.zeros(k, dtype=np.int64)
    scratch = [np.full(SIDE_PIECE * k, 5, dtype=np.int64) for _ in range(3)]  # not zeroed: read only once written
    state = np.full(3 * k, 5, dtype=np.int64)
    merge_side_by_side(data, starts, lens, k, out, counts, tables.byte_ids, tables.byte_pairs, tables.pair_slots,
                       tables.rank_ids, *scratch, state)
    return [out[SIDE_PIECE * j:SIDE_PIECE * j + counts[j]].tolist() for j in range(k)]


def side_expected(model: ModelDescription, pieces: list[bytes], pairs) -> list[list[int]]:
    return [naive_merge(symbols_of(model, p), pairs) for p in pieces]


_SIDE_PIECES = st.lists(st.binary(min_size=2, max_size=SIDE_PIECE).map(lambda b: bytes(97 + c % 5 for c in b)),
                        min_size=1, max_size=64)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2), pieces=_SIDE_PIECES)
def test_side_by_side_equals_naive_reference(seed, pieces):
    model = _MODELS[seed]
    assert run_side(_TABLES[seed], pieces) == side_expected(model, pieces, pair_dict(model))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 1), pieces=_SIDE_PIECES.map(lambda ps: [p.replace(b"e", b"d") for p in ps]))
def test_side_by_side_lower_rank_pairs(seed, pieces):
    """Shuffled merge lists: a merge often makes a pair of lower rank than its own."""
    model = _SHUFFLED[seed]
    assert run_side(_SHUFFLED_TABLES[seed], pieces) == side_expected(model, pieces, pair_dict(model))


def test_side_by_side_worked_examples_and_ties():
    model = byte_model([(b"u", b"g"), (b"h", b"ug"), (b"p", b"ug")])
    v = model.vocab
    assert run_side(compile_model(model).tables, [b"hugs", b" pug"]) == [[v[b"hug"], v[b"s"]], [v[b" "], v[b"pug"]]]
    model = byte_model([(b"a", b"a"), (b"aa", b"aa")])
    v = model.vocab
    got = run_side(compile_model(model).tables, [b"a" * n for n in (2, 3, 4, 5, 6, 16)])
    assert got == [[v[b"aa"]], [v[b"aa"], v[b"a"]], [v[b"aaaa"]], [v[b"aaaa"], v[b"a"]], [v[b"aaaa"], v[b"aa"]],
                   [v[b"aaaa"]] * 4]
    # tiktoken-style ranks (rank = id, every split merges), and a merge to id 0 at rank 0
    model = splits_model([b"abc", b"ab", b"ca", b"bb"])
    pieces = [bytes(np.random.default_rng(s).choice(np.frombuffer(b"abc", np.uint8), 2 + s % 15)) for s in range(40)]
    assert run_side(compile_model(model).tables, pieces) == side_expected(model, pieces, splits_pair_dict(model))
    vocab = {b"ab": 0, **{bytes([b]): b + 1 for b in range(256)}, b"abc": 257}
    model = ModelDescription(name="toy-id0", vocab=vocab, merges=[(b"a", b"b"), (b"ab", b"c")],
                             pattern=R50K_PATTERN, pattern_kind="gpt2", ignore_merges=False)
    assert run_side(compile_model(model).tables, [b"abcab", b"ab", b"ba"]) == [[257, 0], [0], [vocab[b"b"], vocab[b"a"]]]


@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_side_by_side_equals_merge_piece_on_real_vocabularies(name, ours):
    """Every distinct piece of 2..16 bytes of real text that is not a token, against merge_piece."""
    from test_interim import corpus_texts

    enc = ours(name)
    T = enc.engine.tables
    ranks = enc._mergeable_ranks
    pieces = sorted({p for p in (m.encode() for t in corpus_texts() for m in split_regex(enc._pat_str).findall(t))
                     if 2 <= len(p) <= SIDE_PIECE and p not in ranks})
    assert len(pieces) > 300
    want = []
    for p in pieces:
        syms = np.zeros(SIDE_PIECE, dtype=np.uint32)
        n = merge_piece(np.frombuffer(p, np.uint8), 0, len(p), syms, 0, T.byte_ids, T.byte_pairs, T.pair_slots,
                        T.rank_ids, np.zeros(64, dtype=np.int64), np.zeros(0, dtype=np.uint64), T.pair_bloom)
        want.append(syms[:n].tolist())
    got = [ids for i in range(0, len(pieces), 64) for ids in run_side(T, pieces[i:i + 64])]
    assert got == want


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_whole_token_rule_and_unreachable_tokens(ignore_merges):
    """The piece loop looks each short piece up whole. With ignore_merges a token is its own id
    (tiktoken's rule); without, only when its bytes merge to it: "abc" is a token no merge makes, so
    there the piece "abc" is merged (ab + c) and "ab", which a merge makes, is one token."""
    import tltok_jit

    vocab = {bytes([b]): b for b in range(256)}
    vocab[b"ab"] = 256
    vocab[b"abc"] = 257
    vocab[b"xy"] = 258
    vocab[b"xyz"] = 259
    model = ModelDescription(name="toy-unreachable", vocab=vocab, merges=[(b"a", b"b"), (b"x", b"y"), (b"xy", b"z")],
                             pattern=R50K_PATTERN, pattern_kind="gpt2", ignore_merges=ignore_merges)
    enc = tltok_jit.Encoding(model)
    text = "abc ab xyz abcabc " * 50  # several windows, the piece cache warm after the first
    want_abc = [257] if ignore_merges else [256, ord("c")]
    got = enc.encode_ordinary(text)
    assert got[:len(want_abc)] == want_abc
    assert got[len(want_abc):len(want_abc) + 5] == [ord(" "), 256, ord(" "), 259, ord(" ")]
    # "abcabc" is one piece: not a token, merged either way (ab c ab c)
    assert got[len(want_abc) + 5:len(want_abc) + 9] == [256, ord("c"), 256, ord("c")]
    assert enc.encode_ordinary_batch([text, "abc"], num_threads=1) == [got, want_abc]
