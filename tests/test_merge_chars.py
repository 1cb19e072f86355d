"""The character route (kernels/merge_chars.py) and the merge trees behind its proof (kernels/trees.py):
against the naive byte merge on trained toy vocabularies full of tokens that straddle characters,
against merging on the real vocabularies, and against tiktoken on the text that once broke it."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from tltok_jit.kernels.merge_chars import CHAR_PIECE, WORK_NEEDED, compat_memo, merge_by_chars
from tltok_jit.kernels.hashing import pair_lookup
from tltok_jit.kernels.merge import merge_symbols
from tltok_jit.kernels.trees import (F_FIRST_MB, F_L_AFTER_ASCII, F_L_AFTER_MB, F_LAST_MB, F_R_BEFORE_ASCII,
                                     F_MONO, F_R_BEFORE_MB, F_REACH, compat_fast, merges_to_pair)
from tltok_jit.model.description import ModelDescription
from tltok_jit.model.patterns import R50K_PATTERN
from tltok_jit.tables.bpe import TREES_MONOTONE, TREES_SAME, compile_model, table_config

from naive import naive_merge, pair_dict

# 1, 2, 3 and 4 byte characters: a few common ones and many rare CJK ones. In training, the pair
# (common character, lead byte of the rare ones) beats the inside of any one rare character, which
# makes tokens that straddle characters (as real byte-level vocabularies have).
COMMON = "ab éж中国的是了😀"
RARE = "".join(chr(0x4E00 + 53 * k) for k in range(400))
ALPHABET = COMMON + RARE


def trained_model(seed: int, n_merges: int) -> ModelDescription:
    """Byte-level BPE trained on random text of ALPHABET (most frequent pair first, no pretokenizer):
    a real merge order, with many tokens that begin or end inside a character."""
    rng = np.random.default_rng(seed)
    weights = np.concatenate([rng.random(len(COMMON)) + 0.5, np.full(len(RARE), 4.0 / len(RARE))])
    text = "".join(rng.choice(list(ALPHABET), 6000, p=weights / weights.sum())).encode()
    seq = [bytes([c]) for c in text]
    merges = []
    for _ in range(n_merges):
        counts = Counter(zip(seq, seq[1:]))
        if not counts:
            break
        (a, b), _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        out = []
        i = 0
        while i < len(seq):
            if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(seq[i])
                i += 1
        seq = out
    vocab = {bytes([b]): b for b in range(256)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return ModelDescription(name=f"trained-{seed}", vocab=vocab, merges=merges, pattern=R50K_PATTERN,
                            pattern_kind="gpt2", ignore_merges=False)


_MODELS = {s: trained_model(s, 150 + 50 * s) for s in range(4)}
_TABLES = {s: compile_model(m).tables for s, m in _MODELS.items()}


def straddling(model: ModelDescription) -> int:
    """Tokens that contain the start of a character after their first byte and begin or end inside
    a character."""
    n = 0
    for tok in model.vocab:
        if not any(c & 0xC0 != 0x80 for c in tok[1:]):
            continue
        try:
            tok.decode("utf-8")
        except UnicodeDecodeError:
            n += 1
    return n


# one compatibility memo per toy model, kept across examples (hits, and slots that other pairs
# took) and small (8 words: collisions); an answer of another vocabulary would be wrong
_CMEMOS = {s: np.zeros(8, dtype=np.uint64) for s in _MODELS}


def by_chars(T, data: bytes, cmemo=None):
    buf = np.frombuffer(b"xyz" + data, dtype=np.uint8)  # a non-zero byte offset
    syms = np.full(len(data) + 4, 7, dtype=np.uint32)
    work = np.zeros(max(WORK_NEEDED, 16), dtype=np.int64)
    memo = np.full(64, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    cmemo = np.zeros(0, dtype=np.uint64) if cmemo is None else cmemo
    m = merge_by_chars(buf, 3, len(data), syms, 1, T.char_bpe, T.tok_flags, T.crank, T.split_l, T.split_r,
                       T.pair_slots, T.rank_ids, T.pair_bloom, work, memo, cmemo, T.tok_offsets, T.byte_ids,
                       T.byte_pairs)
    return None if m < 0 else syms[1:1 + m].tolist()



@pytest.mark.parametrize("seed", range(4))
def test_compat_memo_answers_as_compat_fast(seed):
    T = _TABLES[seed]
    usable = np.flatnonzero((T.tok_flags & (F_REACH | F_MONO)) == (F_REACH | F_MONO))
    rng = np.random.default_rng(seed)
    pairs = rng.choice(usable, size=(3000, 2)).tolist()
    ok = set(usable.tolist())
    pairs += [[a, b] for a, b in pair_dict(_MODELS[seed]) if a in ok and b in ok][:500]  # merge pairs: False
    pairs += pairs[:500]  # asked again: hits where no other pair took the slot since
    cmemo = np.zeros(64, dtype=np.uint64)  # 64 slots: collisions
    args = (T.pair_slots, T.rank_ids, T.crank, T.split_l, T.split_r, T.pair_bloom)
    answers = Counter()
    for a, b in pairs:
        want = compat_fast(a, b, *args)
        assert compat_memo(a, b, *args, cmemo) == want
        assert compat_memo(a, b, *args, cmemo) == want  # the second time from the memo
        answers[want] += 1
    assert answers[True] > 100 and answers[False] > 100  # both answers are cached and read back
    assert compat_memo(0, 0, *args, np.zeros(0, dtype=np.uint64)) == compat_fast(0, 0, *args)  # no memo


def test_toy_vocabularies_are_hard_enough():
    for s, model in _MODELS.items():
        assert table_config(_TABLES[s]).trees == TREES_SAME | TREES_MONOTONE, s  # trained merges: monotone trees
        assert straddling(model) >= 10, s


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 3), text=st.text(alphabet=st.sampled_from(ALPHABET), min_size=1, max_size=40))
def test_char_route_equals_naive_merge(seed, text):
    model, T = _MODELS[seed], _TABLES[seed]
    data = text.encode()
    want = naive_merge([model.vocab[bytes([c])] for c in data], pair_dict(model))
    got = by_chars(T, data)
    assert by_chars(T, data, _CMEMOS[seed]) == got  # the memo's answers are compat_fast's
    if "😀" in text:
        assert got is None  # 4-byte characters are not in the table: the byte route
    elif got is not None:
        assert got == want


def char_level_merge(model: ModelDescription, text: str, pairs) -> list[int]:
    """Merging each character's own BPE result, with no mending: what the route starts from."""
    syms = []
    for c in text:
        syms += naive_merge([model.vocab[bytes([b])] for b in c.encode()], pairs)
    return naive_merge(syms, pairs)


def test_char_route_mends_the_toy_pieces_character_merging_gets_wrong():
    """Not vacuous: merging whole characters gives the wrong tokens on some pieces (straddling
    tokens win there), and the route mends them to the byte merge's result instead of giving up."""
    rng = np.random.default_rng(5)
    for s, model in _MODELS.items():
        proved = mended = 0
        pairs = pair_dict(model)
        for _ in range(300):
            text = "".join(rng.choice(list(ALPHABET.replace("😀", "")), rng.integers(1, 12)))
            want = naive_merge([model.vocab[bytes([c])] for c in text.encode()], pairs)
            got = by_chars(_TABLES[s], text.encode())
            if got is not None:
                proved += 1
                assert got == want
                mended += char_level_merge(model, text, pairs) != want
        assert proved > 250, s
        if s == 3:
            assert mended > 0


def test_char_route_rejects_bad_utf8_and_long_pieces():
    T = _TABLES[0]
    for data in (b"\x80", b"a\xe4\xb8", b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xff", b"\xe4\xb8a"):
        assert by_chars(T, data) is None, data
    ok = by_chars(T, "中".encode() * (CHAR_PIECE // 3))
    assert ok is not None


# ------------------------------------------------------------------------------------ real vocabularies

NAMES = ["r50k_base", "cl100k_base", "o200k_base"]


@njit
def _flag_violations(T, A, B):
    """Pairs (a, b) between whole characters that the flags accept but merging does not give [a, b]."""
    syms = np.empty(1024, np.uint32)
    vals = np.empty(1024, np.int64)
    bad = 0
    accepted = 0
    for k in range(len(A)):
        a = A[k]
        b = B[k]
        fa = np.int64(T.tok_flags[a])
        fb = np.int64(T.tok_flags[b])
        need_a = F_R_BEFORE_MB if (fb & F_FIRST_MB) != 0 else F_R_BEFORE_ASCII
        need_b = F_L_AFTER_MB if (fa & F_LAST_MB) != 0 else F_L_AFTER_ASCII
        if (fa & fb & F_REACH) == 0 or (fa & need_a) == 0 or (fb & need_b) == 0:
            continue
        if pair_lookup(a, b, T.pair_slots, T.rank_ids) >= 0:
            continue  # a pair itself: the route has merged it before it asks
        if merges_to_pair(a, b, T.tok_bytes, T.tok_offsets, T.byte_ids, T.pair_slots, T.rank_ids, syms, vals):
            accepted += 1
        else:
            bad += 1
    return bad, accepted


def _whole_char_tokens(enc) -> tuple[np.ndarray, np.ndarray]:
    """Reachable tokens that begin where a character begins / end where one ends."""
    T = enc.engine.tables
    starts, ends = [], []
    for t in np.flatnonzero(T.tok_flags & F_REACH):
        b = enc.decode_single_token_bytes(int(t))
        if len(b) > 16:
            continue
        if b[0] & 0xC0 != 0x80:
            starts.append(t)
        i = len(b) - 1
        while i > 0 and b[i] & 0xC0 == 0x80:
            i -= 1
        lead = b[i]
        need = 1 if lead < 0x80 else 4 if lead >= 0xF0 else 3 if lead >= 0xE0 else 2 if lead >= 0xC0 else 0
        if len(b) - i == need:
            ends.append(t)
    return np.array(ends, dtype=np.int64), np.array(starts, dtype=np.int64)


@pytest.mark.parametrize("name", NAMES)
def test_boundary_flags_are_sound(name, ours):
    """Every pair of whole-character tokens the flags accept merges back to itself: random pairs,
    pairs of multi-byte tokens (where straddling tokens live), and the adjacent pairs of real text."""
    enc = ours(name)
    T = enc.engine.tables
    ends, starts = _whole_char_tokens(enc)
    lens = np.diff(T.tok_offsets)
    mb_end = ends[[T.tok_bytes[T.tok_offsets[t + 1] - 1] >= 0x80 for t in ends]]
    mb_start = starts[[T.tok_bytes[T.tok_offsets[t]] >= 0x80 for t in starts]]
    rng = np.random.default_rng(3)
    for A_pool, B_pool in ((ends, starts), (mb_end, mb_start), (mb_end[lens[mb_end] <= 3], starts)):
        A, B = rng.choice(A_pool, 100_000), rng.choice(B_pool, 100_000)
        bad, accepted = _flag_violations(T, A, B)
        assert bad == 0 and accepted > 1000


@pytest.mark.parametrize("name", NAMES)
def test_tables_describe_every_char(name, ours):
    """char_bpe holds each character's own BPE; the filter lets every unreachable multi-byte token
    through to the whole-token lookup."""
    enc = ours(name)
    T = enc.engine.tables
    for ch in "aé中ж\u0800\uffff가ـ龘":
        e = int(T.char_bpe[ord(ch)])
        ids = [(e >> (20 * k)) & 0xFFFFF for k in range(e >> 60)]
        syms = np.array([T.byte_ids[c] for c in ch.encode()], dtype=np.uint32)
        m = merge_symbols(syms, 0, len(syms), T.pair_slots, T.rank_ids, np.zeros(8, dtype=np.int64))
        assert ids == syms[:m].tolist(), ch
    assert all(T.char_bpe[cp] == 0 for cp in range(0xD800, 0xE000))
    for t in np.flatnonzero((T.tok_flags & F_REACH) == 0):
        b = T.tok_bytes[T.tok_offsets[t]:T.tok_offsets[t + 1]].tobytes()  # empty for unassigned ids
        if len(b) >= 2 and max(b) >= 0x80:
            k = ((len(b) & 15) << 16) | (b[0] << 8) | b[-1]
            assert int(T.unreach_filter[k >> 6]) >> (k & 63) & 1, t


# ------------------------------------------------------------------------------------ against tiktoken

REGRESSIONS = [
    "。谁想今夕西方星坠",  # 夕西: o200k has b"\x95" + 西 (a token across the boundary) below 夕's own merge
    "，皆来问信",
    "龘龘龘龘", "𠀀中文", "中\u0301文", "Привет, мир! Ελληνικά 한국어 日本語の文章", "é" * 300,
]


@pytest.mark.parametrize("name", NAMES)
def test_regressions_equal_tiktoken(name, ours, tiktoken_oracle):
    enc, ref = ours(name), tiktoken_oracle(name)
    for text in REGRESSIONS:
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), text


@pytest.mark.parametrize("name", NAMES)
def test_unreachable_tokens_equal_tiktoken(name, ours, tiktoken_oracle):
    """A piece that is an unreachable token is that token (the whole-token rule), also on the
    character route, which skips the lookup."""
    enc, ref = ours(name), tiktoken_oracle(name)
    T = enc.engine.tables
    texts = []
    for t in np.flatnonzero((T.tok_flags & F_REACH) == 0):
        try:
            texts.append(enc.decode_single_token_bytes(int(t)).decode("utf-8"))
        except (UnicodeDecodeError, KeyError):
            continue
    for text in texts:
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_char_route_proves_pieces_of_scripts(name, ours, tiktoken_oracle, shared_path):
    """Words of Devanagari, Gujarati, Lao and Tibetan: character merging gets about a quarter of
    o200k's wrong (straddling tokens), the route mends them and proves nearly every piece, each one
    tiktoken's ids."""
    import regex

    enc, ref = ours(name), tiktoken_oracle(name)
    pieces = set()
    for lang in ("sa", "gu", "lo", "dz"):
        text = shared_path(f"corpora/udhr/{lang}.txt").read_text(encoding="utf-8")[:6000]
        pieces.update(p for p in regex.findall(ref._pat_str, text) if 3 < len(p.encode()) <= CHAR_PIECE)
    proved = 0
    for p in sorted(pieces):
        got = by_chars(enc.engine.tables, p.encode())
        if got is not None:
            proved += 1
            assert got == ref.encode_ordinary(p), p
    assert len(pieces) > 500 and proved >= 0.99 * len(pieces), (proved, len(pieces))


_CJK = st.text(alphabet=st.one_of(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
                                  st.characters(min_codepoint=0x3400, max_codepoint=0x4DBF),
                                  st.sampled_from(list("，。、「」！？ 《》abc123\n中国的是了")),
                                  st.characters(min_codepoint=0x80, max_codepoint=0x7FF),
                                  st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3)),
                max_size=60)


@settings(max_examples=300, deadline=None)
@given(text=_CJK)
def test_cjk_text_equals_tiktoken(text):
    from conftest import get_ours, get_tiktoken_oracle

    for name in NAMES:
        assert get_ours(name).encode_ordinary(text) == get_tiktoken_oracle(name).encode_ordinary(text)



def _long_piece_text(seed: int, han_runs: int) -> str:
    """Recurring words of 6-10 Devanagari / Tamil / Lao letters (18-30 bytes: longer than a short cache
    entry) after `han_runs` runs of random CJK ideographs between punctuation (long pieces that do not
    recur)."""
    rng = np.random.default_rng(seed)
    han = ["".join(chr(int(c)) for c in rng.integers(0x4E00, 0xA000, rng.integers(7, 20))) for _ in range(han_runs)]
    words = ["".join(chr(int(c)) for c in rng.integers(base, base + 0x30, rng.integers(6, 11)))
             for base in (0x915, 0xB95, 0xE81) for _ in range(12)]
    return "，".join(han) + "。" + " ".join(words[int(i)] for i in rng.integers(0, len(words), 400))


@pytest.mark.parametrize("han_runs", [0, 400])
@pytest.mark.parametrize("name", NAMES)
def test_long_pieces_through_the_piece_cache(name, han_runs, ours, tiktoken_oracle):
    """The character route looks long pieces up in the piece cache and puts them there while its
    look-ups hit (the recurring words), and stops for the call when they do not (400 Han runs
    first): every call, the cache cold or warm, gives tiktoken's ids, on one worker and two."""
    enc, ref = ours(name), tiktoken_oracle(name)
    text = _long_piece_text(len(name) + han_runs, han_runs)
    want = ref.encode_ordinary(text)
    for _ in range(3):
        assert enc.encode_ordinary(text) == want
    docs = [text[i:i + 900] for i in range(0, len(text), 900)]
    assert enc.encode_ordinary_batch(docs, num_threads=2) == [ref.encode_ordinary(d) for d in docs]


# ------------------------------------------------------------------------------------ tokenizer.json

@functools.lru_cache(maxsize=None)
def _hf_pair(name: str):
    import tokenizers

    import tltok_jit
    from conftest import get_shared_path

    path = str(get_shared_path(f"tokenizers/{name}/tokenizer.json"))
    return tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)


def test_route_on_a_vocabulary_with_non_monotone_tokens():
    """Llama-3's merges are not in rank order for every token: the route stays on (its ids are
    checked against HF below), and the few tokens whose own merges are out of order lack F_MONO,
    which the route requires of every token of a result."""
    from tltok_jit.kernels.trees import F_MONO

    enc, _ = _hf_pair("llama3")
    T = enc.engine.tables
    assert table_config(T).trees & TREES_SAME and not table_config(T).trees & TREES_MONOTONE
    reach = (T.tok_flags & F_REACH) != 0
    assert 0 < int((reach & ((T.tok_flags & F_MONO) == 0)).sum()) < 1000


@settings(max_examples=150, deadline=None)
@given(text=_CJK)
def test_cjk_text_equals_hf(text):
    for name in ("llama3", "qwen2.5", "mistral-nemo"):
        enc, hf = _hf_pair(name)
        assert enc.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids, name


@pytest.mark.parametrize("name", ["llama3", "qwen2.5"])
def test_pair_proof_with_merges_ranked_from_zero(name):
    """tokenizer.json merges are ranked from 0 (tiktoken's from 256): `compat_fast` equals merging on
    every pair of bytes and tokens of the 300 first merges (Llama-3's rank 0 is `Ġ` + `Ġ`, so
    (`Ġ`, `ĠĠ`) must be refused: BPE makes `ĠĠ` + `Ġ` of three spaces)."""
    from tltok_jit.kernels.trees import F_MONO, compat_fast, merges_to_pair

    enc, _ = _hf_pair(name)
    T = enc.engine.tables

    @njit
    def disagreements(T, ids):
        syms = np.empty(64, np.uint32)
        vals = np.empty(64, np.int64)
        bad = 0
        refused = 0
        for a in ids:
            for b in ids:
                slow = merges_to_pair(a, b, T.tok_bytes, T.tok_offsets, T.byte_ids, T.pair_slots, T.rank_ids,
                                      syms, vals)
                fast = compat_fast(a, b, T.pair_slots, T.rank_ids, T.crank, T.split_l, T.split_r, T.pair_bloom)
                bad += slow != fast
                refused += not slow
        return bad, refused

    usable = (T.tok_flags & (F_REACH | F_MONO)) == (F_REACH | F_MONO)
    early = np.flatnonzero(usable & (T.crank >= 0) & (T.crank < 300))
    ids = np.unique(np.concatenate([T.byte_ids[T.byte_ids >= 0], early])).astype(np.int64)
    assert (T.crank[ids] == 0).any()
    bad, refused = disagreements(T, ids)
    assert bad == 0 and 0 < refused < len(ids) ** 2
